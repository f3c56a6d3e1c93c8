/*
 * The tcp rendezvous store. Rank 0 serves it on PS_COMM_ROOT from a thread
 * that lives only during bootstrap; every rank, rank 0 included, is a
 * client with one connection. Every message carries a header with magic,
 * protocol version, generation, rank, size and payload length.
 *
 * A connection is a stranger until it has proved that it knows the job
 * key (net/auth.h): HELLO (nonce, host name), CHAL from the root (its
 * nonce, the rendezvous id, its MAC), PROOF (the client's MAC). Only then
 * is it admitted as the rank it claims, and only then does the root say
 * anything about the job (size, ranks, generation). A stranger gets a
 * small fixed buffer, a short deadline and a place among at most
 * PS_COMM_UNAUTH_MAX others (the oldest goes first); its refusal says
 * nothing about the job, and its leaving costs nothing. A rank counts as
 * joined once it has published: a joined rank that disconnects before its
 * goodbye aborts the rendezvous, naming it, so that every waiting rank
 * gets an error instead of hanging. One that leaves before publishing
 * frees its place for the rank to come back.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot/store.h"
#include "net/auth.h"
#include "net/net.h"
#include "net/wire.h"
#include "util/log.h"
#include "util/util.h"

/* The job field counts communicators (generations); it is not secret. */
#define GEN_MASK 0xffffULL
/*
 * The rank field of a reply from the root says what kind of answer it is:
 * an ERROR with REPLY_RETRY asks the client to come back later, one with
 * REPLY_MISMATCH says the client belongs to another job (key or size).
 */
enum { REPLY_PLAIN = 0, REPLY_RETRY = -2, REPLY_MISMATCH = -3 };
/* What a stranger may send: HELLO (nonce and host name) or PROOF. */
#define PRE_MAX (PSC_AUTH_HELLO_LEN + 64)
/* Seconds a stranger has to authenticate. */
#define PRE_DEADLINE_S 5.0
/* Lines about strangers: a burst of this many, then one a second. */
#define STRANGER_LOG_BURST 5.0
/* The binding of a store handshake: generation, rank, size. */
#define BIND_LEN 12

/*
 * The n-th tcp rendezvous this process joins. Ranks create communicators
 * in the same order, so equal generations identify the same communicator
 * even when one root port serves several in turn.
 */
static uint64_t next_generation(void)
{
	static unsigned gen;

	return __atomic_fetch_add(&gen, 1, __ATOMIC_RELAXED) & GEN_MASK;
}

/* Send one message: header then payload. */
static int wire_send(int fd, const struct psc_wire_hdr *h, const void *pay,
		     double deadline)
{
	uint8_t hb[PSC_WIRE_HDR_LEN];
	int rc;

	psc_wire_encode(h, hb);
	rc = psc_write_full(fd, hb, sizeof(hb), deadline);
	if (rc == 0 && h->len)
		rc = psc_write_full(fd, pay, h->len, deadline);
	return rc;
}

static void bind_of(uint8_t *b, uint64_t job, int32_t rank, int32_t size)
{
	psc_be_put(b, job & GEN_MASK, 4);
	psc_be_put(b + 4, (uint32_t)rank, 4);
	psc_be_put(b + 8, (uint32_t)size, 4);
}

/* ----------------------------------------------------------- server */

struct kv {
	struct kv *next;
	char *key;
	void *val;
	uint32_t len;
};

enum conn_state { C_HELLO, C_PROOF, C_ADMITTED };

struct conn {
	int fd;
	enum conn_state st;
	int rank;	     /* the claim; the rank once admitted */
	int32_t size;	     /* the claim */
	uint64_t job;	     /* the claim */
	bool bye;
	bool published;	     /* it SET something: a joined rank */
	double since;	     /* accepted at */
	char peer[80];	     /* "addr:port" */
	char host[64];	     /* from HELLO */
	uint8_t hdrbuf[PSC_WIRE_HDR_LEN];
	size_t got;	     /* bytes of header, then of payload */
	struct psc_wire_hdr hdr;
	bool in_payload;
	uint8_t small[PRE_MAX]; /* a stranger's payload */
	uint8_t *payload;    /* small, or malloc'd once admitted */
	char *waiting;	     /* key this client waits for */
	struct psc_auth_hs hs;
};

struct rank_slot {
	struct conn *conn;   /* the admitted connection, or NULL */
	bool admitted;	     /* ever */
	bool published;	     /* ever: it joined */
	char host[64];
};

struct server {
	int lfd;
	int spare;	     /* a descriptor to give up when out of them */
	int stop_pipe[2];
	int size;
	uint64_t job;	     /* generation */
	double deadline;
	int unauth_max;
	struct psc_auth_key key;
	uint8_t session[PSC_AUTH_SESSION_LEN];
	struct conn **conns;
	size_t nconns, cap;
	struct rank_slot *ranks;
	struct kv *kvs;
	int byes;
	char abort_reason[256];
	double log_at;	     /* when log_tokens was last topped up */
	double log_tokens;   /* lines about strangers we may still log */
	unsigned log_quiet;  /* ... and how many were held back since */
	double accept_pause; /* no accept before (out of descriptors) */
	pthread_t thread;
};

/* A line about strangers: a short burst, then at most one a second. */
static void stranger_log(struct server *sv, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void stranger_log(struct server *sv, const char *fmt, ...)
{
	char line[400];
	double now = psc_now();
	va_list ap;

	sv->log_tokens = PSC_MIN(STRANGER_LOG_BURST,
				 sv->log_tokens + (now - sv->log_at));
	sv->log_at = now;
	if (sv->log_tokens < 1) {
		sv->log_quiet++;
		return;
	}
	sv->log_tokens -= 1;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (sv->log_quiet)
		psc_log(PSC_LOG_WARN, 0, "rendezvous: %s (and %u more such "
			"events not logged)", line, sv->log_quiet);
	else
		psc_log(PSC_LOG_WARN, 0, "rendezvous: %s", line);
	sv->log_quiet = 0;
}

static struct kv *kv_find(struct server *sv, const char *key)
{
	for (struct kv *k = sv->kvs; k; k = k->next)
		if (strcmp(k->key, key) == 0)
			return k;
	return NULL;
}

static void conn_close_fd(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

static void server_reply(struct server *sv, struct conn *c, uint16_t type,
			 int32_t kind, const void *pay, uint32_t len)
{
	struct psc_wire_hdr h = {PSC_WIRE_MAGIC, PSC_WIRE_VERSION, type,
				 sv->job, kind, 0, len};

	/*
	 * The job's business is for admitted ranks: a stranger hears its
	 * own generation back, and no size.
	 */
	if (c->st == C_ADMITTED)
		h.size = sv->size;
	else
		h.job = c->job;
	/* Replies are small; a client that does not read them is dropped. */
	if (c->fd >= 0 && wire_send(c->fd, &h, pay, psc_now() + 5) != 0)
		conn_close_fd(c);
}

static void server_error(struct server *sv, struct conn *c, int32_t kind,
			 const char *msg)
{
	server_reply(sv, c, PSC_WIRE_ERROR, kind, msg, (uint32_t)strlen(msg));
}

/* Fail every waiting client once the rendezvous is aborted. */
static void server_abort(struct server *sv, const char *reason)
{
	if (sv->abort_reason[0])
		return;
	snprintf(sv->abort_reason, sizeof(sv->abort_reason), "%s", reason);
	psc_log(PSC_LOG_ERROR, 0, "rendezvous aborted: %s", reason);
	for (size_t i = 0; i < sv->nconns; i++) {
		struct conn *c = sv->conns[i];

		if (c->fd >= 0 && c->waiting) {
			server_error(sv, c, REPLY_PLAIN, reason);
			free(c->waiting);
			c->waiting = NULL;
		}
	}
}

/* Whether rank r ever joined: published, even if it left since. */
static bool joined(const struct server *sv, int r)
{
	return sv->ranks[r].published;
}

/*
 * A joined rank left before its goodbye. It died, unless it was waiting
 * for a rank that never published: then it gave up on that one (its own
 * PS_COMM_TIMEOUT), and that one is to blame.
 */
static void conn_lost(struct server *sv, struct conn *c)
{
	char why[300], *end = NULL;
	long v = c->waiting ? strtol(c->waiting, &end, 10) : -1;
	int r = v >= 0 && v < sv->size ? (int)v : -1;

	/* c->waiting is "RANK/KEY": the rank c was waiting for. */
	if (r >= 0 && end != c->waiting && *end == '/' && r != c->rank)
		snprintf(why, sizeof(why), "rank %d %s: rank %d (%s) gave up "
			 "waiting for it", r,
			 joined(sv, r) ? "died or stalled before it published "
					 "its record"
				       : "never joined the rendezvous",
			 c->rank, c->host);
	else
		snprintf(why, sizeof(why), "rank %d (%s, %s) died during "
			 "bootstrap: its rendezvous connection closed",
			 c->rank, c->host, c->peer);
	server_abort(sv, why);
}

/*
 * Done with c: its descriptor closes now, its memory goes at the end of
 * this poll round (server_sweep). Only a joined rank's loss aborts.
 */
static void conn_drop(struct server *sv, struct conn *c)
{
	/* An admitted connection's rank indexes sv->ranks, which exists. */
	/* NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
	if (c->st == C_ADMITTED && sv->ranks[c->rank].conn == c) {
		sv->ranks[c->rank].conn = NULL;
		if (!c->bye && c->published)
			conn_lost(sv, c);
		else if (!c->bye)
			psc_log(PSC_LOG_INFO, 0, "rendezvous: a connection "
				"admitted as rank %d (from %s) closed before it "
				"published; the rank may join again", c->rank,
				c->peer);
	}
	conn_close_fd(c);
	if (c->payload != c->small)
		free(c->payload);
	c->payload = NULL;
	free(c->waiting);
	c->waiting = NULL;
}

/* Free the entries of closed connections (between poll rounds). */
static void server_sweep(struct server *sv)
{
	size_t j = 0;

	for (size_t i = 0; i < sv->nconns; i++) {
		struct conn *c = sv->conns[i];

		if (c->fd >= 0) {
			sv->conns[j++] = c;
			continue;
		}
		conn_drop(sv, c);
		memset(&c->hs, 0, sizeof(c->hs));
		free(c);
	}
	sv->nconns = j;
}

/* Refuse a connection's message: log it, tell the peer, close. */
static void conn_refuse(struct server *sv, struct conn *c, int32_t kind,
			const char *why)
{
	char msg[400];

	snprintf(msg, sizeof(msg), "rendezvous at rank 0 refused %s: %s",
		 c->st == C_ADMITTED ? "a rank's message" : "a connection",
		 why);
	if (c->st == C_ADMITTED)
		psc_log(PSC_LOG_ERROR, 0, "refusing message from %s (rank %d): "
			"%s", c->peer, c->rank, why);
	else
		stranger_log(sv, "refusing message from %s: %s", c->peer, why);
	server_error(sv, c, kind, msg);
	conn_drop(sv, c);
}

/* A stranger goes without a word: nothing it could learn from. */
static void stranger_drop(struct server *sv, struct conn *c, const char *why)
{
	stranger_log(sv, "dropped a connection from %s: %s", c->peer, why);
	conn_drop(sv, c);
}

static void handle_hello(struct server *sv, struct conn *c)
{
	const struct psc_wire_hdr *h = &c->hdr;
	uint8_t bind[BIND_LEN], chal[PSC_AUTH_CHAL_LEN];
	size_t hl;

	if (c->st != C_HELLO || h->len < PSC_AUTH_HELLO_LEN) {
		stranger_drop(sv, c, c->st != C_HELLO ? "second HELLO"
						      : "HELLO without a nonce");
		return;
	}
	c->rank = h->rank;
	c->size = h->size;
	c->job = h->job;
	bind_of(bind, h->job, h->rank, h->size);
	psc_auth_server_chal(&c->hs, &sv->key, PSC_AUTH_STORE, bind,
			     sizeof(bind), c->payload, PSC_AUTH_HELLO_LEN,
			     sv->session, chal);
	/* The host name is for messages: printable characters only. */
	hl = PSC_MIN((size_t)h->len - PSC_AUTH_HELLO_LEN, sizeof(c->host) - 1);
	for (size_t i = 0; i < hl; i++) {
		unsigned char ch = c->payload[PSC_AUTH_HELLO_LEN + i];

		c->host[i] = (char)(ch > ' ' && ch < 127 ? ch : '?');
	}
	c->host[hl] = '\0';
	c->st = C_PROOF;
	server_reply(sv, c, PSC_WIRE_CHAL, REPLY_PLAIN, chal, sizeof(chal));
}

static void handle_proof(struct server *sv, struct conn *c)
{
	const struct psc_wire_hdr *h = &c->hdr;
	char why[256];

	if (c->st != C_PROOF || h->job != c->job || h->rank != c->rank ||
	    h->size != c->size) {
		stranger_drop(sv, c, "PROOF out of turn");
		return;
	}
	if (psc_auth_server_check(&c->hs, c->payload, h->len) != 0) {
		stranger_log(sv, "refusing a connection from %s: it does not "
			     "know this job's PS_COMM_JOB_KEY (a foreign job, "
			     "or a stranger)", c->peer);
		server_error(sv, c, REPLY_MISMATCH, "authentication failed");
		conn_drop(sv, c);
		return;
	}
	/* It knows the key: one of ours, which may now hear details. */
	if (c->job != sv->job) {
		/* A later communicator of the same job: it must wait. */
		server_reply(sv, c, PSC_WIRE_ERROR, REPLY_RETRY, NULL, 0);
		conn_drop(sv, c);
		return;
	}
	if (c->size != sv->size) {
		snprintf(why, sizeof(why), "this root serves a job of %d "
			 "ranks, but %s claims size %d", sv->size, c->peer,
			 c->size);
		conn_refuse(sv, c, REPLY_MISMATCH, why);
		return;
	}
	if (c->rank < 0 || c->rank >= sv->size) {
		snprintf(why, sizeof(why), "rank %d out of range 0..%d",
			 c->rank, sv->size - 1);
		conn_refuse(sv, c, REPLY_PLAIN, why);
		return;
	}
	if (sv->ranks[c->rank].conn) {
		snprintf(why, sizeof(why), "rank %d joined twice (already "
			 "from %s)", c->rank, sv->ranks[c->rank].conn->peer);
		conn_refuse(sv, c, REPLY_PLAIN, why);
		return;
	}
	c->st = C_ADMITTED;
	sv->ranks[c->rank].conn = c;
	sv->ranks[c->rank].admitted = true;
	snprintf(sv->ranks[c->rank].host, sizeof(sv->ranks[c->rank].host),
		 "%s", c->host);
	server_reply(sv, c, PSC_WIRE_OK, REPLY_PLAIN, NULL, 0);
}

static void handle_set(struct server *sv, struct conn *c)
{
	const char *key = (const char *)c->payload;
	size_t klen = key ? strnlen(key, c->hdr.len) : 0;
	char full[300];
	struct kv *k;

	if (!key || klen == c->hdr.len || klen == 0 || klen > 200) {
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
	k->len = (uint32_t)(c->hdr.len - klen - 1);
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
	for (size_t i = 0; i < sv->nconns; i++) {
		struct conn *w = sv->conns[i];

		if (w->fd >= 0 && w->waiting && strcmp(w->waiting, full) == 0) {
			server_reply(sv, w, PSC_WIRE_VALUE, REPLY_PLAIN, k->val, k->len);
			free(w->waiting);
			w->waiting = NULL;
		}
	}
}

static void handle_get(struct server *sv, struct conn *c)
{
	struct kv *k;

	if (!c->payload || c->hdr.len == 0 || c->hdr.len > 300 ||
	    memchr(c->payload, '\0', c->hdr.len) != NULL) {
		conn_refuse(sv, c, REPLY_PLAIN, "GET without a valid key");
		return;
	}
	free(c->waiting);
	c->waiting = strndup((char *)c->payload, c->hdr.len);
	if (!c->waiting) {
		server_error(sv, c, REPLY_PLAIN, "rendezvous out of memory");
		return;
	}
	k = kv_find(sv, c->waiting);
	if (k) {
		server_reply(sv, c, PSC_WIRE_VALUE, REPLY_PLAIN, k->val, k->len);
		free(c->waiting);
		c->waiting = NULL;
	}
}

/* Dispatch one complete message. */
static void handle_msg(struct server *sv, struct conn *c)
{
	const struct psc_wire_hdr *h = &c->hdr;
	char why[160];

	if (c->st != C_ADMITTED) {
		if (h->type == PSC_WIRE_HELLO)
			handle_hello(sv, c);
		else if (h->type == PSC_WIRE_PROOF)
			handle_proof(sv, c);
		else
			stranger_drop(sv, c, "a request before authenticating");
		return;
	}
	if (h->rank != c->rank || h->job != sv->job || h->size != sv->size) {
		snprintf(why, sizeof(why), "header says rank %d size %d, "
			 "connection joined as rank %d", h->rank, h->size,
			 c->rank);
		conn_refuse(sv, c, REPLY_PLAIN, why);
		return;
	}
	if (sv->abort_reason[0]) {
		server_error(sv, c, REPLY_PLAIN, sv->abort_reason);
		return;
	}
	switch (h->type) {
	case PSC_WIRE_SET:
		handle_set(sv, c);
		break;
	case PSC_WIRE_GET:
		handle_get(sv, c);
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
			 h->type);
		conn_refuse(sv, c, REPLY_PLAIN, why);
	}
}

/* A header arrived: check it and find room for its payload. */
static bool conn_header(struct server *sv, struct conn *c)
{
	char why[200];

	if (psc_wire_decode(c->hdrbuf, &c->hdr, why, sizeof(why)) != 0) {
		conn_refuse(sv, c, REPLY_PLAIN, why);
		return false;
	}
	if (c->payload != c->small)
		free(c->payload);
	c->payload = NULL;
	if (!c->hdr.len)
		return true;
	if (c->st != C_ADMITTED) {
		/* A stranger's message fits a few bytes, never more. */
		if (c->hdr.len > PRE_MAX) {
			snprintf(why, sizeof(why), "oversized message: %u "
				 "bytes before authentication (limit %u)",
				 c->hdr.len, (unsigned)PRE_MAX);
			conn_refuse(sv, c, REPLY_PLAIN, why);
			return false;
		}
		c->payload = c->small;
	} else if (!(c->payload = malloc(c->hdr.len))) {
		conn_refuse(sv, c, REPLY_PLAIN, "out of memory");
		return false;
	}
	c->in_payload = true;
	return true;
}

/* Read what is available on c; handle complete messages. */
static void conn_read(struct server *sv, struct conn *c)
{
	for (;;) {
		size_t want = c->in_payload ? c->hdr.len : PSC_WIRE_HDR_LEN;
		uint8_t *dst = c->in_payload ? c->payload : c->hdrbuf;
		ssize_t n;

		n = recv(c->fd, dst + c->got, want - c->got, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			/* A client that found our CHAL wrong just leaves. */
			if (c->st == C_PROOF)
				stranger_log(sv, "%s left during the handshake: "
					     "a foreign job, or a client with "
					     "another PS_COMM_JOB_KEY", c->peer);
			conn_drop(sv, c);
			return;
		}
		if (n < 0)
			return;
		c->got += (size_t)n;
		if (c->got < want)
			continue;
		c->got = 0;
		if (!c->in_payload) {
			if (!conn_header(sv, c))
				return;
			if (c->in_payload)
				continue;
		}
		c->in_payload = false;
		handle_msg(sv, c);
		if (c->fd < 0)
			return;
	}
}

/* Strangers at once, and the oldest of them. */
static size_t strangers(const struct server *sv, struct conn **oldest)
{
	size_t n = 0;

	*oldest = NULL;
	for (size_t i = 0; i < sv->nconns; i++) {
		struct conn *c = sv->conns[i];

		if (c->fd < 0 || c->st == C_ADMITTED)
			continue;
		n++;
		if (!*oldest || c->since < (*oldest)->since)
			*oldest = c;
	}
	return n;
}

static void server_accept(struct server *sv)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct conn *c, *old;
	int fd = accept4(sv->lfd, (struct sockaddr *)&ss, &sl,
			 SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
		/*
		 * Out of descriptors: make room by dropping the oldest
		 * stranger, or take the connection on the spare descriptor
		 * and close it, so the listener does not stay readable.
		 */
		if (strangers(sv, &old) > 0) {
			stranger_drop(sv, old, "out of descriptors; dropped "
				      "the oldest unauthenticated connection");
		} else if (sv->spare >= 0) {
			close(sv->spare);
			fd = accept4(sv->lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				close(fd);
			sv->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
			stranger_log(sv, "out of descriptors: refused a "
				     "connection");
		}
		sv->accept_pause = psc_now() + 0.05;
		return;
	}
	if (fd < 0)
		return;
	if (strangers(sv, &old) >= (size_t)sv->unauth_max && old)
		stranger_drop(sv, old, "more than PS_COMM_UNAUTH_MAX "
			      "connections are unauthenticated: dropped the "
			      "oldest");
	if (sv->nconns == sv->cap) {
		size_t cap = sv->cap ? 2 * sv->cap : 16;
		struct conn **grown = realloc(sv->conns,
					      cap * sizeof(struct conn *));

		if (!grown) {
			close(fd);
			return;
		}
		sv->conns = grown;
		sv->cap = cap;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->fd = fd;
	c->rank = -1;
	c->since = psc_now();
	psc_sockaddr_str((struct sockaddr *)&ss, c->peer, sizeof(c->peer));
	sv->conns[sv->nconns++] = c;
}

/* Strangers that took too long to authenticate go. */
static void server_expire(struct server *sv, double now)
{
	for (size_t i = 0; i < sv->nconns; i++) {
		struct conn *c = sv->conns[i];

		if (c->fd >= 0 && c->st != C_ADMITTED &&
		    now - c->since > PRE_DEADLINE_S)
			stranger_drop(sv, c, "did not authenticate in time");
	}
}

/* The deadline passed: tell the waiting ranks who never came. */
static void missing_abort(struct server *sv)
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

static void *server_main(void *arg)
{
	struct server *sv = arg;
	struct pollfd *p = NULL;
	size_t pcap = 0;

	while (sv->byes < sv->size && psc_now() < sv->deadline) {
		size_t n = sv->nconns;
		bool listen_now = psc_now() >= sv->accept_pause;

		if (n + 2 > pcap) {
			struct pollfd *grown = realloc(p, (n + 2) * 2 *
							      sizeof(*p));

			if (!grown)
				break;
			p = grown;
			pcap = (n + 2) * 2;
		}
		/* Every entry is an open descriptor: nfds stays valid. p
		 * is never NULL here: pcap starts at 0 < n + 2. */
		/* NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
		p[0] = (struct pollfd){.fd = listen_now ? sv->lfd : -1,
				       .events = POLLIN};
		p[1] = (struct pollfd){.fd = sv->stop_pipe[0], .events = POLLIN};
		for (size_t i = 0; i < n; i++)
			p[i + 2] = (struct pollfd){.fd = sv->conns[i]->fd,
						   .events = POLLIN};
		if (poll(p, n + 2, listen_now ? 200 : 50) > 0) {
			if (p[1].revents)
				break;
			for (size_t i = 0; i < n; i++)
				if (p[i + 2].revents && sv->conns[i]->fd >= 0)
					conn_read(sv, sv->conns[i]);
			if (p[0].revents)
				server_accept(sv);
		}
		server_expire(sv, psc_now());
		server_sweep(sv);
	}
	free(p);
	if (sv->byes < sv->size && psc_now() >= sv->deadline)
		missing_abort(sv);
	return NULL;
}

static void server_free(struct server *sv)
{
	for (size_t i = 0; i < sv->nconns; i++) {
		sv->conns[i]->bye = true; /* no abort on teardown */
		conn_drop(sv, sv->conns[i]);
	}
	server_sweep(sv);
	free(sv->conns);
	free(sv->ranks);
	while (sv->kvs) {
		struct kv *k = sv->kvs;

		sv->kvs = k->next;
		free(k->key);
		free(k->val);
		free(k);
	}
	if (sv->lfd >= 0)
		close(sv->lfd);
	if (sv->spare >= 0)
		close(sv->spare);
	close(sv->stop_pipe[0]);
	close(sv->stop_pipe[1]);
	memset(&sv->key, 0, sizeof(sv->key));
	free(sv);
}

/* Start the server on addr (rank 0). */
static int server_start(struct psc_store *s, struct sockaddr_storage *addr,
			socklen_t addrlen, uint64_t job,
			const struct psc_params *params,
			const struct psc_auth_key *key, struct server **out)
{
	struct server *sv = calloc(1, sizeof(*sv));
	char as[80];
	int rc;

	if (!sv)
		return -ENOMEM;
	sv->spare = -1;
	if (pipe2(sv->stop_pipe, O_CLOEXEC) != 0) {
		free(sv);
		return -errno;
	}
	sv->ranks = calloc((size_t)s->size, sizeof(*sv->ranks));
	psc_sockaddr_str((struct sockaddr *)addr, as, sizeof(as));
	sv->lfd = sv->ranks ? psc_listen(addr, addrlen, NULL) : -ENOMEM;
	if (sv->lfd < 0) {
		rc = sv->lfd;
		snprintf(s->err, sizeof(s->err), "rank 0 cannot listen on "
			 "PS_COMM_ROOT %s: %s", as, strerror(-rc));
		sv->lfd = -1;
		server_free(sv);
		return rc;
	}
	sv->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	sv->size = s->size;
	sv->job = job;
	sv->deadline = s->deadline;
	sv->unauth_max = params->unauth_max > 0 ? params->unauth_max : 1;
	sv->key = *key;
	psc_auth_random(sv->session, sizeof(sv->session));
	sv->log_at = psc_now();
	sv->log_tokens = STRANGER_LOG_BURST;
	rc = pthread_create(&sv->thread, NULL, server_main, sv);
	if (rc) {
		server_free(sv);
		return -rc;
	}
	psc_log(PSC_LOG_INFO, 0, "rendezvous listening on %s", as);
	*out = sv;
	return 0;
}

static void server_stop(struct server *sv, bool wait_for_byes)
{
	if (!wait_for_byes && write(sv->stop_pipe[1], "x", 1) < 0) {
		/* The thread still ends at its deadline. */
	}
	pthread_join(sv->thread, NULL);
	server_free(sv);
}

/* ----------------------------------------------------------- client */

struct tcp_store {
	int fd;
	uint64_t job;
	char root[300];
	struct psc_auth_key key;
	struct server *server;
};

/* Say why talking to rank 0 failed with rc (a timeout or a lost link). */
static int link_lost(struct psc_store *s, int rc)
{
	const struct tcp_store *t = s->priv;

	if (rc == -ETIMEDOUT)
		snprintf(s->err, sizeof(s->err), "no answer from the "
			 "rendezvous at %s within PS_COMM_TIMEOUT", t->root);
	else
		snprintf(s->err, sizeof(s->err), "lost the connection to the "
			 "rendezvous at %s (%s): rank 0 died or refused us",
			 t->root, strerror(-rc));
	return rc;
}

/* Read one reply; *rpay is malloc'd (or NULL); *rh is zero on failure. */
static int client_reply(struct psc_store *s, struct psc_wire_hdr *rh,
			void **rpay)
{
	struct tcp_store *t = s->priv;
	uint8_t hb[PSC_WIRE_HDR_LEN];
	char why[200];
	int rc = psc_read_full(t->fd, hb, sizeof(hb), s->deadline);

	*rpay = NULL;
	memset(rh, 0, sizeof(*rh));
	if (rc)
		return link_lost(s, rc);
	if (psc_wire_decode(hb, rh, why, sizeof(why)) != 0) {
		snprintf(s->err, sizeof(s->err), "malformed reply from the "
			 "rendezvous at %s: %s", t->root, why);
		return -EPROTO;
	}
	if (rh->len) {
		*rpay = malloc(rh->len + 1);
		if (!*rpay)
			return -ENOMEM;
		rc = psc_read_full(t->fd, *rpay, rh->len, s->deadline);
		if (rc) {
			free(*rpay);
			*rpay = NULL;
			snprintf(s->err, sizeof(s->err), "lost the rendezvous "
				 "at %s mid-reply", t->root);
			return rc;
		}
		((char *)*rpay)[rh->len] = '\0';
	}
	if (rh->type == PSC_WIRE_ERROR && rh->rank == REPLY_RETRY) {
		free(*rpay);
		*rpay = NULL;
		return -EAGAIN;
	}
	if (rh->type == PSC_WIRE_ERROR) {
		snprintf(s->err, sizeof(s->err), "%s",
			 *rpay ? (char *)*rpay : "rendezvous error");
		free(*rpay);
		*rpay = NULL;
		return rh->rank == REPLY_MISMATCH ? -EBADE : -ECONNABORTED;
	}
	if ((rh->job & GEN_MASK) != (t->job & GEN_MASK)) {
		free(*rpay);
		*rpay = NULL;
		snprintf(s->err, sizeof(s->err), "reply from the rendezvous "
			 "at %s belongs to another communicator", t->root);
		return -EPROTO;
	}
	return 0;
}

/* Send a request and read one reply; *pay is malloc'd (or NULL); *rh is
 * zero on failure. */
static int client_call(struct psc_store *s, uint16_t type, const void *pay,
		       uint32_t len, struct psc_wire_hdr *rh, void **rpay)
{
	struct tcp_store *t = s->priv;
	struct psc_wire_hdr h = {PSC_WIRE_MAGIC, PSC_WIRE_VERSION, type,
				 t->job, s->rank, s->size, len};
	int rc;

	*rpay = NULL;
	memset(rh, 0, sizeof(*rh));
	rc = wire_send(t->fd, &h, pay, s->deadline);
	return rc ? link_lost(s, rc) : client_reply(s, rh, rpay);
}

/* A call whose reply carries nothing but OK. */
static int client_call_ok(struct psc_store *s, uint16_t type,
			  const void *pay, uint32_t len)
{
	struct psc_wire_hdr rh;
	void *rp;
	int rc = client_call(s, type, pay, len, &rh, &rp);

	free(rp);
	if (rc == 0 && rh.type != PSC_WIRE_OK) {
		snprintf(s->err, sizeof(s->err), "rendezvous answered type %u "
			 "where OK was expected", rh.type);
		rc = -EPROTO;
	}
	return rc;
}

static int tcp_put(struct psc_store *s, const char *key, const void *val,
		   size_t len)
{
	size_t klen = strlen(key);
	uint8_t *buf;
	int rc;

	if (klen + 1 + len > PSC_WIRE_MAX_PAYLOAD)
		return -EMSGSIZE;
	buf = malloc(klen + 1 + len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, key, klen + 1);
	memcpy(buf + klen + 1, val, len);
	rc = client_call_ok(s, PSC_WIRE_SET, buf, (uint32_t)(klen + 1 + len));
	free(buf);
	return rc;
}

static int tcp_commit(struct psc_store *s)
{
	return 0;
}

static int tcp_get(struct psc_store *s, int rank, const char *key,
		   void **val, size_t *len)
{
	struct psc_wire_hdr rh;
	char full[300];
	int rc;

	snprintf(full, sizeof(full), "%d/%s", rank, key);
	rc = client_call(s, PSC_WIRE_GET, full, (uint32_t)strlen(full), &rh,
			 val);
	if (rc == -ETIMEDOUT)
		snprintf(s->err, sizeof(s->err), "rank %d did not publish "
			 "\"%s\" within PS_COMM_TIMEOUT (is it running?)",
			 rank, key);
	if (rc)
		return rc;
	if (rh.type != PSC_WIRE_VALUE) {
		free(*val);
		*val = NULL;
		snprintf(s->err, sizeof(s->err), "rendezvous answered type %u "
			 "to GET", rh.type);
		return -EPROTO;
	}
	*len = rh.len;
	return 0;
}

static int tcp_finish(struct psc_store *s)
{
	struct tcp_store *t = s->priv;
	int rc = client_call_ok(s, PSC_WIRE_BYE, NULL, 0);

	if (rc == 0 && t->server) {
		server_stop(t->server, true);
		t->server = NULL;
	}
	return rc;
}

static void tcp_close(struct psc_store *s)
{
	struct tcp_store *t = s->priv;

	if (!t)
		return;
	/* Stop the server first, so it never mistakes our close for death. */
	if (t->server)
		server_stop(t->server, false);
	if (t->fd >= 0)
		close(t->fd);
	memset(&t->key, 0, sizeof(t->key));
	free(t);
	s->priv = NULL;
}

static const struct psc_store_ops tcp_ops = {
	.size = sizeof(struct psc_store_ops),
	.name = "tcp",
	.put = tcp_put,
	.commit = tcp_commit,
	.get = tcp_get,
	.finish = tcp_finish,
	.close = tcp_close,
};

/*
 * One attempt at joining on t->fd: HELLO, check the root's CHAL, PROOF.
 * Returns 0, -EAGAIN (the root serves another communicator: retry),
 * -EBADE (another job or key) or another negative errno, with s->err.
 */
static int client_handshake(struct psc_store *s, const char *host)
{
	struct tcp_store *t = s->priv;
	uint8_t hello[PSC_AUTH_HELLO_LEN + 64], bind[BIND_LEN];
	uint8_t proof[PSC_AUTH_PROOF_LEN];
	size_t hl = PSC_MIN(strlen(host), (size_t)63);
	struct psc_auth_hs hs;
	struct psc_wire_hdr rh;
	void *rp = NULL;
	int rc;

	bind_of(bind, t->job, s->rank, s->size);
	psc_auth_client_hello(&hs, &t->key, PSC_AUTH_STORE, bind, sizeof(bind),
			      hello);
	/* The host name travels without its terminator: h.len bounds it. */
	/* NOLINTNEXTLINE(bugprone-not-null-terminated-result) */
	memcpy(hello + PSC_AUTH_HELLO_LEN, host, hl);
	rc = client_call(s, PSC_WIRE_HELLO, hello,
			 (uint32_t)(PSC_AUTH_HELLO_LEN + hl), &rh, &rp);
	if (rc == 0 && rh.type != PSC_WIRE_CHAL) {
		snprintf(s->err, sizeof(s->err), "rendezvous at %s answered "
			 "HELLO with type %u", t->root, rh.type);
		rc = -EPROTO;
	}
	if (rc == 0 && psc_auth_client_proof(&hs, rp, rh.len, proof,
					     s->session) != 0) {
		snprintf(s->err, sizeof(s->err), "the rendezvous at %s did "
			 "not prove that it knows this job's PS_COMM_JOB_KEY: "
			 "it serves a foreign job, or the keys differ",
			 t->root);
		rc = -EBADE;
	}
	free(rp);
	memset(&hs, 0, sizeof(hs));
	if (rc)
		return rc;
	rc = client_call(s, PSC_WIRE_PROOF, proof, sizeof(proof), &rh, &rp);
	free(rp);
	if (rc == -EBADE && strstr(s->err, "authentication failed"))
		snprintf(s->err, sizeof(s->err), "the rendezvous at %s refused "
			 "this rank's proof: PS_COMM_JOB_KEY differs from rank "
			 "0's (a foreign job?)", t->root);
	if (rc == 0 && rh.type != PSC_WIRE_OK) {
		snprintf(s->err, sizeof(s->err), "rendezvous at %s answered "
			 "PROOF with type %u", t->root, rh.type);
		rc = -EPROTO;
	}
	return rc;
}

/*
 * Connect and authenticate until the root admits us. A root still
 * serving this job's previous communicator answers "retry", or closes as
 * it ends.
 */
static int client_join(struct psc_store *s, const struct sockaddr_storage *ra,
		       socklen_t ralen, const char *host)
{
	struct tcp_store *t = s->priv;
	int rc, last;

	for (unsigned attempt = 0; psc_now() < s->deadline; attempt++) {
		t->fd = psc_connect_retry((const struct sockaddr *)ra, ralen,
					  s->deadline, &last);
		if (t->fd < 0) {
			snprintf(s->err, sizeof(s->err), "cannot reach the "
				 "rendezvous at %s within PS_COMM_TIMEOUT "
				 "(last attempt: %s); is rank 0 running, and "
				 "is PS_COMM_ROOT right?", t->root,
				 strerror(last));
			return t->fd;
		}
		rc = client_handshake(s, host);
		if (rc == 0)
			return 0;
		/*
		 * A root that is ending the previous communicator closes
		 * under us: the reset shows as ECONNRESET or, when our
		 * HELLO is still being written, EPIPE.
		 */
		if (rc != -EAGAIN && rc != -ECONNRESET && rc != -EPIPE)
			return rc;
		close(t->fd);
		t->fd = -1;
		usleep(1000u << (attempt < 8 ? attempt : 8));
	}
	snprintf(s->err, sizeof(s->err), "the rendezvous at %s stayed busy "
		 "with another communicator for PS_COMM_TIMEOUT", t->root);
	return -ETIMEDOUT;
}

/* Rank 0 binds the root address, or the wildcard if it is not local. */
static int root_serve(struct psc_store *s, const struct sockaddr_storage *ra,
		      socklen_t ralen, uint64_t job,
		      const struct psc_params *p, struct server **sv)
{
	struct tcp_store *t = s->priv;
	struct sockaddr_storage a = *ra;
	int rc = server_start(s, &a, ralen, job, p, &t->key, sv);

	if (rc == -EADDRNOTAVAIL) {
		uint16_t port = a.ss_family == AF_INET
				   ? ((struct sockaddr_in *)ra)->sin_port
				   : ((struct sockaddr_in6 *)ra)->sin6_port;

		memset(&a, 0, sizeof(a));
		a.ss_family = ra->ss_family;
		if (a.ss_family == AF_INET)
			((struct sockaddr_in *)&a)->sin_port = port;
		else
			((struct sockaddr_in6 *)&a)->sin6_port = port;
		rc = server_start(s, &a, ralen, job, p, &t->key, sv);
	}
	return rc;
}

int psc_store_tcp_open(struct psc_store *s, const char *root,
		       const struct psc_params *p,
		       const struct psc_auth_key *key)
{
	struct tcp_store *t = calloc(1, sizeof(*t));
	struct psc_hostport hp;
	struct sockaddr_storage ra;
	socklen_t ralen;
	char host[64] = "?";
	int rc;

	if (!t)
		return -ENOMEM;
	t->fd = -1;
	t->job = next_generation();
	t->key = *key;
	snprintf(t->root, sizeof(t->root), "%s", root);
	s->ops = &tcp_ops;
	s->priv = t;
	if (psc_hostport_parse(root, &hp) != 0 || hp.port == 0) {
		snprintf(s->err, sizeof(s->err), "PS_COMM_ROOT=\"%s\" is not "
			 "host:port or [v6addr]:port with a nonzero port",
			 root);
		return -EINVAL;
	}
	rc = psc_resolve(&hp, &ra, &ralen, s->err, sizeof(s->err));
	if (rc)
		return rc;
	if (s->rank == 0) {
		rc = root_serve(s, &ra, ralen, t->job, p, &t->server);
		if (rc)
			return rc;
	}
	gethostname(host, sizeof(host) - 1);
	return client_join(s, &ra, ralen, host);
}
