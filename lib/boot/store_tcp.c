/*
 * The tcp rendezvous store's client. Rank 0 serves the store on
 * PS_COMM_ROOT from a listener thread that lives only during bootstrap
 * (store_tcp_server.c); every rank, rank 0 included, is a client with
 * one connection. Every message carries a header with magic,
 * protocol version, generation, rank, size and payload length.
 *
 * A connection is a stranger until it has proved that it knows the job
 * key (net/auth.h): HELLO (nonce, host name), CHAL from the root (its
 * nonce, the rendezvous id, its MAC), PROOF (the client's MAC). Only then
 * is it admitted as the rank it claims, and only then does the root say
 * anything about the job (size, ranks, generation). A stranger gets a
 * small fixed buffer, a short deadline and a place among at most
 * PS_COMM_UNAUTH_MAX others (the oldest goes first); its refusal says
 * nothing about the job, and its leaving costs nothing (net/listener.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot/store.h"
#include "boot/store_tcp_int.h"
#include "net/auth.h"
#include "net/net.h"
#include "net/wire.h"
#include "util/log.h"
#include "util/util.h"

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

void psc_store_tcp_bind(uint8_t *b, uint64_t job, int32_t rank,
			int32_t size)
{
	psc_be_put(b, job & GEN_MASK, 4);
	psc_be_put(b + 4, (uint32_t)rank, 4);
	psc_be_put(b + 8, (uint32_t)size, 4);
}

/* ----------------------------------------------------------- client */

struct tcp_store {
	int fd;
	uint64_t job;
	char root[300];
	struct psc_auth_key key;
	struct psc_store_tcp_server *server;
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
	if (s->rank == JOIN_RANK && rh->type == PSC_WIRE_OK) {
		/* Admitted to a grow: its generation is ours from now on. */
		t->job = rh->job & GEN_MASK;
	} else if ((rh->job & GEN_MASK) != (t->job & GEN_MASK)) {
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
		psc_store_tcp_unserve(t->server, true);
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
		psc_store_tcp_unserve(t->server, false);
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
 * A joiner's admission: its rank, the grown size and the grant (the
 * grow's context id), checked as a stranger's words would be.
 */
static int take_grant(struct psc_store *s, const uint8_t *g, size_t len)
{
	struct tcp_store *t = s->priv;
	int32_t rank, size;

	if (!g || len != JOIN_GRANT_LEN) {
		snprintf(s->err, sizeof(s->err), "the grow at %s answered the "
			 "join with %zu bytes, not %d", t->root, len,
			 JOIN_GRANT_LEN);
		return -EPROTO;
	}
	rank = (int32_t)psc_be_get(g, 4);
	size = (int32_t)psc_be_get(g + 4, 4);
	if (size < 2 || rank < 1 || rank >= size) {
		snprintf(s->err, sizeof(s->err), "the grow at %s gave this "
			 "process rank %d of %d", t->root, rank, size);
		return -EPROTO;
	}
	s->rank = rank;
	s->size = size;
	s->grow.grant = (uint32_t)psc_be_get(g + 8, 4);
	return 0;
}

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

	psc_store_tcp_bind(bind, t->job, s->rank, s->size);
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
	if (rc == 0 && rh.type == PSC_WIRE_OK && s->rank == JOIN_RANK)
		rc = take_grant(s, rp, rh.len);
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
		/* A grow's old rank looks at its communicator between tries. */
		double until = s->grow.dead ? PSC_MIN(s->deadline, psc_now() + 0.2)
				       : s->deadline;

		t->fd = psc_connect_retry((const struct sockaddr *)ra, ralen,
					  until, &last);
		if (t->fd < 0 && s->grow.dead &&
		    s->grow.dead(s->grow.dead_arg, s->err, sizeof(s->err)))
			return -EHOSTDOWN;
		if (t->fd < 0 && until < s->deadline)
			continue;
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
		psc_log(PSC_LOG_DEBUG, s->rank, "rendezvous at %s: %s; "
			"joining again", t->root, rc == -EAGAIN
			? "busy with another communicator" : strerror(-rc));
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
		      const struct psc_params *p, struct psc_store_tcp_server **sv)
{
	struct tcp_store *t = s->priv;
	struct sockaddr_storage a = *ra;
	int rc = psc_store_tcp_serve(s, &a, ralen, job, p, &t->key, sv);

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
		rc = psc_store_tcp_serve(s, &a, ralen, job, p, &t->key, sv);
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
	t->job = s->grow.fixed_gen ? s->grow.gen & GEN_MASK
				    : next_generation();
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
