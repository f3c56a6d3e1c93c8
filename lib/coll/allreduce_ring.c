/*
 * Ring allreduce: a ring reduce-scatter followed by a ring allgather, both
 * pipelined in segments of PS_COMM_COLL_SEGMENT bytes, with the allgather
 * of a segment starting as soon as that segment's reduction is complete.
 *
 * Steps: 2(n-1). Each rank sends and receives 2((n-1)/n) m bytes.
 * Cost: 2(n-1) alpha + 2((n-1)/n) m beta + ((n-1)/n) m gamma, the
 * bandwidth lower bound: the algorithm for large messages. Any rank count.
 * Bitwise identity: every block is finished by one rank and copied to the
 * others. With PS_COMM_DETERMINISTIC=1 the reduce-scatter half is the
 * rank-ordered direct exchange (reduce_scatter_direct.c).
 */
#include "coll.h"

int psc_allreduce_ring(struct psc_sched *s, const struct psc_coll_args *a)
{
	size_t nseg;
	int *last = psc_sched_marks(s, a, a->count, &nseg);

	if (!last)
		return 0;
	psc_ring_reduce_scatter(s, a, a->sendbuf, a->recvbuf, a->count, 1,
				last);
	psc_ring_allgather(s, a, a->recvbuf, a->count, 1, last, -1);
	return 0;
}
