/*
 * Unit tests for lib/core/shmring.c.
 * - Clean-up after a dead peer: psc_shmring_remove_pid removes exactly the
 *   ring names that process made (/dev/shm/psc-ring-PID-N), and no other
 *   pid's, nor other files.
 * - The ring protocol between two shm endpoints of this process, one
 *   thread each: messages arrive in order across many wrap-arounds; a
 *   full ring queues the sender's posts until the receiver frees slots;
 *   a receiver asleep on its rings is woken by the sender's doorbell.
 *   The first two run again as if the sender had 128 peers, whose
 *   rings hold one slot each (12 KiB of /dev/shm, not 528 KiB).
 * - libfabric's own region of an shm endpoint keeps in /dev/shm only
 *   what it wrote, not the zeros 1.17 writes to the end of the file.
 *   These need libfabric's shm provider (exit 77 without it).
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "core/ep_int.h"
#include "fixture.h"
#include "util/util.h"

#define MSGS 1000   /* many times RING_SLOTS (64) */
#define FULL 200    /* posted at once: more than a ring holds */
#define TAG 7

/* Pids above the kernel's limit (4194304), so no live process has them. */
#define DEAD 9000001
#define OTHER 9000011

static void make(const char *name)
{
	int fd = shm_open(name, O_CREAT | O_RDWR, 0600);

	ck_assert_int_ge(fd, 0);
	close(fd);
}

static int exists(const char *name)
{
	int fd = shm_open(name, O_RDONLY, 0);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

START_TEST(test_remove_pid)
{
	const char *mine[] = {"/psc-ring-9000001-0", "/psc-ring-9000001-17"};
	const char *kept[] = {"/psc-ring-9000011-0", "/psc-ring-90000010-0",
			      "/9000001:0:0"};

	for (size_t i = 0; i < 2; i++)
		make(mine[i]);
	for (size_t i = 0; i < 3; i++)
		make(kept[i]);
	psc_shmring_remove_pid(DEAD);
	for (size_t i = 0; i < 2; i++)
		ck_assert_msg(!exists(mine[i]), "%s was left", mine[i]);
	for (size_t i = 0; i < 3; i++) {
		ck_assert_msg(exists(kept[i]), "%s was removed", kept[i]);
		shm_unlink(kept[i]);
	}
	/* Nothing to remove, and no pid at all: no effect, no crash. */
	psc_shmring_remove_pid(OTHER);
	psc_shmring_remove_pid(0);
}
END_TEST

/* Two shm endpoints, each the other's rank 1 - its own rank. */
static struct fx_ep tx, rx;

/*
 * Loop index 1 of the protocol tests: the sender's AV counts this many
 * addresses, as on a host of 128 ranks, when its ring is made.
 */
#define MANY_PEERS 128

static void pair_up(void)
{
	fx_open(&tx, PSC_ROLE_SHM, 0, 2);
	fx_open(&rx, PSC_ROLE_SHM, 1, 2);
	fx_connect(&tx, &rx, 1);
	fx_connect(&rx, &tx, 0);
}

/* pair_up, with the sender's AV counting MANY_PEERS when many is set. */
static void pair_up_peers(int many)
{
	pair_up();
	if (many)
		__atomic_store_n(&tx.ep->av_count, MANY_PEERS,
				 __ATOMIC_RELAXED);
}

/* The sender's ring takes what its peer count allows. */
static void check_ring_size(int many)
{
	struct psc_shmring_stats st;

	psc_shmring_stats(tx.ep, &st);
	ck_assert_uint_eq(st.tx_on, 1);
	if (many)
		ck_assert_msg(st.tx_bytes <= 12288, "a ring of %zu bytes "
			      "with %d peers", st.tx_bytes, MANY_PEERS);
	else
		ck_assert_msg(st.tx_bytes > 64 * 8192, "a ring of %zu bytes "
			      "with 2 peers", st.tx_bytes);
}

static void pair_down(void)
{
	fx_close(&tx);
	fx_close(&rx);
}

static ps_comm_request_t post_send(const uint64_t *v)
{
	ps_comm_request_t r = NULL;
	char err[256];

	ck_assert_int_eq(psc_isend(&tx.ch, PSC_PROTO_USER, v, sizeof(*v), 1,
				   TAG, &r, err, sizeof(err)), 0);
	return r;
}

/* Receive one message from rank 0 and return its value. */
static uint64_t recv_one(void)
{
	ps_comm_request_t r = NULL;
	ps_comm_status_t st;
	uint64_t v = ~0ULL;
	char err[256];

	ck_assert_int_eq(psc_irecv(&rx.ch, PSC_PROTO_USER, &v, sizeof(v), 0,
				   TAG, &r, err, sizeof(err)), 0);
	ck_assert_int_eq(psc_wait(&r, &st, psc_now() + 30, NULL), 0);
	ck_assert_int_eq(st.len, sizeof(v));
	ck_assert_int_eq(st.source, 0);
	return v;
}

/*
 * A few messages through libfabric until the sender's ring is on and
 * the receiver mapped it.
 */
static void warm_up(void)
{
	struct psc_shmring_stats st;
	uint64_t v = 0;

	for (int i = 0; i < 100; i++) {
		ps_comm_request_t r = post_send(&v);

		ck_assert_int_eq(recv_one(), 0);
		ck_assert_int_eq(psc_wait(&r, NULL, psc_now() + 30, NULL), 0);
		psc_shmring_stats(tx.ep, &st);
		if (st.tx_on) {
			psc_shmring_stats(rx.ep, &st);
			if (st.rx_mapped)
				return;
		}
	}
	ck_abort_msg("the sender's ring never came on");
}

static void *recv_in_order(void *arg)
{
	(void)arg;
	for (uint64_t i = 1; i <= MSGS; i++) {
		uint64_t v = recv_one();

		ck_assert_msg(v == i, "message %llu arrived as number %llu",
			      (unsigned long long)v, (unsigned long long)i);
	}
	return NULL;
}

START_TEST(test_order_wrap)
{
	static uint64_t vals[MSGS + 1];
	pthread_t t;

	pair_up_peers(_i);
	warm_up();
	check_ring_size(_i);
	ck_assert_int_eq(pthread_create(&t, NULL, recv_in_order, NULL), 0);
	for (uint64_t i = 1; i <= MSGS; i++) {
		ps_comm_request_t r;

		vals[i] = i;
		r = post_send(&vals[i]);
		ck_assert_int_eq(psc_wait(&r, NULL, psc_now() + 30, NULL), 0);
	}
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	pair_down();
}
END_TEST

START_TEST(test_full_ring)
{
	static uint64_t vals[FULL];
	ps_comm_request_t r[FULL];

	pair_up_peers(_i);
	warm_up();
	check_ring_size(_i);
	/* Nobody progresses rx: the ring fills, the rest waits in order. */
	for (int i = 0; i < FULL; i++) {
		vals[i] = (uint64_t)i + 1;
		r[i] = post_send(&vals[i]);
	}
	ck_assert_msg(psc_req_done(r[0]), "a send into a free slot is done");
	ck_assert_msg(!psc_req_done(r[FULL - 1]),
		      "a send past a full ring completed");
	for (int i = 0; i < FULL; i++)
		ck_assert_int_eq(recv_one(), (uint64_t)i + 1);
	for (int i = 0; i < FULL; i++)
		ck_assert_int_eq(psc_wait(&r[i], NULL, psc_now() + 30, NULL),
				 0);
	pair_down();
}
END_TEST

static void *recv_once(void *arg)
{
	*(uint64_t *)arg = recv_one();
	return NULL;
}

/*
 * The receiver waits with nothing to come, so it sleeps on its ring's
 * bell; once the sender sees it asleep, it sends. A sleep ends by
 * itself within its bound too, so a round may miss the bell: rounds go
 * on until one is heard.
 */
START_TEST(test_doorbell)
{
	struct psc_shmring_stats st = {0};
	uint64_t got, v;

	pair_up();
	warm_up();
	for (int round = 1; round <= 200 && !st.bell_heard; round++) {
		double until = psc_now() + 30;
		pthread_t t;
		ps_comm_request_t r;

		ck_assert_int_eq(pthread_create(&t, NULL, recv_once, &got), 0);
		do {
			ck_assert_msg(psc_now() < until, "the receiver never "
				      "slept on its ring");
			sched_yield();
			psc_shmring_stats(tx.ep, &st);
		} while (!st.tx_sleepers);
		v = (uint64_t)round;
		r = post_send(&v);
		ck_assert_int_eq(pthread_join(t, NULL), 0);
		ck_assert_int_eq(got, v);
		ck_assert_int_eq(psc_wait(&r, NULL, psc_now() + 30, NULL), 0);
		psc_shmring_stats(rx.ep, &st);
	}
	ck_assert_msg(st.bell_heard, "no bell ever woke the receiver");
	pair_down();
}
END_TEST

/*
 * Each side of a ring sees the CPU the other side's waiter last ran on
 * (psc_shmring_cpu_shared): a spinning waiter yields only to a peer on
 * its own core.
 */
static int cpu_shared(struct fx_ep *e, int cpu)
{
	int rc;

	pthread_mutex_lock(e->ep->lock);
	rc = psc_shmring_cpu_shared(e->ep, cpu);
	pthread_mutex_unlock(e->ep->lock);
	return rc;
}

START_TEST(test_cpu_shared)
{
	/* No real CPU has these numbers (the waits below publish theirs). */
	enum { C3 = 1000003, C5 = 1000005 };

	pair_up();
	/* No ring yet: nothing to tell. */
	ck_assert_int_eq(cpu_shared(&tx, C3), -1);
	warm_up();
	/* The receiver has not waited yet: unknown CPU, not shared. */
	ck_assert_int_eq(cpu_shared(&tx, C3), 0);
	ck_assert_int_eq(cpu_shared(&rx, C3), 1);
	ck_assert_int_eq(cpu_shared(&tx, C3), 1);
	/* The sender moved: neither side shares a core now. */
	ck_assert_int_eq(cpu_shared(&tx, C5), 0);
	ck_assert_int_eq(cpu_shared(&rx, C3), 0);
	ck_assert_int_eq(cpu_shared(&rx, C5), 1);
	pair_down();
}
END_TEST

/* Allocated bytes of the /dev/shm file of e's libfabric endpoint. */
static long long region_bytes(const struct fx_ep *e)
{
	char name[sizeof(e->ep->fab.name) + 1];
	const char *sep;
	struct stat st;
	int fd;

	ck_assert_uint_lt(e->ep->fab.namelen, sizeof(name));
	memcpy(name, e->ep->fab.name, e->ep->fab.namelen);
	name[e->ep->fab.namelen] = '\0';
	sep = strstr(name, "://");
	fd = shm_open(sep ? sep + 3 : name, O_RDONLY, 0);
	ck_assert_msg(fd >= 0, "no file for endpoint %s", name);
	ck_assert_int_eq(fstat(fd, &st), 0);
	close(fd);
	return (long long)st.st_blocks * 512;
}

/*
 * A region is 16 MiB; what libfabric writes as it opens is its header and
 * queue heads (about 100 KiB), and what messages touch comes later.
 */
START_TEST(test_region_trimmed)
{
	pair_up();
	ck_assert_msg(region_bytes(&tx) < 1 << 20, "the region holds %lld "
		      "bytes", region_bytes(&tx));
	/* It still carries messages both ways, past the ring and through. */
	warm_up();
	pair_down();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("shmring");
	TCase *tc = tcase_create("cleanup");
	SRunner *sr;
	bool shm = fx_listed("shm");
	int failed;

	tcase_add_test(tc, test_remove_pid);
	suite_add_tcase(s, tc);
	if (shm) {
		tc = tcase_create("protocol");
		tcase_set_timeout(tc, 120);
		tcase_add_loop_test(tc, test_order_wrap, 0, 2);
		tcase_add_loop_test(tc, test_full_ring, 0, 2);
		tcase_add_test(tc, test_region_trimmed);
		tcase_add_test(tc, test_doorbell);
		tcase_add_test(tc, test_cpu_shared);
		suite_add_tcase(s, tc);
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (failed)
		return EXIT_FAILURE;
	/* The protocol needs the shm provider: a skip, not a pass. */
	if (!shm)
		printf("shmring: libfabric lists no shm provider\n");
	return shm ? EXIT_SUCCESS : 77;
}
