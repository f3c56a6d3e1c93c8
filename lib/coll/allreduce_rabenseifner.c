/*
 * Rabenseifner's allreduce: a reduce-scatter by recursive halving, then an
 * allgather by recursive doubling, with the non-power-of-two steps of
 * allreduce_rd.c around them.
 *
 * Among the p participants (p the largest power of two <= n), at step
 * d = p/2, p/4 ... 1 each keeps the half of its current range selected by
 * bit d of its index, sends the other half to the participant differing
 * in that bit, and reduces the half it receives. After log2 p steps each
 * holds one fully reduced block (its own index) and recursive doubling
 * gathers them.
 *
 * Cost: 2 log2(p) alpha + 2((p-1)/p) m beta + ((p-1)/p) m gamma, plus
 * 2 alpha + 2 m beta + m gamma when n is not a power of two:
 * bandwidth-optimal with logarithmic latency: for medium messages.
 * Bitwise identity: each block is reduced by one participant, with the
 * lower index's data as the left operand, then copied. Out of place on a
 * power-of-two rank count, the first halving step reads the input where
 * it is and lands in recvbuf (psc_allreduce_from_input).
 */
#include "coll.h"

int psc_allreduce_rabenseifner(struct psc_sched *s,
			       const struct psc_coll_args *a)
{
	int p = psc_pow2_floor(a->size), me, prev;
	size_t es = a->esize, count = a->count;
	int *ranks, lo = 0, hi = p;
	char *tmp = NULL, *work = a->recvbuf;
	bool direct = psc_allreduce_from_input(a);
	/* Scratch for every step but a first one from the input. */
	bool need_tmp = !direct || p > 2;

	if (!direct)
		psc_input_to_recvbuf(a);
	if (a->deterministic)
		return psc_allreduce_det_log(s, a);
	ranks = psc_sched_tmp(s, (size_t)p * sizeof(int));
	if (need_tmp)
		tmp = psc_sched_tmp(s, count * es);
	if (!ranks || (need_tmp && !tmp))
		return 0;
	me = psc_rd_fold_in(s, a, work, count, ranks, &prev);
	if (me < 0) {
		psc_rd_fold_out(s, a, work, count, -1);
		return 0;
	}
	for (int d = p / 2; d >= 1; d /= 2) {
		int pn = me ^ d, peer = ranks[pn], mid = lo + d;
		int klo = (me & d) ? mid : lo, khi = (me & d) ? hi : mid;
		int slo = (me & d) ? lo : mid, shi = (me & d) ? mid : hi;
		size_t koff, kend, soff, send_, len;
		/*
		 * From the input, the first step sends from it and reduces
		 * the peer's half, received in work, with it; later steps
		 * send from work and receive into tmp.
		 */
		bool first = direct && d == p / 2;
		const char *from = first ? a->sendbuf : work;
		char *into = first ? work : tmp;
		int snd, rcv, red;

		psc_block(count, p, klo, &koff, &len);
		psc_block(count, p, khi - 1, &kend, &len);
		kend += len;
		psc_block(count, p, slo, &soff, &len);
		psc_block(count, p, shi - 1, &send_, &len);
		send_ += len;
		snd = psc_sched_send(s, from + soff * es, (send_ - soff) * es,
				     peer);
		rcv = psc_sched_recv(s, into + koff * es, (kend - koff) * es,
				     peer);
		/* The lower index's data is the left operand. */
		red = psc_sched_reduce(s, work + koff * es,
				       (first ? from : tmp) + koff * es,
				       kend - koff, first ? me < pn : pn < me);
		psc_sched_after(s, snd, prev);
		psc_sched_after(s, rcv, prev);
		psc_sched_after(s, red, rcv);
		prev = red;
		lo = klo;
		hi = khi;
	}
	prev = psc_rd_allgather(s, a, work, count, p, me, ranks, prev);
	psc_rd_fold_out(s, a, work, count, prev);
	return 0;
}
