/*
 * The van's address exchange over TCP. ps-lite's nodes know each other
 * by host:port only, so a bound van listens there and answers every fetch
 * with its fabric address and a fresh slot (the number the fetcher puts
 * in the tag's rank field when it sends to this van). Messages use the
 * tcp store's wire header (magic, version, length; job 0), so a
 * malformed peer is refused rather than trusted. The server is a
 * listener (net/listener.h): a fetch first runs the job key's handshake
 * (net/auth.h), HELLO with the fetcher's nonce, CHAL with the van's,
 * PROOF; a fetcher that does not know the key is dropped without a word,
 * strangers are capped at PS_COMM_UNAUTH_MAX, and a van that does not
 * know the key is never asked. Then GET with payload "van", followed,
 * when the fetcher will send to the van, by a NUL and its own addresses
 * (what it serves, as an answer carries them): the van binds the new slot
 * to those, for the go-ahead of large messages (psc_node_chan_reply_bind).
 * The answer is VALUE with the slot as rank and the addresses as
 * psc_van_answer_parse reads them (the network endpoint's, and with
 * shared memory the node's identity and the shm endpoint's), or ERROR
 * with a reason.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/listener.h"
#include "van_int.h"

#define FETCH_KEY "van"
#define REPLY_MAX 768
/* One fetch may hold the single server thread at most this long. */
#define SERVE_IO_SEC 2.0

struct psc_van_server {
	struct psc_lsn *lsn;
	struct psc_van_served what;
};

static int write_msg(int fd, uint16_t type, int32_t rank,
		     const void *payload, size_t len, double deadline)
{
	struct psc_wire_hdr h = {PSC_WIRE_MAGIC, PSC_WIRE_VERSION, type, 0,
				 rank, 0, (uint32_t)len};
	uint8_t buf[PSC_WIRE_HDR_LEN + REPLY_MAX];

	if (len > REPLY_MAX)
		return -EMSGSIZE;
	psc_wire_encode(&h, buf);
	if (len)
		memcpy(buf + PSC_WIRE_HDR_LEN, payload, len);
	return psc_write_full(fd, buf, PSC_WIRE_HDR_LEN + len, deadline);
}

/* Read one message whose payload fits room bytes. */
static int read_msg(int fd, struct psc_wire_hdr *h, uint8_t *payload,
		    size_t room, double deadline, char *err, size_t errlen)
{
	uint8_t hb[PSC_WIRE_HDR_LEN];
	int rc = psc_read_full(fd, hb, sizeof(hb), deadline);

	if (rc) {
		snprintf(err, errlen, "reading: %s", strerror(-rc));
		return rc;
	}
	rc = psc_wire_decode(hb, h, err, errlen);
	if (rc)
		return rc;
	if (h->len > room) {
		snprintf(err, errlen, "message of %u bytes, at most %zu "
			 "expected", h->len, room);
		return -EPROTO;
	}
	rc = h->len ? psc_read_full(fd, payload, h->len, deadline) : 0;
	if (rc)
		snprintf(err, errlen, "reading: %s", strerror(-rc));
	return rc;
}

/* ops.on_hello: a fetch binds nothing, and its HELLO is a nonce alone. */
static int van_hello(void *arg, struct psc_lsn_conn *c,
		     const struct psc_lsn_frame *f, uint8_t *bind,
		     size_t *bindlen, uint8_t *session)
{
	return f->plen == PSC_AUTH_HELLO_LEN ? 0 : -EPROTO;
}

static int van_admit(void *arg, struct psc_lsn_conn *c,
		     const struct psc_lsn_frame *proof)
{
	return 0;
}

/*
 * Encode the addresses w into o (room bytes): "provider\0", a big-endian
 * u16 n, n bytes of the network address, then "node\0" and the shm
 * address when there is one. The length, or 0 when it does not fit.
 */
static size_t names_encode(const struct psc_node_names *w, uint8_t *o,
			   size_t room)
{
	size_t plen = strlen(w->provider) + 1;
	size_t nodelen = w->shmlen ? strlen(w->node) + 1 : 0;
	size_t len = plen + 2 + w->namelen + nodelen + w->shmlen;

	if (len > room)
		return 0;
	memcpy(o, w->provider, plen);
	o += plen;
	*o++ = (uint8_t)(w->namelen >> 8);
	*o++ = (uint8_t)w->namelen;
	memcpy(o, w->name, w->namelen);
	o += w->namelen;
	if (w->shmlen) {
		memcpy(o, w->node, nodelen);
		memcpy(o + nodelen, w->shm, w->shmlen);
	}
	return len;
}

/* Answer c with ERROR and the reason why (logged too), then close. */
static void refuse(struct psc_lsn_conn *c, const char *why)
{
	struct psc_wire_hdr h = {PSC_WIRE_MAGIC, PSC_WIRE_VERSION,
				 PSC_WIRE_ERROR, 0, 0, 0, 0};
	uint8_t out[PSC_WIRE_HDR_LEN + 256];

	psc_log(PSC_LOG_WARN, -1, "van: refusing a fetch: %s", why);
	h.len = (uint32_t)PSC_MIN(strlen(why), sizeof(out) - PSC_WIRE_HDR_LEN);
	psc_wire_encode(&h, out);
	memcpy(out + PSC_WIRE_HDR_LEN, why, h.len);
	psc_lsn_send(c, out, PSC_WIRE_HDR_LEN + h.len);
	psc_lsn_close(c);
}

/*
 * Bind slot to the addresses a fetch carried after "van\0" (len bytes
 * at in), in the van's channel. 0, or -1 with c refused.
 */
static int bind_fetcher(struct psc_van_server *s, struct psc_lsn_conn *c,
			uint32_t slot, const uint8_t *in, size_t len)
{
	struct psc_node_names names;
	struct psc_van_addr a;
	char err[256], why[320];
	int rc = psc_van_names_parse(in, len, s->what.names.provider, &a, err,
				     sizeof(err));

	if (rc) {
		refuse(c, err);
		return -1;
	}
	psc_van_addr_names(&a, s->what.names.provider, &names);
	rc = psc_node_chan_reply_bind(s->what.chan, slot, &names);
	if (rc) {
		snprintf(why, sizeof(why), "this van cannot take another "
			 "node: %s", strerror(-rc));
		refuse(c, why);
		return -1;
	}
	return 0;
}

/* ops.on_frame: answer the fetch (GET "van"), then close. */
static int van_fetch(void *arg, struct psc_lsn_conn *c,
		     const struct psc_lsn_frame *f)
{
	struct psc_van_server *s = arg;
	struct psc_wire_hdr h = {PSC_WIRE_MAGIC, PSC_WIRE_VERSION,
				 PSC_WIRE_VALUE, 0, 0, 0, 0};
	uint8_t out[PSC_WIRE_HDR_LEN + REPLY_MAX];
	size_t klen = strlen(FETCH_KEY), len;
	uint32_t slot;

	if (f->type != PSC_WIRE_GET || f->plen < klen ||
	    memcmp(f->pl, FETCH_KEY, klen) != 0 ||
	    (f->plen > klen && f->pl[klen] != '\0')) {
		psc_log(PSC_LOG_WARN, -1, "van: refusing a request of type %u",
			f->type);
		return -EPROTO;
	}
	len = names_encode(&s->what.names, out + PSC_WIRE_HDR_LEN, REPLY_MAX);
	if (len == 0)
		return -EMSGSIZE;
	/* Slots wrap past the tag's rank field, skipping 0. */
	do
		slot = __atomic_fetch_add(s->what.next_slot, 1,
					  __ATOMIC_RELAXED) %
		       (PSC_VAN_SLOT_MAX + 1);
	while (slot == 0);
	/* A fetcher that will send says where its go-aheads go. */
	if (f->plen > klen &&
	    bind_fetcher(s, c, slot, f->pl + klen + 1, f->plen - klen - 1))
		return 0;
	h.rank = (int32_t)slot;
	h.len = (uint32_t)len;
	psc_wire_encode(&h, out);
	psc_lsn_send(c, out, PSC_WIRE_HDR_LEN + h.len);
	psc_lsn_close(c);
	return 0;
}

static const struct psc_lsn_ops van_lsn_ops = {
	.size = sizeof(struct psc_lsn_ops),
	.name = "van: address server",
	.purpose = PSC_AUTH_VAN,
	.pre_max = PSC_WIRE_HDR_LEN + 64,
	.frame_max = PSC_WIRE_HDR_LEN + REPLY_MAX,
	.decode = psc_wire_lsn_decode,
	.encode_chal = psc_wire_lsn_chal,
	.on_hello = van_hello,
	.on_authenticated = van_admit,
	.on_frame = van_fetch,
};

/* at with port. */
static void listen_addr(const struct sockaddr_storage *at, int port,
			struct sockaddr_storage *ss)
{
	*ss = *at;
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
}

static uint16_t port_of(const struct sockaddr_storage *ss)
{
	return ntohs(ss->ss_family == AF_INET6
			     ? ((const struct sockaddr_in6 *)ss)->sin6_port
			     : ((const struct sockaddr_in *)ss)->sin_port);
}

int psc_van_serve(struct psc_van_server **out,
		  const struct sockaddr_storage *at, socklen_t atlen, int port,
		  bool retry, const char *range,
		  const struct psc_van_served *what, int *bound, char *err,
		  size_t errlen)
{
	struct psc_van_server *s = calloc(1, sizeof(*s));
	struct psc_lsn_config cfg = {.key = *what->key,
				     .unauth_max = what->unauth_max,
				     .pre_deadline = SERVE_IO_SEC,
				     .send_s = SERVE_IO_SEC,
				     .tick_s = 0.2,
				     .log_rank = -1};
	struct sockaddr_storage ss;
	char where[INET6_ADDRSTRLEN + 8];
	int rc;

	if (!s)
		return -ENOMEM;
	s->what = *what;
	listen_addr(at, port, &ss);
	rc = port > 0 ? psc_listen(&ss, atlen, NULL) : -EADDRINUSE;
	if (rc < 0 && rc != -EADDRNOTAVAIL && (retry || port <= 0)) {
		listen_addr(at, 0, &ss);
		rc = psc_listen(&ss, atlen, range);
	}
	if (rc < 0) {
		listen_addr(at, port, &ss);
		psc_sockaddr_str((const struct sockaddr *)&ss, where,
				 sizeof(where));
		snprintf(err, errlen, "cannot listen on %s: %s", where,
			 strerror(-rc));
		free(s);
		return rc;
	}
	cfg.fd = rc;
	*bound = port_of(&ss);
	rc = psc_lsn_open(&s->lsn, &cfg, &van_lsn_ops, s, err, errlen);
	if (rc == 0 && (rc = psc_lsn_start(s->lsn)) != 0)
		snprintf(err, errlen, "starting the address server: %s",
			 strerror(-rc));
	memset(&cfg.key, 0, sizeof(cfg.key));
	if (rc) {
		psc_lsn_free(s->lsn);
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void psc_van_unserve(struct psc_van_server *s)
{
	if (!s)
		return;
	psc_lsn_free(s->lsn);
	free(s);
}

/*
 * The shared-memory part of an answer: rest bytes at p, "node\0" then
 * the address, or nothing. Returns 0 or -EPROTO with err filled.
 */
static int answer_shm(const uint8_t *p, size_t rest, struct psc_van_addr *a,
		      char *err, size_t errlen)
{
	const uint8_t *nul = memchr(p, '\0', rest);
	size_t nodelen;

	a->node[0] = '\0';
	a->shmlen = 0;
	if (rest == 0)
		return 0;
	nodelen = nul ? (size_t)(nul - p) : 0;
	if (nodelen == 0 || nodelen >= sizeof(a->node) ||
	    rest - nodelen - 1 == 0 ||
	    rest - nodelen - 1 > sizeof(a->shm)) {
		snprintf(err, errlen, "malformed shared-memory address "
			 "(%zu bytes)", rest);
		return -EPROTO;
	}
	memcpy(a->node, p, nodelen + 1);
	a->shmlen = rest - nodelen - 1;
	memcpy(a->shm, nul + 1, a->shmlen);
	return 0;
}

void psc_van_addr_names(const struct psc_van_addr *a, const char *provider,
			struct psc_node_names *out)
{
	out->provider = provider;
	out->name = a->name;
	out->namelen = a->namelen;
	out->node = a->node;
	out->shm = a->shm;
	out->shmlen = a->shmlen;
}

int psc_van_names_parse(const uint8_t *in, size_t len, const char *provider,
			struct psc_van_addr *a, char *err, size_t errlen)
{
	const uint8_t *nul = memchr(in, '\0', len);
	size_t n, rest;

	if (!nul) {
		snprintf(err, errlen, "malformed addresses (%zu bytes)", len);
		return -EPROTO;
	}
	if (strcmp((const char *)in, provider) != 0) {
		snprintf(err, errlen, "it uses provider %s, this node %s (set "
			 "the same FI_PROVIDER everywhere)", (const char *)in,
			 provider);
		return -EBADE;
	}
	rest = len - (size_t)(nul + 1 - in);
	n = rest >= 2 ? (size_t)nul[1] << 8 | nul[2] : 0;
	if (n == 0 || n > sizeof(a->name) || n > rest - 2) {
		snprintf(err, errlen, "fabric address of %zu bytes in %zu", n,
			 rest);
		return -EPROTO;
	}
	memcpy(a->name, nul + 3, n);
	a->namelen = n;
	return answer_shm(nul + 3 + n, rest - 2 - n, a, err, errlen);
}

int psc_van_answer_parse(const struct psc_wire_hdr *h, const uint8_t *in,
			 const char *provider, struct psc_van_addr *a,
			 char *err, size_t errlen)
{
	if (h->type == PSC_WIRE_ERROR) {
		snprintf(err, errlen, "refused: %.*s", (int)h->len,
			 (const char *)in);
		return -EBADE;
	}
	if (h->type != PSC_WIRE_VALUE || h->rank <= 0 ||
	    (uint32_t)h->rank > PSC_VAN_SLOT_MAX) {
		snprintf(err, errlen, "malformed answer (type %u)", h->type);
		return -EPROTO;
	}
	a->slot = (uint32_t)h->rank;
	return psc_van_names_parse(in, h->len, provider, a, err, errlen);
}

/* The fetcher's handshake: HELLO, check CHAL, PROOF. */
static int fetch_auth(int fd, const struct psc_auth_key *key,
		      const char *host, int port, double deadline, char *err,
		      size_t errlen)
{
	struct psc_auth_hs hs;
	struct psc_wire_hdr h;
	uint8_t hello[PSC_AUTH_HELLO_LEN], in[REPLY_MAX];
	uint8_t proof[PSC_AUTH_PROOF_LEN];
	int rc;

	psc_auth_client_hello(&hs, key, PSC_AUTH_VAN, NULL, 0, hello);
	rc = write_msg(fd, PSC_WIRE_HELLO, -1, hello, sizeof(hello), deadline);
	if (rc) {
		snprintf(err, errlen, "writing: %s", strerror(-rc));
		return rc;
	}
	rc = read_msg(fd, &h, in, sizeof(in), deadline, err, errlen);
	if (rc)
		return rc;
	if (h.type != PSC_WIRE_CHAL ||
	    psc_auth_client_proof(&hs, in, h.len, proof, NULL) != 0) {
		snprintf(err, errlen, "the van at %s:%d did not prove that it "
			 "knows this job's PS_COMM_JOB_KEY (another job, or "
			 "another key)", host, port);
		return -EBADE;
	}
	rc = write_msg(fd, PSC_WIRE_PROOF, -1, proof, sizeof(proof), deadline);
	if (rc)
		snprintf(err, errlen, "writing: %s", strerror(-rc));
	return rc;
}

/*
 * The GET of a fetch into buf: "van", and with self, a NUL and self's
 * addresses. Its length, or 0 when they do not fit.
 */
static size_t fetch_request(const struct psc_node_names *self, uint8_t *buf,
			    size_t room)
{
	size_t klen = strlen(FETCH_KEY), len;

	memcpy(buf, FETCH_KEY, klen);
	if (!self)
		return klen;
	buf[klen] = '\0';
	len = names_encode(self, buf + klen + 1, room - klen - 1);
	return len ? klen + 1 + len : 0;
}

/*
 * One fetch over fd, connected to host:port: the handshake, the GET and
 * the answer into *a. -ECONNRESET or -EPIPE when the van closed the
 * connection first, which it does to the oldest stranger past
 * PS_COMM_UNAUTH_MAX: not a refusal, since the van proved it knows the
 * key before this side sent its own proof, and a van that knows the key
 * accepts that proof.
 */
static int fetch_once(int fd, const char *host, int port,
		      const struct psc_auth_key *key, const uint8_t *get,
		      size_t getlen, const char *provider, double deadline,
		      struct psc_van_addr *a, char *err, size_t errlen)
{
	struct psc_wire_hdr h;
	uint8_t in[REPLY_MAX];
	int rc = fetch_auth(fd, key, host, port, deadline, err, errlen);

	if (!rc) {
		rc = write_msg(fd, PSC_WIRE_GET, -1, get, getlen, deadline);
		if (rc)
			snprintf(err, errlen, "writing: %s", strerror(-rc));
	}
	if (!rc)
		rc = read_msg(fd, &h, in, sizeof(in), deadline, err, errlen);
	if (!rc)
		rc = psc_van_answer_parse(&h, in, provider, a, err, errlen);
	return rc;
}

int psc_van_fetch(const char *host, int port, const struct psc_auth_key *key,
		  const struct psc_node_names *self, const char *provider,
		  double deadline, struct psc_van_addr *a, char *err,
		  size_t errlen)
{
	struct psc_hostport hp;
	struct sockaddr_storage ss;
	uint8_t get[REPLY_MAX];
	size_t getlen = fetch_request(self, get, sizeof(get));
	socklen_t sl;
	unsigned step = 0;
	int fd, rc, last = 0;

	memset(&hp, 0, sizeof(hp));
	if (getlen == 0) {
		snprintf(err, errlen, "this node's addresses do not fit in a "
			 "fetch");
		return -EMSGSIZE;
	}
	if (!host || !*host || strlen(host) >= sizeof(hp.host) || port <= 0 ||
	    port > 65535) {
		snprintf(err, errlen, "bad address %s:%d", host ? host : "",
			 port);
		return -EINVAL;
	}
	snprintf(hp.host, sizeof(hp.host), "%s", host);
	hp.port = (uint16_t)port;
	rc = psc_resolve(&hp, &ss, &sl, err, errlen);
	if (rc)
		return rc;
	/* A van that closed the connection first is asked again. */
	for (;;) {
		fd = psc_connect_retry((struct sockaddr *)&ss, sl, deadline,
				       &last);
		if (fd < 0) {
			snprintf(err, errlen, "no answer from %s:%d (%s)",
				 host, port, strerror(last ? last : -fd));
			return fd;
		}
		rc = fetch_once(fd, host, port, key, get, getlen, provider,
				deadline, a, err, errlen);
		close(fd);
		if ((rc != -ECONNRESET && rc != -EPIPE) ||
		    psc_now() >= deadline)
			break;
		psc_backoff_sleep(0.01, 0.2, step++, true, deadline);
	}
	if (rc == -ECONNRESET || rc == -EPIPE)
		snprintf(err, errlen, "the van at %s:%d kept closing the "
			 "connection before it answered (more strangers at "
			 "once than its PS_COMM_UNAUTH_MAX, or it is stopping)",
			 host, port);
	return rc;
}
