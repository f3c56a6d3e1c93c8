/*
 * fault_prog: the program the fault-injection scripts (tests/fault/)
 * run on every rank. It joins the communicator from the environment, runs
 * one phase in a loop and checks every result bit for bit against a
 * reference computed here, so the scripts can kill, stop or unplug a rank
 * at any moment and judge what the others report. Integer data only: sums
 * wrap the same way everywhere, so the reference is exact.
 *
 *	fault_prog PHASE [-s BYTES] [-S SECS] [-d SECS] [-n ITERS] [-b RANK]
 *		   [-r SEED]
 *
 * Phases: bootstrap, pingpong, allreduce, bcast, iallreduce, finalize,
 * busy, mixed (see usage()). The loop ends after -d seconds (default 5)
 * or -n iterations; the ranks agree on the end by a vote each iteration,
 * so none is left waiting in a collective the others skipped.
 *
 * Output: "ready rank=R" on stdout after ps_comm_init and again when the
 * phase loop begins. A failed pscomm call prints
 * "fault_prog: rank R: FUNCTION failed: TEXT (CODE): LAST_ERROR" on stderr
 * and exits with -CODE (5 for PS_COMM_ERR_PEER, 7 for BOOTSTRAP, ...); a
 * wrong result prints "WRONG RESULT ..." and exits 9; success exits 0.
 * The mixed phase also prints "stats rank=R t=SECS iter=N rss_kib=N fds=N
 * heap_kib=N mmap_kib=N" every 10 seconds: the resident set, open
 * descriptors, and malloc's bytes in use (every arena) and in mmapped
 * chunks.
 */
#include <dirent.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ps_comm.h"

#define EXIT_USAGE 2
#define EXIT_WRONG 9
#define MAX_INFLIGHT 4	      /* iallreduce: operations in flight */
#define PINGPONG_STEPS 18     /* 8 B << 0..17: 8 B to 1 MiB */
#define MIXED_MAX (16u << 20) /* largest message of the mixed phase */
#define STATS_PERIOD 10.0     /* seconds between two stats lines */
/* Splits per endpoint stay below the library's 4096 context ids. */
#define FINALIZE_MAX_ITERS 4000
#define TAG_CTL 1
#define TAG_DATA 2

struct opts {
	const char *phase;
	size_t bytes;	/* -s: message size, 0: the phase's default */
	double sleep_s; /* -S: busy phase's sleep */
	double dur;	/* -d: seconds the loop runs */
	long iters;	/* -n: iterations instead, 0: use -d */
	int busy_rank;	/* -b: busy phase's sleeper, -1: rotate */
	uint64_t seed;	/* -r: mixed phase's operation sequence */
};

struct ctx {
	ps_comm_t comm;
	int rank, size;
	const struct opts *o;
	double t0; /* when the phase loop began */
	long iter; /* current iteration */
};

struct phase {
	const char *name;
	void (*run)(struct ctx *c);
	size_t bytes; /* default -s */
};

/* ------------------------------------------------------------ reporting */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void ready(const struct ctx *c)
{
	printf("ready rank=%d\n", c->rank);
	fflush(stdout);
}

/*
 * A pscomm call failed: report it with the communicator's detail and exit
 * at once with -rc. _exit, not exit: with a dead peer, nothing may wait in
 * library destructors.
 */
static void fail_call(const struct ctx *c, const char *fn, int rc)
{
	char detail[1024] = "";

	if (c->comm)
		ps_comm_last_error(c->comm, detail, sizeof(detail));
	else
		snprintf(detail, sizeof(detail), "(no communicator)");
	fprintf(stderr, "fault_prog: rank %d: %s failed: %s (%d): %s\n",
		c->rank, fn, ps_comm_strerror(rc), rc,
		detail[0] ? detail : "(no detail)");
	fflush(stdout);
	fflush(stderr);
	_exit(rc < 0 && rc > -126 ? -rc : 1);
}

/* Call pscomm function fn; on an error, report it and exit. */
#define CALL(c, fn, ...)                                                       \
	do {                                                                   \
		int rc_ = fn(__VA_ARGS__);                                     \
		if (rc_)                                                       \
			fail_call((c), #fn, rc_);                              \
	} while (0)

static void wrong(const struct ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

static void wrong(const struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "WRONG RESULT rank %d phase %s iter %ld: ", c->rank,
		c->o->phase, c->iter);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stdout);
	fflush(stderr);
	_exit(EXIT_WRONG);
}

static void *xmalloc(const struct ctx *c, size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "fault_prog: rank %d: out of memory (%zu B)\n",
			c->rank, n);
		_exit(1);
	}
	return p;
}

/* ------------------------------------------------------------- the data */

/* Element i of what rank r contributes at iteration it (salt k). */
static uint32_t pat32(int r, long it, int k, size_t i)
{
	uint32_t x = (uint32_t)i * 2654435761u ^ (uint32_t)r * 40503u ^
		     (uint32_t)it * 97u ^ (uint32_t)k * 7919u;

	return x & 0xffffu;
}

static uint8_t pat8(int r, long it, size_t i)
{
	return (uint8_t)((size_t)r * 37 + (size_t)it * 11 + i * 131 + 7);
}

static void fill32(uint32_t *b, size_t n, int r, long it, int k)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat32(r, it, k, i);
}

static void fill8(uint8_t *b, size_t n, int r, long it)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat8(r, it, i);
}

/* The sum over all ranks, wrapping like the library's uint32 sum. */
static void sum32(uint32_t *b, size_t n, int size, long it, int k)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t s = 0;

		for (int r = 0; r < size; r++)
			s += pat32(r, it, k, i);
		b[i] = s;
	}
}

/* Make every byte differ from want, so an unwritten result shows. */
static void poison(void *buf, const void *want, size_t len)
{
	unsigned char *b = buf;
	const unsigned char *w = want;

	for (size_t i = 0; i < len; i++)
		b[i] = (unsigned char)~w[i];
}

static void expect_bytes(const struct ctx *c, const char *what, const void *got,
			 const void *want, size_t len)
{
	const unsigned char *g = got, *w = want;
	size_t i = 0;

	if (memcmp(got, want, len) == 0)
		return;
	while (g[i] == w[i])
		i++;
	wrong(c,
	      "%s: %zu bytes, first difference at byte %zu: got 0x%02x, "
	      "want 0x%02x",
	      what, len, i, g[i], w[i]);
}

static void expect_pat8(const struct ctx *c, const char *what, const uint8_t *b,
			size_t n, int src, long it)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pat8(src, it, i))
			wrong(c,
			      "%s: %zu bytes from rank %d, byte %zu is "
			      "0x%02x, want 0x%02x",
			      what, n, src, i, b[i], pat8(src, it, i));
}

/*
 * ps_comm_finalize frees comm even when it fails, so its last error is
 * gone: the report can only say so (the library's log may say more).
 */
static void finalize(struct ctx *c, ps_comm_t comm)
{
	int rc = ps_comm_finalize(comm);

	if (comm == c->comm)
		c->comm = NULL;
	if (rc)
		fail_call(c, "ps_comm_finalize", rc);
}

/* ----------------------------------------------------------- the loop */

static int local_done(const struct ctx *c)
{
	if (c->o->iters > 0)
		return c->iter >= c->o->iters;
	return now() - c->t0 >= c->o->dur;
}

/* Every rank votes; the loop ends when any rank is done. */
static int all_done(struct ctx *c)
{
	int32_t mine = local_done(c), any = 0;

	CALL(c, ps_comm_allreduce, c->comm, &mine, &any, 1, PS_COMM_INT32,
	     PS_COMM_MAX);
	if (any != 0 && any != 1)
		wrong(c, "stop vote %d, want 0 or 1", (int)any);
	return any;
}

static void begin_loop(struct ctx *c)
{
	c->t0 = now();
	c->iter = 0;
	ready(c);
}

/* One blocking uint32 sum of count elements, salt k, checked. */
static void checked_allreduce(struct ctx *c, ps_comm_t comm, uint32_t *send,
			      uint32_t *recv, uint32_t *want, size_t count,
			      int k)
{
	size_t len = count * sizeof(*send);

	fill32(send, count, c->rank, c->iter, k);
	sum32(want, count, c->size, c->iter, k);
	poison(recv, want, len);
	CALL(c, ps_comm_allreduce, comm, send, recv, count, PS_COMM_UINT32,
	     PS_COMM_SUM);
	expect_bytes(c, "allreduce", recv, want, len);
}

/* ----------------------------------------------------------- the phases */

/* init (in main), then barriers until the end. */
static void phase_bootstrap(struct ctx *c)
{
	begin_loop(c);
	while (!all_done(c)) {
		CALL(c, ps_comm_barrier, c->comm);
		c->iter++;
	}
}

/* Even rank of a pair: a control word (the iteration, or -1 to stop). */
static int ping(struct ctx *c, int peer, uint8_t *sbuf, uint8_t *rbuf)
{
	size_t len = (size_t)8 << (c->iter % PINGPONG_STEPS);
	int64_t ctl = local_done(c) ? -1 : c->iter;
	ps_comm_status_t st;

	CALL(c, ps_comm_send, c->comm, &ctl, sizeof(ctl), peer, TAG_CTL);
	if (ctl < 0)
		return 1;
	fill8(sbuf, len, c->rank, c->iter);
	CALL(c, ps_comm_send, c->comm, sbuf, len, peer, TAG_DATA);
	memset(rbuf, 0, len);
	CALL(c, ps_comm_recv, c->comm, rbuf, len, peer, TAG_DATA, &st);
	if (st.len != len)
		wrong(c, "pingpong: reply of %zu bytes, want %zu", st.len, len);
	expect_pat8(c, "pingpong reply", rbuf, len, peer, c->iter);
	return 0;
}

static int pong(struct ctx *c, int peer, uint8_t *sbuf, uint8_t *rbuf)
{
	size_t len = (size_t)8 << (c->iter % PINGPONG_STEPS);
	int64_t ctl = 0;
	ps_comm_status_t st;

	CALL(c, ps_comm_recv, c->comm, &ctl, sizeof(ctl), peer, TAG_CTL, &st);
	if (ctl < 0)
		return 1;
	if (ctl != c->iter)
		wrong(c, "pingpong: control word %lld, want %ld",
		      (long long)ctl, c->iter);
	memset(rbuf, 0, len);
	CALL(c, ps_comm_recv, c->comm, rbuf, len, peer, TAG_DATA, &st);
	if (st.len != len)
		wrong(c, "pingpong: message of %zu bytes, want %zu", st.len,
		      len);
	expect_pat8(c, "pingpong", rbuf, len, peer, c->iter);
	fill8(sbuf, len, c->rank, c->iter);
	CALL(c, ps_comm_send, c->comm, sbuf, len, peer, TAG_DATA);
	return 0;
}

/* Pairs 0<->1, 2<->3, ...; an odd last rank only waits in the barrier. */
static void phase_pingpong(struct ctx *c)
{
	size_t max = (size_t)8 << (PINGPONG_STEPS - 1);
	uint8_t *sbuf = xmalloc(c, max), *rbuf = xmalloc(c, max);
	int peer = c->rank ^ 1;

	begin_loop(c);
	if (peer < c->size) {
		while (!(c->rank & 1 ? pong : ping)(c, peer, sbuf, rbuf))
			c->iter++;
	}
	CALL(c, ps_comm_barrier, c->comm);
	free(sbuf);
	free(rbuf);
}

static void phase_allreduce(struct ctx *c)
{
	size_t count = c->o->bytes / sizeof(uint32_t);
	uint32_t *send = xmalloc(c, count * 4), *recv = xmalloc(c, count * 4);
	uint32_t *want = xmalloc(c, count * 4);

	begin_loop(c);
	while (!all_done(c)) {
		checked_allreduce(c, c->comm, send, recv, want, count, 0);
		c->iter++;
	}
	free(send);
	free(recv);
	free(want);
}

/* The root rotates; it checks its own buffer is left alone too. */
static void phase_bcast(struct ctx *c)
{
	size_t len = c->o->bytes;
	uint8_t *buf = xmalloc(c, len);

	begin_loop(c);
	while (!all_done(c)) {
		int root = (int)(c->iter % c->size);

		if (c->rank == root)
			fill8(buf, len, root, c->iter);
		else
			memset(buf, (int)(c->iter & 0xff) ^ 0x5a, len);
		CALL(c, ps_comm_bcast, c->comm, buf, len, PS_COMM_UINT8, root);
		expect_pat8(c, "bcast", buf, len, root, c->iter);
		c->iter++;
	}
	free(buf);
}

/*
 * MAX_INFLIGHT sums of halving sizes started together, then waited for
 * newest first, so they complete out of order.
 */
static void phase_iallreduce(struct ctx *c)
{
	size_t count = c->o->bytes / sizeof(uint32_t);
	uint32_t *send[MAX_INFLIGHT], *recv[MAX_INFLIGHT], *want[MAX_INFLIGHT];
	ps_comm_request_t req[MAX_INFLIGHT];

	for (int k = 0; k < MAX_INFLIGHT; k++) {
		send[k] = xmalloc(c, count * 4);
		recv[k] = xmalloc(c, count * 4);
		want[k] = xmalloc(c, count * 4);
	}
	begin_loop(c);
	while (!all_done(c)) {
		for (int k = 0; k < MAX_INFLIGHT; k++) {
			size_t n = count >> k;

			fill32(send[k], n, c->rank, c->iter, k);
			sum32(want[k], n, c->size, c->iter, k);
			poison(recv[k], want[k], n * 4);
			CALL(c, ps_comm_iallreduce, c->comm, send[k], recv[k],
			     n, PS_COMM_UINT32, PS_COMM_SUM, &req[k]);
		}
		for (int k = MAX_INFLIGHT - 1; k >= 0; k--) {
			CALL(c, ps_comm_wait, &req[k], NULL);
			expect_bytes(c, "iallreduce", recv[k], want[k],
				     (count >> k) * 4);
		}
		c->iter++;
	}
	for (int k = 0; k < MAX_INFLIGHT; k++) {
		free(send[k]);
		free(recv[k]);
		free(want[k]);
	}
}

/*
 * Communicators come and go: split, a few sums on the new one, finalize
 * it. main finalizes the world afterwards, so a fault may land in any
 * finalize. Context ids are never reused, so the loop also ends after
 * FINALIZE_MAX_ITERS splits.
 */
static void phase_finalize(struct ctx *c)
{
	size_t count = c->o->bytes / sizeof(uint32_t);
	uint32_t *send = xmalloc(c, count * 4), *recv = xmalloc(c, count * 4);
	uint32_t *want = xmalloc(c, count * 4);

	begin_loop(c);
	while (!all_done(c) && c->iter < FINALIZE_MAX_ITERS) {
		ps_comm_t sub = NULL;

		CALL(c, ps_comm_split, c->comm, 0, c->rank, &sub);
		for (int k = 0; k < 3; k++)
			checked_allreduce(c, sub, send, recv, want, count, k);
		finalize(c, sub);
		c->iter++;
	}
	free(send);
	free(recv);
	free(want);
}

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};

	while (nanosleep(&ts, &ts) != 0)
		;
}

/*
 * A sum, then someone is busy outside pscomm for -S seconds: at iteration
 * 0 every rank (an idle communicator), later one rank (-b, or rotating)
 * while the others already wait in the next collective. Never an error.
 */
static void phase_busy(struct ctx *c)
{
	size_t count = c->o->bytes / sizeof(uint32_t);
	uint32_t *send = xmalloc(c, count * 4), *recv = xmalloc(c, count * 4);
	uint32_t *want = xmalloc(c, count * 4);

	begin_loop(c);
	do {
		int sleeper = c->o->busy_rank >= 0
				      ? c->o->busy_rank
				      : (int)((c->iter - 1) % c->size);

		checked_allreduce(c, c->comm, send, recv, want, count, 0);
		if (c->iter == 0 || c->rank == sleeper)
			sleep_s(c->o->sleep_s);
		c->iter++;
	} while (!all_done(c));
	free(send);
	free(recv);
	free(want);
}

/* ------------------------------------------------------ the mixed soak */

/* xorshift64*: the same sequence on every rank from the same seed. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* 0 B, else log-uniform up to max (a multiple of 4 bytes). */
static size_t rnd_size(uint64_t *s, size_t max)
{
	unsigned bits = (unsigned)(rnd(s) % 25);
	size_t n;

	if (bits == 0)
		return 0;
	n = ((size_t)1 << (bits - 1)) + rnd(s) % ((size_t)1 << (bits - 1));
	n = n > max ? max : n;
	return n & ~(size_t)3;
}

static long rss_kib(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = -1;
	fclose(f);
	return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Open descriptors, not counting the one reading the directory. */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;
}

static void print_stats(const struct ctx *c)
{
	struct mallinfo2 mi = mallinfo2();

	printf("stats rank=%d t=%.0f iter=%ld rss_kib=%ld fds=%d heap_kib=%zu "
	       "mmap_kib=%zu\n", c->rank, now() - c->t0, c->iter, rss_kib(),
	       open_fds(), mi.uordblks / 1024, mi.hblkhd / 1024);
	fflush(stdout);
}

struct mixbuf {
	uint32_t *send, *recv, *want;
};

/* Ring exchange: send right, receive from the left, nonblocking. */
static void mixed_ring(struct ctx *c, struct mixbuf *b, size_t len)
{
	int right = (c->rank + 1) % c->size;
	int left = (c->rank + c->size - 1) % c->size;
	ps_comm_request_t req[2];
	ps_comm_status_t st[2];

	fill8((uint8_t *)b->send, len, c->rank, c->iter);
	memset(b->recv, 0, len);
	CALL(c, ps_comm_irecv, c->comm, b->recv, len, left, TAG_DATA, &req[0]);
	CALL(c, ps_comm_isend, c->comm, b->send, len, right, TAG_DATA, &req[1]);
	CALL(c, ps_comm_waitall, 2, req, st);
	if (st[0].len != len)
		wrong(c, "ring: %zu bytes, want %zu", st[0].len, len);
	expect_pat8(c, "ring", (uint8_t *)b->recv, len, left, c->iter);
}

static void mixed_bcast(struct ctx *c, struct mixbuf *b, size_t len, int root)
{
	if (c->rank == root)
		fill8((uint8_t *)b->recv, len, root, c->iter);
	else
		memset(b->recv, 0xa5, len);
	CALL(c, ps_comm_bcast, c->comm, b->recv, len, PS_COMM_UINT8, root);
	expect_pat8(c, "bcast", (uint8_t *)b->recv, len, root, c->iter);
}

/* Rank r's block is its pattern; every rank checks all blocks. */
static void mixed_allgather(struct ctx *c, struct mixbuf *b, size_t len)
{
	size_t count = len / 4 / (size_t)c->size;

	fill32(b->send, count, c->rank, c->iter, 1);
	for (int r = 0; r < c->size; r++)
		fill32(b->want + (size_t)r * count, count, r, c->iter, 1);
	poison(b->recv, b->want, count * 4 * (size_t)c->size);
	CALL(c, ps_comm_allgather, c->comm, b->send, b->recv, count,
	     PS_COMM_UINT32);
	expect_bytes(c, "allgather", b->recv, b->want,
		     count * 4 * (size_t)c->size);
}

static void mixed_iallreduce(struct ctx *c, struct mixbuf *b, size_t len)
{
	size_t half = len / 8;
	ps_comm_request_t req[2];

	fill32(b->send, 2 * half, c->rank, c->iter, 2);
	sum32(b->want, 2 * half, c->size, c->iter, 2);
	poison(b->recv, b->want, 2 * half * 4);
	for (int k = 0; k < 2; k++)
		CALL(c, ps_comm_iallreduce, c->comm, b->send + k * half,
		     b->recv + k * half, half, PS_COMM_UINT32, PS_COMM_SUM,
		     &req[k]);
	CALL(c, ps_comm_waitall, 2, req, NULL);
	expect_bytes(c, "iallreduce", b->recv, b->want, 2 * half * 4);
}

/* One random operation of one random size, the same on every rank. */
static void mixed_step(struct ctx *c, struct mixbuf *b, uint64_t *s)
{
	size_t len = rnd_size(s, MIXED_MAX);

	switch (rnd(s) % 6) {
	case 0:
		mixed_ring(c, b, len);
		break;
	case 1:
		checked_allreduce(c, c->comm, b->send, b->recv, b->want,
				  len / 4, 0);
		break;
	case 2:
		mixed_bcast(c, b, len, (int)(rnd(s) % (uint64_t)c->size));
		break;
	case 3:
		mixed_allgather(c, b, len);
		break;
	case 4:
		mixed_iallreduce(c, b, len);
		break;
	default:
		CALL(c, ps_comm_barrier, c->comm);
	}
}

static void phase_mixed(struct ctx *c)
{
	struct mixbuf b = {xmalloc(c, MIXED_MAX), xmalloc(c, MIXED_MAX),
			   xmalloc(c, MIXED_MAX)};
	uint64_t s = c->o->seed * 0x9e3779b97f4a7c15ull + 1;
	double next = 0;

	begin_loop(c);
	while (!all_done(c)) {
		if (now() - c->t0 >= next) {
			print_stats(c);
			next += STATS_PERIOD;
		}
		mixed_step(c, &b, &s);
		c->iter++;
	}
	print_stats(c);
	free(b.send);
	free(b.recv);
	free(b.want);
}

/* ------------------------------------------------------------- main */

static const struct phase phases[] = {
	{"bootstrap", phase_bootstrap, 0},
	{"pingpong", phase_pingpong, 0},
	{"allreduce", phase_allreduce, 64u << 10},
	{"bcast", phase_bcast, 1u << 20},
	{"iallreduce", phase_iallreduce, 256u << 10},
	{"finalize", phase_finalize, 4u << 10},
	{"busy", phase_busy, 4u << 10},
	{"mixed", phase_mixed, 0},
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fault_prog PHASE [-s BYTES] [-S SECS] [-d SECS] "
		"[-n ITERS] [-b RANK] [-r SEED]\n"
		"  bootstrap   init, barriers, finalize\n"
		"  pingpong    pairs 0<->1, 2<->3: blocking 8 B..1 MiB\n"
		"  allreduce   blocking uint32 sums of -s BYTES (64K)\n"
		"  bcast       -s BYTES (1M), the root rotates\n"
		"  iallreduce  %d nonblocking sums in flight (-s 256K)\n"
		"  finalize    split, 3 sums, finalize the new communicator\n"
		"  busy        a sum, then sleep -S SECS outside pscomm (all "
		"ranks at\n"
		"              iteration 0, then rank -b or a rotating one)\n"
		"  mixed       random p2p and collectives, 0 B..16 MiB, with "
		"stats\n"
		"  -d SECS (default 5) or -n ITERS bound the loop\n",
		MAX_INFLIGHT);
}

/* "123", "64K", "16M" (binary); 0 or -1. */
static int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s || *s == '-')
		return -1;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (*end)
		return -1;
	*out = (size_t)v;
	return 0;
}

static int parse_double(const char *s, double *out)
{
	char *end;

	*out = strtod(s, &end);
	return end != s && !*end && *out >= 0 ? 0 : -1;
}

static int parse_long(const char *s, long *out)
{
	char *end;

	*out = strtol(s, &end, 10);
	return end != s && !*end && *out >= 0 ? 0 : -1;
}

static int parse_opt(struct opts *o, int opt, const char *v)
{
	long l;

	switch (opt) {
	case 's':
		return parse_size(v, &o->bytes);
	case 'S':
		return parse_double(v, &o->sleep_s);
	case 'd':
		return parse_double(v, &o->dur);
	case 'n':
		return parse_long(v, &o->iters);
	case 'b':
		if (parse_long(v, &l) != 0)
			return -1;
		o->busy_rank = (int)l;
		return 0;
	case 'r':
		if (parse_long(v, &l) != 0)
			return -1;
		o->seed = (uint64_t)l;
		return 0;
	}
	return -1;
}

static const struct phase *parse_args(int argc, char **argv, struct opts *o)
{
	const struct phase *p = NULL;
	int opt;

	*o = (struct opts){NULL, 0, 1.0, 5.0, 0, -1, 1};
	if (argc < 2)
		return NULL;
	for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++)
		if (strcmp(argv[1], phases[i].name) == 0)
			p = &phases[i];
	if (!p)
		return NULL;
	o->phase = p->name;
	o->bytes = p->bytes;
	optind = 2;
	while ((opt = getopt(argc, argv, "s:S:d:n:b:r:")) != -1)
		if (parse_opt(o, opt, optarg) != 0)
			return NULL;
	return optind == argc ? p : NULL;
}

int main(int argc, char **argv)
{
	struct opts o;
	const struct phase *p = parse_args(argc, argv, &o);
	const char *env = getenv("PS_COMM_RANK");
	struct ctx c = {NULL, env ? atoi(env) : -1, 0, &o, 0, 0};

	if (argc == 2 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (!p) {
		usage(stderr);
		return EXIT_USAGE;
	}
	CALL(&c, ps_comm_init, &c.comm, NULL);
	CALL(&c, ps_comm_rank, c.comm, &c.rank);
	CALL(&c, ps_comm_size, c.comm, &c.size);
	ready(&c);
	p->run(&c);
	finalize(&c, c.comm);
	return 0;
}
