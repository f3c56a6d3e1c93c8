/*
 * Binomial-tree reduce. With ranks renumbered relative to the root
 * (v = r - root mod n), rank v receives from v + 2^k for every 2^k below
 * its lowest set bit, smallest first, reducing each into its partial
 * result (its own data on the left), then sends the partial to v minus
 * that bit.
 *
 * Steps: ceil(log2 n). Cost: ceil(log2 n) (alpha + m beta + m gamma): for
 * small messages; large ones go by reduce-scatter and gather. With
 * PS_COMM_DETERMINISTIC=1 the dispatcher uses the reduce-scatter form,
 * whose reduction order is fixed.
 */
#include "coll.h"

int psc_reduce_binomial(struct psc_sched *s, const struct psc_coll_args *a)
{
	int n = a->size, v = psc_mod(a->rank - a->root, n), prev = -1;
	size_t bytes = a->count * a->esize;
	char *acc = a->rank == a->root ? a->recvbuf : psc_sched_tmp(s, bytes);
	char *tmp = psc_sched_tmp(s, bytes);

	if (!acc || !tmp)
		return 0;
	/*
	 * A step of the schedule, not a copy now: in a hierarchical
	 * algorithm the input is an earlier step's result.
	 */
	if (acc != a->sendbuf)
		prev = psc_sched_copy(s, acc, a->sendbuf, bytes);
	for (int mask = 1; mask < n; mask <<= 1) {
		if (v & mask) {
			int op = psc_sched_send(s, acc, bytes,
						psc_mod(v - mask + a->root, n));

			psc_sched_after(s, op, prev);
			break;
		}
		if (v + mask < n) {
			int rv = psc_sched_recv(s, tmp, bytes,
						psc_mod(v + mask + a->root, n));
			int red = psc_sched_reduce(s, acc, tmp, a->count, false);

			psc_sched_after(s, rv, prev);
			psc_sched_after(s, red, rv);
			psc_sched_after(s, red, prev);
			prev = red;
		}
	}
	return 0;
}
