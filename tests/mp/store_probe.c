/*
 * store_probe: a misbehaving client of the tcp rendezvous, for
 * tests/mp/bad_input.sh. It reads PS_COMM_ROOT, PS_COMM_RANK,
 * PS_COMM_SIZE, PS_COMM_TIMEOUT and PS_COMM_JOB_KEY from the environment
 * and, depending on argv[1]:
 *
 *   garbage        connects (plain socket, retrying until PS_COMM_TIMEOUT)
 *                  to the root, sends 64 garbage bytes that cannot start
 *                  with the magic, then reads until EOF. The root must
 *                  refuse and close.
 *   oversized      sends a well-formed header (magic, version, HELLO,
 *                  generation 0, rank, size) whose length is
 *                  PSC_WIRE_MAX_PAYLOAD + 1, no payload, and reads the
 *                  reply (an ERROR) until EOF.
 *   hello-and-die  joins the rendezvous as rank PS_COMM_RANK with
 *                  psc_store_tcp_open (the whole handshake), publishes a
 *                  key of its own (so it counts as a joined rank), then
 *                  _exit(9) before its record: a rank that dies
 *                  mid-bootstrap.
 *   hello-and-hang the same, then sleeps until killed.
 *   hello-and-wait the same, then waits for the record "probe" of rank
 *                  PS_COMM_RANK - 1 (a rank that has not joined) until
 *                  killed; it prints "waiting" first.
 *
 * Everything that happens is printed on stdout, one line per event.
 *
 * Exit codes:
 *   0  garbage/oversized: the root refused and closed (EOF or reset)
 *   2  usage or environment error (bad mode, PS_COMM_* unset or invalid)
 *   3  could not connect to, or join, the rendezvous
 *   4  garbage/oversized: the root neither refused nor closed within
 *      PS_COMM_TIMEOUT (the probe gives up), or sent something unexpected
 *   9  hello-and-die: joined, then died on purpose
 *   hello-and-hang does not exit by itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot/boot.h"
#include "boot/store.h"
#include "core/ep.h"
#include "core/req.h"
#include "net/net.h"
#include "net/wire.h"
#include "util/param.h"
#include "util/util.h"

#define EXIT_USAGE 2
#define EXIT_CONNECT 3
#define EXIT_UNEXPECTED 4
#define EXIT_DIED 9

struct probe {
	struct psc_params params;
	int rank, size;
	double deadline;
	struct sockaddr_storage ra;
	socklen_t ralen;
};

static int setup(struct probe *p)
{
	struct psc_hostport hp;
	char err[512];

	if (psc_params_load(&p->params, err, sizeof(err)) != 0) {
		printf("store_probe: %s\n", err);
		return EXIT_USAGE;
	}
	if (psc_env_rank_size(&p->rank, &p->size, err, sizeof(err)) != 0) {
		printf("store_probe: %s\n", err);
		return EXIT_USAGE;
	}
	if (!*p->params.root || psc_hostport_parse(p->params.root, &hp) != 0 ||
	    hp.port == 0) {
		printf("store_probe: PS_COMM_ROOT=\"%s\" is not host:port\n",
		       p->params.root);
		return EXIT_USAGE;
	}
	if (psc_resolve(&hp, &p->ra, &p->ralen, err, sizeof(err)) != 0) {
		printf("store_probe: %s\n", err);
		return EXIT_USAGE;
	}
	p->deadline = psc_now() + p->params.timeout;
	return 0;
}

static int connect_root(struct probe *p, int *fd)
{
	int last = 0;

	*fd = psc_connect_retry((const struct sockaddr *)&p->ra, p->ralen,
				p->deadline, &last);
	if (*fd < 0) {
		printf("connect to %s failed: %s\n", p->params.root,
		       strerror(last ? last : -*fd));
		return EXIT_CONNECT;
	}
	printf("connected to %s\n", p->params.root);
	return 0;
}

/* Print the reply collected in buf (got bytes), if it is one. */
static void print_reply(const uint8_t *buf, size_t got)
{
	struct psc_wire_hdr h;
	char why[200];
	size_t pl;

	if (got < PSC_WIRE_HDR_LEN) {
		printf("no reply header (%zu bytes)\n", got);
		return;
	}
	if (psc_wire_decode(buf, &h, why, sizeof(why)) != 0) {
		printf("undecodable reply: %s\n", why);
		return;
	}
	pl = PSC_MIN((size_t)h.len, got - PSC_WIRE_HDR_LEN);
	printf("reply type %u%s len %u: %.*s\n", h.type,
	       h.type == PSC_WIRE_ERROR ? " (ERROR)" : "", h.len, (int)pl,
	       (const char *)buf + PSC_WIRE_HDR_LEN);
}

/*
 * Collect whatever the root sends until EOF (the reply's header and
 * payload may come in separate segments), print it, report how it ended.
 */
static int drain(struct probe *p, int fd)
{
	uint8_t buf[4096], scratch[4096];
	size_t got = 0, total = 0;
	const char *how;

	for (;;) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		int ms = (int)((p->deadline - psc_now()) * 1000);
		uint8_t *dst = got < sizeof(buf) ? buf + got : scratch;
		size_t room = got < sizeof(buf) ? sizeof(buf) - got
						: sizeof(scratch);
		ssize_t n;

		if (ms <= 0 || poll(&pf, 1, ms) == 0) {
			print_reply(buf, got);
			printf("no EOF from the root within PS_COMM_TIMEOUT "
			       "(%zu bytes received)\n", total);
			return EXIT_UNEXPECTED;
		}
		n = recv(fd, dst, room, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0) {
			how = "EOF";
			break;
		}
		if (n < 0 && errno == ECONNRESET) {
			how = "connection reset";
			break;
		}
		if (n < 0) {
			print_reply(buf, got);
			printf("recv: %s\n", strerror(errno));
			return EXIT_UNEXPECTED;
		}
		if (dst == buf + got)
			got += (size_t)n;
		total += (size_t)n;
	}
	print_reply(buf, got);
	printf("%s after %zu bytes: the root closed\n", how, total);
	return 0;
}

static int mode_garbage(struct probe *p)
{
	uint8_t junk[64];
	int fd, rc, ufd;

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 37 + 11);
	ufd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (ufd >= 0) {
		if (read(ufd, junk, sizeof(junk)) < 0) {
			/* keep the fixed pattern */
		}
		close(ufd);
	}
	/* Never the magic: the first byte of "PSCS" is 'P'. */
	if (junk[0] == 'P')
		junk[0] = 'X';
	rc = connect_root(p, &fd);
	if (rc)
		return rc;
	rc = psc_write_full(fd, junk, sizeof(junk), p->deadline);
	printf("sent %zu garbage bytes: %s\n", sizeof(junk),
	       rc ? strerror(-rc) : "ok");
	/* A root that already closed may reset the write: still a refusal. */
	rc = drain(p, fd);
	close(fd);
	return rc;
}

static int mode_oversized(struct probe *p)
{
	struct psc_wire_hdr h = {
		.magic = PSC_WIRE_MAGIC,
		.version = PSC_WIRE_VERSION,
		.type = PSC_WIRE_HELLO,
		/* generation 0: the job's first communicator */
		.job = 0,
		.rank = p->rank,
		.size = p->size,
		.len = PSC_WIRE_MAX_PAYLOAD + 1,
	};
	uint8_t hb[PSC_WIRE_HDR_LEN];
	int fd, rc;

	psc_wire_encode(&h, hb);
	rc = connect_root(p, &fd);
	if (rc)
		return rc;
	rc = psc_write_full(fd, hb, sizeof(hb), p->deadline);
	printf("sent HELLO header with len %u (limit %u): %s\n", h.len,
	       PSC_WIRE_MAX_PAYLOAD, rc ? strerror(-rc) : "ok");
	rc = drain(p, fd);
	close(fd);
	return rc;
}

enum hello_then { HELLO_DIE, HELLO_HANG, HELLO_WAIT };

static int mode_hello(struct probe *p, enum hello_then then)
{
	struct psc_store s = {0};
	struct psc_auth_key key;
	int rc;

	s.rank = p->rank;
	s.size = p->size;
	s.deadline = p->deadline;
	rc = psc_auth_key_load(&key, p->params.job_key, s.err, sizeof(s.err));
	if (!rc)
		rc = psc_store_tcp_open(&s, p->params.root, &p->params, &key);
	/* A rank that has published something has joined. */
	if (!rc)
		rc = s.ops->put(&s, "probe", "x", 1);
	if (rc) {
		printf("joining the rendezvous as rank %d failed: %s\n",
		       p->rank, s.err);
		if (s.ops)
			s.ops->close(&s);
		return EXIT_CONNECT;
	}
	printf("joined the rendezvous at %s as rank %d of %d; %s\n",
	       p->params.root, p->rank, p->size,
	       then == HELLO_DIE ? "dying now" : "hanging until killed");
	fflush(stdout);
	if (then == HELLO_DIE)
		_exit(EXIT_DIED);
	if (then == HELLO_WAIT && p->rank > 0) {
		void *val = NULL;
		size_t len;

		printf("waiting for rank %d\n", p->rank - 1);
		fflush(stdout);
		rc = s.ops->get(&s, p->rank - 1, "probe", &val, &len);
		printf("the wait ended: %s\n", rc ? s.err : "got it");
		free(val);
	}
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	struct probe p;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2) {
		fprintf(stderr, "usage: store_probe garbage|oversized|"
			"hello-and-die|hello-and-hang|hello-and-wait\n");
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "garbage") != 0 &&
	    strcmp(argv[1], "oversized") != 0 &&
	    strcmp(argv[1], "hello-and-die") != 0 &&
	    strcmp(argv[1], "hello-and-hang") != 0 &&
	    strcmp(argv[1], "hello-and-wait") != 0) {
		fprintf(stderr, "store_probe: unknown mode \"%s\"\n", argv[1]);
		return EXIT_USAGE;
	}
	rc = setup(&p);
	if (rc)
		return rc;
	if (strcmp(argv[1], "garbage") == 0)
		return mode_garbage(&p);
	if (strcmp(argv[1], "oversized") == 0)
		return mode_oversized(&p);
	if (strcmp(argv[1], "hello-and-die") == 0)
		return mode_hello(&p, HELLO_DIE);
	return mode_hello(&p, strcmp(argv[1], "hello-and-wait") == 0
				      ? HELLO_WAIT
				      : HELLO_HANG);
}
