/*
 * The tcp rendezvous store's decoders of outside bytes: the wire header
 * (psc_wire_decode), a bootstrap record as read from the store
 * (psc_boot_record_decode, and its MAC check), and the whole root server
 * (lib/boot/store_tcp.c) reading one connection's bytes.
 *
 * Input: byte 0 chooses what the server connection does first; bit 0
 * set: a proper handshake as rank 1 with the empty key (public, so this
 * reaches what an admitted rank can send; the harness then writes the
 * root's generation into every header it finds walking the input by
 * its lengths), else nothing. The remaining
 * bytes are also fed, as they are, to the header and record decoders, and
 * then sent to a fresh root (rank 0 of a 2-rank job on 127.0.0.1), whose
 * reply stream is read until it closes.
 *
 * Promises checked: a decoded header re-encodes to the same bytes; a
 * decoded record re-encodes and decodes to the same fields; no made-up
 * MAC verifies; the root always closes a connection that closed its
 * writing side (no hang), and stays alive to serve the next input.
 * Crashes and leaks are AddressSanitizer's to find.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "boot/boot.h"
#include "boot/store.h"
#include "net/auth.h"
#include "net/net.h"
#include "net/wire.h"
#include "util/log.h"
#include "util/param.h"
#include "util/util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);

static struct psc_params params;
static struct psc_auth_key none;
static char root[64];
/* The generation of the root opened last: the tcp store counts opens. */
static uint64_t gen;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *a = (struct sockaddr_in *)&ss;
	char err[256];
	int fd;

	setenv("PS_COMM_LOG_LEVEL", "error", 1);
	psc_log_setup();
	if (psc_params_load(&params, err, sizeof(err)) ||
	    psc_auth_key_load(&none, "", err, sizeof(err)))
		abort();
	/* A free port on loopback for the roots to come. */
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(0x7f000001);
	fd = psc_listen(&ss, sizeof(*a), NULL);
	if (fd < 0)
		abort();
	snprintf(root, sizeof(root), "127.0.0.1:%u", ntohs(a->sin_port));
	close(fd);
	return 0;
}

static void decoders(const uint8_t *data, size_t size)
{
	struct psc_boot_record rec, again;
	struct psc_wire_hdr h;
	uint8_t buf[4096], session[PSC_AUTH_SESSION_LEN] = {0};
	char err[256];
	size_t n;

	if (size >= PSC_WIRE_HDR_LEN &&
	    psc_wire_decode(data, &h, err, sizeof(err)) == 0) {
		psc_wire_encode(&h, buf);
		PSC_FUZZ_ASSERT(memcmp(buf, data, PSC_WIRE_HDR_LEN) == 0);
		PSC_FUZZ_ASSERT(h.len <= PSC_WIRE_MAX_PAYLOAD);
	}
	if (psc_boot_record_decode(data, size, &rec)) {
		PSC_FUZZ_ASSERT(rec.addrlen > 0 && rec.addrlen <= sizeof(rec.addr));
		n = psc_boot_record_encode(&rec, buf, sizeof(buf));
		PSC_FUZZ_ASSERT(n > 0);
		PSC_FUZZ_ASSERT(psc_boot_record_decode(buf, n, &again));
		PSC_FUZZ_ASSERT(strcmp(rec.provider, again.provider) == 0 &&
			strcmp(rec.host, again.host) == 0 &&
			strcmp(rec.live, again.live) == 0 &&
			rec.hash == again.hash && rec.addrlen == again.addrlen &&
			memcmp(rec.addr, again.addr, rec.addrlen) == 0);
	}
	/* The last 32 bytes as a record's MAC: a made-up one never holds. */
	if (size >= PSC_AUTH_MAC_LEN)
		PSC_FUZZ_ASSERT(psc_auth_record_check(&none, session, 1, "rec", data,
					      size - PSC_AUTH_MAC_LEN,
					      data + size - PSC_AUTH_MAC_LEN) ==
			-EACCES);
}

/*
 * Read what comes back until the root closes; false if it never does. A
 * signal that interrupts the wait is no verdict: wait again.
 */
static bool drain(int fd, double deadline)
{
	uint8_t buf[4096];

	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int ms = (int)((deadline - psc_now()) * 1000);
		ssize_t n;
		int rc;

		if (ms <= 0)
			return false;
		rc = poll(&p, 1, ms);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0)
			return false;
		n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0)
			return true;
	}
}

/*
 * Before the harness gives up on a connection the root never closed:
 * both ends' ports (equal ones would be a connection to itself), and
 * the kernel's view of every socket on the root's port.
 */
static void explain_open(int fd)
{
	struct sockaddr_in me = {0}, peer = {0};
	socklen_t ml = sizeof(me), pl = sizeof(peer);
	const char *port = strrchr(root, ':') + 1;
	char line[512], want[16];
	FILE *f;

	getsockname(fd, (struct sockaddr *)&me, &ml);
	getpeername(fd, (struct sockaddr *)&peer, &pl);
	fprintf(stderr, "fuzz_store: connection from port %u to port %u, root "
		"%s, still open after 8 s; sockets on the root's port (st 01 "
		"established, 06 time-wait, 08 close-wait, 0A listen):\n",
		ntohs(me.sin_port), ntohs(peer.sin_port), root);
	snprintf(want, sizeof(want), ":%04X ", (unsigned)atoi(port));
	f = fopen("/proc/self/net/tcp", "r");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, want))
			fprintf(stderr, "  %s", line);
	if (f)
		fclose(f);
}

/* A proper handshake as rank 1 with the empty key: true when admitted. */
static bool authenticate(int fd, double deadline)
{
	uint8_t hb[PSC_WIRE_HDR_LEN], hello[PSC_AUTH_HELLO_LEN + 4];
	uint8_t chal[PSC_AUTH_CHAL_LEN], proof[PSC_AUTH_PROOF_LEN];
	uint8_t bind[12] = {0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2};
	struct psc_wire_hdr h = {PSC_WIRE_MAGIC, PSC_WIRE_VERSION,
				 PSC_WIRE_HELLO, gen, 1, 2, sizeof(hello)};
	struct psc_auth_hs hs;
	char err[128];

	psc_be_put(bind, gen, 4);
	psc_auth_client_hello(&hs, &none, PSC_AUTH_STORE, bind, sizeof(bind),
			      hello);
	memcpy(hello + PSC_AUTH_HELLO_LEN, "fuzz", 4);
	psc_wire_encode(&h, hb);
	if (psc_write_full(fd, hb, sizeof(hb), deadline) ||
	    psc_write_full(fd, hello, sizeof(hello), deadline) ||
	    psc_read_full(fd, hb, sizeof(hb), deadline) ||
	    psc_wire_decode(hb, &h, err, sizeof(err)) ||
	    h.type != PSC_WIRE_CHAL || h.len != sizeof(chal) ||
	    psc_read_full(fd, chal, sizeof(chal), deadline) ||
	    psc_auth_client_proof(&hs, chal, sizeof(chal), proof, NULL))
		return false;
	h = (struct psc_wire_hdr){PSC_WIRE_MAGIC, PSC_WIRE_VERSION,
				  PSC_WIRE_PROOF, gen, 1, 2, sizeof(proof)};
	psc_wire_encode(&h, hb);
	return psc_write_full(fd, hb, sizeof(hb), deadline) == 0 &&
	       psc_write_full(fd, proof, sizeof(proof), deadline) == 0 &&
	       psc_read_full(fd, hb, sizeof(hb), deadline) == 0 &&
	       psc_wire_decode(hb, &h, err, sizeof(err)) == 0 &&
	       h.type == PSC_WIRE_OK;
}

static void server(const uint8_t *data, size_t size)
{
	static uint64_t opened;
	struct psc_store s = {0};
	struct sockaddr_storage ra;
	struct psc_hostport hp;
	socklen_t rl;
	char err[256];
	double deadline;
	bool closed;
	int fd, last;

	s.rank = 0;
	s.size = 2;
	s.deadline = psc_now() + 30;
	gen = opened++ & 0xffff;
	if (psc_store_tcp_open(&s, root, &params, &none) != 0) {
		/* The port may linger in use: not the input's fault. */
		if (s.ops)
			s.ops->close(&s);
		return;
	}
	PSC_FUZZ_ASSERT(psc_hostport_parse(root, &hp) == 0 &&
		psc_resolve(&hp, &ra, &rl, err, sizeof(err)) == 0);
	deadline = psc_now() + 5;
	fd = psc_connect_retry((struct sockaddr *)&ra, rl, deadline, &last);
	PSC_FUZZ_ASSERT(fd >= 0);
	if (!(data[0] & 1) || authenticate(fd, deadline)) {
		uint8_t *msg = malloc(size);

		PSC_FUZZ_ASSERT(msg);
		memcpy(msg, data + 1, size - 1);
		/* Admitted: every header speaks for this root's generation. */
		for (size_t off = 0; (data[0] & 1) &&
				     off + PSC_WIRE_HDR_LEN <= size - 1;) {
			psc_be_put(msg + off + 8, gen, 8);
			off += PSC_WIRE_HDR_LEN + psc_be_get(msg + off + 24, 4);
		}
		if (psc_write_full(fd, msg, size - 1, deadline) == 0)
			shutdown(fd, SHUT_WR);
		else
			shutdown(fd, SHUT_RDWR);
		free(msg);
		/* The root closes within its stranger deadline at most. */
		closed = drain(fd, psc_now() + 8);
		if (!closed) {
			double t = psc_now();

			explain_open(fd);
			fprintf(stderr, "fuzz_store: %s\n",
				drain(fd, t + 30) ? "closed later" : "open 30 s more");
			fprintf(stderr, "fuzz_store: after %.1f s more\n",
				psc_now() - t);
		}
		PSC_FUZZ_ASSERT(closed);
	}
	close(fd);
	s.ops->close(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	decoders(data + 1, size - 1);
	server(data, size);
	return 0;
}
