/*
 * van_echo: the van's round trip for one segment size, without ps-lite.
 * Node 1 sends a message of one segment to node 2, which sends one of
 * the same size back; node 1 prints the mean microseconds per round trip
 * after 10 untimed ones. With "threads", each node receives on a thread
 * of its own and hands every message to its main thread, which sends, as
 * ps-lite's receiving and customer threads do; without, one thread
 * sends and receives. bench/van_echo.sh builds it against an installed
 * pscomm and runs it.
 *
 *   van_echo 1|2 PORT PEER_PORT BYTES ITERS [threads]
 *
 * Both nodes listen on 127.0.0.1; PS_COMM_JOB_KEY must be the same.
 * Exit status: 0, 1 for bad usage, 2 when the van fails.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ps_comm/van.h>

static ps_comm_van_t van;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long got, total, to_receive;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void fail(const char *what, int rc)
{
	fprintf(stderr, "van_echo: %s: %s\n", what, ps_comm_strerror(rc));
	exit(2);
}

/* Receive one message and let it go. */
static void take_one(void)
{
	ps_comm_van_msg_t m;
	int rc = ps_comm_van_recv(van, &m);

	if (rc)
		fail("receive", rc);
	ps_comm_van_msg_release(&m);
}

/* The receiving thread: count each message for the main thread. */
static void *receiver(void *arg)
{
	(void)arg;
	for (long i = 0; i < to_receive; i++) {
		take_one();
		pthread_mutex_lock(&mu);
		got++;
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

/* Wait for the n-th message (threads) or receive it (one thread). */
static void wait_for(long n, int threads)
{
	if (!threads) {
		take_one();
		return;
	}
	pthread_mutex_lock(&mu);
	while (got < n)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static void send_one(int to, ps_comm_van_seg_t *seg)
{
	int rc = ps_comm_van_send(van, to, "e", 1, seg, 1, NULL, NULL);

	if (rc)
		fail("send", rc);
}

int main(int argc, char **argv)
{
	int me, peer, port, peer_port, bound, threads, rc = 1;
	struct timespec pause = {0, 50 * 1000 * 1000};
	ps_comm_van_seg_t seg;
	pthread_t t;
	double t0 = 0;
	long iters;
	size_t n;

	if (argc < 6 || argc > 7 || (argv[1][0] != '1' && argv[1][0] != '2')) {
		fprintf(stderr, "usage: van_echo 1|2 PORT PEER_PORT BYTES "
			"ITERS [threads]\n");
		return 1;
	}
	me = argv[1][0] - '0';
	peer = 3 - me;
	port = atoi(argv[2]);
	peer_port = atoi(argv[3]);
	n = strtoull(argv[4], NULL, 10);
	iters = atol(argv[5]);
	threads = argc == 7 && strcmp(argv[6], "threads") == 0;
	seg.len = n;
	seg.data = malloc(n ? n : 1);
	if (!seg.data || iters <= 0)
		return 1;
	memset(seg.data, me, n);
	total = iters + 10;
	/* Node 2 also takes node 1's last word (below). */
	to_receive = me == 2 ? total + 1 : total;
	if ((rc = ps_comm_van_create(&van)) != 0 ||
	    (rc = ps_comm_van_bind(van, "127.0.0.1", port, 0, &bound)) != 0 ||
	    (rc = ps_comm_van_set_id(van, me)) != 0)
		fail("start", rc);
	/* The other node may not listen yet. */
	for (int i = 0; i < 200; i++) {
		rc = ps_comm_van_connect(van, peer, "127.0.0.1", peer_port);
		if (rc == 0)
			break;
		nanosleep(&pause, NULL);
	}
	if (rc)
		fail("connect", rc);
	if (threads && pthread_create(&t, NULL, receiver, NULL) != 0)
		return 2;
	for (long i = 0; i < total; i++) {
		if (i == 10)
			t0 = now();
		if (me == 1) {
			send_one(peer, &seg);
			wait_for(i + 1, threads);
		} else {
			wait_for(i + 1, threads);
			send_one(peer, &seg);
		}
	}
	/*
	 * Node 2 stops only once node 1 has its last answer: node 1 says so
	 * with one more message, which node 2 waits for.
	 */
	if (me == 1) {
		printf("%.1f\n", (now() - t0) * 1e6 / (double)iters);
		rc = ps_comm_van_send(van, peer, "e", 1, NULL, 0, NULL, NULL);
		if (rc)
			fail("send", rc);
	} else {
		wait_for(total + 1, threads);
	}
	if (threads)
		pthread_join(t, NULL);
	ps_comm_van_stop(van);
	ps_comm_van_destroy(van);
	free(seg.data);
	return 0;
}
