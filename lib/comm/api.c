/*
 * The public point-to-point calls, request completion calls and memory
 * registration: argument checks, then the p2p and core layers, with
 * their internal codes turned into PS_COMM_ERR_* values and their words
 * recorded as the communicator's last error.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "comm/comm.h"
#include "util/err.h"
#include "util/util.h"

/* Validate the arguments common to sends and receives. */
static int check_p2p(struct ps_comm *c, const void *buf, size_t len,
		     int peer, int tag, bool recv, const char *fn)
{
	int tag_ub;

	if (!psc_comm_ok(c))
		return PS_COMM_ERR_ARG;
	tag_ub = c->ch.tl.tag_ub;
	if (!buf && len) {
		psc_comm_set_error(c, "%s: NULL buffer with length %zu", fn,
				   len);
		return PS_COMM_ERR_ARG;
	}
	if (len > PS_COMM_MSG_MAX) {
		psc_comm_set_error(c, "%s: length %zu is negative or larger "
				   "than PS_COMM_MSG_MAX (%zu)", fn, len,
				   (size_t)PS_COMM_MSG_MAX);
		return PS_COMM_ERR_ARG;
	}
	if ((peer < 0 || peer >= c->ch.size) &&
	    !(recv && peer == PS_COMM_ANY_SOURCE)) {
		psc_comm_set_error(c, "%s: rank %d out of range 0..%d", fn,
				   peer, c->ch.size - 1);
		return PS_COMM_ERR_ARG;
	}
	if ((tag < 0 || tag > tag_ub) && !(recv && tag == PS_COMM_ANY_TAG)) {
		psc_comm_set_error(c, "%s: tag %d out of range 0..%d "
				   "(ps_comm_tag_ub)", fn, tag, tag_ub);
		return PS_COMM_ERR_ARG;
	}
	return 0;
}

int ps_comm_isend(ps_comm_t comm, const void *buf, size_t len, int peer,
		  int tag, ps_comm_request_t *req)
{
	char err[256];
	int rc = check_p2p(comm, buf, len, peer, tag, false, "ps_comm_isend");

	if (rc)
		return rc;
	if (!req)
		return PS_COMM_ERR_ARG;
	rc = psc_isend(&comm->ch, PSC_PROTO_USER, buf, len, peer,
		       (uint32_t)tag, req, err, sizeof(err));
	return rc ? psc_comm_report(comm, rc, err) : 0;
}

int ps_comm_irecv(ps_comm_t comm, void *buf, size_t len, int peer, int tag,
		  ps_comm_request_t *req)
{
	char err[256];
	int rc = check_p2p(comm, buf, len, peer, tag, true, "ps_comm_irecv");

	if (rc)
		return rc;
	if (!req)
		return PS_COMM_ERR_ARG;
	rc = psc_irecv(&comm->ch, PSC_PROTO_USER, buf, len, peer, tag, req,
		       err, sizeof(err));
	return rc ? psc_comm_report(comm, rc, err) : 0;
}

int ps_comm_send(ps_comm_t comm, const void *buf, size_t len, int peer,
		 int tag)
{
	ps_comm_request_t r;
	int rc = ps_comm_isend(comm, buf, len, peer, tag, &r);

	return rc ? rc
		  : psc_comm_wait(comm, &r, NULL, psc_comm_op_deadline(comm),
				  "operation");
}

int ps_comm_recv(ps_comm_t comm, void *buf, size_t len, int peer, int tag,
		 ps_comm_status_t *status)
{
	ps_comm_request_t r;
	int rc = ps_comm_irecv(comm, buf, len, peer, tag, &r);

	return rc ? rc
		  : psc_comm_wait(comm, &r, status,
				  psc_comm_op_deadline(comm), "operation");
}

/* The communicator a request belongs to (its channel is the owner). */
static struct ps_comm *comm_of(const struct ps_comm_request *r)
{
	return psc_container_of(psc_p2p_chan(r), struct ps_comm, ch);
}

/* What a request waits for, in timeout messages. */
static const char *what_of(const struct ps_comm_request *r)
{
	return psc_p2p_is_op(r) ? "collective" : "operation";
}

/* Nothing to wait for: a NULL request is complete and empty. */
static int empty_request(int *done, ps_comm_status_t *status)
{
	if (done)
		*done = 1;
	if (status)
		memset(status, 0, sizeof(*status));
	return 0;
}

int ps_comm_test(ps_comm_request_t *req, int *done, ps_comm_status_t *status)
{
	struct ps_comm_request *r;
	struct ps_comm *c;
	const char *what;
	char *words;
	int rc;

	if (!req || !done)
		return PS_COMM_ERR_ARG;
	r = *req;
	if (!r)
		return empty_request(done, status);
	if (!psc_req_valid(r))
		return PS_COMM_ERR_ARG;
	if (!psc_p2p_done(r))
		psc_p2p_progress(r);
	*done = psc_p2p_done(r);
	if (!*done)
		return 0;
	c = comm_of(r);
	what = what_of(r);
	rc = psc_p2p_reap(req, status, &words);
	return psc_comm_result(c, rc, status, words, what);
}

int ps_comm_wait(ps_comm_request_t *req, ps_comm_status_t *status)
{
	struct ps_comm *c;

	if (!req)
		return PS_COMM_ERR_ARG;
	if (!*req)
		return empty_request(NULL, status);
	if (!psc_req_valid(*req))
		return PS_COMM_ERR_ARG;
	c = comm_of(*req);
	return psc_comm_wait(c, req, status, psc_comm_op_deadline(c),
			     what_of(*req));
}

int ps_comm_waitall(size_t n, ps_comm_request_t *reqs,
		    ps_comm_status_t *statuses)
{
	int first = 0;

	if (n && !reqs)
		return PS_COMM_ERR_ARG;
	for (size_t i = 0; i < n; i++) {
		int rc = ps_comm_wait(&reqs[i], statuses ? &statuses[i] : NULL);

		if (rc && !first)
			first = rc;
	}
	return first;
}

int ps_comm_mem_register(ps_comm_t comm, void *buf, size_t len,
			 ps_comm_mem_t *handle)
{
	int rc;

	if (!psc_comm_ok(comm) || !buf || !len || !handle)
		return PS_COMM_ERR_ARG;
	if ((uintptr_t)buf + len < (uintptr_t)buf)
		return PS_COMM_ERR_ARG;
	*handle = NULL;
	rc = psc_ep_mem_pin(comm->ch.ep, buf, len, handle);
	if (rc == -EINVAL) {
		psc_comm_set_error(comm, "ps_comm_mem_register: len %zu at %p: "
				   "the range is not all mapped memory of "
				   "this process (or provider %s refused it)",
				   len, buf, comm->provider);
		return psc_err_from_fi(rc);
	}
	if (rc) {
		psc_comm_set_error(comm, "registering %zu bytes at %p failed "
				   "on provider %s: %s (check ulimit -l)", len,
				   buf, comm->provider, psc_fab_strerror(-rc));
		return psc_err_from_fi(rc);
	}
	return 0;
}

int ps_comm_mem_deregister(ps_comm_t comm, ps_comm_mem_t handle)
{
	if (!psc_comm_ok(comm) || !handle)
		return PS_COMM_ERR_ARG;
	if (psc_ep_mem_unpin(comm->ch.ep, handle) != 0) {
		psc_comm_set_error(comm, "ps_comm_mem_deregister: handle %p is "
				   "not registered on this communicator's "
				   "endpoint", (void *)handle);
		return PS_COMM_ERR_ARG;
	}
	return 0;
}
