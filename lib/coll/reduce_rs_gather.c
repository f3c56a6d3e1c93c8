/*
 * Reduce of large messages: a ring reduce-scatter (rank-ordered direct
 * exchange with PS_COMM_DETERMINISTIC=1) leaves block r on rank r, and
 * every rank sends its block to the root, segment by segment as soon as
 * each is final.
 *
 * Cost: (n-1) alpha + ((n-1)/n) m (beta + gamma) for the reduce-scatter,
 * plus ((n-1)/n) m beta into the root: about 2 m beta whatever n.
 */
#include "coll.h"

int psc_reduce_rs_gather(struct psc_sched *s, const struct psc_coll_args *a)
{
	int n = a->size, r = a->rank, root = a->root;
	size_t es = a->esize, bytes = a->count * es, off, len, nseg;
	char *work = r == root ? a->recvbuf : psc_sched_tmp(s, bytes);
	int *last = psc_sched_marks(s, a, a->count, &nseg);

	if (!work || !last)
		return 0;
	psc_ring_reduce_scatter(s, a, a->sendbuf, work, a->count, 0, last);
	if (r != root) {
		psc_block(a->count, n, r, &off, &len);
		for (size_t j = 0; j * a->seg < len; j++) {
			size_t o = j * a->seg;
			int op = psc_sched_send(s, work + (off + o) * es,
						PSC_SEG_LEN(len, o, a->seg) * es,
						root);

			psc_sched_after(s, op, last[j]);
		}
		return 0;
	}
	for (int q = 0; q < n; q++) {
		if (q == root)
			continue;
		psc_block(a->count, n, q, &off, &len);
		for (size_t j = 0; j * a->seg < len; j++) {
			size_t o = j * a->seg;

			psc_sched_recv(s, work + (off + o) * es,
				       PSC_SEG_LEN(len, o, a->seg) * es, q);
		}
	}
	return 0;
}
