/*
 * The van: node-id-keyed messaging for ps-lite-style parameter servers,
 * on a node-addressed channel of p2p (p2p/node.h) whose peers are not
 * ranks but nodes, added one at a time as connect fetches their
 * addresses. A send posts a frame and its pieces under the destination's
 * lock and returns; the buffers go back to the caller through a callback
 * once the fabric is done with them (reaped by whichever thread is in a
 * van call, usually the receiving one). A receive takes the next frame
 * from any sender, then one buffer per piece, handed out as is (and kept
 * for reuse once given back: see buf.c).
 *
 * This file creates, binds, stops and destroys a van, and wraps the p2p
 * calls the other modules make; peer.c, send.c and recv.c hold the rest
 * (state_int.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "state_int.h"

int psc_van_wait(ps_comm_request_t *req, ps_comm_status_t *st,
		 double deadline)
{
	int rc = psc_wait(req, st, deadline, NULL);

	if (st)
		st->error = psc_err_from_fi(st->error);
	return psc_err_from_fi(rc);
}

/* A post's result rc, with its words err, for the van's callers. */
static int van_posted(int rc, const char *err)
{
	if (rc && rc != -ESHUTDOWN)
		psc_log(PSC_LOG_DEBUG, -1, "van: %s", err);
	return psc_err_from_fi(rc);
}

int psc_van_send(struct ps_comm_van *v, const void *buf, size_t len,
		 const struct van_peer *p, uint32_t tag,
		 ps_comm_request_t *req)
{
	char err[256];

	return van_posted(psc_node_chan_send(v->chan, &p->at, p->slot, tag, buf,
					     len, req, err, sizeof(err)),
			  err);
}

int psc_van_recv(struct ps_comm_van *v, void *buf, size_t len, int peer,
		 int64_t tag, ps_comm_request_t *req)
{
	char err[256];

	return van_posted(psc_node_chan_recv(v->chan, peer, tag, buf, len, req,
					     err, sizeof(err)),
			  err);
}

void ps_comm_van_msg_release(ps_comm_van_msg_t *msg)
{
	if (!msg)
		return;
	for (size_t i = 0; i < msg->nseg; i++)
		ps_comm_van_free(msg->segs[i].data);
	ps_comm_van_free(msg->segs);
	ps_comm_van_free(msg->meta);
	memset(msg, 0, sizeof(*msg));
	msg->sender = PS_COMM_VAN_NO_ID;
}

int ps_comm_van_create(ps_comm_van_t *out)
{
	struct ps_comm_van *v;
	char err[256];

	if (!out)
		return PS_COMM_ERR_ARG;
	*out = NULL;
	psc_log_setup();
	v = calloc(1, sizeof(*v));
	if (!v)
		return PS_COMM_ERR_NOMEM;
	if (psc_params_load(&v->params, err, sizeof(err)) != 0 ||
	    psc_auth_key_load(&v->key, v->params.job_key, err,
			      sizeof(err)) != 0 ||
	    /*
	     * PS_COMM_WAIT: the receiving thread idles beside ps-lite's own
	     * threads, so counting no ranks, auto keeps the wait object.
	     */
	    psc_wait_policy(v->params.wait, 0, 0, &v->poll_wait, err,
			    sizeof(err)) != 0) {
		psc_log(PSC_LOG_ERROR, -1, "van: %s", err);
		free(v);
		return PS_COMM_ERR_CONFIG;
	}
	pthread_mutex_init(&v->lock, NULL);
	v->my_id = PS_COMM_VAN_NO_ID;
	v->next_slot = 1;
	v->magic = PSC_VAN_HANDLE_MAGIC;
	*out = v;
	return 0;
}

const char *ps_comm_van_provider(ps_comm_van_t v)
{
	return psc_van_ok(v) ? v->provider : "";
}

int ps_comm_van_set_id(ps_comm_van_t v, int node_id)
{
	if (!psc_van_ok(v) || node_id < PS_COMM_VAN_NO_ID)
		return PS_COMM_ERR_ARG;
	__atomic_store_n(&v->my_id, node_id, __ATOMIC_RELAXED);
	return 0;
}

/* Whether ss is the wildcard address of its family. */
static bool is_wildcard(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(
			&((const struct sockaddr_in6 *)ss)->sin6_addr);
	return ((const struct sockaddr_in *)ss)->sin_addr.s_addr ==
	       htonl(INADDR_ANY);
}

/*
 * Where a node listens (at, port 0) and the interface its endpoint takes
 * (iface, when *have_iface). No port listens wider than asked:
 * - host NULL, "" or "*": the interface pscomm chooses (PS_COMM_IFNAME),
 *   and the van listens on its address only;
 * - a wildcard address ("0.0.0.0", "::"): every address, as asked, with
 *   the endpoint on pscomm's interface;
 * - any other host: its address only (which must be this machine's, or
 *   the listen fails), with the endpoint on the interface that holds it.
 * Returns 0, or -EINVAL with err naming host, or what choosing the
 * interface returned.
 */
static int van_place(const struct ps_comm_van *v, const char *host,
		     struct psc_iface *iface, bool *have_iface,
		     struct sockaddr_storage *at, socklen_t *atlen,
		     char *err, size_t len)
{
	const char *ifname = v->params.ifname;
	struct psc_hostport hp;
	char why[512];
	int rc;

	*have_iface = false;
	if (!host || !*host || strcmp(host, "*") == 0) {
		rc = psc_iface_choose(ifname, NULL, AF_UNSPEC, iface, err, len);
		if (rc)
			return rc;
		*have_iface = true;
		memcpy(at, &iface->addr, iface->addrlen);
		*atlen = iface->addrlen;
		return 0;
	}
	memset(&hp, 0, sizeof(hp));
	if (strlen(host) >= sizeof(hp.host)) {
		snprintf(err, len, "host is %zu characters long, more than "
			 "%zu", strlen(host), sizeof(hp.host) - 1);
		return -EINVAL;
	}
	snprintf(hp.host, sizeof(hp.host), "%s", host);
	if (psc_resolve(&hp, at, atlen, why, sizeof(why)) != 0) {
		snprintf(err, len, "host: %s", why);
		return -EINVAL;
	}
	*have_iface = psc_iface_choose(ifname,
				       is_wildcard(at) ? NULL
						       : (struct sockaddr *)at,
				       AF_UNSPEC, iface, why, sizeof(why)) == 0;
	return 0;
}

/*
 * The nodes of a ps-lite job, from the variables every ps-lite node is
 * started with (DMLC_NUM_WORKER and DMLC_NUM_SERVER, plus the
 * scheduler), to size libfabric's per-peer structures (FI_UNIVERSE_SIZE)
 * as ps_comm_init does from the job size; 0 when either is missing or not
 * a count, which leaves libfabric's default.
 */
static int van_universe(void)
{
	const char *names[] = {"DMLC_NUM_WORKER", "DMLC_NUM_SERVER"};
	long n = 1;

	for (size_t i = 0; i < PSC_ARRAY_SIZE(names); i++) {
		const char *v = getenv(names[i]);
		char *end;
		long k;

		if (!v || !*v)
			return 0;
		errno = 0;
		k = strtol(v, &end, 10);
		if (errno || *end || k < 1 || k > 1000000)
			return 0;
		n += k;
	}
	return (int)n;
}

/* Close v's channel (bind's failure paths and stop). */
static void van_close(struct ps_comm_van *v)
{
	psc_node_chan_close(v->chan);
	v->chan = NULL;
	v->provider[0] = '\0';
}

int ps_comm_van_bind(ps_comm_van_t v, const char *host, int port,
		     int max_retry, int *bound)
{
	struct psc_node_chan_config cfg = {.iface = NULL};
	struct psc_van_served what;
	struct sockaddr_storage at;
	struct psc_iface iface;
	double cpu = psc_thread_cpu(), first, wall;
	bool have_iface, had_first = psc_fab_first_cost(&first, &wall);
	socklen_t atlen;
	char err[1024], fabrics[160];
	int rc;

	if (!psc_van_ok(v) || !bound || port < 0 || port > 65535 ||
	    max_retry < 0 || v->bound)
		return PS_COMM_ERR_ARG;
	rc = van_place(v, host, &iface, &have_iface, &at, &atlen, err,
		       sizeof(err));
	if (rc) {
		psc_log(PSC_LOG_ERROR, -1, "van: %s", err);
		return rc == -EINVAL ? PS_COMM_ERR_ARG
				     : psc_err_public(rc, PSC_ERR_OPEN);
	}
	cfg.params = &v->params;
	cfg.iface = have_iface ? &iface : NULL;
	cfg.poll_wait = v->poll_wait;
	cfg.universe = van_universe();
	rc = psc_node_chan_open(&v->chan, &cfg, err, sizeof(err));
	if (rc) {
		psc_log(PSC_LOG_ERROR, -1, "van: %s", err);
		return rc == -EINVAL ? PS_COMM_ERR_CONFIG
				     : psc_err_public(rc, PSC_ERR_OPEN);
	}
	/* A frame is one message on every path. */
	v->frame_limit = PSC_MIN(PSC_MAX(psc_node_chan_single(v->chan),
					 (size_t)PSC_VAN_FRAME_MIN),
				 (size_t)PSC_VAN_FRAME_MAX);
	psc_van_credit_init(v);
	snprintf(v->provider, sizeof(v->provider), "%s",
		 psc_node_chan_provider(v->chan));
	rc = psc_van_watch_start(v);
	if (rc) {
		van_close(v);
		return rc;
	}
	what.key = &v->key;
	psc_node_chan_names(v->chan, &what.names);
	what.chan = v->chan;
	what.next_slot = &v->next_slot;
	what.unauth_max = v->params.unauth_max;
	rc = psc_van_serve(&v->server, &at, atlen, port, max_retry > 0,
			   v->params.port_range, &what, bound, err,
			   sizeof(err));
	if (rc) {
		psc_log(PSC_LOG_ERROR, -1, "van: %s%s%s", err,
			rc == -EADDRNOTAVAIL ? "; host must be one of this "
					       "machine's addresses: "
					     : "",
			rc == -EADDRNOTAVAIL && host ? host : "");
		psc_van_watch_stop(v);
		van_close(v);
		return rc == -EADDRNOTAVAIL ? PS_COMM_ERR_ARG
					    : psc_err_from_fi(rc);
	}
	v->bound = true;
	cpu = psc_thread_cpu() - cpu;
	if (had_first || !psc_fab_first_cost(&first, &wall))
		first = 0;
	psc_log(PSC_LOG_INFO, -1, "van: bound in %.1f ms of CPU, %.1f ms of it "
		"libfabric's first fi_getinfo", cpu * 1e3, first * 1e3);
	psc_node_chan_describe(v->chan, fabrics, sizeof(fabrics));
	psc_log(PSC_LOG_INFO, -1, "van: provider %s, address served on port "
		"%d", fabrics, *bound);
	return 0;
}

/* ------------------------------------------------------------- stop */

/* No send left to wait for: all finished, or their nodes failed. */
static bool no_pending(void *arg)
{
	struct ps_comm_van *v = arg;
	bool none = true;

	pthread_mutex_lock(&v->lock);
	for (struct van_batch *b = v->pending; none && b; b = b->next)
		none = psc_van_batch_done(b) || (b->peer && b->peer->failed);
	pthread_mutex_unlock(&v->lock);
	return none;
}

/*
 * Let outstanding sends finish for at most drain seconds, probing the
 * nodes that hold them every PROBE_SEC, so that sends to a node that is
 * gone do not hold stop up. Returns 0 or PS_COMM_ERR_TIMEOUT.
 */
static int drain_sends(struct ps_comm_van *v, double drain)
{
	double end = psc_now() + drain;

	while (!psc_node_chan_wait(v->chan, no_pending, v,
				   PSC_MIN(end, psc_now() + PROBE_SEC))) {
		if (psc_now() >= end) {
			psc_log(PSC_LOG_WARN, -1, "van: stop cancels sends that "
				"did not finish within %g s", drain);
			return PS_COMM_ERR_TIMEOUT;
		}
		psc_van_probe_silent(v, true);
	}
	return 0;
}

/*
 * Send a goodbye frame to every node that sent to this van (only those
 * probe it), which drain_sends then waits for like any send: nodes that
 * stay on must not take this van's departure for a failure. Stop only,
 * after the receiving thread left (peers and senders are fixed).
 */
static void say_bye(struct ps_comm_van *v)
{
	for (size_t i = 0; i < v->npeers; i++) {
		struct van_peer *p = v->peers[i];
		struct van_batch *b;
		bool inl;
		size_t flen;

		if (p->self || psc_van_peer_failed(p) || psc_van_peer_left(p) ||
		    p->at.addr == PSC_NODE_NO_ADDR ||
		    psc_van_sender_seen(v, p->id) == 0)
			continue;
		b = psc_van_batch_new(v, NULL, 0, NULL, 0, &flen, &inl);
		if (!b)
			return; /* its peers then see a failure: no worse */
		psc_van_frame_set_bye(b->frame);
		b->bye = true;
		b->err = psc_van_post_batch(v, p, b, flen, NULL, 0, inl, NULL,
					    0);
		psc_van_queue_batch(v, b);
	}
}

int ps_comm_van_stop(ps_comm_van_t v)
{
	double drain = DRAIN_MAX_SEC;
	struct van_batch *b;
	int rc;

	if (!psc_van_ok(v))
		return PS_COMM_ERR_ARG;
	if (!v->bound)
		return 0;
	/* A thread inside ps_comm_van_recv returns PS_COMM_ERR_CANCELED. */
	__atomic_store_n(&v->stopping, true, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&v->in_recv, __ATOMIC_SEQ_CST) > 0)
		psc_backoff_sleep(1e-3, 1e-3, 0, false, 0);
	say_bye(v);
	if (v->params.op_timeout > 0 && v->params.op_timeout < drain)
		drain = v->params.op_timeout;
	rc = drain_sends(v, drain);
	psc_van_unserve(v->server);
	v->server = NULL;
	if (v->frame_req)
		psc_req_cancel(&v->frame_req);
	psc_van_take_local(v);
	psc_van_drop_inflight(v);
	for (size_t i = 0; i < v->npeers; i++)
		psc_van_credit_drop(v, v->peers[i]);
	if (v->credit_sent || v->credit_recvd)
		psc_log(PSC_LOG_INFO, -1, "van: %lu segments sent and %lu "
			"received on credit, without the go-ahead",
			v->credit_sent, v->credit_recvd);
	v->credit_sent = 0;
	v->credit_recvd = 0;
	/* Cancel what is left; the buffers are free once the ep is closed. */
	for (b = v->pending; b; b = b->next)
		for (size_t i = 0; i < b->n; i++)
			if (b->reqs[i] && psc_req_done(b->reqs[i])) {
				psc_van_wait(&b->reqs[i], NULL, 0);
			} else if (b->reqs[i]) {
				psc_req_cancel(&b->reqs[i]);
				b->err = PS_COMM_ERR_CANCELED;
			}
	psc_van_watch_stop(v);
	van_close(v);
	while ((b = v->pending) != NULL) {
		v->pending = b->next;
		b->n = 0; /* requests went with the endpoint */
		b->peer = NULL;
		psc_van_batch_finish(v, b, 0);
	}
	for (size_t i = 0; i < v->npeers; i++) {
		pthread_mutex_destroy(&v->peers[i]->send_lock);
		free(v->peers[i]);
	}
	v->npeers = 0;
	v->nsenders = 0;
	__atomic_store_n(&v->bound, false, __ATOMIC_RELEASE);
	__atomic_store_n(&v->stopping, false, __ATOMIC_SEQ_CST);
	return rc;
}

void ps_comm_van_destroy(ps_comm_van_t v)
{
	if (!psc_van_ok(v))
		return;
	ps_comm_van_stop(v);
	free(v->peers);
	free(v->senders);
	pthread_mutex_destroy(&v->lock);
	psc_magic_clear(&v->magic);
	free(v);
}

