/*
 * The tcp rendezvous store. Rank 0 serves it on PS_COMM_ROOT from a thread
 * that lives only during bootstrap; every rank, rank 0 included, is a
 * client with one connection. Every message carries a header with magic,
 * protocol version, job id, rank, size and payload length; anything
 * malformed, oversized, foreign or mismatched is refused with an error
 * naming the peer. A rank that disconnects before it has finished aborts
 * the rendezvous: every waiting rank gets an error instead of hanging.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot/store.h"
#include "net/net.h"
#include "net/wire.h"
#include "util/log.h"
#include "util/util.h"

/* The low bits of the job field count communicators (generations). */
#define GEN_MASK 0xffffULL
/*
 * The rank field of a reply from the root says what kind of answer it is:
 * an ERROR with REPLY_RETRY asks the client to come back later, one with
 * REPLY_MISMATCH says the client belongs to another job (key or size).
 */
enum { REPLY_PLAIN = 0, REPLY_RETRY = -2, REPLY_MISMATCH = -3 };

uint64_t psc_store_job_id(const struct psc_params *p)
{
	return psc_fnv1a(PSC_FNV_INIT ^ 0x7073636f6d6dULL, p->job_key,
			 strlen(p->job_key)) &
	       ~GEN_MASK;
}

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

/* ----------------------------------------------------------- server */

struct kv {
	struct kv *next;
	char *key;
	void *val;
	uint32_t len;
};

struct conn {
	int fd;
	int rank;	     /* -1 until HELLO */
	bool bye;
	char peer[80];	     /* "addr:port" */
	char host[64];	     /* from HELLO */
	uint8_t hdrbuf[PSC_WIRE_HDR_LEN];
	size_t got;	     /* bytes of header, then of payload */
	struct psc_wire_hdr hdr;
	bool in_payload;
	uint8_t *payload;
	char *waiting;	     /* key this client waits for */
};

struct server {
	int lfd;
	int stop_pipe[2];
	int size;
	uint64_t job;
	double deadline;
	struct conn *conns;
	size_t nconns;
	struct kv *kvs;
	int byes;
	char abort_reason[256];
	pthread_t thread;
};

static struct kv *kv_find(struct server *sv, const char *key)
{
	for (struct kv *k = sv->kvs; k; k = k->next)
		if (strcmp(k->key, key) == 0)
			return k;
	return NULL;
}

static void server_reply(struct server *sv, struct conn *c, uint16_t type,
			 int32_t kind, const void *pay, uint32_t len)
{
	struct psc_wire_hdr h = {PSC_WIRE_MAGIC, PSC_WIRE_VERSION, type,
				 sv->job, kind, sv->size, len};

	/* Replies are small; a client that does not read them is dropped. */
	if (wire_send(c->fd, &h, pay, psc_now() + 5) != 0) {
		close(c->fd);
		c->fd = -1;
	}
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
		struct conn *c = &sv->conns[i];

		if (c->fd >= 0 && c->waiting) {
			server_error(sv, c, REPLY_PLAIN, reason);
			free(c->waiting);
			c->waiting = NULL;
		}
	}
}

/* Whether rank r ever joined (its entry stays after it left). */
static bool joined(const struct server *sv, int r)
{
	for (size_t i = 0; i < sv->nconns; i++)
		if (sv->conns[i].rank == r)
			return true;
	return false;
}

/*
 * A joined rank left before its goodbye. It died, unless it was waiting
 * for a rank that never published: then it gave up on that one (its own
 * PS_COMM_TIMEOUT), and that one is to blame.
 */
static void conn_lost(struct server *sv, struct conn *c)
{
	char why[300];
	int r;

	if (c->waiting && sscanf(c->waiting, "%d/", &r) == 1 && r != c->rank &&
	    r >= 0 && r < sv->size)
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

static void conn_drop(struct server *sv, struct conn *c)
{
	if (c->rank >= 0 && !c->bye)
		conn_lost(sv, c);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->payload);
	c->payload = NULL;
	free(c->waiting);
	c->waiting = NULL;
}

/* Refuse a connection's message: log it, tell the peer, close. */
static void conn_refuse(struct server *sv, struct conn *c, int32_t kind,
			const char *why)
{
	char msg[400];

	snprintf(msg, sizeof(msg), "rendezvous at rank 0 refused %s: %s",
		 c->rank >= 0 ? "a rank's message" : "a connection", why);
	psc_log(PSC_LOG_ERROR, 0, "refusing message from %s%s: %s", c->peer,
		c->rank >= 0 ? " (a joined rank)" : "", why);
	if (c->fd >= 0)
		server_error(sv, c, kind, msg);
	conn_drop(sv, c);
}

static void handle_hello(struct server *sv, struct conn *c)
{
	const struct psc_wire_hdr *h = &c->hdr;
	char why[256];

	if ((h->job & ~GEN_MASK) != (sv->job & ~GEN_MASK)) {
		snprintf(why, sizeof(why), "foreign job (PS_COMM_JOB_KEY "
			 "differs) from %s", c->peer);
		conn_refuse(sv, c, REPLY_MISMATCH, why);
		return;
	}
	if (h->job != sv->job) {
		/* A later communicator of the same job: it must wait. */
		server_reply(sv, c, PSC_WIRE_ERROR, REPLY_RETRY, NULL, 0);
		if (c->fd >= 0)
			close(c->fd);
		c->fd = -1;
		return;
	}
	if (h->size != sv->size) {
		snprintf(why, sizeof(why), "this root serves a job of %d "
			 "ranks, but %s claims size %d", sv->size, c->peer,
			 h->size);
		conn_refuse(sv, c, REPLY_MISMATCH, why);
		return;
	}
	if (h->rank < 0 || h->rank >= sv->size) {
		snprintf(why, sizeof(why), "rank %d out of range 0..%d",
			 h->rank, sv->size - 1);
		conn_refuse(sv, c, REPLY_PLAIN, why);
		return;
	}
	for (size_t i = 0; i < sv->nconns; i++)
		if (sv->conns[i].fd >= 0 && sv->conns[i].rank == h->rank) {
			snprintf(why, sizeof(why), "rank %d joined twice "
				 "(already from %s)", h->rank,
				 sv->conns[i].peer);
			conn_refuse(sv, c, REPLY_PLAIN, why);
			return;
		}
	c->rank = h->rank;
	snprintf(c->host, sizeof(c->host), "%.*s", (int)PSC_MIN(h->len, 63),
		 c->payload ? (char *)c->payload : "");
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
	if (k->val)
		memcpy(k->val, key + klen + 1, k->len);
	server_reply(sv, c, PSC_WIRE_OK, REPLY_PLAIN, NULL, 0);
	/* Wake the clients that wait for this key. */
	for (size_t i = 0; i < sv->nconns; i++) {
		struct conn *w = &sv->conns[i];

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

	if (c->rank < 0 && h->type != PSC_WIRE_HELLO) {
		conn_refuse(sv, c, REPLY_PLAIN, "first message is not HELLO");
		return;
	}
	if (c->rank >= 0 && (h->rank != c->rank || h->job != sv->job ||
			     h->size != sv->size)) {
		snprintf(why, sizeof(why), "header says rank %d size %d, "
			 "connection joined as rank %d", h->rank, h->size,
			 c->rank);
		conn_refuse(sv, c, REPLY_PLAIN, why);
		return;
	}
	if (sv->abort_reason[0] && h->type != PSC_WIRE_HELLO) {
		server_error(sv, c, REPLY_PLAIN, sv->abort_reason);
		return;
	}
	switch (h->type) {
	case PSC_WIRE_HELLO:
		if (c->rank >= 0)
			conn_refuse(sv, c, REPLY_PLAIN, "second HELLO");
		else
			handle_hello(sv, c);
		break;
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

/* Read what is available on c; handle complete messages. */
static void conn_read(struct server *sv, struct conn *c)
{
	char why[200];

	for (;;) {
		size_t want = c->in_payload ? c->hdr.len : PSC_WIRE_HDR_LEN;
		uint8_t *dst = c->in_payload ? c->payload : c->hdrbuf;
		ssize_t n;

		n = recv(c->fd, dst + c->got, want - c->got, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
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
			if (psc_wire_decode(c->hdrbuf, &c->hdr, why,
					    sizeof(why)) != 0) {
				conn_refuse(sv, c, REPLY_PLAIN, why);
				return;
			}
			free(c->payload);
			c->payload = NULL;
			if (c->hdr.len) {
				c->payload = malloc(c->hdr.len);
				if (!c->payload) {
					conn_refuse(sv, c, REPLY_PLAIN, "out of memory");
					return;
				}
				c->in_payload = true;
				continue;
			}
		}
		c->in_payload = false;
		handle_msg(sv, c);
		if (c->fd < 0)
			return;
	}
}

static void server_accept(struct server *sv)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd = accept4(sv->lfd, (struct sockaddr *)&ss, &sl,
			 SOCK_CLOEXEC | SOCK_NONBLOCK);
	struct conn *grown, *c;

	if (fd < 0)
		return;
	grown = realloc(sv->conns, (sv->nconns + 1) * sizeof(*c));
	if (!grown) {
		close(fd);
		return;
	}
	sv->conns = grown;
	c = &sv->conns[sv->nconns++];
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->rank = -1;
	psc_sockaddr_str((struct sockaddr *)&ss, c->peer, sizeof(c->peer));
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
	PSC_APPEND(why, sizeof(why), used, "%s never joined the rendezvous "
		   "within PS_COMM_TIMEOUT (not started, or died first)",
		   n > 8 ? "..." : "");
	server_abort(sv, why);
}

static void *server_main(void *arg)
{
	struct server *sv = arg;

	while (sv->byes < sv->size && psc_now() < sv->deadline) {
		size_t n = sv->nconns;
		struct pollfd *p = calloc(n + 2, sizeof(*p));

		if (!p)
			break;
		p[0] = (struct pollfd){.fd = sv->lfd, .events = POLLIN};
		p[1] = (struct pollfd){.fd = sv->stop_pipe[0], .events = POLLIN};
		for (size_t i = 0; i < n; i++)
			p[i + 2] = (struct pollfd){.fd = sv->conns[i].fd,
						   .events = POLLIN};
		if (poll(p, n + 2, 200) > 0) {
			if (p[1].revents) {
				free(p);
				break;
			}
			for (size_t i = 0; i < n; i++)
				if (p[i + 2].revents && sv->conns[i].fd >= 0)
					conn_read(sv, &sv->conns[i]);
			if (p[0].revents)
				server_accept(sv);
		}
		free(p);
	}
	if (sv->byes < sv->size && psc_now() >= sv->deadline)
		missing_abort(sv);
	return NULL;
}

static void server_free(struct server *sv)
{
	for (size_t i = 0; i < sv->nconns; i++) {
		sv->conns[i].bye = true; /* no abort on teardown */
		conn_drop(sv, &sv->conns[i]);
	}
	free(sv->conns);
	while (sv->kvs) {
		struct kv *k = sv->kvs;

		sv->kvs = k->next;
		free(k->key);
		free(k->val);
		free(k);
	}
	if (sv->lfd >= 0)
		close(sv->lfd);
	close(sv->stop_pipe[0]);
	close(sv->stop_pipe[1]);
	free(sv);
}

/* Start the server on addr (rank 0). */
static int server_start(struct psc_store *s, struct sockaddr_storage *addr,
			socklen_t addrlen, uint64_t job,
			struct server **out)
{
	struct server *sv = calloc(1, sizeof(*sv));
	char as[80];
	int rc;

	if (!sv)
		return -ENOMEM;
	if (pipe2(sv->stop_pipe, O_CLOEXEC) != 0) {
		free(sv);
		return -errno;
	}
	psc_sockaddr_str((struct sockaddr *)addr, as, sizeof(as));
	sv->lfd = psc_listen(addr, addrlen, NULL);
	if (sv->lfd < 0) {
		rc = sv->lfd;
		snprintf(s->err, sizeof(s->err), "rank 0 cannot listen on "
			 "PS_COMM_ROOT %s: %s", as, strerror(-rc));
		sv->lfd = -1;
		server_free(sv);
		return rc;
	}
	sv->size = s->size;
	sv->job = job;
	sv->deadline = s->deadline;
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
	struct server *server;
};

/* Send a request and read one reply; *pay is malloc'd (or NULL). */
static int client_call(struct psc_store *s, uint16_t type, const void *pay,
		       uint32_t len, struct psc_wire_hdr *rh, void **rpay)
{
	struct tcp_store *t = s->priv;
	struct psc_wire_hdr h = {PSC_WIRE_MAGIC, PSC_WIRE_VERSION, type,
				 t->job, s->rank, s->size, len};
	uint8_t hb[PSC_WIRE_HDR_LEN];
	char why[200];
	int rc;

	*rpay = NULL;
	rc = wire_send(t->fd, &h, pay, s->deadline);
	if (rc == 0)
		rc = psc_read_full(t->fd, hb, sizeof(hb), s->deadline);
	if (rc == -ETIMEDOUT) {
		snprintf(s->err, sizeof(s->err), "no answer from the "
			 "rendezvous at %s within PS_COMM_TIMEOUT", t->root);
		return rc;
	}
	if (rc) {
		snprintf(s->err, sizeof(s->err), "lost the connection to the "
			 "rendezvous at %s (%s): rank 0 died or refused us",
			 t->root, strerror(-rc));
		return rc;
	}
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
	/* A refusal carries the root's job id: read its reason first. */
	if (rh->type != PSC_WIRE_ERROR &&
	    (rh->job & ~GEN_MASK) != (t->job & ~GEN_MASK)) {
		free(*rpay);
		*rpay = NULL;
		snprintf(s->err, sizeof(s->err), "reply from the rendezvous "
			 "at %s belongs to another job", t->root);
		return -EPROTO;
	}
	if (rh->type == PSC_WIRE_ERROR && rh->rank == REPLY_RETRY)
		return -EAGAIN;
	if (rh->type == PSC_WIRE_ERROR) {
		snprintf(s->err, sizeof(s->err), "%s",
			 *rpay ? (char *)*rpay : "rendezvous error");
		free(*rpay);
		*rpay = NULL;
		return rh->rank == REPLY_MISMATCH ? -EBADE : -ECONNABORTED;
	}
	return 0;
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
 * Connect and say HELLO until the root accepts us. A root still serving
 * this job's previous communicator answers "retry", or closes as it ends.
 */
static int client_join(struct psc_store *s, const struct sockaddr_storage *ra,
		       socklen_t ralen, const char *host)
{
	struct tcp_store *t = s->priv;
	int rc = -ETIMEDOUT, last;

	for (unsigned attempt = 0; psc_now() < s->deadline; attempt++) {
		struct psc_wire_hdr rh;
		void *rp = NULL;

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
		rc = client_call(s, PSC_WIRE_HELLO, host,
				 (uint32_t)strlen(host), &rh, &rp);
		free(rp);
		if (rc == 0)
			return rh.type == PSC_WIRE_OK ? 0 : -EPROTO;
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
		      socklen_t ralen, uint64_t job, struct server **sv)
{
	struct sockaddr_storage a = *ra;
	int rc = server_start(s, &a, ralen, job, sv);

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
		rc = server_start(s, &a, ralen, job, sv);
	}
	return rc;
}

int psc_store_tcp_open(struct psc_store *s, const char *root,
		       const struct psc_params *p)
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
	t->job = psc_store_job_id(p) | next_generation();
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
		rc = root_serve(s, &ra, ralen, t->job, &t->server);
		if (rc)
			return rc;
	}
	gethostname(host, sizeof(host) - 1);
	return client_join(s, &ra, ralen, host);
}
