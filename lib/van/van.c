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
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ps_comm/van.h"
#include "van_int.h"
#include "util/copy.h"


/* How long stop lets outstanding sends finish before cancelling them. */
#define DRAIN_MAX_SEC 10.0
/* A blocked receive wakes this often to hand back finished sends. */
#define REAP_SEC 0.05
/* Messages whose pieces are being received at once, at most. */
#define PSC_VAN_MAX_INFLIGHT 64
/*
 * While a thread waits in ps_comm_van_recv, a node it may be waiting on
 * (probe_silent) that has been silent for PROBE_SEC is probed (its
 * address fetched again) once per PROBE_SEC, at most PROBE_MAX of them
 * per round; a probe waits at most PROBE_IO_SEC.
 */
#define PROBE_SEC 1.0
#define PROBE_IO_SEC 0.5
#define PROBE_MAX 8

struct van_peer {
	int id;
	pthread_mutex_t send_lock; /* one message's pieces at a time */
	fi_addr_t addr;		   /* under send_lock */
	uint32_t slot;		   /* under send_lock */
	uint8_t name[256];
	size_t namelen;
	char host[256];		   /* where its address is served */
	int port;
	bool self;		   /* this van's own address */
	/*
	 * Failure: 0, or the PS_COMM_ERR_* that ended the node (atomic; a
	 * connect clears it). Its words, under v->lock.
	 */
	int failed;
	char why[200];
	bool reported;		   /* recv told its caller: receiving thread */
	bool left;		   /* atomic: it said it stopped (PSC_VAN_F_BYE);
				      a connect clears it */
	double last_send;	   /* atomic (relaxed, as bits): last send */
	double alive;		   /* atomic (relaxed, as bits): connected,
				      or answered a probe */
	double probed;		   /* receiving thread: last probe */
	double unanswered;	   /* receiving thread: first probe that
				      went unanswered since it last showed
				      it lives */
};

/* The latest slot a sender id was seen from (receiving thread only). */
struct van_sender {
	int id;
	uint32_t slot;
	double seen; /* its last frame */
};

/* One message in flight. */
struct van_batch {
	struct van_batch *next;
	struct van_peer *peer;	 /* NULL: never connected */
	double deadline;	 /* 0: none (PS_COMM_OP_TIMEOUT) */
	uint8_t *frame;
	ps_comm_van_done_fn done;
	void *arg;
	int err;
	bool bye;		 /* a goodbye: its failure fails no node */
	bool *in_frame;		 /* per segment: carried by the frame */
	size_t n;
	ps_comm_request_t reqs[]; /* then in_frame's nseg bools */
};

struct ps_comm_van {
	pthread_mutex_t lock; /* peers, pending, bound */
	struct ps_comm comm;  /* ep, ctx 0, params; rank and peers unused */
	bool bound;
	bool poll_wait;	      /* PS_COMM_WAIT=poll: no CQ wait object */
	int my_id;	      /* atomic */
	struct psc_auth_key key; /* PS_COMM_JOB_KEY: fetches authenticate */
	uint32_t next_slot;   /* atomic: slots handed out so far + 1 */
	size_t frame_limit;   /* largest frame this van sends (set at bind) */
	struct psc_van_server *server;
	struct van_peer **peers;
	size_t npeers, cap;
	struct van_batch *pending;
	ps_comm_request_t frame_req;
	uint8_t frame_buf[PSC_VAN_FRAME_MAX];
	struct van_inflight *in_head, *in_tail; /* being received */
	size_t in_count;
	/* Messages to this van itself, under lock; local_n atomic. */
	struct van_inflight *local_head, *local_tail;
	unsigned local_n;
	struct van_sender *senders; /* receiving thread */
	size_t nsenders, senders_cap;
	size_t probe_next;	    /* where the next probe round starts */
	bool stopping;		    /* atomic: stop has begun */
	unsigned fail_gen;	    /* atomic: failures recorded so far */
	unsigned fail_seen;	    /* receiving thread: fail_gen looked at */
	int in_recv;		    /* atomic: threads in ps_comm_van_recv */
};

/*
 * The p2p and core calls the van makes, with their internal codes turned
 * into the PS_COMM_ERR_* values the van's callers get.
 */
static int van_wait(ps_comm_request_t *req, ps_comm_status_t *st,
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

static int van_send(struct ps_comm_van *v, unsigned proto, const void *buf,
		    size_t len, fi_addr_t addr, uint32_t src, uint32_t tag,
		    ps_comm_request_t *req)
{
	char err[256];

	return van_posted(psc_isend_to(&v->comm.ch, proto, buf, len, addr, src,
				       tag, req, err, sizeof(err)),
			  err);
}

static int van_recv(struct ps_comm_van *v, unsigned proto, void *buf,
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

/*
 * libinfinipath, which Debian's libfabric loads for its psm provider,
 * installs handlers for SIGINT, SIGTERM and the crash signals as it is
 * loaded; they print a backtrace and call exit(), which runs libfabric's
 * destructors while the van's threads are still inside it (a SIGTERM
 * then crashed in libfabric). The library's own switches
 * (IPATH_NO_BACKTRACE, HFI_NO_BACKTRACE) are read before any van exists,
 * so give these signals back the default action they had before it.
 */
static void drop_psm_handlers(void)
{
	static const int sigs[] = {SIGINT, SIGILL, SIGABRT, SIGBUS, SIGSEGV,
				   SIGTERM};

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction sa;
		void *fn;
		Dl_info di;

		if (sigaction(sigs[i], NULL, &sa) != 0)
			continue;
		fn = (sa.sa_flags & SA_SIGINFO) ? (void *)sa.sa_sigaction
						: (void *)sa.sa_handler;
		if (fn == (void *)SIG_DFL || fn == (void *)SIG_IGN ||
		    !dladdr(fn, &di) || !di.dli_fname ||
		    (!strstr(di.dli_fname, "libinfinipath") &&
		     !strstr(di.dli_fname, "libpsm")))
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		sigaction(sigs[i], &sa, NULL);
		psc_log(PSC_LOG_DEBUG, -1, "van: signal %d gets its default "
			"action back from %s", sigs[i], di.dli_fname);
	}
}

int ps_comm_van_create(ps_comm_van_t *out)
{
	struct ps_comm_van *v;
	char err[256];

	if (!out)
		return PS_COMM_ERR_ARG;
	*out = NULL;
	psc_log_setup();
	drop_psm_handlers();
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
	*out = v;
	return 0;
}

const char *ps_comm_van_provider(ps_comm_van_t v)
{
	return v ? v->comm.provider : "";
}

struct psc_ep *psc_van_ep(ps_comm_van_t v)
{
	return v->comm.ch.ep;
}

int ps_comm_van_set_id(ps_comm_van_t v, int node_id)
{
	if (!v || node_id < PS_COMM_VAN_NO_ID)
		return PS_COMM_ERR_ARG;
	__atomic_store_n(&v->my_id, node_id, __ATOMIC_RELAXED);
	return 0;
}

/* The interface holding host, for IP providers; false: no preference. */
static bool host_iface(const struct ps_comm_van *v, const char *host,
		       struct psc_iface *iface)
{
	struct sockaddr_storage ss;
	struct psc_hostport hp;
	socklen_t sl;
	char err[512];

	memset(&hp, 0, sizeof(hp));
	if (host && *host && strcmp(host, "*") != 0 &&
	    strlen(host) < sizeof(hp.host)) {
		snprintf(hp.host, sizeof(hp.host), "%s", host);
		if (psc_resolve(&hp, &ss, &sl, err, sizeof(err)) != 0)
			return false;
		return psc_iface_choose(v->comm.params.ifname,
					(struct sockaddr *)&ss, AF_UNSPEC,
					iface, err, sizeof(err)) == 0;
	}
	return psc_iface_choose(v->comm.params.ifname, NULL, AF_UNSPEC, iface,
				err, sizeof(err)) == 0;
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

int ps_comm_van_bind(ps_comm_van_t v, const char *host, int port,
		     int max_retry, int *bound)
{
	struct psc_ep_config cfg = {.params = &v->comm.params, .rank = -1,
				     .role = PSC_ROLE_ANY};
	struct psc_van_served what;
	struct psc_iface iface;
	struct psc_ep *ep;
	char err[1024];
	int rc;

	if (!v || !bound || port < 0 || port > 65535 || max_retry < 0 ||
	    v->bound)
		return PS_COMM_ERR_ARG;
	if (host_iface(v, host, &iface))
		cfg.iface = &iface;
	cfg.poll_wait = v->poll_wait;
	cfg.universe = van_universe();
	rc = psc_ep_acquire_exclusive(&ep, &cfg, err, sizeof(err));
	if (rc) {
		psc_log(PSC_LOG_ERROR, -1, "van: %s", err);
		return rc == -ENOMEM ? PS_COMM_ERR_NOMEM : PS_COMM_ERR_PROVIDER;
	}
	psc_chan_bind(&v->comm.ch, ep, NULL);
	v->comm.ch.ctx = 0;
	/*
	 * PS_COMM_SPIN_US's automatic value (-1) counts a job's ranks, which
	 * a van does not know: ps-lite jobs often put scheduler, servers and
	 * workers on one host, so do not spin unless a value is set. The
	 * receiving thread waits beside ps-lite's busy sending and app
	 * threads: sends in flight do not keep it yielding (a lean wait).
	 */
	if (psc_ep_spin(v->comm.ch.ep) < 0)
		psc_ep_set_spin(v->comm.ch.ep, 0);
	psc_ep_set_lean_wait(v->comm.ch.ep, true);
	v->frame_limit = PSC_MIN(PSC_MAX(psc_ep_single_limit(v->comm.ch.ep),
					 (size_t)PSC_VAN_FRAME_MIN),
				 (size_t)PSC_VAN_FRAME_MAX);
	snprintf(v->comm.provider, sizeof(v->comm.provider), "%s",
		 psc_ep_provider(v->comm.ch.ep));
	what.key = &v->key;
	what.provider = v->comm.provider;
	what.name = psc_ep_name(v->comm.ch.ep, &what.namelen);
	what.next_slot = &v->next_slot;
	what.unauth_max = v->comm.params.unauth_max;
	rc = psc_van_serve(&v->server, host, port, max_retry > 0,
			   v->comm.params.port_range, &what, bound, err,
			   sizeof(err));
	if (rc) {
		psc_log(PSC_LOG_ERROR, -1, "van: %s", err);
		psc_ep_release(v->comm.ch.ep);
		v->comm.ch.ep = NULL;
		return rc == -EADDRINUSE ? PS_COMM_ERR_SYSTEM
					 : psc_err_from_fi(rc);
	}
	v->comm.ch.aborted = false;
	v->bound = true;
	psc_log(PSC_LOG_INFO, -1, "van: provider %s, address served on port "
		"%d", v->comm.provider, *bound);
	/*
	 * The van sends a large message's chunks without waiting for a
	 * go-ahead (its peers are keyed by node, not by rank), which such a
	 * provider does not keep when they arrive first.
	 */
	if (psc_ep_caps(v->comm.ch.ep)->chunks_wait)
		psc_log(PSC_LOG_WARN, -1, "van: provider %s stops a connection "
			"behind a message that arrives before its receive; "
			"ps-lite's large transfers ran slower over it than "
			"over tcp;ofi_rxm (doc/pslite.md): FI_PROVIDER=tcp is "
			"the tested choice", v->comm.provider);
	return 0;
}

/* The peer with this id, or NULL. v->lock held. */
static struct van_peer *peer_find(struct ps_comm_van *v, int id)
{
	for (size_t i = 0; i < v->npeers; i++)
		if (v->peers[i]->id == id)
			return v->peers[i];
	return NULL;
}

/*
 * Make room in *arr (elements of size elem, *cap of them) for n + 1:
 * doubles it, from 16. Returns false when out of memory.
 */
static bool room_for_one(void **arr, size_t *cap, size_t n, size_t elem)
{
	size_t want = *cap ? 2 * *cap : 16;
	void *grown;

	if (n < *cap)
		return true;
	grown = realloc(*arr, want * elem);
	if (!grown)
		return false;
	*arr = grown;
	*cap = want;
	return true;
}

/* The peer with this id, created when new. v->lock held. */
static struct van_peer *peer_get(struct ps_comm_van *v, int id)
{
	struct van_peer *p = peer_find(v, id);

	if (p)
		return p;
	if (!room_for_one((void **)&v->peers, &v->cap, v->npeers,
			  sizeof(struct van_peer *)))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->id = id;
	p->addr = FI_ADDR_NOTAVAIL;
	pthread_mutex_init(&p->send_lock, NULL);
	v->peers[v->npeers++] = p;
	return p;
}

/* Node p's failure, 0 if none. */
static int peer_failed(const struct van_peer *p)
{
	return __atomic_load_n(&p->failed, __ATOMIC_ACQUIRE);
}

/*
 * Record once that node p failed with err, for why (a sentence part):
 * later sends to it fail at once, and ps_comm_van_recv reports it.
 */
static void peer_fail(struct ps_comm_van *v, struct van_peer *p, int err,
		      const char *why)
{
	bool first;

	pthread_mutex_lock(&v->lock);
	first = !p->failed;
	if (first) {
		snprintf(p->why, sizeof(p->why), "%s", why);
		p->reported = false;
		__atomic_store_n(&p->failed, err, __ATOMIC_RELEASE);
		__atomic_add_fetch(&v->fail_gen, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&v->lock);
	if (first)
		psc_log(PSC_LOG_ERROR, -1, "van: node %d at %s:%d failed: %s",
			p->id, p->host, p->port, why);
}

/* Whether node p said goodbye (stopped) since it was last connected. */
static bool peer_left(const struct van_peer *p)
{
	return __atomic_load_n(&p->left, __ATOMIC_ACQUIRE);
}

static double peer_last_send(const struct van_peer *p)
{
	double t;

	__atomic_load(&p->last_send, &t, __ATOMIC_RELAXED);
	return t;
}

/* When node p last showed it lives, besides its frames (see probe). */
static double peer_alive(const struct van_peer *p)
{
	double t;

	__atomic_load(&p->alive, &t, __ATOMIC_RELAXED);
	return t;
}

static void peer_set_alive(struct van_peer *p)
{
	double t = psc_now();

	__atomic_store(&p->alive, &t, __ATOMIC_RELAXED);
}

int ps_comm_van_connect(ps_comm_van_t v, int node_id, const char *host,
			int port)
{
	uint8_t name[256];
	size_t namelen = sizeof(name);
	fi_addr_t addr = FI_ADDR_NOTAVAIL;
	struct van_peer *p;
	uint32_t slot;
	char err[512];
	int rc;

	if (!v || node_id < 0 || !host || port <= 0 || port > 65535 ||
	    !v->bound)
		return PS_COMM_ERR_ARG;
	rc = psc_van_fetch(host, port, &v->key, v->comm.provider,
			   psc_now() + v->comm.params.timeout, &slot, name,
			   &namelen, err, sizeof(err));
	if (rc) {
		psc_log(PSC_LOG_ERROR, -1, "van: connecting node %d at %s:%d: "
			"%s", node_id, host, port, err);
		return rc == -ETIMEDOUT ? PS_COMM_ERR_TIMEOUT
		       : rc == -EBADE	? PS_COMM_ERR_MISMATCH
		       : rc == -EPROTO	? PS_COMM_ERR_PROTO
		       : rc == -EINVAL	? PS_COMM_ERR_ARG
					: PS_COMM_ERR_PEER;
	}
	pthread_mutex_lock(&v->lock);
	p = peer_get(v, node_id);
	if (!p) {
		pthread_mutex_unlock(&v->lock);
		return PS_COMM_ERR_NOMEM;
	}
	pthread_mutex_lock(&p->send_lock);
	/* The same endpoint again keeps its AV entry; a new one replaces. */
	if (p->namelen != namelen || memcmp(p->name, name, namelen) != 0) {
		rc = psc_ep_av_insert(v->comm.ch.ep, name, &addr);
		if (!rc) {
			p->addr = addr;
			memcpy(p->name, name, namelen);
			p->namelen = namelen;
		}
	}
	if (!rc) {
		size_t ownlen;
		const void *own = psc_ep_name(v->comm.ch.ep, &ownlen);

		p->slot = slot;
		snprintf(p->host, sizeof(p->host), "%s", host);
		p->port = port;
		p->self = ownlen == namelen && memcmp(own, name, namelen) == 0;
		/* A node connected again is given another chance. */
		peer_set_alive(p);
		__atomic_store_n(&p->failed, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&p->left, false, __ATOMIC_RELEASE);
		p->reported = false;
	}
	pthread_mutex_unlock(&p->send_lock);
	pthread_mutex_unlock(&v->lock);
	if (rc) {
		psc_log(PSC_LOG_ERROR, -1, "van: fi_av_insert for node %d: %s",
			node_id, psc_fab_strerror(-rc));
		return PS_COMM_ERR_PROVIDER;
	}
	psc_log(PSC_LOG_DEBUG, -1, "van: node %d at %s:%d, slot %u", node_id,
		host, port, slot);
	return 0;
}

/* ------------------------------------------------------------ sends */

static bool batch_done(const struct van_batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->reqs[i] && !psc_req_done(b->reqs[i]))
			return false;
	return true;
}

/*
 * Free b's requests and frame and tell its owner. A piece that failed
 * (not cancelled by stop) fails the node it went to.
 */
static void batch_finish(struct ps_comm_van *v, struct van_batch *b,
			 double deadline)
{
	int err = b->err, sent = 0;

	for (size_t i = 0; i < b->n; i++)
		if (b->reqs[i]) {
			int rc = van_wait(&b->reqs[i], NULL, deadline);

			if (rc && !sent)
				sent = rc;
		}
	if (sent && sent != PS_COMM_ERR_CANCELED && b->peer && !b->bye) {
		char why[160];

		snprintf(why, sizeof(why), "a send to it failed: %s",
			 ps_comm_strerror(sent));
		peer_fail(v, b->peer, sent, why);
	}
	if (!err)
		err = sent;
	free(b->frame);
	if (b->done)
		b->done(b->arg, err);
	free(b);
}

/*
 * Hand back every finished send. A send still unfinished past its
 * deadline fails its node (the provider keeps its buffers until the
 * node's pieces end or stop closes the endpoint). Never called with
 * v->lock held.
 */
static void reap(struct ps_comm_van *v)
{
	struct van_batch *done = NULL, **pp, *b;
	struct van_peer *late = NULL;
	double now = psc_now();

	pthread_mutex_lock(&v->lock);
	for (pp = &v->pending; (b = *pp) != NULL;) {
		if (batch_done(b)) {
			*pp = b->next;
			b->next = done;
			done = b;
		} else {
			if (b->deadline > 0 && now >= b->deadline && b->peer &&
			    !b->peer->failed)
				late = b->peer;
			pp = &b->next;
		}
	}
	pthread_mutex_unlock(&v->lock);
	if (late) {
		char why[160];

		snprintf(why, sizeof(why), "a send to it did not finish within "
			 "%g s (PS_COMM_OP_TIMEOUT)", v->comm.op_timeout);
		peer_fail(v, late, PS_COMM_ERR_TIMEOUT, why);
	}
	while ((b = done) != NULL) {
		done = b->next;
		batch_finish(v, b, 0);
	}
}

/* Post the frame and pieces of b to p in order. p->send_lock held. */
static int post_pieces(struct ps_comm_van *v, struct van_peer *p,
		       struct van_batch *b, size_t flen, const void *meta,
		       size_t meta_len, bool inline_meta,
		       const ps_comm_van_seg_t *segs, size_t nseg)
{
	size_t k = 0;
	int rc;

	if (p->addr == FI_ADDR_NOTAVAIL || peer_failed(p))
		return PS_COMM_ERR_PEER;
	if (peer_left(p)) {
		psc_log(PSC_LOG_WARN, -1, "van: send to node %d, which stopped "
			"and was not connected again", p->id);
		return PS_COMM_ERR_PEER;
	}
	rc = van_send(v, PSC_PROTO_VAN, b->frame, flen, p->addr,
			  p->slot, PSC_VAN_TAG_FRAME, &b->reqs[k++]);
	if (!rc && !inline_meta)
		rc = van_send(v, PSC_PROTO_VAN, meta, meta_len,
				  p->addr, p->slot, PSC_VAN_TAG_PIECE,
				  &b->reqs[k++]);
	for (size_t i = 0; !rc && i < nseg; i++)
		if (!b->in_frame[i])
			rc = van_send(v, PSC_PROTO_VAN, segs[i].data,
				      segs[i].len, p->addr, p->slot,
				      PSC_VAN_TAG_PIECE, &b->reqs[k++]);
	return rc;
}

/* Build the batch of a message: its frame and room for its requests. */
static struct van_batch *batch_new(struct ps_comm_van *v, const void *meta,
				   size_t meta_len,
				   const ps_comm_van_seg_t *segs, size_t nseg,
				   size_t *flen, bool *inline_meta)
{
	struct van_batch *b;
	struct psc_van_frame f;
	char err[128];

	*flen = psc_van_frame_size(meta_len, segs, nseg, v->frame_limit,
				   inline_meta);
	b = calloc(1, sizeof(*b) + (nseg + 2) * sizeof(ps_comm_request_t) +
			  nseg);
	if (!b)
		return NULL;
	b->frame = malloc(*flen);
	if (!b->frame) {
		free(b);
		return NULL;
	}
	psc_van_frame_encode(b->frame, __atomic_load_n(&v->my_id,
						       __ATOMIC_RELAXED),
			     meta, meta_len, *inline_meta, segs, nseg,
			     v->frame_limit);
	/* Which segments the frame carries: they get no piece. */
	b->in_frame = (bool *)&b->reqs[nseg + 2];
	if (psc_van_frame_decode(b->frame, *flen, &f, err, sizeof(err)) == 0)
		for (size_t i = 0; i < nseg; i++)
			b->in_frame[i] = psc_van_frame_seg_inline(&f,
								  (uint32_t)i);
	b->n = nseg + 2;
	return b;
}

/* Post b's frame and pieces to p (post_pieces), under p's send lock. */
static int post_batch(struct ps_comm_van *v, struct van_peer *p,
		      struct van_batch *b, size_t flen, const void *meta,
		      size_t meta_len, bool inline_meta,
		      const ps_comm_van_seg_t *segs, size_t nseg)
{
	int rc;

	b->peer = p;
	b->deadline = psc_comm_op_deadline(&v->comm);
	pthread_mutex_lock(&p->send_lock);
	rc = post_pieces(v, p, b, flen, meta, meta_len, inline_meta, segs,
			 nseg);
	pthread_mutex_unlock(&p->send_lock);
	/*
	 * The provider refused the post itself (its connection to the node
	 * is gone, as the sockets provider tells at once): the node failed.
	 */
	if ((rc == PS_COMM_ERR_SYSTEM || rc == PS_COMM_ERR_PROVIDER) &&
	    !b->bye) {
		char why[160];

		snprintf(why, sizeof(why), "the provider refused a send to it "
			 "(%s)", ps_comm_strerror(rc));
		peer_fail(v, p, PS_COMM_ERR_PEER, why);
		rc = PS_COMM_ERR_PEER;
	}
	return rc;
}

/* Put b on the pending list, where reap and stop find it. */
static void queue_batch(struct ps_comm_van *v, struct van_batch *b)
{
	pthread_mutex_lock(&v->lock);
	b->next = v->pending;
	v->pending = b;
	pthread_mutex_unlock(&v->lock);
}

/* Push posted sends along now: the receiving thread may be asleep. */
static void kick(struct ps_comm_van *v)
{
	psc_ep_try_progress(v->comm.ch.ep);
}

static int deliver_local(struct ps_comm_van *v, const void *meta,
			 size_t meta_len, const ps_comm_van_seg_t *segs,
			 size_t nseg);

int ps_comm_van_send(ps_comm_van_t v, int node_id, const void *meta,
		     size_t meta_len, const ps_comm_van_seg_t *segs,
		     size_t nseg, ps_comm_van_done_fn done, void *arg)
{
	struct van_batch *b;
	struct van_peer *p;
	bool inline_meta, self;
	size_t flen;
	int rc;

	if (!v || !v->bound || (!meta && meta_len) || (!segs && nseg) ||
	    nseg > PSC_VAN_MAX_SEGS || meta_len > UINT32_MAX)
		return PS_COMM_ERR_ARG;
	for (size_t i = 0; i < nseg; i++)
		if ((!segs[i].data && segs[i].len) ||
		    segs[i].len > (size_t)PTRDIFF_MAX)
			return PS_COMM_ERR_ARG;
	reap(v);
	pthread_mutex_lock(&v->lock);
	p = peer_find(v, node_id);
	self = p && p->self;
	pthread_mutex_unlock(&v->lock);
	if (self) {
		rc = deliver_local(v, meta, meta_len, segs, nseg);
		if (done)
			done(arg, rc);
		return rc;
	}
	b = batch_new(v, meta, meta_len, segs, nseg, &flen, &inline_meta);
	if (!b) {
		if (done)
			done(arg, PS_COMM_ERR_NOMEM);
		return PS_COMM_ERR_NOMEM;
	}
	b->done = done;
	b->arg = arg;
	if (!p) {
		psc_log(PSC_LOG_WARN, -1, "van: send to node %d, which was "
			"never connected", node_id);
		rc = PS_COMM_ERR_PEER;
	} else {
		double t = psc_now();

		/* Peers live until stop, which no send may overlap. */
		rc = post_batch(v, p, b, flen, meta, meta_len, inline_meta,
				segs, nseg);
		__atomic_store(&p->last_send, &t, __ATOMIC_RELAXED);
	}
	b->err = rc;
	queue_batch(v, b);
	kick(v);
	reap(v);
	return rc;
}

/* --------------------------------------------------------- receives */

/*
 * Receiving is pipelined: every frame that has arrived gets its piece
 * receives posted at once (so transfers of several messages overlap),
 * and messages are handed out in the order their frames arrived.
 */
struct van_inflight {
	struct van_inflight *next;
	ps_comm_van_msg_t msg;
	double deadline;	 /* 0: none */
	int err;		 /* a posting failure */
	size_t n;
	ps_comm_request_t reqs[]; /* meta piece (maybe) + segments */
};

static bool inflight_done(const struct van_inflight *f)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->reqs[i] && !psc_req_done(f->reqs[i]))
			return false;
	return true;
}

static int post_frame_recv(struct ps_comm_van *v)
{
	return van_recv(v, PSC_PROTO_VAN, v->frame_buf,
			 sizeof(v->frame_buf), -1, PSC_VAN_TAG_FRAME,
			 &v->frame_req);
}

/* Whether this van handed out slot (to someone who fetched its address). */
static bool slot_known(const struct ps_comm_van *v, uint32_t slot)
{
	uint32_t next = __atomic_load_n(&v->next_slot, __ATOMIC_RELAXED);

	/* Once the counter wrapped, every nonzero slot has been issued. */
	return slot != 0 && slot <= PSC_VAN_SLOT_MAX &&
	       (next > PSC_VAN_SLOT_MAX + 1 || slot < next);
}

/* The entry of sender id, created when new; NULL when out of memory. */
static struct van_sender *sender_get(struct ps_comm_van *v, int id)
{
	struct van_sender *s;

	for (size_t i = 0; i < v->nsenders; i++)
		if (v->senders[i].id == id)
			return &v->senders[i];
	if (!room_for_one((void **)&v->senders, &v->senders_cap, v->nsenders,
			  sizeof(*v->senders)))
		return NULL;
	s = &v->senders[v->nsenders++];
	s->id = id;
	s->slot = 0;
	s->seen = 0;
	return s;
}

/*
 * Whether a frame from slot that names sender id may pass. Slots grow
 * with every fetch of this van's address, so once an id has sent from a
 * newer slot (it connected again, or another process took the id over),
 * frames from its older slots come from a connection that is gone.
 */
static bool sender_admit(struct ps_comm_van *v, uint32_t slot, int id)
{
	struct van_sender *s;

	if (id == PS_COMM_VAN_NO_ID)
		return true;
	s = sender_get(v, id);
	if (!s)
		return true;
	/* Once the slots wrapped, their order says nothing. */
	if (slot < s->slot && __atomic_load_n(&v->next_slot, __ATOMIC_RELAXED) <=
				      PSC_VAN_SLOT_MAX + 1) {
		psc_log(PSC_LOG_WARN, -1, "van: dropping a frame from node %d "
			"on slot %u: that id sends from slot %u since it "
			"connected again", id, slot, s->slot);
		return false;
	}
	if (s->slot && slot > s->slot)
		psc_log(PSC_LOG_INFO, -1, "van: node %d now sends from slot %u "
			"(was %u)", id, slot, s->slot);
	s->slot = slot;
	s->seen = psc_now();
	return true;
}

/* When sender id's last frame came (0: never). Receiving thread. */
static double sender_seen(struct ps_comm_van *v, int id)
{
	for (size_t i = 0; i < v->nsenders; i++)
		if (v->senders[i].id == id)
			return v->senders[i].seen;
	return 0;
}

/*
 * Give msg (zeroed) its sender, a meta buffer of meta_len bytes and room
 * for nseg segments, which msg_add_seg then fills in order. Returns 0 or
 * PS_COMM_ERR_NOMEM; ps_comm_van_msg_release frees what it got either
 * way.
 */
static int msg_start(ps_comm_van_msg_t *msg, int sender, size_t meta_len,
		     size_t nseg)
{
	msg->sender = sender;
	msg->meta = psc_van_buf_alloc(meta_len);
	msg->segs = nseg ? psc_van_buf_alloc(nseg * sizeof(*msg->segs)) : NULL;
	if (!msg->meta || (nseg && !msg->segs))
		return PS_COMM_ERR_NOMEM;
	msg->meta_len = meta_len;
	if (nseg)
		memset(msg->segs, 0, nseg * sizeof(*msg->segs));
	return 0;
}

/*
 * Add msg's next segment: a buffer of len bytes in *buf (NULL when len is
 * 0). Returns 0 or PS_COMM_ERR_NOMEM.
 */
static int msg_add_seg(ps_comm_van_msg_t *msg, size_t len, void **buf)
{
	*buf = len ? psc_van_buf_alloc(len) : NULL;
	if (len && !*buf)
		return PS_COMM_ERR_NOMEM;
	msg->segs[msg->nseg].data = *buf;
	msg->segs[msg->nseg].len = len;
	msg->nseg++;
	return 0;
}

/* Post one receive per piece of frame f from slot into msg's buffers. */
static int post_pieces_recv(struct ps_comm_van *v, uint32_t slot,
			    const struct psc_van_frame *f,
			    struct van_inflight *in)
{
	ps_comm_van_msg_t *msg = &in->msg;
	const uint8_t *data = f->segdata;
	int rc = msg_start(msg, f->sender, f->meta_len, f->nseg);

	if (rc)
		return rc;
	if (f->meta)
		memcpy(msg->meta, f->meta, f->meta_len);
	else
		rc = van_recv(v, PSC_PROTO_VAN, msg->meta, f->meta_len,
			       (int)slot, PSC_VAN_TAG_PIECE, &in->reqs[in->n++]);
	for (uint32_t i = 0; !rc && i < f->nseg; i++) {
		size_t len = (size_t)psc_van_frame_seg_len(f, i);
		void *buf;

		rc = msg_add_seg(msg, len, &buf);
		if (rc)
			return rc;
		/* An inline segment is never empty (the decoder checks). */
		if (buf && psc_van_frame_seg_inline(f, i)) {
			psc_copy(buf, data, len);
			data += len;
			continue;
		}
		rc = van_recv(v, PSC_PROTO_VAN, buf, len, (int)slot,
			       PSC_VAN_TAG_PIECE, &in->reqs[in->n++]);
	}
	return rc;
}

/* Put in behind the messages being received (receiving thread). */
static void queue_inflight(struct ps_comm_van *v, struct van_inflight *in)
{
	if (v->in_tail)
		v->in_tail->next = in;
	else
		v->in_head = in;
	v->in_tail = in;
	v->in_count++;
}

/*
 * A message to this van itself never enters the fabric: a provider's
 * connection to its own address is the least tried path there is, and
 * ps-lite's first message to itself is the TERMINATE of its Stop, sent
 * while its peers tear their connections down (verbs;ofi_rxm on rxe
 * crashed inside that post). The message is copied into receive buffers
 * and queued whole for the receiving thread, which takes it like a frame
 * that just arrived. Any thread.
 */
static int deliver_local(struct ps_comm_van *v, const void *meta,
			 size_t meta_len, const ps_comm_van_seg_t *segs,
			 size_t nseg)
{
	struct van_inflight *in = calloc(1, sizeof(*in));
	int rc;

	if (!in)
		return PS_COMM_ERR_NOMEM;
	rc = msg_start(&in->msg, __atomic_load_n(&v->my_id, __ATOMIC_RELAXED),
		       meta_len, nseg);
	if (!rc && meta_len)
		memcpy(in->msg.meta, meta, meta_len);
	for (size_t i = 0; !rc && i < nseg; i++) {
		void *buf;

		rc = msg_add_seg(&in->msg, segs[i].len, &buf);
		if (!rc && buf)
			psc_copy(buf, segs[i].data, segs[i].len);
	}
	if (rc) {
		ps_comm_van_msg_release(&in->msg);
		free(in);
		return rc;
	}
	pthread_mutex_lock(&v->lock);
	if (v->local_tail)
		v->local_tail->next = in;
	else
		v->local_head = in;
	v->local_tail = in;
	__atomic_add_fetch(&v->local_n, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&v->lock);
	return 0;
}

/*
 * Move the messages this van sent itself behind those being received, in
 * the order they were sent. Receiving thread, or stop.
 */
static void take_local(struct ps_comm_van *v)
{
	struct van_inflight *in;

	if (!__atomic_load_n(&v->local_n, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&v->lock);
	in = v->local_head;
	v->local_head = NULL;
	v->local_tail = NULL;
	__atomic_store_n(&v->local_n, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&v->lock);
	while (in) {
		struct van_inflight *next = in->next;

		in->next = NULL;
		queue_inflight(v, in);
		in = next;
	}
}

/*
 * Node id said goodbye: it stopped cleanly, so its silence is no
 * failure any more and it is not probed again until it is connected
 * again; sends to it fail at once. Receiving thread.
 */
static void mark_left(struct ps_comm_van *v, int id)
{
	struct van_peer *p;

	pthread_mutex_lock(&v->lock);
	p = id == PS_COMM_VAN_NO_ID ? NULL : peer_find(v, id);
	pthread_mutex_unlock(&v->lock);
	if (!p) {
		psc_log(PSC_LOG_DEBUG, -1, "van: goodbye from node %d, which "
			"this van never connected", id);
		return;
	}
	__atomic_store_n(&p->left, true, __ATOMIC_RELEASE);
	psc_log(PSC_LOG_INFO, -1, "van: node %d at %s:%d stopped", id,
		p->host, p->port);
}

/* Queue a message whose frame (len bytes at fb) came from slot. */
static void start_message(struct ps_comm_van *v, uint32_t slot,
			  const uint8_t *fb, size_t len)
{
	struct van_inflight *in;
	struct psc_van_frame f;
	char err[256];

	if (psc_van_frame_decode(fb, len, &f, err, sizeof(err)) != 0) {
		psc_log(PSC_LOG_WARN, -1, "van: dropping a malformed frame from "
			"slot %u: %s", slot, err);
		return;
	}
	if (!sender_admit(v, slot, f.sender))
		return;
	if (f.flags & PSC_VAN_F_BYE) {
		mark_left(v, f.sender);
		return;
	}
	in = calloc(1, sizeof(*in) +
			       (f.nseg + 1) * sizeof(ps_comm_request_t));
	if (!in) {
		psc_log(PSC_LOG_ERROR, -1, "van: out of memory: dropping a "
			"message from node %d", f.sender);
		return;
	}
	in->deadline = psc_comm_op_deadline(&v->comm);
	in->err = post_pieces_recv(v, slot, &f, in);
	queue_inflight(v, in);
}

/* Take the arrived frame and post the next frame receive. */
static void take_frame(struct ps_comm_van *v)
{
	ps_comm_status_t st;
	int rc = van_wait(&v->frame_req, &st, 0);

	if (rc)
		psc_log(PSC_LOG_WARN, -1, "van: dropping a frame: %s",
			ps_comm_strerror(rc));
	else if (!slot_known(v, (uint32_t)st.source))
		psc_log(PSC_LOG_WARN, -1, "van: dropping a frame from unknown "
			"sender slot %d", st.source);
	else
		start_message(v, (uint32_t)st.source, v->frame_buf, st.len);
	if (post_frame_recv(v) != 0)
		psc_log(PSC_LOG_ERROR, -1, "van: cannot post a receive");
}

/* Take every frame that has arrived, while messages in flight have room. */
static void take_frames(struct ps_comm_van *v)
{
	while (v->frame_req && psc_req_done(v->frame_req) &&
	       v->in_count < PSC_VAN_MAX_INFLIGHT)
		take_frame(v);
}

/*
 * Unlink the oldest message and settle its requests: those not done are
 * withdrawn. Returns 0 or the error that spoils it; *held tells that the
 * provider may still write into its buffers.
 */
static int finish_oldest(struct ps_comm_van *v, struct van_inflight **out,
			 bool *held)
{
	struct van_inflight *in = v->in_head;
	int rc = in->err;

	v->in_head = in->next;
	if (!v->in_head)
		v->in_tail = NULL;
	v->in_count--;
	*held = false;
	for (size_t i = 0; i < in->n; i++) {
		int e = PS_COMM_ERR_TIMEOUT;

		if (!in->reqs[i])
			continue;
		if (psc_req_done(in->reqs[i]))
			e = van_wait(&in->reqs[i], NULL, 0);
		else
			*held |= psc_req_cancel(&in->reqs[i]) != 0;
		if (!rc && e)
			rc = e;
	}
	*out = in;
	return rc;
}

/* Drop a spoilt message; buffers the provider may still write leak. */
static void drop_message(struct van_inflight *in, int err, bool held)
{
	if (err)
		psc_log(PSC_LOG_WARN, -1, "van: dropping a message from node "
			"%d: %s", in->msg.sender, ps_comm_strerror(err));
	if (!held)
		ps_comm_van_msg_release(&in->msg);
	free(in);
}

struct recv_wait {
	struct ps_comm_van *v;
};

static bool stopping(struct ps_comm_van *v)
{
	return __atomic_load_n(&v->stopping, __ATOMIC_SEQ_CST);
}

/*
 * Something to do: a frame to take, a message this van sent itself, the
 * oldest message complete, or stop waiting for this thread.
 */
static bool recv_ready(void *arg)
{
	struct ps_comm_van *v = ((struct recv_wait *)arg)->v;

	return (v->frame_req && psc_req_done(v->frame_req) &&
		v->in_count < PSC_VAN_MAX_INFLIGHT) ||
	       __atomic_load_n(&v->local_n, __ATOMIC_ACQUIRE) ||
	       (v->in_head && inflight_done(v->in_head)) || stopping(v);
}

/*
 * A failed node not yet reported: its id in *id, and true once. The
 * receiving thread reports each failure once.
 */
static bool take_failure(struct ps_comm_van *v, int *id)
{
	unsigned gen = __atomic_load_n(&v->fail_gen, __ATOMIC_ACQUIRE);
	bool found = false;

	/* Nothing failed since the last look: no scan, no lock. */
	if (gen == v->fail_seen)
		return false;
	pthread_mutex_lock(&v->lock);
	for (size_t i = 0; !found && i < v->npeers; i++) {
		struct van_peer *p = v->peers[i];

		if (p->failed && !p->reported) {
			p->reported = true;
			*id = p->id;
			found = true;
		}
	}
	/* Look again next time until a scan finds nothing to report. */
	if (!found)
		v->fail_seen = gen;
	pthread_mutex_unlock(&v->lock);
	return found;
}

/* A message from node id failed (err): so did the node, if connected. */
static void sender_failed(struct ps_comm_van *v, int id, int err)
{
	struct van_peer *p;
	char why[160];

	if (id == PS_COMM_VAN_NO_ID)
		return;
	pthread_mutex_lock(&v->lock);
	p = peer_find(v, id);
	pthread_mutex_unlock(&v->lock);
	if (!p)
		return;
	snprintf(why, sizeof(why), "a message from it failed: %s",
		 ps_comm_strerror(err));
	peer_fail(v, p, err, why);
}

/* Whether nothing listens at p's address any more (connection refused). */
static bool nobody_listens(const struct van_peer *p)
{
	struct sockaddr_storage ss;
	struct psc_hostport hp;
	socklen_t sl;
	char err[256];
	int fd, last = 0;

	memset(&hp, 0, sizeof(hp));
	snprintf(hp.host, sizeof(hp.host), "%s", p->host);
	hp.port = (uint16_t)p->port;
	if (psc_resolve(&hp, &ss, &sl, err, sizeof(err)) != 0)
		return false;
	fd = psc_connect_retry((struct sockaddr *)&ss, sl, psc_now() + 0.05,
			       &last);
	if (fd >= 0) {
		close(fd);
		return false;
	}
	return last == ECONNREFUSED;
}

/*
 * Whether p said goodbye, once the frames that have arrived are taken: a
 * node that stops sends its goodbye before it closes its address server,
 * but this van may not have read it yet. Receiving thread.
 */
static bool bye_arrived(struct ps_comm_van *v, struct van_peer *p)
{
	if (peer_left(p))
		return true;
	psc_ep_try_progress(v->comm.ch.ep);
	take_frames(v);
	return peer_left(p);
}

/*
 * A probe of p got no answer (err says why). p is dead once its probes
 * have gone unanswered for PS_COMM_PEER_TIMEOUT (or, when set, for
 * PS_COMM_OP_TIMEOUT) since its last sign of life: connect, a frame, an
 * answered probe. Only silence counts: a node that answers lives,
 * however long its messages take.
 */
static void silent(struct ps_comm_van *v, struct van_peer *p, const char *err)
{
	double heard = PSC_MAX(peer_alive(p), sender_seen(v, p->id));
	double quiet;
	char why[700];

	if (p->unanswered <= heard)
		p->unanswered = p->probed;
	quiet = psc_now() - p->unanswered;
	if (quiet >= v->comm.params.peer_timeout) {
		snprintf(why, sizeof(why), "no answer to its probes for %.1f s "
			 "(PS_COMM_PEER_TIMEOUT): %s", quiet, err);
		peer_fail(v, p, PS_COMM_ERR_PEER, why);
	} else if (v->comm.op_timeout > 0 && quiet >= v->comm.op_timeout) {
		snprintf(why, sizeof(why), "no answer to its probes for %.1f s "
			 "(PS_COMM_OP_TIMEOUT): %s", quiet, err);
		peer_fail(v, p, PS_COMM_ERR_TIMEOUT, why);
	}
}

/*
 * Fetch p's address again: a node that answers with its endpoint lives;
 * one whose port refuses, or that serves another endpoint, is gone; one
 * that does not answer is judged by silent().
 */
static void probe(struct ps_comm_van *v, struct van_peer *p)
{
	uint8_t name[256];
	size_t namelen = sizeof(name);
	uint32_t slot;
	char err[512], why[700];
	int rc;

	p->probed = psc_now();
	rc = psc_van_fetch(p->host, p->port, &v->key, v->comm.provider,
			   psc_now() + PROBE_IO_SEC, &slot, name, &namelen,
			   err, sizeof(err));
	if (!rc) {
		if (namelen == p->namelen &&
		    memcmp(name, p->name, namelen) == 0) {
			peer_set_alive(p);
			return;
		}
		snprintf(why, sizeof(why), "another endpoint is served at its "
			 "address now (the node restarted)");
		peer_fail(v, p, PS_COMM_ERR_PEER, why);
	} else if (rc == -EBADE || rc == -EPROTO || nobody_listens(p)) {
		/* While stopping, sends to it hold stop up: fail it. */
		if (!stopping(v) && bye_arrived(v, p))
			return;
		snprintf(why, sizeof(why), "its address server is gone (%s)",
			 err);
		peer_fail(v, p, PS_COMM_ERR_PEER, why);
	} else {
		silent(v, p, err);
	}
}

/* Whether a message from node id is being received (receiving thread). */
static bool receiving_from(const struct ps_comm_van *v, int id)
{
	for (const struct van_inflight *in = v->in_head; in; in = in->next)
		if (in->msg.sender == id && !inflight_done(in))
			return true;
	return false;
}

/*
 * Probe the nodes a waiting receiver may depend on, whatever the fabric
 * reports (verbs reports nothing about a node that only sends to this
 * one): every node this van sent to (a request of its may be
 * unanswered, however long ago it went) and every node whose message is
 * being received, once silent for PROBE_SEC since both this van's last
 * send to it and its last frame, unless they said goodbye. With
 * `pending`, instead those that still hold unfinished sends (stop),
 * goodbye or not. At most PROBE_MAX per call, taking turns.
 * Peers live until stop, so they can be probed without v->lock.
 */
static void probe_silent(struct ps_comm_van *v, bool pending)
{
	struct van_peer *due[PROBE_MAX];
	double now = psc_now();
	size_t n = 0;

	pthread_mutex_lock(&v->lock);
	for (size_t k = 0; k < v->npeers && n < PROBE_MAX; k++) {
		struct van_peer *p = v->peers[(v->probe_next + k) % v->npeers];
		double sent = peer_last_send(p);
		bool want = false;

		if (p->self || p->failed || !p->port ||
		    (peer_left(p) && !pending) || now - p->probed < PROBE_SEC)
			continue;
		if (pending) {
			for (struct van_batch *b = v->pending; b && !want;
			     b = b->next)
				want = b->peer == p && !batch_done(b);
		} else {
			want = (sent > 0 || receiving_from(v, p->id)) &&
			       now - PSC_MAX(sent, sender_seen(v, p->id)) >=
				       PROBE_SEC;
		}
		if (want)
			due[n++] = p;
	}
	if (v->npeers)
		v->probe_next = (v->probe_next + 1) % v->npeers;
	pthread_mutex_unlock(&v->lock);
	for (size_t i = 0; i < n; i++)
		probe(v, due[i]);
}

/* ps_comm_van_recv's loop, with the caller counted in v->in_recv. */
static int recv_loop(struct ps_comm_van *v, ps_comm_van_msg_t *msg)
{
	struct recv_wait w = {v};
	struct van_inflight *in;
	double last_probe = 0;
	bool held;
	int rc, id;

	for (;;) {
		if (stopping(v))
			return PS_COMM_ERR_CANCELED;
		if (take_failure(v, &id)) {
			msg->sender = id;
			return PS_COMM_ERR_PEER;
		}
		/* The van's channel failed as a whole (today only when the
		 * provider broke its contract, progress.c's stray): no
		 * message can be trusted or will finish any more. */
		rc = psc_ep_owner_failed(v->comm.ch.ep, &v->comm.ch, NULL, 0);
		if (rc)
			return psc_err_from_fi(rc);
		if (!v->frame_req) {
			rc = post_frame_recv(v);
			if (rc)
				return rc;
		}
		take_local(v);
		take_frames(v);
		if (v->in_head && (inflight_done(v->in_head) ||
				   (v->in_head->deadline > 0 &&
				    psc_now() >= v->in_head->deadline))) {
			rc = finish_oldest(v, &in, &held);
			if (!rc) {
				*msg = in->msg;
				free(in);
				return 0;
			}
			sender_failed(v, in->msg.sender, rc);
			drop_message(in, rc, held);
			continue;
		}
		psc_ep_wait(v->comm.ch.ep, recv_ready, &w, psc_now() + REAP_SEC);
		reap(v);
		if (psc_now() - last_probe >= PROBE_SEC / 4) {
			last_probe = psc_now();
			probe_silent(v, false);
		}
	}
}

int ps_comm_van_recv(ps_comm_van_t v, ps_comm_van_msg_t *msg)
{
	int rc;

	if (!v || !msg)
		return PS_COMM_ERR_ARG;
	memset(msg, 0, sizeof(*msg));
	msg->sender = PS_COMM_VAN_NO_ID;
	__atomic_add_fetch(&v->in_recv, 1, __ATOMIC_SEQ_CST);
	rc = __atomic_load_n(&v->bound, __ATOMIC_ACQUIRE) ? recv_loop(v, msg)
							  : PS_COMM_ERR_ARG;
	__atomic_sub_fetch(&v->in_recv, 1, __ATOMIC_SEQ_CST);
	return rc;
}

/* Withdraw every message being received (stop). */
static void drop_inflight(struct ps_comm_van *v)
{
	struct van_inflight *in;
	bool held;

	while (v->in_head) {
		finish_oldest(v, &in, &held);
		drop_message(in, 0, held);
	}
}

/* ------------------------------------------------------------- stop */

/* No send left to wait for: all finished, or their nodes failed. */
static bool no_pending(void *arg)
{
	struct ps_comm_van *v = arg;
	bool none = true;

	pthread_mutex_lock(&v->lock);
	for (struct van_batch *b = v->pending; none && b; b = b->next)
		none = batch_done(b) || (b->peer && b->peer->failed);
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
		probe_silent(v, true);
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

		if (p->self || peer_failed(p) || peer_left(p) ||
		    p->addr == FI_ADDR_NOTAVAIL || sender_seen(v, p->id) == 0)
			continue;
		b = batch_new(v, NULL, 0, NULL, 0, &flen, &inl);
		if (!b)
			return; /* its peers then see a failure: no worse */
		psc_van_frame_set_bye(b->frame);
		b->bye = true;
		b->err = post_batch(v, p, b, flen, NULL, 0, inl, NULL, 0);
		queue_batch(v, b);
	}
}

int ps_comm_van_stop(ps_comm_van_t v)
{
	double drain = DRAIN_MAX_SEC;
	struct van_batch *b;
	int rc;

	if (!v)
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
	take_local(v);
	drop_inflight(v);
	/* Cancel what is left; the buffers are free once the ep is closed. */
	for (b = v->pending; b; b = b->next)
		for (size_t i = 0; i < b->n; i++)
			if (b->reqs[i] && psc_req_done(b->reqs[i])) {
				van_wait(&b->reqs[i], NULL, 0);
			} else if (b->reqs[i]) {
				psc_req_cancel(&b->reqs[i]);
				b->err = PS_COMM_ERR_CANCELED;
			}
	/*
	 * Where closing the endpoint can crash inside the provider, leave it
	 * open to the process's exit (psc_ep_poison: released, never
	 * closed); a van stops once, at the end of a ps-lite node.
	 */
	if (psc_ep_caps(v->comm.ch.ep)->stop_unclosed)
		psc_ep_poison(v->comm.ch.ep);
	psc_ep_release(v->comm.ch.ep);
	v->comm.ch.ep = NULL;
	while ((b = v->pending) != NULL) {
		v->pending = b->next;
		b->n = 0; /* requests went with the endpoint */
		b->peer = NULL;
		batch_finish(v, b, 0);
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
	if (!v)
		return;
	ps_comm_van_stop(v);
	free(v->peers);
	free(v->senders);
	pthread_mutex_destroy(&v->lock);
	free(v);
}
