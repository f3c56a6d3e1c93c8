/*
 * The schedule's life cycle, for the dispatcher (coll.c): create one for a
 * call, let an algorithm fill it, then start it under a user request.
 * Algorithms use coll.h only.
 */
#ifndef PSC_SCHED_H
#define PSC_SCHED_H

#include "coll/coll.h"
#include "comm/view.h"

/*
 * A new, empty schedule for one collective on c whose messages all carry
 * tag (in the collective protocol). dtype and op are used by reduce
 * steps. NULL when out of memory.
 */
struct psc_sched *psc_sched_new(struct ps_comm *c, uint32_t tag,
				ps_comm_dtype_t dtype, ps_comm_op_t op);

/* Free a schedule that was never started. */
void psc_sched_free(struct psc_sched *s);

/* -ENOMEM (or -ENOTRECOVERABLE) if building failed, else 0. */
int psc_sched_error(const struct psc_sched *s);

/* Number of operations (for tests and logs). */
int psc_sched_count(const struct psc_sched *s);

/*
 * Hand s to the progress engine and return the request that completes
 * with it. Takes ownership of s, also on failure. Returns 0, -ESHUTDOWN
 * (communicator aborted) or -ENOMEM. Lock not held.
 */
int psc_sched_start(struct psc_sched *s, ps_comm_request_t *req);

#endif /* PSC_SCHED_H */
