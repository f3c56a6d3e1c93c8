/*
 * Recursive-doubling allreduce, and the non-power-of-two steps shared with
 * Rabenseifner's algorithm.
 *
 * With p the largest power of two <= n and rem = n - p: first each even
 * rank below 2 rem sends its vector to the odd rank above it, which
 * reduces the pair (1 step). Then at step d = 1, 2, 4 ... < p each of the
 * p participants exchanges its whole vector with the one whose index
 * differs in bit d and reduces (log2 p steps). Last, the odd ranks send
 * the result to the even ranks that sat out (1 step).
 *
 * Cost: (log2 p + 2[n != p]) alpha + (log2 p + 2[n != p]) m beta +
 * (log2 p + [n != p]) m gamma: few messages, full-size each: for small
 * messages. Bitwise identity: both partners compute op(lower, higher) on
 * the same two values, so they hold the same bits after every step, and
 * the ranks that sat out receive a copy. Out of place on a power-of-two
 * rank count, the first exchange reads the input where it is and lands
 * in recvbuf (psc_allreduce_from_input).
 */
#include "coll.h"

/* Communicator rank of participant i. */
static int real_rank(int i, int rem)
{
	return i < rem ? 2 * i + 1 : i + rem;
}

int psc_rd_fold_in(struct psc_sched *s, const struct psc_coll_args *a,
		   char *work, size_t count, int *ranks, int *done)
{
	int n = a->size, r = a->rank, p = psc_pow2_floor(n), rem = n - p;
	size_t bytes = count * a->esize;

	for (int i = 0; i < p; i++)
		ranks[i] = real_rank(i, rem);
	*done = -1;
	if (r >= 2 * rem)
		return r - rem;
	if (r % 2 == 0) {
		psc_sched_send(s, work, bytes, r + 1);
		return -1;
	}
	{
		char *tmp = psc_sched_tmp(s, bytes);
		int rv, red;

		if (!tmp)
			return -1;
		rv = psc_sched_recv(s, tmp, bytes, r - 1);
		/* The lower rank's vector is the left operand. */
		red = psc_sched_reduce(s, work, tmp, count, true);
		psc_sched_after(s, red, rv);
		*done = red;
	}
	return r / 2;
}

void psc_rd_fold_out(struct psc_sched *s, const struct psc_coll_args *a,
		     char *work, size_t count, int ready)
{
	int r = a->rank, rem = a->size - psc_pow2_floor(a->size);
	size_t bytes = count * a->esize;

	if (r >= 2 * rem)
		return;
	if (r % 2 == 0) {
		psc_sched_recv(s, work, bytes, r + 1);
	} else {
		int op = psc_sched_send(s, work, bytes, r - 1);

		psc_sched_after(s, op, ready);
	}
}

int psc_allreduce_rd(struct psc_sched *s, const struct psc_coll_args *a)
{
	int p = psc_pow2_floor(a->size), me, prev;
	size_t bytes = a->count * a->esize;
	bool direct = psc_allreduce_from_input(a);
	/* Scratch for every exchange but a first one from the input. */
	bool need_tmp = !direct || p > 2;
	int *ranks = psc_sched_tmp(s, (size_t)p * sizeof(int));
	char *tmp = NULL, *work = a->recvbuf;

	if (!direct)
		psc_input_to_recvbuf(a);
	if (a->deterministic)
		return psc_allreduce_det_log(s, a);
	if (need_tmp)
		tmp = psc_sched_tmp(s, bytes);
	if (!ranks || (need_tmp && !tmp))
		return 0;
	me = psc_rd_fold_in(s, a, work, a->count, ranks, &prev);
	if (me < 0) {
		psc_rd_fold_out(s, a, work, a->count, -1);
		return 0;
	}
	for (int d = 1; d < p; d <<= 1) {
		int pn = me ^ d, peer = ranks[pn];
		/*
		 * From the input, the first exchange sends it and reduces
		 * the peer's vector, received in work, with it; later ones
		 * send work and receive into tmp.
		 */
		bool first = direct && d == 1;
		const char *from = first ? a->sendbuf : work;
		int snd = psc_sched_send(s, from, bytes, peer);
		int rcv = psc_sched_recv(s, first ? work : tmp, bytes, peer);
		int red = psc_sched_reduce(s, work, first ? from : tmp, a->count,
					   first ? me < pn : pn < me);

		psc_sched_after(s, snd, prev);
		/* tmp is free again once the previous step reduced it. */
		psc_sched_after(s, rcv, prev);
		psc_sched_after(s, red, rcv);
		/* work changes only once the send no longer reads it. */
		if (!first)
			psc_sched_after(s, red, snd);
		prev = red;
	}
	psc_rd_fold_out(s, a, work, a->count, prev);
	return 0;
}

int psc_allreduce_det_log(struct psc_sched *s, const struct psc_coll_args *a)
{
	size_t nseg;
	int *last = psc_sched_marks(s, a, a->count, &nseg), join;

	if (!last)
		return 0;
	psc_direct_reduce_scatter(s, a, a->recvbuf, a->count, 0, last);
	if (psc_pow2_floor(a->size) != a->size) {
		psc_ring_allgather(s, a, a->recvbuf, a->count, 0, last, -1);
		return 0;
	}
	join = psc_sched_copy(s, NULL, NULL, 0);
	for (size_t j = 0; j < nseg; j++)
		psc_sched_after(s, join, last[j]);
	psc_rd_allgather(s, a, a->recvbuf, a->count, a->size, a->rank, NULL,
			 join);
	return 0;
}
