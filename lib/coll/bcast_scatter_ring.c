/*
 * Broadcast of large messages: the root scatters the buffer in n blocks
 * (block v to the rank v places after it), then a ring allgather
 * completes every copy. The root already has every block, so it receives
 * nothing in the ring and its left neighbour sends it nothing.
 *
 * Cost: (n-1) alpha + ((n-1)/n) m beta for the scatter (at the root),
 * plus (n-1) alpha + ((n-1)/n) m beta for the ring: about 2 m beta
 * whatever n, against log2(n) m beta for the binomial tree.
 */
#include "coll.h"

int psc_bcast_scatter_ring(struct psc_sched *s, const struct psc_coll_args *a)
{
	int n = a->size, v = psc_mod(a->rank - a->root, n);
	size_t es = a->esize, off, len, nseg;
	char *buf = a->recvbuf;
	int *ready = psc_sched_marks(s, a, a->count, &nseg);

	if (!ready)
		return 0;
	if (v == 0) {
		for (int b = 1; b < n; b++) {
			psc_block(a->count, n, b, &off, &len);
			if (len)
				psc_sched_send(s, buf + off * es, len * es,
					       psc_mod(b + a->root, n));
		}
	} else {
		psc_block(a->count, n, v, &off, &len);
		if (len) {
			int rv = psc_sched_recv(s, buf + off * es, len * es,
						a->root);

			for (size_t j = 0; j < nseg; j++)
				ready[j] = rv;
		}
	}
	psc_ring_allgather(s, a, buf, a->count, -a->root, ready, a->root);
	return 0;
}
