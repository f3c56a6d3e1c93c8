/*
 * store_attack: a stranger at a pscomm rendezvous, for tests/sec/attacks.sh
 * (doc/security.md). It reads PS_COMM_ROOT (127.0.0.1:port), PS_COMM_SIZE
 * and PS_COMM_JOB_KEY from the environment and, by argv[1]:
 *
 *   fdcycle N        N sequential connect-and-close
 *   bloat N HOLD     N connections, each sending a header that declares a
 *                    1 MiB HELLO and as much of it as the root takes within
 *                    50 ms; all held open HOLD seconds
 *   relay PORT FILE  listen on 127.0.0.1:PORT, pass one client through to
 *                    the root and record every byte it sends in FILE
 *   replay FILE HOLD send FILE to the root byte for byte, read replies
 *                    for HOLD seconds
 *   hello-close R    say HELLO as rank R and close; then do the whole
 *                    handshake as rank R (with the key of the environment,
 *                    none in the test) and close before publishing
 *   wrongkey         join as rank 1 with the environment's (wrong) key
 *   forge            HELLO as rank 1, a made-up PROOF, a forged record
 *                    and a GET of rank 0's record, all in one go
 *
 * A reply that grants anything to a stranger (OK or VALUE after a bad
 * proof or a replay) prints "ATTACK SUCCEEDED"; the script fails on it.
 * Exit 0 unless the tool itself could not run (2).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "boot/store.h"
#include "net/auth.h"
#include "net/wire.h"
#include "util/param.h"
#include "util/util.h"

static struct sockaddr_in root_sa;

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static int parse_root(void)
{
	const char *r = getenv("PS_COMM_ROOT");
	char host[64];
	int port;

	if (!r || sscanf(r, "%63[^:]:%d", host, &port) != 2)
		return -1;
	memset(&root_sa, 0, sizeof(root_sa));
	root_sa.sin_family = AF_INET;
	root_sa.sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &root_sa.sin_addr) == 1 ? 0 : -1;
}

/* Connect to the root, retrying for up to 10 s. */
static int dial(void)
{
	double end = now_s() + 10;

	while (now_s() < end) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd >= 0 && connect(fd, (struct sockaddr *)&root_sa,
				       sizeof(root_sa)) == 0)
			return fd;
		if (fd >= 0)
			close(fd);
		usleep(20000);
	}
	return -1;
}

static int send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read up to len bytes within ms; returns bytes read (0 on EOF). */
static ssize_t recv_some(int fd, void *buf, size_t len, int ms)
{
	struct pollfd pf = {.fd = fd, .events = POLLIN};

	if (poll(&pf, 1, ms) <= 0)
		return -2;
	return recv(fd, buf, len, 0);
}

static void put_be(uint8_t *b, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--) {
		b[i] = (uint8_t)v;
		v >>= 8;
	}
}

static uint64_t get_be(const uint8_t *b, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | b[i];
	return v;
}

/* A raw header: magic, version 1, type, job, rank, size, len. */
static void raw_hdr(uint8_t *b, unsigned type, uint64_t job, int rank,
		    int size, uint32_t len)
{
	put_be(b, PSC_WIRE_MAGIC, 4);
	put_be(b + 4, PSC_WIRE_VERSION, 2);
	put_be(b + 6, type, 2);
	put_be(b + 8, job, 8);
	put_be(b + 16, (uint32_t)rank, 4);
	put_be(b + 20, (uint32_t)size, 4);
	put_be(b + 24, len, 4);
}

/* fdcycle N: N sequential connect-and-close. */
static int mode_fdcycle(int n)
{
	int ok = 0;

	for (int i = 0; i < n; i++) {
		int fd = dial();

		if (fd < 0)
			break;
		ok++;
		close(fd);
	}
	printf("fdcycle: %d of %d connections made\n", ok, n);
	return 0;
}

/* bloat N HOLD: N connections, each declaring a 1 MiB HELLO, held. */
static int mode_bloat(int n, double hold)
{
	int *fds = calloc((size_t)n, sizeof(int)), made = 0;
	uint8_t h[28];

	raw_hdr(h, 1, 0, 1, 2, 1u << 20);
	for (int i = 0; i < n; i++) {
		int fd = dial();

		if (fd < 0)
			break;
		fds[made++] = fd;
		if (send_all(fd, h, sizeof(h)) != 0)
			continue;
		/* All but the last byte of the payload, as far as the
		 * root takes it within 50 ms: its buffer fills for real. */
		{
			static uint8_t junk[(1u << 20) - 1];
			struct timeval tv = {0, 50000};

			setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv,
				   sizeof(tv));
			send_all(fd, junk, sizeof(junk));
		}
	}
	printf("bloat: %d connections declared 1 MiB each\n", made);
	fflush(stdout);
	usleep((useconds_t)(hold * 1e6));
	for (int i = 0; i < made; i++)
		close(fds[i]);
	free(fds);
	return 0;
}

/* relay LPORT FILE: be the root for one client, record what it sends. */
static int mode_relay(int lport, const char *file)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)lport),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int one = 1, lfd = socket(AF_INET, SOCK_STREAM, 0), cfd, sfd;
	FILE *out = fopen(file, "wb");
	int open_c = 1, open_s = 1;

	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (!out || bind(lfd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(lfd, 4)) {
		perror("relay");
		return 2;
	}
	printf("relay: listening on %d\n", lport);
	fflush(stdout);
	cfd = accept(lfd, NULL, NULL);
	sfd = dial();
	if (cfd < 0 || sfd < 0)
		return 3;
	while (open_c || open_s) {
		struct pollfd p[2] = {{cfd, open_c ? POLLIN : 0, 0},
				      {sfd, open_s ? POLLIN : 0, 0}};
		uint8_t buf[65536];
		ssize_t n;

		if (poll(p, 2, 30000) <= 0)
			break;
		if (p[0].revents) {
			n = recv(cfd, buf, sizeof(buf), 0);
			if (n <= 0) {
				open_c = 0;
				shutdown(sfd, SHUT_WR);
			} else {
				fwrite(buf, 1, (size_t)n, out);
				send_all(sfd, buf, (size_t)n);
			}
		}
		if (p[1].revents) {
			n = recv(sfd, buf, sizeof(buf), 0);
			if (n <= 0) {
				open_s = 0;
				shutdown(cfd, SHUT_WR);
			} else {
				send_all(cfd, buf, (size_t)n);
			}
		}
	}
	fclose(out);
	close(cfd);
	close(sfd);
	printf("relay: done\n");
	return 0;
}

/* replay FILE HOLD: send what a client sent before, byte for byte. */
static int mode_replay(const char *file, double hold)
{
	static uint8_t buf[1 << 20];
	FILE *in = fopen(file, "rb");
	size_t n = in ? fread(buf, 1, sizeof(buf), in) : 0;
	int fd = dial();
	uint8_t r[4096];
	double end;
	size_t total = 0;

	if (in)
		fclose(in);
	if (!n || fd < 0)
		return 3;
	send_all(fd, buf, n);
	printf("replay: sent %zu captured bytes\n", n);
	end = now_s() + hold;
	while (now_s() < end) {
		ssize_t k = recv_some(fd, r, sizeof(r), 200);

		if (k == 0 || (k < 0 && k != -2))
			break;
		if (k > 0) {
			for (size_t off = 0; off + 28 <= (size_t)k; off++)
				if (get_be(r + off, 4) == 0x50534353u) {
				{
					unsigned t = (unsigned)get_be(r + off + 6, 2);

					printf("replay: reply type %u len %u%s\n", t,
					       (unsigned)get_be(r + off + 24, 4),
					       t == 4 || t == 5
						       ? ": ATTACK SUCCEEDED"
						       : "");
				}
				}
			total += (size_t)k;
		}
	}
	printf("replay: %zu bytes of replies\n", total);
	close(fd);
	return 0;
}

/* HELLO as rank, then close at once. */
static void raw_hello_close(int rank, int size)
{
	uint8_t h[PSC_WIRE_HDR_LEN + PSC_AUTH_HELLO_LEN + 8];
	int fd = dial();

	if (fd < 0)
		return;
	raw_hdr(h, PSC_WIRE_HELLO, 0, rank, size, PSC_AUTH_HELLO_LEN + 8);
	psc_auth_random(h + PSC_WIRE_HDR_LEN, PSC_AUTH_HELLO_LEN);
	memcpy(h + PSC_WIRE_HDR_LEN + PSC_AUTH_HELLO_LEN, "stranger", 8);
	send_all(fd, h, sizeof(h));
	close(fd);
	printf("hello-close: said HELLO as rank %d and closed\n", rank);
}

/* Join through the library's own client as rank; close without a word. */
static int lib_join(int rank, int size, bool publish)
{
	struct psc_params p;
	struct psc_auth_key k;
	struct psc_store s = {0};
	char err[512];
	int rc;

	if (psc_params_load(&p, err, sizeof(err)) ||
	    psc_auth_key_load(&k, p.job_key, err, sizeof(err))) {
		printf("setup: %s\n", err);
		return 2;
	}
	s.rank = rank;
	s.size = size;
	s.deadline = now_s() + 10;
	rc = psc_store_tcp_open(&s, getenv("PS_COMM_ROOT"), &p, &k);
	if (rc) {
		printf("join as rank %d refused: %s\n", rank, s.err);
	} else {
		printf("joined as rank %d%s\n", rank,
		       k.keyed ? " with a key: ATTACK SUCCEEDED" : " (no key)");
		if (publish && s.ops->put(&s, "rec", "forged", 6) == 0)
			printf("published a forged record%s\n",
			       k.keyed ? ": ATTACK SUCCEEDED" : "");
	}
	if (s.ops)
		s.ops->close(&s);
	return 0;
}

/* HELLO, a made-up PROOF, SET and GET in one write; report the replies. */
static int mode_forge(int size)
{
	static const char set[] = "rec\0v=forged\n\naddr";
	uint8_t out[1024], r[4096];
	size_t n = 0, got = 0;
	int fd = dial();
	double end;

	if (fd < 0)
		return 2;
	raw_hdr(out + n, PSC_WIRE_HELLO, 0, 1, size, PSC_AUTH_HELLO_LEN + 8);
	n += PSC_WIRE_HDR_LEN;
	psc_auth_random(out + n, PSC_AUTH_HELLO_LEN);
	n += PSC_AUTH_HELLO_LEN;
	memcpy(out + n, "stranger", 8);
	n += 8;
	raw_hdr(out + n, PSC_WIRE_PROOF, 0, 1, size, PSC_AUTH_PROOF_LEN);
	n += PSC_WIRE_HDR_LEN;
	psc_auth_random(out + n, PSC_AUTH_PROOF_LEN);
	n += PSC_AUTH_PROOF_LEN;
	raw_hdr(out + n, PSC_WIRE_SET, 0, 1, size, sizeof(set));
	n += PSC_WIRE_HDR_LEN;
	memcpy(out + n, set, sizeof(set));
	n += sizeof(set);
	raw_hdr(out + n, PSC_WIRE_GET, 0, 1, size, 5);
	n += PSC_WIRE_HDR_LEN;
	memcpy(out + n, "0/rec", 5);
	n += 5;
	send_all(fd, out, n);
	end = now_s() + 3;
	while (now_s() < end && got < sizeof(r)) {
		ssize_t k = recv_some(fd, r + got, sizeof(r) - got, 200);

		if (k == 0 || (k < 0 && k != -2))
			break;
		if (k > 0)
			got += (size_t)k;
	}
	close(fd);
	for (size_t off = 0; off + PSC_WIRE_HDR_LEN <= got;) {
		unsigned t = (unsigned)get_be(r + off + 6, 2);
		uint32_t len = (uint32_t)get_be(r + off + 24, 4);

		/* Text only from an ERROR: a CHAL is binary. */
		printf("forge: reply type %u len %u%s %.*s\n", t, len,
		       t == PSC_WIRE_OK || t == PSC_WIRE_VALUE
			       ? ": ATTACK SUCCEEDED"
			       : "",
		       t == PSC_WIRE_ERROR
			       ? (int)PSC_MIN(len, got - off - PSC_WIRE_HDR_LEN)
			       : 0,
		       (char *)r + off + PSC_WIRE_HDR_LEN);
		off += PSC_WIRE_HDR_LEN + len;
	}
	printf("forge: %zu bytes of replies, then the root closed\n", got);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	const char *sz = getenv("PS_COMM_SIZE");
	int size = sz ? atoi(sz) : 2;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (parse_root()) {
		fprintf(stderr, "store_attack: PS_COMM_ROOT must be "
			"127.0.0.1:port\n");
		return 2;
	}
	if (!strcmp(mode, "fdcycle") && argc == 3)
		return mode_fdcycle(atoi(argv[2]));
	if (!strcmp(mode, "bloat") && argc == 4)
		return mode_bloat(atoi(argv[2]), atof(argv[3]));
	if (!strcmp(mode, "relay") && argc == 4)
		return mode_relay(atoi(argv[2]), argv[3]);
	if (!strcmp(mode, "replay") && argc == 4)
		return mode_replay(argv[2], atof(argv[3]));
	if (!strcmp(mode, "hello-close") && argc == 3) {
		raw_hello_close(atoi(argv[2]), size);
		return lib_join(atoi(argv[2]), size, false);
	}
	if (!strcmp(mode, "wrongkey") && argc == 2)
		return lib_join(1, size, true);
	if (!strcmp(mode, "forge") && argc == 2)
		return mode_forge(size);
	fprintf(stderr, "usage: store_attack fdcycle N | bloat N HOLD | relay "
		"PORT FILE | replay FILE HOLD | hello-close RANK | wrongkey | "
		"forge\n");
	return 2;
}
