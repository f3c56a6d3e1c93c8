/*
 * Deterministic reduce-scatter (PS_COMM_DETERMINISTIC=1): every rank sends
 * each block straight to the rank that owns it, and the owner folds the n
 * contributions of each element in rank order, ((x0 op x1) op x2) ..., one
 * segment at a time. The order depends on nothing but the rank count, so
 * the bits do not change with the algorithm, the segment size or the
 * message size (every allreduce/reduce/reduce_scatter algorithm uses this
 * reduction when the parameter is set).
 *
 * Cost (m bytes in total, n ranks): (n-1) alpha per segment round, and
 * ((n-1)/n) m beta, the same volume as the ring, but n-1 messages in
 * flight per step instead of one, and n blocks of scratch memory on the
 * owner. Bitwise identity: each block is folded by its owner only.
 */
#include "coll.h"

void psc_direct_reduce_scatter(struct psc_sched *s,
			       const struct psc_coll_args *a, char *work,
			       size_t count, int shift, int *last)
{
	int n = a->size, r = a->rank, own = psc_mod(r + shift, n);
	size_t es = a->esize, off, len, maxblk, nseg;
	char *tmp;
	int *rv;

	psc_block(count, n, 0, &off, &maxblk);
	psc_block(count, n, own, &off, &len);
	nseg = psc_nseg(maxblk, a->seg);
	tmp = psc_sched_tmp(s, (size_t)n * maxblk * es);
	rv = psc_sched_tmp(s, (size_t)n * sizeof(int));
	if (!tmp || !rv)
		return;
	for (size_t j = 0; j < nseg; j++) {
		size_t o = j * a->seg, l;
		int acc;

		/* Sends first, nearest peer first, to spread the load. */
		for (int i = 1; i < n; i++) {
			int q = psc_mod(r + i, n);
			size_t qoff, qlen;

			psc_block(count, n, psc_mod(q + shift, n), &qoff, &qlen);
			if (o < qlen)
				psc_sched_send(s, work + (qoff + o) * es,
					       PSC_SEG_LEN(qlen, o, a->seg) * es,
					       q);
		}
		if (last)
			last[j] = -1;
		if (o >= len)
			continue;
		l = PSC_SEG_LEN(len, o, a->seg);
		for (int q = 0; q < n; q++)
			rv[q] = q == r ? -1
				       : psc_sched_recv(s,
							tmp + ((size_t)q * maxblk + o) * es,
							l * es, q);
		/* Own contribution aside, x0 into place, then fold x1.. */
		acc = -1;
		if (r != 0) {
			int keep = psc_sched_copy(s, tmp + ((size_t)r * maxblk + o) * es,
						  work + (off + o) * es, l * es);

			acc = psc_sched_copy(s, work + (off + o) * es,
					     tmp + o * es, l * es);
			psc_sched_after(s, acc, keep);
			psc_sched_after(s, acc, rv[0]);
		}
		for (int q = 1; q < n; q++) {
			int op = psc_sched_reduce(s, work + (off + o) * es,
						  tmp + ((size_t)q * maxblk + o) * es,
						  l, false);

			psc_sched_after(s, op, acc);
			psc_sched_after(s, op, rv[q]);
			acc = op;
		}
		if (last)
			last[j] = acc;
	}
}
