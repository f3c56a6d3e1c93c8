/*
 * Dissemination barrier: in round k rank r sends an empty message to
 * r + 2^k and waits for one from r - 2^k; a round starts when every earlier
 * round's message has arrived. After ceil(log2 n) rounds every rank has
 * heard, directly or not, from every other.
 *
 * Cost: ceil(log2 n) alpha, any rank count, no data.
 */
#include "coll.h"

int psc_barrier_dissemination(struct psc_sched *s,
			      const struct psc_coll_args *a)
{
	int n = a->size, r = a->rank, rcv[32], nrcv = 0;

	for (int d = 1; d < n; d <<= 1) {
		int snd = psc_sched_send(s, NULL, 0, psc_mod(r + d, n));

		/*
		 * A round passes on everything heard so far: every earlier
		 * round's message, not only the last (they complete in any
		 * order).
		 */
		for (int i = 0; i < nrcv; i++)
			psc_sched_after(s, snd, rcv[i]);
		rcv[nrcv++] = psc_sched_recv(s, NULL, 0, psc_mod(r - d, n));
	}
	return 0;
}
