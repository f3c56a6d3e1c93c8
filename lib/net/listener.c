/*
 * The authenticated listener (contract in listener.h): accepting with a
 * cap on strangers and a spare descriptor for when they run out, framing
 * through the server's codec, the job key's handshake, expiry of slow
 * strangers and rate-limited lines about them. Written once, for every
 * pscomm server.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/listener.h"
#include "net/outq.h"
#include "net/net.h"
#include "util/log.h"
#include "util/util.h"

/* Lines about strangers: a burst of this many, then one a second. */
#define LOG_BURST 5.0
/* An admitted connection's first buffer. */
#define BUF_START 4096
/* Connections accepted per round, at most. */
#define ACCEPT_BATCH 8
/* How long accepting pauses when descriptors ran out. */
#define ACCEPT_PAUSE_S 0.05

enum conn_state { S_NEW, S_CHAL, S_ADMITTED };

struct psc_lsn_conn {
	struct psc_lsn *l;
	int fd;
	enum conn_state st;
	bool reading;	      /* conn_read is up the stack */
	double since, last_rx;
	char peer[80];
	struct psc_lsn_frame claim; /* the HELLO's job, rank, size */
	struct psc_auth_hs hs;
	uint8_t *buf;	      /* small, or malloc'd once admitted */
	size_t have, cap;
	struct psc_outq out;  /* polled mode: what the socket did not take */
	void *priv;
	uint8_t *small;	      /* ops->pre_max bytes after priv */
};

struct psc_lsn {
	struct psc_lsn_config cfg;
	const struct psc_lsn_ops *ops;
	void *arg;
	struct psc_lsn_conn **conns;
	size_t n, cap;
	int spare;	      /* given up when descriptors run out */
	int wake[2];	      /* thread mode: psc_lsn_stop */
	pthread_t thread;
	bool running, stop;
	double accept_pause;  /* no accept before (out of descriptors) */
	double log_at, log_tokens;
	unsigned log_quiet;
};

/* A line about strangers: a short burst, then at most one a second. */
static void stranger_log(struct psc_lsn *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void stranger_log(struct psc_lsn *l, const char *fmt, ...)
{
	char line[400];
	double now = psc_now();
	va_list ap;

	l->log_tokens = PSC_MIN(LOG_BURST, l->log_tokens + (now - l->log_at));
	l->log_at = now;
	if (l->log_tokens < 1) {
		l->log_quiet++;
		return;
	}
	l->log_tokens -= 1;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (l->log_quiet)
		psc_log(PSC_LOG_WARN, l->cfg.log_rank, "%s: %s (and %u more "
			"such events not logged)", l->ops->name, line,
			l->log_quiet);
	else
		psc_log(PSC_LOG_WARN, l->cfg.log_rank, "%s: %s", l->ops->name,
			line);
	l->log_quiet = 0;
}

static void conn_shut(struct psc_lsn_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	psc_outq_free(&c->out);
}

void psc_lsn_close(struct psc_lsn_conn *c)
{
	conn_shut(c);
}

/* The listener closes admitted c: the server hears of it once. */
static void conn_lost(struct psc_lsn_conn *c, int err)
{
	struct psc_lsn *l = c->l;

	if (c->fd < 0)
		return;
	conn_shut(c);
	if (c->st == S_ADMITTED && l->ops->on_close)
		l->ops->on_close(l->arg, c, err);
}

/* A stranger goes without a word: nothing it could learn from. */
static void stranger_drop(struct psc_lsn_conn *c, const char *why)
{
	stranger_log(c->l, "dropped a connection from %s: %s", c->peer, why);
	conn_shut(c);
}

/* Refuse c (a bad frame, a bad proof): the server's last words, close. */
static void conn_refuse(struct psc_lsn_conn *c, int err, const char *why)
{
	struct psc_lsn *l = c->l;

	if (c->st != S_ADMITTED)
		stranger_log(l, "refusing %s from %s: %s",
			     err == -EACCES ? "a connection" : "message",
			     c->peer, why);
	if (l->ops->on_refuse)
		l->ops->on_refuse(l->arg, c, err, why);
	conn_lost(c, err);
}

int psc_lsn_send(struct psc_lsn_conn *c, const void *buf, size_t len)
{
	ssize_t n;

	if (c->fd < 0)
		return -ENOTCONN;
	if (c->l->cfg.send_s > 0)
		return psc_write_full(c->fd, buf, len,
				      psc_now() + c->l->cfg.send_s);
	/* What the socket does not take waits for POLLOUT (service). */
	n = psc_outq_send(&c->out, c->fd, buf, len);
	return n == -ENOBUFS ? -EAGAIN : (int)n;
}

/* Make room for a frame of need bytes; false when it cannot be. */
static bool conn_room(struct psc_lsn_conn *c, size_t need)
{
	size_t cap;
	uint8_t *grown;

	if (need <= c->cap)
		return true;
	if (c->st != S_ADMITTED)
		return false;
	cap = PSC_MIN(PSC_MAX(need, 2 * c->cap), c->l->ops->frame_max);
	grown = c->buf == c->small ? malloc(cap) : realloc(c->buf, cap);
	if (!grown)
		return false;
	if (c->buf == c->small)
		memcpy(grown, c->small, c->have);
	c->buf = grown;
	c->cap = cap;
	return true;
}

static void on_hello(struct psc_lsn_conn *c, const struct psc_lsn_frame *f)
{
	struct psc_lsn *l = c->l;
	uint8_t bind[PSC_AUTH_BIND_MAX], session[PSC_AUTH_SESSION_LEN] = {0};
	uint8_t chal[PSC_AUTH_CHAL_LEN], out[PSC_AUTH_CHAL_LEN + 256];
	size_t bindlen = 0, olen;

	if (c->st != S_NEW || f->plen < PSC_AUTH_HELLO_LEN) {
		stranger_drop(c, c->st != S_NEW ? "second HELLO"
						: "HELLO without a nonce");
		return;
	}
	if (l->ops->on_hello(l->arg, c, f, bind, &bindlen, session) != 0) {
		stranger_drop(c, "its HELLO claims what this job refuses");
		return;
	}
	psc_auth_server_chal(&c->hs, &l->cfg.key, l->ops->purpose, bind,
			     PSC_MIN(bindlen, sizeof(bind)), f->pl,
			     PSC_AUTH_HELLO_LEN, session, chal);
	olen = l->ops->encode_chal(f, chal, sizeof(chal), out, sizeof(out));
	c->claim = *f;
	c->claim.pl = NULL;
	c->st = S_CHAL;
	if (olen == 0 || psc_lsn_send(c, out, olen) != 0)
		stranger_drop(c, "it does not read its CHAL");
}

static void on_proof(struct psc_lsn_conn *c, const struct psc_lsn_frame *f)
{
	struct psc_lsn *l = c->l;

	if (c->st != S_CHAL || f->job != c->claim.job ||
	    f->rank != c->claim.rank || f->size != c->claim.size) {
		stranger_drop(c, "PROOF out of turn");
		return;
	}
	if (psc_auth_server_check(&c->hs, f->pl, f->plen) != 0) {
		stranger_log(l, "refusing a connection from %s: it does not "
			     "know this job's PS_COMM_JOB_KEY (a foreign job, "
			     "or a stranger)", c->peer);
		if (l->ops->on_refuse)
			l->ops->on_refuse(l->arg, c, -EACCES,
					  "authentication failed");
		conn_shut(c);
		return;
	}
	/* It knows the key: one of ours, which may now send more. */
	c->st = S_ADMITTED;
	memset(&c->hs, 0, sizeof(c->hs));
	if (l->ops->on_authenticated(l->arg, c, f) != 0)
		conn_shut(c);
}

static void dispatch(struct psc_lsn_conn *c, const struct psc_lsn_frame *f)
{
	int rc;

	if (c->st == S_ADMITTED) {
		rc = c->l->ops->on_frame(c->l->arg, c, f);
		if (rc < 0)
			conn_lost(c, rc);
	} else if (f->kind == PSC_LSN_HELLO) {
		on_hello(c, f);
	} else if (f->kind == PSC_LSN_PROOF) {
		on_proof(c, f);
	} else {
		stranger_drop(c, "a request before authenticating");
	}
}

/* Handle the whole frames in c's buffer; false when c closed. */
static bool conn_frames(struct psc_lsn_conn *c)
{
	const struct psc_lsn_ops *ops = c->l->ops;
	size_t off = 0, need = 0;
	char why[200];

	while (c->fd >= 0) {
		struct psc_lsn_frame f = {0};
		size_t limit = c->st == S_ADMITTED ? ops->frame_max
						   : ops->pre_max;
		long total;

		why[0] = '\0';
		total = ops->decode(c->buf + off, c->have - off, &f, why,
				    sizeof(why));
		if (total < 0) {
			conn_refuse(c, -EPROTO, why[0] ? why : "malformed");
			break;
		}
		if (total == 0)
			break;
		if ((size_t)total > limit) {
			snprintf(why, sizeof(why), "oversized message: %ld "
				 "bytes%s (limit %zu)", total,
				 c->st == S_ADMITTED ? ""
						     : " before authentication",
				 limit);
			conn_refuse(c, -EPROTO, why);
			break;
		}
		if ((size_t)total > c->have - off) {
			need = (size_t)total;
			break;
		}
		dispatch(c, &f);
		off += (size_t)total;
	}
	if (c->fd < 0)
		return false;
	memmove(c->buf, c->buf + off, c->have - off);
	c->have -= off;
	if (need > c->cap && !conn_room(c, need)) {
		conn_refuse(c, -EPROTO, "out of memory");
		return false;
	}
	return true;
}

/* Read what is available on c and handle its frames. */
static void conn_read(struct psc_lsn_conn *c)
{
	while (c->fd >= 0) {
		ssize_t n;

		if (c->have == c->cap) {
			conn_refuse(c, -EPROTO, "a frame longer than allowed");
			return;
		}
		n = recv(c->fd, c->buf + c->have, c->cap - c->have,
			 MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			/*
			 * A client that found our CHAL wrong just leaves, and
			 * so does one of ours whose deadline passed before
			 * the CHAL came (a van's probe waits half a second).
			 */
			if (c->st == S_CHAL)
				stranger_log(c->l, "%s left during the "
					     "handshake, before proving the "
					     "job key: it gave up waiting for "
					     "this side's answer, or it has "
					     "another PS_COMM_JOB_KEY (a "
					     "foreign job)", c->peer);
			conn_lost(c, -ECONNRESET);
			return;
		}
		c->have += (size_t)n;
		c->last_rx = psc_now();
		if (!conn_frames(c))
			return;
	}
}

void psc_lsn_read(struct psc_lsn_conn *c)
{
	if (c->fd < 0 || c->reading)
		return;
	c->reading = true;
	conn_read(c);
	c->reading = false;
}

/* Strangers at once, and the oldest of them. */
static size_t strangers(const struct psc_lsn *l, struct psc_lsn_conn **old)
{
	size_t n = 0;

	if (old)
		*old = NULL;
	for (size_t i = 0; i < l->n; i++) {
		struct psc_lsn_conn *c = l->conns[i];

		if (c->fd < 0 || c->st == S_ADMITTED)
			continue;
		n++;
		if (old && (!*old || c->since < (*old)->since))
			*old = c;
	}
	return n;
}

size_t psc_lsn_strangers(const struct psc_lsn *l)
{
	return strangers(l, NULL);
}

/*
 * Out of descriptors: make room by dropping the oldest stranger, or take
 * the connection on the spare descriptor and close it, so the listener
 * does not stay readable. Either way accepting pauses a moment.
 */
static void out_of_fds(struct psc_lsn *l, int lfd)
{
	struct psc_lsn_conn *old;

	if (strangers(l, &old) > 0) {
		stranger_drop(old, "out of descriptors; dropped the oldest "
			      "unauthenticated connection");
	} else if (l->spare >= 0) {
		int fd;

		close(l->spare);
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			close(fd);
		l->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
		stranger_log(l, "out of descriptors: refused a connection");
	}
	l->accept_pause = psc_now() + ACCEPT_PAUSE_S;
}

static struct psc_lsn_conn *conn_new(struct psc_lsn *l, int fd,
				     const struct sockaddr_storage *ss)
{
	size_t priv = (l->ops->conn_priv + 15) & ~(size_t)15;
	struct psc_lsn_conn *c;

	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		/* An array of pointers: sizeof(*grown) is a pointer's size. */
		struct psc_lsn_conn **grown = realloc(
			l->conns,
			cap * sizeof(*grown)); /* NOLINT(bugprone-sizeof-expression) */

		if (!grown)
			return NULL;
		l->conns = grown;
		l->cap = cap;
	}
	c = calloc(1, sizeof(*c) + priv + l->ops->pre_max);
	if (!c)
		return NULL;
	c->l = l;
	c->fd = fd;
	c->since = c->last_rx = psc_now();
	c->priv = (uint8_t *)(c + 1);
	c->small = (uint8_t *)(c + 1) + priv;
	c->buf = c->small;
	c->cap = l->ops->pre_max;
	psc_sockaddr_str((const struct sockaddr *)ss, c->peer, sizeof(c->peer));
	l->conns[l->n++] = c;
	return c;
}

static void lsn_accept(struct psc_lsn *l)
{
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		struct sockaddr_storage ss = {0};
		socklen_t sl = sizeof(ss);
		struct psc_lsn_conn *old;
		int one = 1;
		int fd = accept4(l->cfg.fd, (struct sockaddr *)&ss, &sl,
				 SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
			out_of_fds(l, l->cfg.fd);
			return;
		}
		if (fd < 0)
			return;
		/* A frame must not wait behind an unacknowledged one. */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (strangers(l, &old) >= (size_t)l->cfg.unauth_max && old)
			stranger_drop(old, "more than PS_COMM_UNAUTH_MAX "
				      "connections are unauthenticated: "
				      "dropped the oldest");
		if (!conn_new(l, fd, &ss)) {
			close(fd);
			return;
		}
	}
}

/* Strangers that took too long to authenticate go. */
static void lsn_expire(struct psc_lsn *l, double now)
{
	for (size_t i = 0; i < l->n; i++) {
		struct psc_lsn_conn *c = l->conns[i];

		if (c->fd >= 0 && c->st != S_ADMITTED &&
		    now - c->since > l->cfg.pre_deadline)
			stranger_drop(c, "did not authenticate in time");
	}
}

static void conn_free(struct psc_lsn_conn *c)
{
	conn_shut(c);
	if (c->buf != c->small)
		free(c->buf);
	memset(&c->hs, 0, sizeof(c->hs));
	free(c);
}

/* Free the closed connections (between rounds). */
static void lsn_sweep(struct psc_lsn *l)
{
	size_t j = 0;

	for (size_t i = 0; i < l->n; i++) {
		if (l->conns[i]->fd >= 0)
			l->conns[j++] = l->conns[i];
		else
			conn_free(l->conns[i]);
	}
	l->n = j;
}

size_t psc_lsn_npoll(const struct psc_lsn *l)
{
	return 1 + l->n;
}

int psc_lsn_pollfds(struct psc_lsn *l, struct pollfd *pf, size_t max)
{
	size_t k = 0;

	lsn_sweep(l);
	if (max == 0)
		return 0;
	pf[k++] = (struct pollfd){.fd = psc_now() >= l->accept_pause
						? l->cfg.fd
						: -1,
				  .events = POLLIN};
	for (size_t i = 0; i < l->n && k < max; i++)
		pf[k++] = (struct pollfd){
			.fd = l->conns[i]->fd,
			.events = (short)(POLLIN |
					  (psc_outq_pending(&l->conns[i]->out)
						   ? POLLOUT
						   : 0))};
	return (int)k;
}

void psc_lsn_service(struct psc_lsn *l, const struct pollfd *pf, int n)
{
	/* Connections first: slot i + 1 is conns[i] (accepting appends). */
	for (int i = 1; i < n && (size_t)i <= l->n; i++) {
		struct psc_lsn_conn *c = l->conns[i - 1];

		if (!pf[i].revents || c->fd < 0 || c->fd != pf[i].fd)
			continue;
		if ((pf[i].revents & POLLOUT) &&
		    psc_outq_flush(&c->out, c->fd) != 0)
			conn_lost(c, -EPIPE);
		else if (pf[i].revents & ~POLLOUT)
			psc_lsn_read(c);
	}
	if (n > 0 && pf[0].fd >= 0 && pf[0].revents)
		lsn_accept(l);
	lsn_expire(l, psc_now());
}

static void *lsn_main(void *arg)
{
	struct psc_lsn *l = arg;
	struct pollfd *pf = NULL;
	size_t pcap = 0;

	while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
		size_t want = 1 + psc_lsn_npoll(l);
		int n, timeout;

		lsn_sweep(l);
		if (want > pcap) {
			struct pollfd *grown = realloc(pf, 2 * want *
							       sizeof(*pf));

			if (!grown)
				break;
			pf = grown;
			pcap = 2 * want;
		}
		pf[0] = (struct pollfd){.fd = l->wake[0], .events = POLLIN};
		n = psc_lsn_pollfds(l, pf + 1, pcap - 1);
		timeout = pf[1].fd < 0 ? (int)(ACCEPT_PAUSE_S * 1000)
				       : (int)(l->cfg.tick_s * 1000);
		if (poll(pf, (nfds_t)n + 1, timeout) <= 0)
			n = 0;
		else if (pf[0].revents)
			break;
		psc_lsn_service(l, pf + 1, n);
		if (l->ops->on_tick && l->ops->on_tick(l->arg, psc_now()))
			break;
	}
	free(pf);
	return NULL;
}

int psc_lsn_open(struct psc_lsn **out, const struct psc_lsn_config *cfg,
		 const struct psc_lsn_ops *ops, void *arg, char *err,
		 size_t len)
{
	struct psc_lsn *l = calloc(1, sizeof(*l));

	*out = NULL;
	if (!l || pipe2(l->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
		snprintf(err, len, "%s: starting the listener: %s", ops->name,
			 l ? strerror(errno) : "out of memory");
		close(cfg->fd);
		free(l);
		return -ENOMEM;
	}
	l->cfg = *cfg;
	if (l->cfg.unauth_max < 1)
		l->cfg.unauth_max = 1;
	if (l->cfg.tick_s <= 0)
		l->cfg.tick_s = 0.2;
	l->ops = ops;
	l->arg = arg;
	fcntl(cfg->fd, F_SETFL, fcntl(cfg->fd, F_GETFL) | O_NONBLOCK);
	l->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	l->log_at = psc_now();
	l->log_tokens = LOG_BURST;
	*out = l;
	return 0;
}

int psc_lsn_start(struct psc_lsn *l)
{
	int rc = pthread_create(&l->thread, NULL, lsn_main, l);

	l->running = rc == 0;
	return -rc;
}

void psc_lsn_stop(struct psc_lsn *l)
{
	if (!l->running)
		return;
	__atomic_store_n(&l->stop, true, __ATOMIC_RELEASE);
	if (write(l->wake[1], "x", 1) < 0) {
		/* A full pipe wakes the thread anyway. */
	}
	pthread_join(l->thread, NULL);
	l->running = false;
}

void psc_lsn_wait(struct psc_lsn *l)
{
	if (!l->running)
		return;
	pthread_join(l->thread, NULL);
	l->running = false;
}

void psc_lsn_free(struct psc_lsn *l)
{
	if (!l)
		return;
	psc_lsn_stop(l);
	for (size_t i = 0; i < l->n; i++)
		conn_free(l->conns[i]);
	free(l->conns);
	close(l->cfg.fd);
	if (l->spare >= 0)
		close(l->spare);
	close(l->wake[0]);
	close(l->wake[1]);
	memset(&l->cfg.key, 0, sizeof(l->cfg.key));
	free(l);
}

struct psc_lsn_conn *psc_lsn_next(struct psc_lsn *l,
				  const struct psc_lsn_conn *prev)
{
	size_t i = 0;

	while (prev && i < l->n && l->conns[i++] != prev)
		;
	for (; i < l->n; i++)
		if (l->conns[i]->fd >= 0 && l->conns[i]->st == S_ADMITTED)
			return l->conns[i];
	return NULL;
}

void *psc_lsn_priv(struct psc_lsn_conn *c)
{
	return c->priv;
}

const char *psc_lsn_peer(const struct psc_lsn_conn *c)
{
	return c->peer;
}

bool psc_lsn_open_p(const struct psc_lsn_conn *c)
{
	return c->fd >= 0;
}

double psc_lsn_last_rx(const struct psc_lsn_conn *c)
{
	return c->last_rx;
}

int psc_lsn_port(const struct psc_lsn *l)
{
	struct sockaddr_storage ss;
	struct sockaddr_in6 s6;
	struct sockaddr_in s4;
	socklen_t sl = sizeof(ss);

	memset(&ss, 0, sizeof(ss));
	if (getsockname(l->cfg.fd, (struct sockaddr *)&ss, &sl) != 0)
		return -errno;
	if (ss.ss_family == AF_INET6) {
		memcpy(&s6, &ss, sizeof(s6));
		return ntohs(s6.sin6_port);
	}
	memcpy(&s4, &ss, sizeof(s4));
	return ntohs(s4.sin_port);
}
