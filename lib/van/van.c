/*
 * The van: node-id-keyed messaging for ps-lite-style parameter servers,
 * built on a pscomm endpoint of its own and the usual progress engine.
 * A van owns an internal communicator (context 0) whose peers are not
 * ranks but node ids, added one at a time as connect fetches their
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

#include "provider.h"
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

int psc_van_send(struct ps_comm_van *v, unsigned proto, const void *buf,
		 size_t len, const struct van_peer *p, uint32_t tag,
		 ps_comm_request_t *req)
{
	char err[256];

	return van_posted(psc_isend_path(&v->comm.ch, &v->comm.ch.path[p->path],
					 proto, buf, len, p->addr, p->slot,
					 tag, req, err, sizeof(err)),
			  err);
}

int psc_van_recv(struct ps_comm_van *v, unsigned proto, void *buf,
		 size_t len, int peer, int64_t tag, ps_comm_request_t *req)
{
	char err[256];

	return van_posted(psc_irecv(&v->comm.ch, proto, buf, len, peer, tag,
				    req, err, sizeof(err)),
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
	if (psc_params_load(&v->comm.params, err, sizeof(err)) != 0 ||
	    psc_auth_key_load(&v->key, v->comm.params.job_key, err,
			      sizeof(err)) != 0 ||
	    /*
	     * PS_COMM_WAIT: the receiving thread idles beside ps-lite's own
	     * threads, so counting no ranks, auto keeps the wait object.
	     */
	    psc_wait_policy(v->comm.params.wait, 0, 0, &v->poll_wait, err,
			    sizeof(err)) != 0) {
		psc_log(PSC_LOG_ERROR, -1, "van: %s", err);
		free(v);
		return PS_COMM_ERR_CONFIG;
	}
	pthread_mutex_init(&v->lock, NULL);
	v->comm.ch.rank = -1;
	v->comm.op_timeout = v->comm.params.op_timeout;
	v->my_id = PS_COMM_VAN_NO_ID;
	v->next_slot = 1;
	v->magic = PSC_VAN_HANDLE_MAGIC;
	*out = v;
	return 0;
}

const char *ps_comm_van_provider(ps_comm_van_t v)
{
	return psc_van_ok(v) ? v->comm.provider : "";
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
	const char *ifname = v->comm.params.ifname;
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

/*
 * Open v's endpoints for cfg, as communicators reach their peers
 * (psc_provider_fabrics): the one provider FI_PROVIDER names for every
 * node; with PS_COMM_INTRA=net the best network provider for every
 * node; otherwise a pair, shm to the nodes of this node and the best
 * network provider to the others (either may be missing). The van sends
 * a large message's chunks without waiting for a go-ahead (its peers
 * are keyed by node, not by rank), so where pscomm chooses, it skips
 * providers that stall behind such chunks. Binds v's channel. Returns 0
 * or an internal code (-EINVAL: PS_COMM_INTRA) with words in err.
 */
static int van_open(struct ps_comm_van *v, struct psc_fab_config *cfg,
		    char *err, size_t len)
{
	struct psc_ep *net = NULL, *shm = NULL;
	enum psc_fabrics f;
	bool ignored;
	int rc;

	rc = psc_provider_fabrics(getenv("FI_PROVIDER"), v->comm.params.intra,
				  &f, &ignored, err, len);
	if (rc)
		return rc;
	if (f == PSC_FABRICS_ONE) {
		rc = psc_ep_acquire_exclusive(&net, cfg, err, len);
	} else if (f == PSC_FABRICS_NET) {
		cfg->role = PSC_ROLE_NET;
		cfg->eager_chunks = true;
		rc = psc_ep_acquire_exclusive(&net, cfg, err, len);
	} else {
		cfg->eager_chunks = true;
		rc = psc_ep_acquire_pair_exclusive(&net, &shm, cfg, err, len);
		if (!net) {
			net = shm;
			shm = NULL;
		}
	}
	if (rc)
		return rc;
	psc_chan_bind(&v->comm.ch, net, shm);
	psc_node_id(v->comm.params.node_id, "net", v->node, sizeof(v->node));
	return 0;
}

/* Close what van_open opened. */
static void van_close(struct ps_comm_van *v)
{
	psc_chan_release(&v->comm.ch);
	v->comm.ch.ep = NULL;
	v->comm.ch.npaths = 0;
}

/*
 * Fill what v serves: its network (or only) endpoint's provider and
 * address, and with a pair this node's identity and the shm address.
 */
static void van_served(struct ps_comm_van *v, struct psc_van_served *what)
{
	memset(what, 0, sizeof(*what));
	what->key = &v->key;
	what->provider = v->comm.provider;
	what->name = psc_ep_name(v->comm.ch.ep, &what->namelen);
	if (v->comm.ch.npaths == 2) {
		what->node = v->node;
		what->shm = psc_ep_name(v->comm.ch.path[1].ep, &what->shmlen);
	}
	what->next_slot = &v->next_slot;
	what->unauth_max = v->comm.params.unauth_max;
}

int ps_comm_van_bind(ps_comm_van_t v, const char *host, int port,
		     int max_retry, int *bound)
{
	struct psc_fab_config cfg = {.rank = -1, .role = PSC_ROLE_ANY};
	struct psc_van_served what;
	struct sockaddr_storage at;
	struct psc_iface iface;
	double cpu = psc_thread_cpu(), first, wall;
	bool have_iface, had_first = psc_fab_first_cost(&first, &wall);
	socklen_t atlen;
	char err[1024];
	int rc;

	if (!psc_van_ok(v) || !bound || port < 0 || port > 65535 ||
	    max_retry < 0 || v->bound)
		return PS_COMM_ERR_ARG;
	cfg.params = &v->comm.params;
	rc = van_place(v, host, &iface, &have_iface, &at, &atlen, err,
		       sizeof(err));
	if (rc) {
		psc_log(PSC_LOG_ERROR, -1, "van: %s", err);
		return rc == -EINVAL ? PS_COMM_ERR_ARG
				     : psc_err_public(rc, PSC_ERR_OPEN);
	}
	if (have_iface)
		cfg.iface = &iface;
	cfg.poll_wait = v->poll_wait;
	cfg.universe = van_universe();
	rc = van_open(v, &cfg, err, sizeof(err));
	if (rc) {
		psc_log(PSC_LOG_ERROR, -1, "van: %s", err);
		return rc == -EINVAL ? PS_COMM_ERR_CONFIG
				     : psc_err_public(rc, PSC_ERR_OPEN);
	}
	v->comm.ch.ctx = 0;
	/*
	 * PS_COMM_SPIN_US's automatic value (-1) counts a job's ranks, which
	 * a van does not know: ps-lite jobs often put scheduler, servers and
	 * workers on one host, so do not spin unless a value is set. The
	 * receiving thread waits beside ps-lite's busy sending and app
	 * threads: sends in flight do not keep it yielding (a lean wait).
	 */
	for (int i = 0; i < v->comm.ch.npaths; i++) {
		struct psc_ep *ep = v->comm.ch.path[i].ep;

		if (psc_ep_spin(ep) < 0)
			psc_ep_set_spin(ep, 0);
		psc_ep_set_lean_wait(ep, true);
	}
	/* A frame is one message on either path (the smaller single). */
	v->frame_limit = psc_ep_single_limit(v->comm.ch.ep);
	if (v->comm.ch.npaths == 2)
		v->frame_limit = PSC_MIN(v->frame_limit,
					 v->comm.ch.path[1].single);
	v->frame_limit = PSC_MIN(PSC_MAX(v->frame_limit,
					 (size_t)PSC_VAN_FRAME_MIN),
				 (size_t)PSC_VAN_FRAME_MAX);
	snprintf(v->comm.provider, sizeof(v->comm.provider), "%s",
		 psc_ep_provider(v->comm.ch.ep));
	rc = psc_van_watch_start(v);
	if (rc) {
		van_close(v);
		return rc;
	}
	van_served(v, &what);
	rc = psc_van_serve(&v->server, &at, atlen, port, max_retry > 0,
			   v->comm.params.port_range, &what, bound, err,
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
	v->comm.ch.aborted = false;
	v->bound = true;
	cpu = psc_thread_cpu() - cpu;
	if (had_first || !psc_fab_first_cost(&first, &wall))
		first = 0;
	psc_log(PSC_LOG_INFO, -1, "van: bound in %.1f ms of CPU, %.1f ms of it "
		"libfabric's first fi_getinfo", cpu * 1e3, first * 1e3);
	psc_log(PSC_LOG_INFO, -1, "van: provider %s%s%s%s, address served on "
		"port %d", v->comm.provider,
		v->comm.ch.npaths == 2 ? ", and " : "",
		v->comm.ch.npaths == 2 ? psc_ep_provider(v->comm.ch.path[1].ep)
				       : "",
		v->comm.ch.npaths == 2 ? " to the nodes of this node" : "",
		*bound);
	/*
	 * The van sends a large message's chunks without waiting for a
	 * go-ahead (its peers are keyed by node, not by rank), which such a
	 * provider does not keep when they arrive first; its profile says
	 * what to use instead.
	 */
	if (psc_ep_caps(v->comm.ch.ep)->chunks_wait) {
		const char *advice =
			psc_provider_lookup(v->comm.provider)->van_advice;

		psc_log(PSC_LOG_WARN, -1, "van: provider %s stops a connection "
			"behind a message that arrives before its receive%s%s",
			v->comm.provider, advice ? "; " : "",
			advice ? advice : "");
	}
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

	while (psc_ep_wait(v->comm.ch.ep, no_pending, v,
			   PSC_MIN(end, psc_now() + PROBE_SEC)) != 0) {
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
		    p->addr == FI_ADDR_NOTAVAIL ||
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
	if (v->comm.op_timeout > 0 && v->comm.op_timeout < drain)
		drain = v->comm.op_timeout;
	rc = drain_sends(v, drain);
	psc_van_unserve(v->server);
	v->server = NULL;
	if (v->frame_req)
		psc_req_cancel(&v->frame_req);
	psc_van_take_local(v);
	psc_van_drop_inflight(v);
	/* Cancel what is left; the buffers are free once the ep is closed. */
	for (b = v->pending; b; b = b->next)
		for (size_t i = 0; i < b->n; i++)
			if (b->reqs[i] && psc_req_done(b->reqs[i])) {
				psc_van_wait(&b->reqs[i], NULL, 0);
			} else if (b->reqs[i]) {
				psc_req_cancel(&b->reqs[i]);
				b->err = PS_COMM_ERR_CANCELED;
			}
	/*
	 * Where closing the endpoint can crash inside the provider, leave it
	 * open to the process's exit (psc_ep_poison: released, never
	 * closed); a van stops once, at the end of a ps-lite node.
	 */
	for (int i = 0; i < v->comm.ch.npaths; i++)
		if (psc_ep_caps(v->comm.ch.path[i].ep)->stop_unclosed)
			psc_ep_poison(v->comm.ch.path[i].ep);
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
	v->comm.provider[0] = '\0';
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

