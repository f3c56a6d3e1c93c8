/*
 * Recursive-doubling allgather, and the allgather collective's "rd"
 * algorithm (power-of-two rank counts; the dispatcher uses the ring
 * otherwise).
 *
 * Steps: log2 p. At step d = 1, 2, 4 ... each participant exchanges the
 * d blocks it has with the participant whose index differs in bit d, so
 * the blocks held double each step. Every message is one contiguous run.
 *
 * Cost (m bytes gathered): log2(p) alpha + ((p-1)/p) m beta. Fewer
 * messages than the ring, the same volume: best for small gathers. Also
 * the second half of Rabenseifner's allreduce.
 */
#include "coll.h"

int psc_rd_allgather(struct psc_sched *s, const struct psc_coll_args *a,
		     char *work, size_t count, int p, int me,
		     const int *ranks, int ready)
{
	size_t es = a->esize;
	int rcvs[32], nrcv = 0, join;

	for (int d = 1; d < p; d <<= 1) {
		int pn = me ^ d, base = me & ~(d - 1), pbase = pn & ~(d - 1);
		int peer = ranks ? ranks[pn] : pn;
		size_t off, len, end, poff, plen, pend, tmp;
		int snd, rcv;

		psc_block(count, p, base, &off, &tmp);
		psc_block(count, p, base + d - 1, &end, &len);
		end += len;
		psc_block(count, p, pbase, &poff, &tmp);
		psc_block(count, p, pbase + d - 1, &pend, &plen);
		pend += plen;
		snd = psc_sched_send(s, work + off * es, (end - off) * es, peer);
		/*
		 * It sends this rank's block and everything received so far:
		 * receives may complete in any order, so wait for each.
		 */
		psc_sched_after(s, snd, ready);
		for (int i = 0; i < nrcv; i++)
			psc_sched_after(s, snd, rcvs[i]);
		rcv = psc_sched_recv(s, work + poff * es, (pend - poff) * es,
				     peer);
		rcvs[nrcv++] = rcv;
	}
	/* A no-op that waits for every receive, not only the last. */
	join = psc_sched_copy(s, NULL, NULL, 0);
	psc_sched_after(s, join, ready);
	for (int i = 0; i < nrcv; i++)
		psc_sched_after(s, join, rcvs[i]);
	return join;
}

int psc_allgather_rd(struct psc_sched *s, const struct psc_coll_args *a)
{
	psc_rd_allgather(s, a, a->recvbuf, a->count * (size_t)a->size,
			 a->size, a->rank, NULL, -1);
	return 0;
}
