/*
 * The authenticated listener (lib/net/listener.c) reading one
 * connection's bytes, with the wire format's codec (psc_wire_lsn_decode,
 * lib/net/wire.c) that the rendezvous and the van's address server use:
 * framing, the handshake's states (HELLO, CHAL, PROOF), the limits on a
 * stranger's frames and the refusals.
 *
 * Input: byte 0 bit 0 set: first a proper handshake as rank 1 with the
 * empty key (public, so the rest reaches what an admitted peer can
 * send), else nothing. The remaining bytes go to the codec as they are,
 * then to the listener on a fresh loopback connection whose writing side
 * then closes.
 *
 * Promises checked: a decoded frame lies within the bytes it came from
 * and is at least a header long; the listener closes every connection
 * whose peer stopped writing (no hang); a connection that did not run
 * the handshake is never admitted and none of its bytes reach on_frame;
 * every admitted connection's close reaches on_close once. Crashes and
 * leaks are AddressSanitizer's to find.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "net/auth.h"
#include "net/listener.h"
#include "net/net.h"
#include "net/wire.h"
#include "util/log.h"
#include "util/util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);

static struct psc_auth_key none;
static struct psc_lsn *lsn;
static struct sockaddr_in where;
static int admitted, frames, closed;

static int f_hello(void *arg, struct psc_lsn_conn *c,
		   const struct psc_lsn_frame *f, uint8_t *bind,
		   size_t *bindlen, uint8_t *session)
{
	psc_be_put(bind, (uint32_t)f->rank, 4);
	*bindlen = 4;
	return 0;
}

static int f_admit(void *arg, struct psc_lsn_conn *c,
		   const struct psc_lsn_frame *proof)
{
	admitted++;
	return 0;
}

static int f_frame(void *arg, struct psc_lsn_conn *c,
		   const struct psc_lsn_frame *f)
{
	frames++;
	/* A type the server does not know closes the connection. */
	return f->type >= PSC_WIRE_TYPE_MAX - 1 ? -EPROTO : 0;
}

static void f_close(void *arg, struct psc_lsn_conn *c, int err)
{
	closed++;
}

static const struct psc_lsn_ops ops = {
	.size = sizeof(struct psc_lsn_ops),
	.name = "fuzz",
	.purpose = PSC_AUTH_STORE,
	.pre_max = PSC_WIRE_HDR_LEN + 96,
	.frame_max = PSC_WIRE_HDR_LEN + 8192,
	.decode = psc_wire_lsn_decode,
	.encode_chal = psc_wire_lsn_chal,
	.on_hello = f_hello,
	.on_authenticated = f_admit,
	.on_frame = f_frame,
	.on_close = f_close,
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct psc_lsn_config cfg = {.unauth_max = 4,
				     .pre_deadline = 2,
				     .send_s = 0,
				     .log_rank = -1};
	char err[256];

	setenv("PS_COMM_LOG_LEVEL", "error", 1);
	psc_log_setup();
	if (psc_auth_key_load(&none, "", err, sizeof(err)))
		abort();
	cfg.key = none;
	where.sin_family = AF_INET;
	where.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cfg.fd = psc_listen((struct sockaddr_storage *)&where, sizeof(where),
			    NULL);
	if (cfg.fd < 0 || psc_lsn_open(&lsn, &cfg, &ops, NULL, err,
				       sizeof(err)))
		abort();
	return 0;
}

/* Serve the listener for secs seconds. */
static void pump(double secs)
{
	double end = psc_now() + secs;

	while (psc_now() < end) {
		struct pollfd pf[16];
		int n = psc_lsn_pollfds(lsn, pf, PSC_ARRAY_SIZE(pf));

		if (poll(pf, (nfds_t)n, 5) <= 0)
			n = 0;
		psc_lsn_service(lsn, pf, n);
	}
}

static void send_msg(int fd, uint16_t type, const void *pl, uint32_t len)
{
	struct psc_wire_hdr h = {PSC_WIRE_MAGIC, PSC_WIRE_VERSION, type, 0,
				 1, 2, len};
	uint8_t b[PSC_WIRE_HDR_LEN + 64];

	psc_wire_encode(&h, b);
	memcpy(b + PSC_WIRE_HDR_LEN, pl, len);
	PSC_FUZZ_ASSERT(psc_write_full(fd, b, PSC_WIRE_HDR_LEN + len,
				       psc_now() + 2) == 0);
}

/* The client's side of the handshake as rank 1 with the empty key. */
static void handshake(int fd)
{
	uint8_t hello[PSC_AUTH_HELLO_LEN], proof[PSC_AUTH_PROOF_LEN];
	uint8_t hb[PSC_WIRE_HDR_LEN], chal[PSC_AUTH_CHAL_LEN], bind[4];
	struct psc_auth_hs hs;
	int before = admitted;

	psc_be_put(bind, 1, 4);
	psc_auth_client_hello(&hs, &none, PSC_AUTH_STORE, bind, sizeof(bind),
			      hello);
	send_msg(fd, PSC_WIRE_HELLO, hello, sizeof(hello));
	for (double end = psc_now() + 2; psc_now() < end;) {
		pump(0.01);
		if (recv(fd, hb, 1, MSG_PEEK | MSG_DONTWAIT) == 1)
			break;
	}
	PSC_FUZZ_ASSERT(psc_read_full(fd, hb, sizeof(hb), psc_now() + 2) == 0);
	PSC_FUZZ_ASSERT(psc_read_full(fd, chal, sizeof(chal),
				      psc_now() + 2) == 0);
	PSC_FUZZ_ASSERT(psc_auth_client_proof(&hs, chal, sizeof(chal), proof,
					      NULL) == 0);
	send_msg(fd, PSC_WIRE_PROOF, proof, sizeof(proof));
	for (double end = psc_now() + 2; admitted == before && psc_now() < end;)
		pump(0.01);
	PSC_FUZZ_ASSERT(admitted == before + 1);
}

static void codec(const uint8_t *data, size_t size)
{
	struct psc_lsn_frame f;
	char why[256];
	long n = psc_wire_lsn_decode(data, size, &f, why, sizeof(why));

	PSC_FUZZ_ASSERT(n == 0 || n == -EPROTO || n >= PSC_WIRE_HDR_LEN);
	if (n == -EPROTO)
		PSC_FUZZ_ASSERT(why[0] != '\0');
	if (n > 0 && (size_t)n <= size)
		PSC_FUZZ_ASSERT(f.pl + f.plen == data + n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool proper = size > 0 && (data[0] & 1);
	int fd, last, was_admitted = admitted, was_closed = closed;
	int was_frames = frames;
	double end;

	if (size == 0)
		return 0;
	codec(data + 1, size - 1);
	fd = psc_connect_retry((struct sockaddr *)&where, sizeof(where),
			       psc_now() + 2, &last);
	PSC_FUZZ_ASSERT(fd >= 0);
	pump(0.01);
	if (proper)
		handshake(fd);
	/* The listener may refuse and close midway: a failed write is fine. */
	if (size > 1)
		(void)psc_write_full(fd, data + 1, size - 1, psc_now() + 2);
	shutdown(fd, SHUT_WR);
	/* The listener must close its side: EOF or a reset. */
	for (end = psc_now() + 5;; pump(0.01)) {
		uint8_t b[512];
		ssize_t n = recv(fd, b, sizeof(b), MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno != EAGAIN))
			break;
		PSC_FUZZ_ASSERT(psc_now() < end);
	}
	close(fd);
	pump(0.01);
	PSC_FUZZ_ASSERT(admitted == was_admitted + (proper ? 1 : 0));
	if (!proper)
		PSC_FUZZ_ASSERT(frames == was_frames);
	PSC_FUZZ_ASSERT(closed - was_closed == admitted - was_admitted);
	return 0;
}
