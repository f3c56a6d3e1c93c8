/*
 * Unit tests for the authenticated listener (lib/net/listener.c), driven
 * in polled mode from one thread, with the wire format's codec and real
 * loopback sockets: a peer that proves the job key gets its frames to
 * on_frame; past PS_COMM_UNAUTH_MAX the oldest stranger is dropped; a
 * made-up proof is refused (on_refuse, -EACCES) and never admitted; a
 * request before the handshake is dropped; an admitted peer's close
 * reaches on_close; and the same with the listener's own thread.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <check.h>

#include "net/auth.h"
#include "net/listener.h"
#include "net/net.h"
#include "net/wire.h"
#include "util/util.h"

struct seen {
	int hellos, admitted, frames, refused, closed;
	int last_refuse, last_close, last_type;
	char last_pl[64];
};

static struct seen seen;
static struct psc_auth_key key, other;

static int t_hello(void *arg, struct psc_lsn_conn *c,
		   const struct psc_lsn_frame *f, uint8_t *bind,
		   size_t *bindlen, uint8_t *session)
{
	seen.hellos++;
	psc_be_put(bind, (uint32_t)f->rank, 4);
	*bindlen = 4;
	return f->rank < 0 ? -EPERM : 0;
}

static int t_admit(void *arg, struct psc_lsn_conn *c,
		   const struct psc_lsn_frame *proof)
{
	seen.admitted++;
	return 0;
}

static int t_frame(void *arg, struct psc_lsn_conn *c,
		   const struct psc_lsn_frame *f)
{
	seen.frames++;
	seen.last_type = f->type;
	snprintf(seen.last_pl, sizeof(seen.last_pl), "%.*s", (int)f->plen,
		 (const char *)f->pl);
	return 0;
}

static void t_refuse(void *arg, struct psc_lsn_conn *c, int err,
		     const char *why)
{
	seen.refused++;
	seen.last_refuse = err;
}

static void t_close(void *arg, struct psc_lsn_conn *c, int err)
{
	seen.closed++;
	seen.last_close = err;
}

static const struct psc_lsn_ops ops = {
	.size = sizeof(struct psc_lsn_ops),
	.name = "test",
	.purpose = PSC_AUTH_STORE,
	.pre_max = PSC_WIRE_HDR_LEN + 64,
	.frame_max = PSC_WIRE_HDR_LEN + 4096,
	.decode = psc_wire_lsn_decode,
	.encode_chal = psc_wire_lsn_chal,
	.on_hello = t_hello,
	.on_authenticated = t_admit,
	.on_frame = t_frame,
	.on_refuse = t_refuse,
	.on_close = t_close,
};

static struct sockaddr_in where;

static struct psc_lsn *lsn_new(int unauth_max)
{
	struct psc_lsn_config cfg = {.key = key,
				     .unauth_max = unauth_max,
				     .pre_deadline = 5,
				     .send_s = 1,
				     .tick_s = 0.05,
				     .log_rank = -1};
	struct psc_lsn *l;
	char err[256];

	memset(&seen, 0, sizeof(seen));
	memset(&where, 0, sizeof(where));
	where.sin_family = AF_INET;
	where.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cfg.fd = psc_listen((struct sockaddr_storage *)&where, sizeof(where),
			    NULL);
	ck_assert_int_ge(cfg.fd, 0);
	ck_assert_int_eq(psc_lsn_open(&l, &cfg, &ops, NULL, err,
				      sizeof(err)), 0);
	ck_assert_int_eq(psc_lsn_port(l), ntohs(where.sin_port));
	return l;
}

/* Serve l for secs seconds, or until *until becomes nonzero. */
static void pump(struct psc_lsn *l, double secs, const int *until)
{
	double end = psc_now() + secs;

	while (psc_now() < end && !(until && *until)) {
		struct pollfd pf[64];
		int n = psc_lsn_pollfds(l, pf, PSC_ARRAY_SIZE(pf));

		if (poll(pf, (nfds_t)n, 10) <= 0)
			n = 0;
		psc_lsn_service(l, pf, n);
	}
}

static int dial(void)
{
	int last, fd = psc_connect_retry((struct sockaddr *)&where,
					 sizeof(where), psc_now() + 2, &last);

	ck_assert_int_ge(fd, 0);
	return fd;
}

static void send_msg(int fd, uint16_t type, int32_t rank, const void *pl,
		     uint32_t len)
{
	struct psc_wire_hdr h = {PSC_WIRE_MAGIC, PSC_WIRE_VERSION, type, 7,
				 rank, 2, len};
	uint8_t b[PSC_WIRE_HDR_LEN];

	psc_wire_encode(&h, b);
	ck_assert_int_eq(psc_write_full(fd, b, sizeof(b), psc_now() + 1), 0);
	if (len)
		ck_assert_int_eq(psc_write_full(fd, pl, len, psc_now() + 1), 0);
}

/* Whether the listener closed fd (EOF or reset within secs, pumping l). */
static bool closed_by(struct psc_lsn *l, int fd, double secs)
{
	double end = psc_now() + secs;
	uint8_t b[256];

	while (psc_now() < end) {
		ssize_t n = recv(fd, b, sizeof(b), MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno != EAGAIN))
			return true;
		pump(l, 0.02, NULL);
	}
	return false;
}

/*
 * The client's side of the handshake as rank, with key k; proof made up
 * when forge. Returns the CHAL check's result.
 */
static int handshake(struct psc_lsn *l, int fd, int32_t rank,
		     const struct psc_auth_key *k, bool forge)
{
	uint8_t hello[PSC_AUTH_HELLO_LEN], proof[PSC_AUTH_PROOF_LEN];
	uint8_t hb[PSC_WIRE_HDR_LEN], chal[PSC_AUTH_CHAL_LEN], bind[4];
	struct psc_auth_hs hs;
	struct psc_wire_hdr h;
	char why[128];
	int rc;

	psc_be_put(bind, (uint32_t)rank, 4);
	psc_auth_client_hello(&hs, k, PSC_AUTH_STORE, bind, sizeof(bind),
			      hello);
	send_msg(fd, PSC_WIRE_HELLO, rank, hello, sizeof(hello));
	pump(l, 0.1, NULL);
	ck_assert_int_eq(psc_read_full(fd, hb, sizeof(hb), psc_now() + 2), 0);
	ck_assert_int_eq(psc_wire_decode(hb, &h, why, sizeof(why)), 0);
	ck_assert_uint_eq(h.type, PSC_WIRE_CHAL);
	ck_assert_uint_eq(h.len, PSC_AUTH_CHAL_LEN);
	ck_assert_int_eq(psc_read_full(fd, chal, h.len, psc_now() + 2), 0);
	rc = psc_auth_client_proof(&hs, chal, sizeof(chal), proof, NULL);
	if (forge)
		psc_auth_random(proof, sizeof(proof));
	send_msg(fd, PSC_WIRE_PROOF, rank, proof, sizeof(proof));
	return rc;
}

START_TEST(test_frames_after_proof)
{
	struct psc_lsn *l = lsn_new(4);
	int fd = dial();

	ck_assert_int_eq(handshake(l, fd, 1, &key, false), 0);
	pump(l, 2, &seen.admitted);
	ck_assert_int_eq(seen.hellos, 1);
	ck_assert_int_eq(seen.admitted, 1);
	ck_assert_int_eq(psc_lsn_strangers(l), 0);
	send_msg(fd, PSC_WIRE_SET, 1, "k\0v", 3);
	send_msg(fd, PSC_WIRE_GET, 1, "hello", 5);
	pump(l, 2, &seen.frames);
	pump(l, 0.1, NULL);
	ck_assert_int_eq(seen.frames, 2);
	ck_assert_int_eq(seen.last_type, PSC_WIRE_GET);
	ck_assert_str_eq(seen.last_pl, "hello");
	ck_assert_ptr_nonnull(psc_lsn_next(l, NULL));
	ck_assert_int_eq(seen.refused + seen.closed, 0);
	close(fd);
	psc_lsn_free(l);
}
END_TEST

START_TEST(test_stranger_cap_drops_oldest)
{
	struct psc_lsn *l = lsn_new(2);
	int fd[3];

	for (int i = 0; i < 3; i++) {
		fd[i] = dial();
		/* Each is accepted before the next comes: ages differ. */
		pump(l, 0.1, NULL);
	}
	ck_assert(closed_by(l, fd[0], 2));
	ck_assert(!closed_by(l, fd[1], 0.2));
	ck_assert(!closed_by(l, fd[2], 0.2));
	ck_assert_int_eq(psc_lsn_strangers(l), 2);
	/* The newest can still prove itself. */
	ck_assert_int_eq(handshake(l, fd[2], 1, &key, false), 0);
	pump(l, 2, &seen.admitted);
	ck_assert_int_eq(seen.admitted, 1);
	for (int i = 0; i < 3; i++)
		close(fd[i]);
	psc_lsn_free(l);
}
END_TEST

START_TEST(test_bad_key_refused)
{
	struct psc_lsn *l = lsn_new(4);
	int fd = dial(), fd2 = dial();

	/* A client with another key finds the CHAL wrong, and a made-up
	 * proof is refused. */
	ck_assert_int_eq(handshake(l, fd, 1, &other, true), -EACCES);
	ck_assert(closed_by(l, fd, 2));
	ck_assert_int_eq(seen.refused, 1);
	ck_assert_int_eq(seen.last_refuse, -EACCES);
	ck_assert_int_eq(seen.admitted, 0);
	/* A request before the handshake, and a claim on_hello refuses. */
	send_msg(fd2, PSC_WIRE_GET, 1, "x", 1);
	ck_assert(closed_by(l, fd2, 2));
	close(fd2);
	fd2 = dial();
	send_msg(fd2, PSC_WIRE_HELLO, -1, "0123456789abcdef0123456789abcdef",
		 PSC_AUTH_HELLO_LEN);
	ck_assert(closed_by(l, fd2, 2));
	ck_assert_int_eq(seen.admitted + seen.frames + seen.closed, 0);
	close(fd);
	close(fd2);
	psc_lsn_free(l);
}
END_TEST

START_TEST(test_close_reported)
{
	struct psc_lsn *l = lsn_new(4);
	int fd = dial(), fd2 = dial();
	uint8_t junk[PSC_WIRE_HDR_LEN];

	ck_assert_int_eq(handshake(l, fd, 1, &key, false), 0);
	ck_assert_int_eq(handshake(l, fd2, 2, &key, false), 0);
	pump(l, 0.2, NULL);
	ck_assert_int_eq(seen.admitted, 2);
	close(fd);
	pump(l, 2, &seen.closed);
	ck_assert_int_eq(seen.closed, 1);
	ck_assert_int_eq(seen.last_close, -ECONNRESET);
	/* A malformed frame: refused, then closed with -EPROTO. */
	memset(junk, 0xab, sizeof(junk));
	ck_assert_int_eq(psc_write_full(fd2, junk, sizeof(junk),
					psc_now() + 1), 0);
	ck_assert(closed_by(l, fd2, 2));
	ck_assert_int_eq(seen.closed, 2);
	ck_assert_int_eq(seen.last_close, -EPROTO);
	ck_assert_int_eq(seen.refused, 1);
	ck_assert_ptr_null(psc_lsn_next(l, NULL));
	close(fd2);
	psc_lsn_free(l);
}
END_TEST

START_TEST(test_thread_mode)
{
	struct psc_lsn *l = lsn_new(4);
	int fd = dial();
	uint8_t hello[PSC_AUTH_HELLO_LEN], hb[PSC_WIRE_HDR_LEN];
	uint8_t chal[PSC_AUTH_CHAL_LEN], proof[PSC_AUTH_PROOF_LEN], bind[4];
	struct psc_auth_hs hs;

	ck_assert_int_eq(psc_lsn_start(l), 0);
	psc_be_put(bind, 1, 4);
	psc_auth_client_hello(&hs, &key, PSC_AUTH_STORE, bind, sizeof(bind),
			      hello);
	send_msg(fd, PSC_WIRE_HELLO, 1, hello, sizeof(hello));
	ck_assert_int_eq(psc_read_full(fd, hb, sizeof(hb), psc_now() + 2), 0);
	ck_assert_int_eq(psc_read_full(fd, chal, sizeof(chal), psc_now() + 2),
			 0);
	ck_assert_int_eq(psc_auth_client_proof(&hs, chal, sizeof(chal), proof,
					       NULL), 0);
	send_msg(fd, PSC_WIRE_PROOF, 1, proof, sizeof(proof));
	send_msg(fd, PSC_WIRE_BYE, 1, NULL, 0);
	for (double end = psc_now() + 2; psc_now() < end &&
	     !__atomic_load_n(&seen.frames, __ATOMIC_ACQUIRE);)
		usleep(1000);
	psc_lsn_stop(l);
	ck_assert_int_eq(seen.admitted, 1);
	ck_assert_int_eq(seen.frames, 1);
	ck_assert_int_eq(seen.last_type, PSC_WIRE_BYE);
	close(fd);
	psc_lsn_free(l);
}
END_TEST

static Suite *listener_suite(void)
{
	Suite *s = suite_create("listener");
	TCase *tc = tcase_create("listener");
	char err[256];

	if (psc_auth_key_load(&key, "one", err, sizeof(err)) ||
	    psc_auth_key_load(&other, "two", err, sizeof(err)))
		abort();
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_frames_after_proof);
	tcase_add_test(tc, test_stranger_cap_drops_oldest);
	tcase_add_test(tc, test_bad_key_refused);
	tcase_add_test(tc, test_close_reported);
	tcase_add_test(tc, test_thread_mode);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(listener_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
