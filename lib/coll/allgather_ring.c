/*
 * Ring allgather, and the allgather collective's ring algorithm.
 *
 * Steps: n-1. At step k rank r sends block (r-k+shift) to rank r+1 and
 * receives block (r-k-1+shift) from rank r-1, straight into place; the
 * next step forwards what arrived. Blocks move in segments, so a long
 * block streams around the ring.
 *
 * Cost (m bytes gathered, n ranks): (n-1) alpha + ((n-1)/n) m beta:
 * bandwidth-optimal, latency linear in n. Used for large allgathers, for
 * the second half of the ring allreduce and of bcast's scatter-allgather.
 * Receiving in place is safe after a reduce-scatter: a block can only
 * arrive once every rank's contribution to it, this rank's send included,
 * has been received.
 */
#include "coll.h"

void psc_ring_allgather(struct psc_sched *s, const struct psc_coll_args *a,
			char *work, size_t count, int shift, const int *ready,
			int skip)
{
	int n = a->size, r = a->rank, right = psc_mod(r + 1, n),
	    left = psc_mod(r - 1, n);
	size_t es = a->esize, nseg;
	int *got = psc_sched_marks(s, a, count, &nseg);

	if (!got)
		return;
	for (size_t j = 0; ready && j < nseg; j++)
		got[j] = ready[j];
	for (int k = 0; k < n - 1; k++) {
		int sb = psc_mod(r - k + shift, n);
		int rb = psc_mod(r - k - 1 + shift, n);
		size_t soff, slen, roff, rlen;

		psc_block(count, n, sb, &soff, &slen);
		psc_block(count, n, rb, &roff, &rlen);
		for (size_t j = 0; j < nseg; j++) {
			size_t o = j * a->seg;

			if (right != skip && o < slen) {
				size_t len = PSC_SEG_LEN(slen, o, a->seg) * es;
				int op = psc_sched_send(s, work + (soff + o) * es,
							len, right);
				psc_sched_after(s, op, got[j]);
			}
			got[j] = -1;
			if (r != skip && o < rlen)
				got[j] = psc_sched_recv(s, work + (roff + o) * es,
							PSC_SEG_LEN(rlen, o, a->seg) * es,
							left);
		}
	}
}

int psc_allgather_ring(struct psc_sched *s, const struct psc_coll_args *a)
{
	psc_ring_allgather(s, a, a->recvbuf, a->count * (size_t)a->size, 0,
			   NULL, -1);
	return 0;
}
