/*
 * Calls on a request handle (ps_comm_request_t) that need nothing of the
 * request's fields: test, reap, cancel and wait. The request itself is
 * the core's and p2p's (core/req.h); the layers above see it opaque.
 * Error codes are internal codes (util/err.h).
 */
#ifndef PSC_HANDLE_H
#define PSC_HANDLE_H

#include <stdbool.h>

#include "ps_comm.h"

/*
 * Whether r is a request handle the caller may still use: not freed,
 * abandoned or left by a finalized communicator. Best effort: it reads
 * r's magic word, so the memory must still be mapped, and a request
 * allocated where a freed one was is a valid one. Needs no lock.
 */
bool psc_req_valid(const struct ps_comm_request *r);

/* Whether r has completed (safe without the lock). */
bool psc_req_done(const struct ps_comm_request *r);

/*
 * Take a completed request's status and free it; *req becomes NULL.
 * When words is not NULL it receives r's malloc'd failure words, or NULL
 * when there are none; the caller frees them. Takes the lock. Returns
 * its status error (internal code).
 */
int psc_req_reap(ps_comm_request_t *req, ps_comm_status_t *status,
		 char **words);

/*
 * Withdraw a posted send or receive and free it. Returns 0 once it is
 * gone, or -EBUSY if the provider still holds it: it is then abandoned
 * (frees itself later) and its buffer must stay valid. Takes the lock.
 */
int psc_req_cancel(ps_comm_request_t *req);

/*
 * Whether waiting on r is over: it is done, or its owner failed
 * (psc_ep_fail_owner). Needs no lock.
 */
bool psc_req_settled(struct ps_comm_request *r);

/*
 * Wait for *req until deadline (psc_now() seconds, 0 = none), driving
 * progress. On completion reap it as psc_req_reap does. When its owner
 * failed first, or the deadline passed, a GENERIC request is aborted
 * with the failure's code (-ETIMEDOUT for the deadline) and reaped with
 * its result; any other is cancelled and abandoned, and the code
 * returned, with the failure's words. *req is NULL after, in every case.
 */
int psc_wait(ps_comm_request_t *req, ps_comm_status_t *status,
	     double deadline, char **words);

#endif /* PSC_HANDLE_H */
