/*
 * Communicator lifetime and the errors users see: init (parameters,
 * logging, the libfabric version check, bootstrap), finalize (a barrier
 * while progressing, cancel what is left, then close in order), abort,
 * the small accessors, and the recording of failures.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "comm/comm.h"
#include "fabric/topo.h"
#include "live/live.h"
#include "util/err.h"
#include "util/log.h"
#include "util/scratch.h"
#include "util/util.h"

void psc_comm_set_error(struct ps_comm *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->last_error, sizeof(c->last_error), fmt, ap);
	va_end(ap);
}

int psc_comm_report(struct ps_comm *c, int err, const char *msg)
{
	if (err && msg && *msg)
		psc_comm_set_error(c, "%s", msg);
	return psc_err_from_fi(err);
}

int psc_comm_failure(struct ps_comm *c, int rc)
{
	char words[512] = "";
	int failed = psc_ep_owner_failed(c->ch.ep, &c->ch, words,
					 sizeof(words));

	return psc_comm_report(c, rc, failed == rc ? words : "");
}

/*
 * An operation of c failed with a peer-class error (a broken connection),
 * was cancelled under us (rxm cancels what was queued on a connection
 * that broke), or the provider failed it (shm: EIO copying from a dead
 * peer). The monitor usually knows which rank died by now, or within a
 * moment, and has words naming it: the result is then c's failure. A
 * peer error it does not learn of still fails c as a whole, with what
 * the operation saw; the others stay as they are.
 */
static int peer_failure(struct ps_comm *c, int rc, char *msg, size_t len)
{
	int failed;

	if (!c->live)
		return rc;
	failed = psc_ep_owner_failed(c->ch.ep, &c->ch, NULL, 0);
	if (!failed)
		psc_live_report(c->live, &c->ch,
				psc_err_from_fi(rc) == PS_COMM_ERR_PEER, msg);
	failed = psc_ep_owner_failed(c->ch.ep, &c->ch, msg, len);
	return failed ? failed : rc;
}

double psc_comm_op_deadline(const struct ps_comm *c)
{
	return psc_deadline(c->op_timeout);
}

int psc_comm_waited(struct ps_comm *c, int rc, ps_comm_status_t *status,
		    char *words, const char *what)
{
	char msg[512];

	if (status && status->error)
		status->error = psc_err_from_fi(status->error);
	snprintf(msg, sizeof(msg), "%s", words ? words : "");
	free(words);
	switch (psc_err_from_fi(rc)) {
	case PS_COMM_ERR_PEER:
	case PS_COMM_ERR_CANCELED:
	case PS_COMM_ERR_SYSTEM:   /* shm: EIO reading a dead peer's memory */
	case PS_COMM_ERR_FABRIC:
		rc = peer_failure(c, rc, msg, sizeof(msg));
		break;
	}
	if (rc == -ETIMEDOUT && !msg[0])
		snprintf(msg, sizeof(msg), "%s timed out after "
			 "PS_COMM_OP_TIMEOUT=%g s: %s", what, c->op_timeout,
			 strcmp(what, "collective") == 0
				 ? "a peer did not take part"
				 : "the peer did not answer");
	return psc_comm_report(c, rc, msg);
}

int ps_comm_attr_init(ps_comm_attr_t *attr)
{
	if (!attr)
		return PS_COMM_ERR_ARG;
	memset(attr, 0, sizeof(*attr));
	attr->attr_size = sizeof(*attr);
	attr->rank = -1;
	attr->size = -1;
	return 0;
}

/* Refuse to run on a libfabric older than the headers we compiled with. */
static int check_fi_version(struct ps_comm *c)
{
	char err[256];

	if (psc_fab_check_version(err, sizeof(err)) == 0)
		return 0;
	psc_comm_set_error(c, "%s", err);
	return PS_COMM_ERR_VERSION;
}

/* Log pscomm's version and every setting in effect, at info level. */
static void log_settings(const struct ps_comm *c)
{
	char line[1536], val[256];
	size_t used = 0;

	if (!psc_log_enabled(PSC_LOG_INFO))
		return;
	psc_fab_version(val, sizeof(val));
	psc_log(PSC_LOG_INFO, c->ch.rank, "pscomm %s on %s, rank %d of %d, "
		"provider %s", ps_comm_version(), val, c->ch.rank, c->ch.size,
		c->provider);
	line[0] = '\0';
	for (size_t i = 0; i < psc_param_count; i++) {
		psc_param_format(&c->params, &psc_param_table[i], val,
				 sizeof(val));
		if (strcmp(psc_param_table[i].name, "PS_COMM_JOB_KEY") == 0 &&
		    val[0])
			snprintf(val, sizeof(val), "(set)");
		PSC_APPEND(line, sizeof(line), used, "%s%s=%s", used ? " " : "",
			   psc_param_table[i].name, val);
	}
	psc_log(PSC_LOG_INFO, c->ch.rank, "settings: %s", line);
	psc_topo_describe(line, sizeof(line));
	psc_log(PSC_LOG_INFO, c->ch.rank, "placement: %s", line);
	psc_fab_first_cost_words(line, sizeof(line));
	if (line[0])
		psc_log(PSC_LOG_INFO, c->ch.rank, "startup: %s", line);
}

/* Report an init failure on stderr-level log and free c. */
static int init_fail(struct ps_comm *c, int rc)
{
	struct psc_chan ch = c->ch;

	psc_log(PSC_LOG_ERROR, c->ch.rank, "ps_comm_init failed: %s: %s",
		ps_comm_strerror(rc), c->last_error);
	psc_comm_free(c);
	psc_chan_release(&ch);
	return rc;
}

int ps_comm_init(ps_comm_t *comm, const ps_comm_attr_t *attr)
{
	struct ps_comm *c;
	char err[256];
	int rc;

	if (!comm)
		return PS_COMM_ERR_ARG;
	*comm = NULL;
	if (attr && attr->attr_size < offsetof(ps_comm_attr_t, bootstrap))
		return PS_COMM_ERR_ARG;
	psc_log_setup();
	c = calloc(1, sizeof(*c));
	if (!c)
		return PS_COMM_ERR_NOMEM;
	c->magic = PSC_COMM_MAGIC;
	c->ch.rank = -1;
	if (psc_params_load(&c->params, err, sizeof(err)) != 0) {
		psc_comm_set_error(c, "%s", err);
		return init_fail(c, PS_COMM_ERR_CONFIG);
	}
	c->op_timeout = c->params.op_timeout;
	rc = check_fi_version(c);
	if (!rc)
		rc = psc_comm_bootstrap(c, attr, NULL);
	if (rc)
		return init_fail(c, rc);
	log_settings(c);
	*comm = c;
	return 0;
}

static bool all_done(void *arg)
{
	ps_comm_request_t *r = arg;

	return psc_req_settled(r[0]) && psc_req_settled(r[1]);
}

/*
 * A dissemination barrier on the control protocol, so no rank closes its
 * endpoint while a peer may still be talking to it. Returns 0 or an
 * internal code.
 *
 * The receives decide: once every round's receive has arrived, every
 * rank has entered the barrier. A send that the provider then fails is
 * no failure of this rank's finalize: its peer may have got the message,
 * finished and exited before the provider's own completion (the sockets
 * provider reports EIO then, 1 run in about 50), and a peer that did not
 * get it fails its own receive.
 */
static int finalize_barrier(struct ps_comm *c, double deadline)
{
	struct psc_chan *ch = &c->ch;
	char err[256];

	for (int k = 1, round = 0; k < ch->size; k <<= 1, round++) {
		ps_comm_request_t r[2] = {NULL, NULL};
		int rc = psc_irecv(ch, PSC_PROTO_CTRL, NULL, 0,
				   (ch->rank - k + ch->size) % ch->size, round,
				   &r[0], err, sizeof(err));

		if (!rc)
			rc = psc_isend(ch, PSC_PROTO_CTRL, NULL, 0,
				       (ch->rank + k) % ch->size,
				       (uint32_t)round, &r[1], err,
				       sizeof(err));
		if (!rc && psc_ep_wait(ch->ep, all_done, r, deadline) != 0)
			rc = -ETIMEDOUT;
		if (r[0] && !rc)
			rc = psc_wait(&r[0], NULL, deadline, NULL);
		else if (r[0])
			psc_wait(&r[0], NULL, psc_now(), NULL);
		/* Settled above (or failed posting): its result is dropped. */
		if (r[1])
			psc_wait(&r[1], NULL, psc_now(), NULL);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * Collective, but never waits for a dead peer: a failed communicator
 * skips the barrier, and a peer that dies during it fails it at once.
 * Then the world's ranks leave the liveness star in good order.
 */
int ps_comm_finalize(ps_comm_t c)
{
	struct psc_chan ch;
	struct psc_ep *ep;
	bool failed;
	int rc = 0;

	if (!psc_comm_ok(c))
		return PS_COMM_ERR_ARG;
	ep = c->ch.ep;
	failed = psc_comm_failed(c);
	if (!failed && c->ch.size > 1) {
		rc = finalize_barrier(c, psc_comm_op_deadline(c));
		rc = rc ? psc_comm_failure(c, rc) : 0;
		if (rc)
			psc_log(PSC_LOG_WARN, c->ch.rank, "finalize: barrier "
				"failed (%s: %s); closing anyway",
				ps_comm_strerror(rc), c->last_error);
	}
	/*
	 * Only the world's own communicator leaves the star; a failed one
	 * too once its survivors rebuilt a world, so that their leaving is
	 * no death to the others, still rebuilding.
	 */
	if (((!failed && !rc) || c->rebuilt) && c->owns_live)
		psc_live_leave(c->live);
	psc_ep_cancel_owner(ep, &c->ch, -FI_ECANCELED);
	ch = c->ch;
	psc_comm_free(c);
	psc_chan_release(&ch);
	/* The job's collectives are over: return their cached scratch. */
	psc_scratch_drain();
	return rc;
}

int ps_comm_abort(ps_comm_t c, int err)
{
	char words[160];

	if (!psc_comm_ok(c))
		return PS_COMM_ERR_ARG;
	psc_chan_abort(&c->ch);
	/*
	 * Fail our own side first: once the others know, they may finish
	 * and exit, and their exit must not reach this rank as a death.
	 */
	snprintf(words, sizeof(words), "this rank called ps_comm_abort(%d: "
		 "%s)", err, ps_comm_strerror(err));
	psc_ep_fail_owner(c->ch.ep, &c->ch, -ESHUTDOWN, words);
	snprintf(words, sizeof(words), "ps_comm_abort(%d: %s)", err,
		 ps_comm_strerror(err));
	if (c->live)
		psc_live_abort(c->live, c->ch.ctx, words);
	psc_ep_cancel_owner(c->ch.ep, &c->ch, -ESHUTDOWN);
	return 0;
}

int ps_comm_rank(ps_comm_t c, int *rank)
{
	if (!psc_comm_ok(c) || !rank)
		return PS_COMM_ERR_ARG;
	*rank = c->ch.rank;
	return 0;
}

int ps_comm_size(ps_comm_t c, int *size)
{
	if (!psc_comm_ok(c) || !size)
		return PS_COMM_ERR_ARG;
	*size = c->ch.size;
	return 0;
}

int ps_comm_provider_name(ps_comm_t c, const char **name)
{
	if (!psc_comm_ok(c) || !name)
		return PS_COMM_ERR_ARG;
	*name = c->provider;
	return 0;
}

int ps_comm_tag_ub(ps_comm_t c, int *tag_ub)
{
	if (!psc_comm_ok(c) || !tag_ub)
		return PS_COMM_ERR_ARG;
	*tag_ub = c->ch.tl.tag_ub;
	return 0;
}

int ps_comm_last_error(ps_comm_t c, char *buf, size_t len)
{
	if (!psc_comm_ok(c) || !buf || !len)
		return PS_COMM_ERR_ARG;
	snprintf(buf, len, "%s", c->last_error);
	return 0;
}
