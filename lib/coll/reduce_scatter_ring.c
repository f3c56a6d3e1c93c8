/*
 * Ring reduce-scatter, and the reduce_scatter collective built on it.
 *
 * Steps: n-1. At step k rank r sends block (r-k-1+shift) to rank r+1 and
 * receives block (r-k-2+shift) from rank r-1, which it reduces into its
 * copy. Each block travels once around the ring, gathering one
 * contribution per rank, so rank r ends with block (r+shift) complete.
 * Blocks are cut into segments of PS_COMM_COLL_SEGMENT bytes that move
 * independently, so a long block streams: while segment j is reduced,
 * segment j+1 is on the wire. Received segments land in a double buffer
 * (steps alternate), so scratch memory is 2 blocks; a receive into a
 * half waits for the reduction that last read it.
 *
 * Cost (m bytes in total, n ranks): (n-1) alpha + ((n-1)/n) m beta +
 * ((n-1)/n) m gamma: bandwidth-optimal. Latency grows linearly in n.
 * Bitwise identity: each block's result is computed by one rank only and
 * then copied, so every rank that has it has the same bits.
 */
#include "coll.h"
#include "util/copy.h"

void psc_ring_reduce_scatter(struct psc_sched *s,
			     const struct psc_coll_args *a, const char *src,
			     char *work, size_t count, int shift, int *last)
{
	int n = a->size, r = a->rank, right = psc_mod(r + 1, n),
	    left = psc_mod(r - 1, n);
	size_t es = a->esize, off, maxblk, nseg;
	int *red, *slot_user;
	char *tmp;

	psc_block(count, n, 0, &off, &maxblk);
	nseg = psc_nseg(maxblk, a->seg);
	if (a->deterministic) {
		if (src != work)
			psc_copy(work, src, count * es);
		psc_direct_reduce_scatter(s, a, work, count, shift, last);
		return;
	}
	/* Out of place, segments land in work itself: no scratch. */
	tmp = src == work ? psc_sched_tmp(s, 2 * maxblk * es) : work;
	/*
	 * red[j]: the reduction that last finished segment j of the block
	 * this rank holds (what it sends next); slot_user[h * nseg + j]: the
	 * last reduction that read segment j of scratch half h, which the
	 * next receive into it must wait for (steps with an empty block
	 * leave both untouched).
	 */
	red = psc_sched_tmp(s, 3 * nseg * sizeof(int));
	if (!tmp || !red)
		return;
	slot_user = red + nseg;
	for (size_t j = 0; j < 3 * nseg; j++)
		red[j] = -1;
	for (int k = 0; k < n - 1; k++) {
		int sb = psc_mod(r - k - 1 + shift, n);
		int rb = psc_mod(r - k - 2 + shift, n);
		size_t soff, slen, roff, rlen, h = (size_t)(k & 1);

		psc_block(count, n, sb, &soff, &slen);
		psc_block(count, n, rb, &roff, &rlen);
		/* Step 0 sends this rank's own input; later, partials. */
		for (size_t j = 0; j * a->seg < slen; j++) {
			size_t o = j * a->seg, l = PSC_SEG_LEN(slen, o, a->seg);
			const char *from = k ? work : src;
			int op = psc_sched_send(s, from + (soff + o) * es,
						l * es, right);

			psc_sched_after(s, op, red[j]);
		}
		for (size_t j = 0; j < nseg; j++) {
			size_t o = j * a->seg, l;
			char *slot = src == work
					     ? tmp + (h * maxblk + o) * es
					     : work + (roff + o) * es;
			int rv;

			red[j] = -1;
			if (o >= rlen)
				continue;
			l = PSC_SEG_LEN(rlen, o, a->seg);
			rv = psc_sched_recv(s, slot, l * es, left);
			psc_sched_after(s, rv, slot_user[h * nseg + j]);
			/* The partial that arrived is the left operand. */
			if (src == work)
				red[j] = psc_sched_reduce(s, work + (roff + o) * es,
							  slot, l, true);
			else
				red[j] = psc_sched_reduce(s, slot,
							  src + (roff + o) * es,
							  l, false);
			psc_sched_after(s, red[j], rv);
			slot_user[h * nseg + j] = red[j];
		}
	}
	for (size_t j = 0; last && j < nseg; j++)
		last[j] = red[j];
}

/*
 * reduce_scatter: the input (n blocks of count elements) is reduced into
 * scratch memory, or in recvbuf itself when in place; rank r's block is
 * then moved to the start of recvbuf.
 */
int psc_reduce_scatter_ring(struct psc_sched *s,
			    const struct psc_coll_args *a)
{
	size_t total = a->count * (size_t)a->size, bytes = a->count * a->esize;
	char *work = (char *)a->recvbuf;
	int fence, join;

	if (a->sendbuf != a->recvbuf) {
		work = psc_sched_tmp(s, total * a->esize);
		if (!work)
			return 0;
	}
	psc_ring_reduce_scatter(s, a, a->sendbuf, work, total, 0, NULL);
	if (work == a->recvbuf && a->rank == 0)
		return 0;
	/*
	 * In place, the move overwrites blocks this rank sent: wait for
	 * every send, not only for the last reductions.
	 */
	fence = psc_sched_fence(s);
	join = psc_sched_copy(s, a->recvbuf, work + a->rank * bytes, bytes);
	psc_sched_after(s, join, fence);
	return 0;
}
