/*
 * Binomial-tree broadcast. With ranks renumbered relative to the root
 * (v = r - root mod n), rank v receives from v minus its lowest set bit
 * and then sends to v + 2^k for every 2^k below that bit, largest first.
 *
 * Steps: ceil(log2 n). Cost: ceil(log2 n) (alpha + m beta): for small and
 * medium messages; large ones go by scatter and ring allgather.
 */
#include "coll.h"

int psc_bcast_binomial(struct psc_sched *s, const struct psc_coll_args *a)
{
	int n = a->size, v = psc_mod(a->rank - a->root, n), mask = 1;
	size_t bytes = a->count * a->esize;
	int got = -1;

	while (mask < n) {
		if (v & mask) {
			got = psc_sched_recv(s, a->recvbuf, bytes,
					     psc_mod(v - mask + a->root, n));
			break;
		}
		mask <<= 1;
	}
	for (mask >>= 1; mask > 0; mask >>= 1)
		if (v + mask < n) {
			int op = psc_sched_send(s, a->recvbuf, bytes,
						psc_mod(v + mask + a->root, n));

			psc_sched_after(s, op, got);
		}
	return 0;
}
