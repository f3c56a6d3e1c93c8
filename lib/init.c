/*
 * Communicator lifetime: init (parameters, logging, the libfabric version
 * check, bootstrap), finalize (a barrier while progressing, cancel what is
 * left, then close in order), abort, and the small accessors.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "psc.h"

#define STR2(x) #x
#define STR(x) STR2(x)

const char *ps_comm_version(void)
{
	return STR(PS_COMM_VERSION_MAJOR) "." STR(PS_COMM_VERSION_MINOR) "."
		STR(PS_COMM_VERSION_PATCH);
}

void psc_comm_set_error(struct ps_comm *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->last_error, sizeof(c->last_error), fmt, ap);
	va_end(ap);
}

double psc_comm_op_deadline(const struct ps_comm *c)
{
	return c->op_timeout > 0 ? psc_now() + c->op_timeout : 0;
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
	uint32_t run = fi_version();
	uint32_t built = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);

	if (run >= built)
		return 0;
	psc_comm_set_error(c, "libfabric %u.%u found at run time, but pscomm "
			   "was built against %u.%u: install a newer libfabric "
			   "or fix LD_LIBRARY_PATH", FI_MAJOR(run),
			   FI_MINOR(run), FI_MAJOR(built), FI_MINOR(built));
	return PS_COMM_ERR_VERSION;
}

/* Log pscomm's version and every setting in effect, at info level. */
static void log_settings(const struct ps_comm *c)
{
	char line[1536], val[256];
	size_t used = 0;

	if (!psc_log_enabled(PSC_LOG_INFO))
		return;
	psc_log(PSC_LOG_INFO, c->rank, "pscomm %s on libfabric %u.%u, rank %d "
		"of %d, provider %s", ps_comm_version(),
		FI_MAJOR(fi_version()), FI_MINOR(fi_version()), c->rank,
		c->size, c->provider);
	line[0] = '\0';
	for (size_t i = 0; i < psc_param_count; i++) {
		psc_param_format(&c->params, &psc_param_table[i], val,
				 sizeof(val));
		if (strcmp(psc_param_table[i].name, "PS_COMM_JOB_KEY") == 0 &&
		    val[0])
			snprintf(val, sizeof(val), "(set)");
		used += (size_t)snprintf(line + PSC_MIN(used, sizeof(line)),
					 sizeof(line) - PSC_MIN(used, sizeof(line)),
					 "%s%s=%s", used ? " " : "",
					 psc_param_table[i].name, val);
	}
	psc_log(PSC_LOG_INFO, c->rank, "settings: %s", line);
	psc_topo_describe(line, sizeof(line));
	psc_log(PSC_LOG_INFO, c->rank, "placement: %s", line);
}

/* Report an init failure on stderr-level log and free c. */
static int init_fail(struct ps_comm *c, int rc)
{
	psc_log(PSC_LOG_ERROR, c->rank, "ps_comm_init failed: %s: %s",
		ps_comm_strerror(rc), c->last_error);
	psc_ep_release(c->ep);
	free(c->peers);
	free(c);
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
	c->rank = -1;
	if (psc_params_load(&c->params, err, sizeof(err)) != 0) {
		psc_comm_set_error(c, "%s", err);
		return init_fail(c, PS_COMM_ERR_CONFIG);
	}
	c->op_timeout = c->params.op_timeout;
	rc = check_fi_version(c);
	if (!rc)
		rc = psc_bootstrap(c, attr);
	if (rc)
		return init_fail(c, rc);
	log_settings(c);
	*comm = c;
	return 0;
}

static bool all_done(void *arg)
{
	ps_comm_request_t *r = arg;

	return psc_req_done(r[0]) && psc_req_done(r[1]);
}

/*
 * A dissemination barrier on the control protocol, so no rank closes its
 * endpoint while a peer may still be talking to it.
 */
static int finalize_barrier(struct ps_comm *c, double deadline)
{
	for (int k = 1, round = 0; k < c->size; k <<= 1, round++) {
		ps_comm_request_t r[2] = {NULL, NULL};
		int rc = psc_irecv(c, PSC_PROTO_CTRL, NULL, 0,
				   (c->rank - k + c->size) % c->size, round,
				   &r[0]);

		if (!rc)
			rc = psc_isend(c, PSC_PROTO_CTRL, NULL, 0,
				       (c->rank + k) % c->size,
				       (uint32_t)round, &r[1]);
		if (!rc && psc_ep_wait(c->ep, all_done, r, deadline) != 0)
			rc = PS_COMM_ERR_TIMEOUT;
		for (int i = 0; i < 2; i++)
			if (r[i] && !rc)
				rc = psc_wait(&r[i], NULL, deadline);
			else if (r[i])
				psc_wait(&r[i], NULL, psc_now());
		if (rc)
			return rc;
	}
	return 0;
}

/* Cancel everything still outstanding on c and mark it abandoned. */
static void cancel_all(struct ps_comm *c, int err)
{
	struct psc_ep *ep = c->ep;

	pthread_mutex_lock(&ep->lock);
	for (struct ps_comm_request *r = ep->live; r; r = r->live_next) {
		/* A collective fails through its cancelled pieces. */
		if (r->comm != c || r->parent || psc_req_done(r) ||
		    r->kind == PSC_REQ_COLL)
			continue;
		if (!r->status.error)
			r->status.error = err;
		if (r->kind == PSC_REQ_PARENT) {
			for (struct ps_comm_request *k = r->kids; k;
			     k = k->sibling)
				if (!psc_req_done(k))
					psc_ep_cancel(ep, k);
		} else {
			psc_ep_cancel(ep, r);
		}
	}
	psc_progress(ep);
	pthread_mutex_unlock(&ep->lock);
}

int ps_comm_finalize(ps_comm_t c)
{
	double deadline;
	int rc = 0;

	if (!c)
		return PS_COMM_ERR_ARG;
	deadline = psc_now() + (c->op_timeout > 0 ? c->op_timeout
						  : c->params.timeout);
	if (!c->aborted && c->size > 1) {
		rc = finalize_barrier(c, deadline);
		if (rc)
			psc_log(PSC_LOG_WARN, c->rank, "finalize: barrier "
				"failed (%s); closing anyway",
				ps_comm_strerror(rc));
	}
	cancel_all(c, PS_COMM_ERR_CANCELED);
	psc_ep_release(c->ep);
	free(c->peers);
	free(c);
	return rc;
}

int ps_comm_abort(ps_comm_t c)
{
	if (!c)
		return PS_COMM_ERR_ARG;
	pthread_mutex_lock(&c->ep->lock);
	c->aborted = true;
	pthread_mutex_unlock(&c->ep->lock);
	cancel_all(c, PS_COMM_ERR_ABORTED);
	return 0;
}

int ps_comm_rank(ps_comm_t c, int *rank)
{
	if (!c || !rank)
		return PS_COMM_ERR_ARG;
	*rank = c->rank;
	return 0;
}

int ps_comm_size(ps_comm_t c, int *size)
{
	if (!c || !size)
		return PS_COMM_ERR_ARG;
	*size = c->size;
	return 0;
}

int ps_comm_provider_name(ps_comm_t c, const char **name)
{
	if (!c || !name)
		return PS_COMM_ERR_ARG;
	*name = c->provider;
	return 0;
}

int ps_comm_tag_ub(ps_comm_t c, int *tag_ub)
{
	if (!c || !tag_ub)
		return PS_COMM_ERR_ARG;
	*tag_ub = c->ep->tl.tag_ub;
	return 0;
}

int ps_comm_last_error(ps_comm_t c, char *buf, size_t len)
{
	if (!c || !buf || !len)
		return PS_COMM_ERR_ARG;
	snprintf(buf, len, "%s", c->last_error);
	return 0;
}
