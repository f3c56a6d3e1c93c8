/*
 * Rank 0's side of the tcp rendezvous store (the protocol is described
 * in store_tcp.c): a key-value table that ranks fill with SET and read
 * with GET, where a GET waits for its key. It runs on the listener
 * (net/listener.h), which keeps strangers out: only a connection that
 * proved the job key reaches on_authenticated, where it is admitted as
 * the rank it claims. A rank counts as joined once it has published: a
 * joined rank that disconnects before its goodbye aborts the rendezvous,
 * naming it, so that every waiting rank gets an error instead of
 * hanging. One that leaves before publishing frees its place for the
 * rank to come back. The server ends once every rank said goodbye, or
 * at the deadline, naming the ranks that never came. An aborted
 * rendezvous outlives rank 0's own failure for a while, to tell the
 * ranks that have not heard why (ABORT_LINGER_S).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot/store_tcp_int.h"
#include "net/listener.h"
#include "net/net.h"
#include "net/wire.h"
#include "util/log.h"
#include "util/param.h"
#include "util/util.h"

/*
 * Seconds an aborted rendezvous goes on serving, once rank 0 has failed,
 * for the ranks that have not heard why: one still starting would
 * otherwise find no root and retry until its PS_COMM_TIMEOUT. It ends
 * sooner once every rank has heard, and never after the deadline.
 */
#define ABORT_LINGER_S 10.0

struct kv {
	struct kv *next;
	char *key;
	void *val;
	uint32_t len;
};

/* A connection, as the store sees it: the listener's per-connection part. */
struct conn {
	struct psc_lsn_conn *lc;
	bool admitted;	     /* as a rank of this job */
	bool dropped;	     /* conn_drop ran */
	int rank;	     /* the claim; the rank once admitted */
	int32_t size;	     /* the claim */
	uint64_t job;	     /* the claim */
	bool bye;
	bool published;	     /* it SET something: a joined rank */
	char host[64];	     /* from HELLO */
	char *waiting;	     /* key this client waits for */
};

struct rank_slot {
	struct conn *conn;   /* the admitted connection, or NULL */
	bool published;	     /* ever: it joined */
	bool told;	     /* it heard why the rendezvous aborted */
};

struct psc_store_tcp_server {
	struct psc_lsn *lsn;
	int size;
	uint64_t job;	     /* generation */
	struct psc_store_grow grow; /* a grow's (store.h), or zero */
	double deadline;
	double opened;	     /* when it started serving */
	uint8_t session[PSC_AUTH_SESSION_LEN];
	struct rank_slot *ranks;
	struct kv *kvs;
	int byes;
	char abort_reason[256];
	double linger_until; /* once aborted: serve late ranks until then */
	bool aborted;	     /* abort_reason is set (atomic: unserve reads it) */
	bool closing;	     /* atomic: rank 0 is done, the server may end */
};

static struct kv *kv_find(struct psc_store_tcp_server *sv, const char *key)
{
	for (struct kv *k = sv->kvs; k; k = k->next)
		if (strcmp(k->key, key) == 0)
			return k;
	return NULL;
}

static void conn_drop(struct psc_store_tcp_server *sv, struct conn *c);

static void server_reply(struct psc_store_tcp_server *sv, struct conn *c, uint16_t type,
			 int32_t kind, const void *pay, uint32_t len)
{
	struct psc_wire_hdr h = {PSC_WIRE_MAGIC, PSC_WIRE_VERSION, type,
				 sv->job, kind, 0, len};
	uint8_t hb[PSC_WIRE_HDR_LEN];

	/*
	 * The job's business is for admitted ranks: a stranger hears its
	 * own generation back, and no size.
	 */
	if (c->admitted)
		h.size = sv->size;
	else
		h.job = c->job;
	psc_wire_encode(&h, hb);
	/* Replies are small; a client that does not read them is dropped. */
	if (psc_lsn_open_p(c->lc) &&
	    (psc_lsn_send(c->lc, hb, sizeof(hb)) != 0 ||
	     (len && psc_lsn_send(c->lc, pay, len) != 0)))
		conn_drop(sv, c);
}

static void server_error(struct psc_store_tcp_server *sv, struct conn *c, int32_t kind,
			 const char *msg)
{
	server_reply(sv, c, PSC_WIRE_ERROR, kind, msg, (uint32_t)strlen(msg));
}

/*
 * Tell c, which claims a place in this job, why the rendezvous aborted;
 * its rank has heard it if c is still open after.
 */
static void tell_abort(struct psc_store_tcp_server *sv, struct conn *c)
{
	server_error(sv, c, REPLY_PLAIN, sv->abort_reason);
	if (psc_lsn_open_p(c->lc))
		sv->ranks[c->rank].told = true;
}

/* Fail every waiting client once the rendezvous is aborted. */
static void server_abort(struct psc_store_tcp_server *sv, const char *reason)
{
	if (sv->abort_reason[0])
		return;
	snprintf(sv->abort_reason, sizeof(sv->abort_reason), "%s", reason);
	psc_log(PSC_LOG_ERROR, 0, "rendezvous aborted: %s", reason);
	sv->linger_until = PSC_MIN(psc_now() + ABORT_LINGER_S, sv->deadline);
	__atomic_store_n(&sv->aborted, true, __ATOMIC_RELEASE);
	for (int r = 0; r < sv->size; r++) {
		struct conn *c = sv->ranks[r].conn;

		if (c && c->waiting) {
			free(c->waiting);
			c->waiting = NULL;
			tell_abort(sv, c);
		}
	}
}

/*
 * Whether every rank but rank 0 (which is done) has heard why the
 * rendezvous aborted, or is past hearing it: a joined rank whose
 * connection closed died, or heard. One that left before it published
 * may still come back.
 */
static bool all_told(const struct psc_store_tcp_server *sv)
{
	for (int r = 1; r < sv->size; r++) {
		const struct rank_slot *s = &sv->ranks[r];

		/* A grow's place no process took: nobody to tell. */
		if (sv->grow.grow_from && r >= sv->grow.grow_from && !s->conn &&
		    !s->published)
			continue;
		if (!s->told && !(s->published && !s->conn))
			return false;
	}
	return true;
}

/* Whether rank r ever joined: published, even if it left since. */
static bool joined(const struct psc_store_tcp_server *sv, int r)
{
	return sv->ranks[r].published;
}

/*
 * A joined rank left before its goodbye. It died, unless it was waiting
 * for a rank that never published and its PS_COMM_TIMEOUT is (about)
 * over: then it gave up on that one, and that one is to blame. The
 * ranks' deadlines are the server's give or take their start times, so
 * a rank that leaves well before the server's own deadline (by a quarter
 * of the timeout, at least a second) died, e.g. by SIGKILL, whoever it
 * waited for.
 */
static void missing_abort(struct psc_store_tcp_server *sv);

static void conn_lost(struct psc_store_tcp_server *sv, struct conn *c, const char *wait)
{
	char why[300], *end = NULL;
	long v = wait ? strtol(wait, &end, 10) : -1;
	int r = v >= 0 && v < sv->size ? (int)v : -1;
	double slack = PSC_MAX(1.0, (sv->deadline - sv->opened) / 4);
	bool late = psc_now() >= sv->deadline - slack;

	/*
	 * Late, with ranks that never joined: those are to blame, whoever
	 * c waited for (it may wait for a rank that waits for them).
	 */
	if (late)
		missing_abort(sv);
	if (sv->abort_reason[0])
		return;
	/* wait is "RANK/KEY": the rank c was waiting for. */
	if (late && r >= 0 && end != wait && *end == '/' && r != c->rank)
		snprintf(why, sizeof(why), "rank %d %s: rank %d (%s) gave up "
			 "waiting for it", r,
			 joined(sv, r) ? "died or stalled before it published "
					 "its record"
				       : "never joined the rendezvous",
			 c->rank, c->host);
	else
		snprintf(why, sizeof(why), "rank %d (%s, %s) died during "
			 "bootstrap: its rendezvous connection closed",
			 c->rank, c->host, psc_lsn_peer(c->lc));
	server_abort(sv, why);
}

/*
 * Done with c: its descriptor closes now, its memory goes with the
 * listener's next round. Only a joined rank's loss aborts.
 */
static void conn_drop(struct psc_store_tcp_server *sv, struct conn *c)
{
	char *wait = c->waiting;

	if (c->dropped)
		return;
	c->dropped = true;
	c->waiting = NULL;
	psc_lsn_close(c->lc);
	if (c->admitted && sv->ranks[c->rank].conn == c) {
		sv->ranks[c->rank].conn = NULL;
		if (!c->bye && c->published)
			conn_lost(sv, c, wait);
		else if (!c->bye)
			psc_log(PSC_LOG_INFO, 0, "rendezvous: a connection "
				"admitted as rank %d (from %s) closed before it "
				"published; the rank may join again", c->rank,
				psc_lsn_peer(c->lc));
	}
	free(wait);
}

/* Refuse a rank's message or claim: log it, tell the peer, close. */
static void conn_refuse(struct psc_store_tcp_server *sv, struct conn *c, int32_t kind,
			const char *why)
{
	char msg[400];

	snprintf(msg, sizeof(msg), "rendezvous at rank 0 refused %s: %s",
		 c->admitted ? "a rank's message" : "a connection", why);
	psc_log(c->admitted ? PSC_LOG_ERROR : PSC_LOG_WARN, 0, "refusing "
		"message from %s (rank %d): %s", psc_lsn_peer(c->lc), c->rank,
		why);
	server_error(sv, c, kind, msg);
	conn_drop(sv, c);
}

/* ops.on_refuse: a bad frame or a bad proof gets a word, then goes. */
static void st_refuse(void *arg, struct psc_lsn_conn *lc, int err,
		      const char *why)
{
	struct conn *c = psc_lsn_priv(lc);
	char msg[400];

	c->lc = lc;
	if (err == -EACCES) {
		server_error(arg, c, REPLY_MISMATCH, "authentication failed");
		return;
	}
	if (c->admitted)
		psc_log(PSC_LOG_ERROR, 0, "refusing message from %s (rank "
			"%d): %s", psc_lsn_peer(lc), c->rank, why);
	snprintf(msg, sizeof(msg), "rendezvous at rank 0 refused %s: %s",
		 c->admitted ? "a rank's message" : "a connection", why);
	server_error(arg, c, REPLY_PLAIN, msg);
}

/* ops.on_hello: note the claim (generation, rank, size, host). */
static int st_hello(void *arg, struct psc_lsn_conn *lc,
		    const struct psc_lsn_frame *f, uint8_t *bind,
		    size_t *bindlen, uint8_t *session)
{
	struct psc_store_tcp_server *sv = arg;
	struct conn *c = psc_lsn_priv(lc);
	size_t hl = PSC_MIN(f->plen - PSC_AUTH_HELLO_LEN, sizeof(c->host) - 1);

	c->lc = lc;
	c->rank = f->rank;
	c->size = f->size;
	c->job = f->job;
	/* The host name is for messages: printable characters only. */
	for (size_t i = 0; i < hl; i++) {
		unsigned char ch = f->pl[PSC_AUTH_HELLO_LEN + i];

		c->host[i] = (char)(ch > ' ' && ch < 127 ? ch : '?');
	}
	c->host[hl] = '\0';
	psc_store_tcp_bind(bind, f->job, f->rank, f->size);
	*bindlen = BIND_LEN;
	memcpy(session, sv->session, PSC_AUTH_SESSION_LEN);
	return 0;
}

/*
 * A process that proved the job key asks to join a grow: it gets the
 * lowest joiner's place no connection holds and none published in. It
 * is told to come back when this rendezvous serves no grow (it may be
 * the job's own bootstrap) or a grow that aborted, and refused when
 * every place is taken.
 */
static int admit_joiner(struct psc_store_tcp_server *sv, struct conn *c)
{
	uint8_t grant[JOIN_GRANT_LEN];
	int r = sv->grow.grow_from;

	while (r > 0 && r < sv->size &&
	       (sv->ranks[r].conn || sv->ranks[r].published))
		r++;
	if (!sv->grow.grow_from || sv->grow.grow_from >= sv->size ||
	    sv->abort_reason[0]) {
		/*
		 * A bootstrap, a rebuild (a grow with no new places), or a
		 * grow that failed: the joiner waits for one that may come.
		 */
		server_reply(sv, c, PSC_WIRE_ERROR, REPLY_RETRY, NULL, 0);
		return -EAGAIN;
	}
	if (r >= sv->size) {
		conn_refuse(sv, c, REPLY_MISMATCH,
			    "every new rank's place in this grow is taken");
		return -EBADE;
	}
	c->rank = r;
	c->size = sv->size;
	c->job = sv->job;
	c->admitted = true;
	sv->ranks[r].conn = c;
	psc_be_put(grant, (uint32_t)r, 4);
	psc_be_put(grant + 4, (uint32_t)sv->size, 4);
	psc_be_put(grant + 8, sv->grow.grant, 4);
	psc_log(PSC_LOG_INFO, 0, "rendezvous: a new process from %s (%s) "
		"joins as rank %d of %d", psc_lsn_peer(c->lc), c->host, r,
		sv->size);
	server_reply(sv, c, PSC_WIRE_OK, REPLY_PLAIN, grant, sizeof(grant));
	return 0;
}

/* ops.on_authenticated: one of ours, which may now hear details. */
static int st_admit(void *arg, struct psc_lsn_conn *lc,
		    const struct psc_lsn_frame *proof)
{
	struct psc_store_tcp_server *sv = arg;
	struct conn *c = psc_lsn_priv(lc);
	char why[256];

	if (c->rank == JOIN_RANK)
		return admit_joiner(sv, c);
	if (c->job != sv->job) {
		/* A later communicator of the same job: it must wait. */
		server_reply(sv, c, PSC_WIRE_ERROR, REPLY_RETRY, NULL, 0);
		return -EAGAIN;
	}
	if (c->size != sv->size)
		snprintf(why, sizeof(why), "this root serves a job of %d "
			 "ranks, but %s claims size %d", sv->size,
			 psc_lsn_peer(lc), c->size);
	else if (c->rank < 0 || c->rank >= sv->size)
		snprintf(why, sizeof(why), "rank %d out of range 0..%d",
			 c->rank, sv->size - 1);
	else if (sv->grow.grow_from && c->rank >= sv->grow.grow_from)
		snprintf(why, sizeof(why), "rank %d is for a new process, "
			 "which joins without a rank (PS_COMM_JOIN)", c->rank);
	else if (sv->ranks[c->rank].conn)
		snprintf(why, sizeof(why), "rank %d joined twice (already "
			 "from %s)", c->rank,
			 psc_lsn_peer(sv->ranks[c->rank].conn->lc));
	else
		why[0] = '\0';
	if (why[0]) {
		conn_refuse(sv, c, c->size != sv->size ? REPLY_MISMATCH
						       : REPLY_PLAIN, why);
		return -EBADE;
	}
	if (sv->abort_reason[0]) {
		/* Too late to join: it hears why instead, and goes. */
		psc_log(PSC_LOG_INFO, 0, "rendezvous: rank %d (from %s) came "
			"after the abort; telling it why", c->rank,
			psc_lsn_peer(lc));
		tell_abort(sv, c);
		return -ECONNABORTED;
	}
	c->admitted = true;
	sv->ranks[c->rank].conn = c;
	server_reply(sv, c, PSC_WIRE_OK, REPLY_PLAIN, NULL, 0);
	return 0;
}

static void handle_set(struct psc_store_tcp_server *sv, struct conn *c,
		       const struct psc_lsn_frame *f)
{
	const char *key = (const char *)f->pl;
	size_t klen = key ? strnlen(key, f->plen) : 0;
	char full[300];
	struct kv *k;

	if (!key || klen == f->plen || klen == 0 || klen > 200) {
		conn_refuse(sv, c, REPLY_PLAIN, "SET without a valid key");
		return;
	}
	snprintf(full, sizeof(full), "%d/%s", c->rank, key);
	k = kv_find(sv, full);
	if (!k) {
		k = calloc(1, sizeof(*k));
		if (!k || !(k->key = strdup(full))) {
			free(k);
			server_error(sv, c, REPLY_PLAIN, "rendezvous out of memory");
			return;
		}
		k->next = sv->kvs;
		sv->kvs = k;
	}
	free(k->val);
	k->len = (uint32_t)(f->plen - klen - 1);
	k->val = malloc(k->len ? k->len : 1);
	if (!k->val) {
		k->len = 0;
		server_error(sv, c, REPLY_PLAIN, "rendezvous out of memory");
		return;
	}
	memcpy(k->val, key + klen + 1, k->len);
	c->published = true;
	sv->ranks[c->rank].published = true;
	server_reply(sv, c, PSC_WIRE_OK, REPLY_PLAIN, NULL, 0);
	/* Wake the clients that wait for this key. */
	for (int r = 0; r < sv->size; r++) {
		struct conn *w = sv->ranks[r].conn;

		if (w && w->waiting && strcmp(w->waiting, full) == 0) {
			free(w->waiting);
			w->waiting = NULL;
			server_reply(sv, w, PSC_WIRE_VALUE, REPLY_PLAIN, k->val,
				     k->len);
		}
	}
}

static void handle_get(struct psc_store_tcp_server *sv, struct conn *c,
		       const struct psc_lsn_frame *f)
{
	struct kv *k;

	if (f->plen == 0 || f->plen > 300 ||
	    memchr(f->pl, '\0', f->plen) != NULL) {
		conn_refuse(sv, c, REPLY_PLAIN, "GET without a valid key");
		return;
	}
	free(c->waiting);
	c->waiting = strndup((const char *)f->pl, f->plen);
	if (!c->waiting) {
		server_error(sv, c, REPLY_PLAIN, "rendezvous out of memory");
		return;
	}
	k = kv_find(sv, c->waiting);
	if (k) {
		free(c->waiting);
		c->waiting = NULL;
		server_reply(sv, c, PSC_WIRE_VALUE, REPLY_PLAIN, k->val,
			     k->len);
	}
}

/* ops.on_frame: one message of an admitted rank. */
static int st_frame(void *arg, struct psc_lsn_conn *lc,
		    const struct psc_lsn_frame *f)
{
	struct psc_store_tcp_server *sv = arg;
	struct conn *c = psc_lsn_priv(lc);
	char why[160];

	if (f->rank != c->rank || f->job != sv->job || f->size != sv->size) {
		snprintf(why, sizeof(why), "header says rank %d size %d, "
			 "connection joined as rank %d", f->rank, f->size,
			 c->rank);
		conn_refuse(sv, c, REPLY_PLAIN, why);
		return 0;
	}
	if (sv->abort_reason[0]) {
		tell_abort(sv, c);
		return 0;
	}
	switch (f->type) {
	case PSC_WIRE_SET:
		handle_set(sv, c, f);
		break;
	case PSC_WIRE_GET:
		handle_get(sv, c, f);
		break;
	case PSC_WIRE_BYE:
		if (!c->bye) {
			c->bye = true;
			sv->byes++;
		}
		server_reply(sv, c, PSC_WIRE_OK, REPLY_PLAIN, NULL, 0);
		break;
	default:
		snprintf(why, sizeof(why), "unexpected message type %u",
			 (unsigned)f->type);
		conn_refuse(sv, c, REPLY_PLAIN, why);
	}
	return 0;
}

/* ops.on_close: the listener lost an admitted connection. */
static void st_close(void *arg, struct psc_lsn_conn *lc, int err)
{
	conn_drop(arg, psc_lsn_priv(lc));
}

/* The deadline passed: tell the waiting ranks who never came. */
static void missing_abort(struct psc_store_tcp_server *sv)
{
	char why[256];
	size_t used = 0;
	int n = 0;

	why[0] = '\0';
	for (int r = 0; r < sv->size; r++)
		if (!joined(sv, r) && n++ < 8)
			PSC_APPEND(why, sizeof(why), used, "%s%d",
				   n > 1 ? ", " : "rank ", r);
	if (!n)
		return;
	/* cppcheck-suppress unreadVariable */
	PSC_APPEND(why, sizeof(why), used, "%s never joined the rendezvous "
		   "within PS_COMM_TIMEOUT (not started, or died first)",
		   n > 8 ? "..." : "");
	server_abort(sv, why);
}

/*
 * ops.on_tick: the server ends once every rank said goodbye, or, aborted
 * and with rank 0 done, once every rank heard why or the linger is over.
 */
static bool st_tick(void *arg, double now)
{
	struct psc_store_tcp_server *sv = arg;
	char why[200];

	if (sv->byes >= sv->size)
		return true;
	/* A grow whose old communicator lost a rank cannot complete. */
	if (sv->grow.dead && !sv->abort_reason[0] &&
	    sv->grow.dead(sv->grow.dead_arg, why, sizeof(why)))
		server_abort(sv, why);
	if (sv->abort_reason[0] &&
	    __atomic_load_n(&sv->closing, __ATOMIC_ACQUIRE) &&
	    (now >= sv->linger_until || all_told(sv)))
		return true;
	if (now < sv->deadline)
		return false;
	missing_abort(sv);
	return true;
}

static const struct psc_lsn_ops store_lsn_ops = {
	.size = sizeof(struct psc_lsn_ops),
	.name = "rendezvous",
	.purpose = PSC_AUTH_STORE,
	.conn_priv = sizeof(struct conn),
	.pre_max = PSC_WIRE_HDR_LEN + PRE_MAX,
	.frame_max = PSC_WIRE_HDR_LEN + PSC_WIRE_MAX_PAYLOAD,
	.decode = psc_wire_lsn_decode,
	.encode_chal = psc_wire_lsn_chal,
	.on_hello = st_hello,
	.on_authenticated = st_admit,
	.on_frame = st_frame,
	.on_refuse = st_refuse,
	.on_close = st_close,
	.on_tick = st_tick,
};

static void server_free(struct psc_store_tcp_server *sv)
{
	for (int r = 0; sv->ranks && r < sv->size; r++)
		if (sv->ranks[r].conn) {
			sv->ranks[r].conn->bye = true; /* no abort now */
			conn_drop(sv, sv->ranks[r].conn);
		}
	psc_lsn_free(sv->lsn);
	free(sv->ranks);
	while (sv->kvs) {
		struct kv *k = sv->kvs;

		sv->kvs = k->next;
		free(k->key);
		free(k->val);
		free(k);
	}
	free(sv);
}

/* Start the server on addr (rank 0). */
int psc_store_tcp_serve(struct psc_store *s, struct sockaddr_storage *addr,
			socklen_t addrlen, uint64_t job,
			const struct psc_params *params,
			const struct psc_auth_key *key, struct psc_store_tcp_server **out)
{
	struct psc_store_tcp_server *sv = calloc(1, sizeof(*sv));
	struct psc_lsn_config cfg = {.key = *key,
				     .unauth_max = params->unauth_max,
				     .pre_deadline = PRE_DEADLINE_S,
				     .send_s = 5,
				     .tick_s = 0.2,
				     .log_rank = 0};
	char as[80];
	int rc;

	if (!sv)
		return -ENOMEM;
	sv->ranks = calloc((size_t)s->size, sizeof(*sv->ranks));
	psc_sockaddr_str((struct sockaddr *)addr, as, sizeof(as));
	cfg.fd = sv->ranks ? psc_listen(addr, addrlen, NULL) : -ENOMEM;
	memset(&cfg.key, 0, sizeof(cfg.key));
	if (cfg.fd < 0) {
		rc = cfg.fd;
		snprintf(s->err, sizeof(s->err), "rank 0 cannot listen on "
			 "PS_COMM_ROOT %s: %s", as, strerror(-rc));
		server_free(sv);
		return rc;
	}
	cfg.key = *key;
	sv->size = s->size;
	sv->job = job;
	sv->grow = s->grow;
	sv->deadline = s->deadline;
	sv->opened = psc_now();
	psc_auth_random(sv->session, sizeof(sv->session));
	rc = psc_lsn_open(&sv->lsn, &cfg, &store_lsn_ops, sv, s->err,
			  sizeof(s->err));
	memset(&cfg.key, 0, sizeof(cfg.key));
	if (rc == 0)
		rc = psc_lsn_start(sv->lsn);
	if (rc) {
		server_free(sv);
		return rc;
	}
	psc_log(PSC_LOG_INFO, 0, "rendezvous listening on %s", as);
	*out = sv;
	return 0;
}

void psc_store_tcp_unserve(struct psc_store_tcp_server *sv, bool wait_for_byes)
{
	if (wait_for_byes) {
		psc_lsn_wait(sv->lsn);
	} else if (__atomic_load_n(&sv->aborted, __ATOMIC_ACQUIRE)) {
		/*
		 * A rank may still be starting, or be between connect and
		 * proof: stopping now would leave it retrying a root that is
		 * gone until its PS_COMM_TIMEOUT. The server tells it why,
		 * then ends by itself (st_tick).
		 */
		__atomic_store_n(&sv->closing, true, __ATOMIC_RELEASE);
		psc_lsn_wait(sv->lsn);
	} else {
		psc_lsn_stop(sv->lsn);
		/*
		 * Rank 0's own wait ends at the same deadline, and may end
		 * before the listener's tick saw it pass: the waiting ranks
		 * must still hear who never came, not just a closed
		 * connection. The listener's thread has ended, so this
		 * thread may send.
		 */
		if (sv->byes < sv->size && psc_now() >= sv->deadline)
			missing_abort(sv);
	}
	server_free(sv);
}
