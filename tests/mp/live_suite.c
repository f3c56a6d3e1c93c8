/*
 * Failure semantics on 4 ranks (run by tests/mp/live.sh):
 *   --abort  rank 3 calls ps_comm_abort(comm, 42) once the others have
 *            posted an ANY_SOURCE receive, a nonblocking allreduce and a
 *            barrier and wait in them (they tell rank 3 so): each must
 *            end with PS_COMM_ERR_ABORTED naming rank 3, later calls fail
 *            at once, and finalize returns promptly.
 *   --revoke the same with ps_comm_revoke: PS_COMM_ERR_REVOKED.
 *   --split  the world splits into {0, 1} and {2, 3}; rank 3 exits
 *            without finalize. Everyone's world and rank 2's
 *            sub-communicator fail naming rank 3; where a local death
 *            does not poison the endpoint (tcp), {0, 1} keeps working
 *            and its allreduce is checked bit for bit, and on shm it
 *            fails too.
 *   --left   every rank finalizes the world while rank 2 still waits for a
 *            message from rank 3 on a communicator split from it, which
 *            never comes; the others exit. Rank 2's wait must end with
 *            PS_COMM_ERR_PEER saying a rank finalized, within
 *            PS_COMM_PEER_TIMEOUT of the goodbyes (not hang).
 *   --reroot rank 0, the liveness root, exits without finalize once the
 *            others split {1, 2, 3} off. Ranks 1-3 must see the world
 *            fail naming rank 0 (ps_comm_failed_ranks lists it), and
 *            then revoked by rank 3 (the notice goes through the new
 *            root). Rank 3 then stops itself (SIGSTOP), after telling
 *            rank 1 its pid. Ranks 1 and 2 must keep using {1, 2, 3}, and
 *            then fail their receives from rank 3 naming it within
 *            PS_COMM_PEER_TIMEOUT and a few seconds: only the new root
 *            (rank 1) can see a stopped rank's silence, and it must tell
 *            rank 2. Rank 1 then lets rank 3 go on (SIGCONT), and it
 *            exits. For a provider whose endpoint a local death does not
 *            poison (tcp, net, udp, sockets).
 *   --agree  ps_comm_agree: the AND of every rank's flag, three times
 *            over; concurrent agreements on two sub-communicators; then
 *            rank 2 exits without finalize and rank 3 revokes the world: the
 *            survivors' agreement on it (revoked) must give the AND of
 *            their flags, and ps_comm_failed_ranks rank 2 alone, marked
 *            agreed. ps_comm_shrink then gives {0, 1, 3} in that order,
 *            whose allreduce and agreement are checked; on shm, where
 *            a local death spoils the queues, through a rebuild on
 *            fresh endpoints.
 * Every wait is bounded by the launcher's timeout only: a hang fails.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"

static ps_comm_t comm;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* rc must be want, and the communicator's last error must mention what. */
static void expect(ps_comm_t c, const char *test, int rc, int want,
		   const char *what)
{
	char msg[512];

	ps_comm_last_error(c, msg, sizeof(msg));
	if (rc != want)
		fail(test, "got %s, want %s (%s)", ps_comm_strerror(rc),
		     ps_comm_strerror(want), msg);
	else if (!strstr(msg, what))
		fail(test, "last error \"%s\" does not say \"%s\"", msg, what);
}

/*
 * ps_comm_failed_ranks(c) must list rank r, with what in it. Other
 * ranks may follow it: one that finished its part of a test and
 * finalized a failed world leaves without a goodbye, as a dead rank.
 */
static void expect_failed(ps_comm_t c, const char *test, int r,
			  const char *what)
{
	ps_comm_failure_t dead[4];
	int n = -1, i = 0;

	CHECK_RC(test, ps_comm_failed_ranks(c, dead, 4, &n));
	while (i < n && i < 4 && dead[i].rank != r)
		i++;
	if (i == n || i == 4)
		fail(test, "%d ranks listed (the first: %d), not rank %d", n,
		     n > 0 ? dead[0].rank : -1, r);
	else if (!strstr(dead[i].evidence, what))
		fail(test, "evidence \"%s\" does not say \"%s\"",
		     dead[i].evidence, what);
}

/*
 * --abort, or with revoke set --revoke: rank 3 ends the world for the
 * others while they wait in it.
 */
static void test_abort(bool revoke)
{
	const int want = revoke ? PS_COMM_ERR_REVOKED : PS_COMM_ERR_ABORTED;
	const char *said = revoke ? "rank 3 revoked" : "rank 3 aborted";
	ps_comm_request_t req;
	float x = 1;
	char buf[8];
	int rc;

	CHECK_RC("abort", ps_comm_barrier(comm));
	/*
	 * Each other rank posts its operation, tells rank 3 (tag 5), then
	 * waits in it: rank 3 aborts once all three are posted. The blocking
	 * calls are these very posts and waits (lib/comm/api.c, coll.c).
	 */
	if (rank == 3) {
		for (int i = 0; i < 3; i++)
			CHECK_RC("abort", ps_comm_recv(comm, buf, sizeof(buf),
						       PS_COMM_ANY_SOURCE, 5,
						       NULL));
		CHECK_RC("abort", revoke ? ps_comm_revoke(comm)
					 : ps_comm_abort(comm, 42));
		rc = ps_comm_send(comm, buf, 1, 0, 1);
		expect(comm, "abort: own send after it", rc, want,
		       revoke ? "ps_comm_revoke" : "ps_comm_abort");
	} else {
		const char *what = "abort: barrier";

		if (rank == 0) {
			what = "abort: ANY_SOURCE receive";
			CHECK_RC("abort", ps_comm_irecv(comm, buf, sizeof(buf),
							PS_COMM_ANY_SOURCE,
							PS_COMM_ANY_TAG, &req));
		} else if (rank == 1) {
			what = "abort: nonblocking allreduce";
			CHECK_RC("abort", ps_comm_iallreduce(
						  comm, PS_COMM_IN_PLACE, &x, 1,
						  PS_COMM_FLOAT32, PS_COMM_SUM,
						  &req));
		} else {
			CHECK_RC("abort", ps_comm_ibarrier(comm, &req));
		}
		CHECK_RC("abort", ps_comm_send(comm, buf, 1, 3, 5));
		rc = ps_comm_wait(&req, NULL);
		expect(comm, what, rc, want, said);
	}
	if (rank != 3) {
		rc = ps_comm_bcast(comm, buf, 1, PS_COMM_UINT8, 0);
		expect(comm, "abort: a later collective", rc, want, said);
	}

}

/*
 * Split the world by color into *sub, then lose rank victim: it exits
 * without finalize (a death to the others) once every other rank is
 * past a barrier and has told it so.
 */
static void split_and_lose(const char *test, int color, int victim,
			   ps_comm_t *sub)
{
	int32_t v = rank;

	CHECK_RC(test, ps_comm_split(comm, color, rank, sub));
	CHECK_RC(test, ps_comm_barrier(comm));
	if (rank == victim) {
		for (int i = 0; i < 3; i++)
			CHECK_RC(test, ps_comm_recv(comm, &v, sizeof(v),
						    PS_COMM_ANY_SOURCE, 9,
						    NULL));
		_exit(0);
	}
	CHECK_RC(test, ps_comm_send(comm, &v, sizeof(v), victim, 9));
}

static void test_split(void)
{
	ps_comm_t sub;
	int32_t v, want = 0 + 1;
	double t;
	int rc;

	split_and_lose("split", rank / 2, 3, &sub);
	t = now();
	rc = ps_comm_barrier(comm);
	expect(comm, "split: the world", rc, PS_COMM_ERR_PEER, "rank 3");
	expect_failed(comm, "split: the world's failed ranks", 3, "rank 3");
	if (rank == 2) {
		rc = ps_comm_recv(sub, &v, sizeof(v), 1, 0, NULL);
		expect(sub, "split: receive from the dead rank", rc,
		       PS_COMM_ERR_PEER, "rank 3");
	} else {
		const char *prov;

		ps_comm_provider_name(comm, &prov);
		v = rank;
		rc = ps_comm_allreduce(sub, PS_COMM_IN_PLACE, &v, 1,
				       PS_COMM_INT32, PS_COMM_SUM);
		if (strncmp(prov, "shm", 3) == 0)
			expect(sub, "split: shm fails the whole endpoint", rc,
			       PS_COMM_ERR_PEER, "rank 3");
		else if (rc || v != want)
			fail("split", "{0, 1} without the dead rank: %s, %d",
			     ps_comm_strerror(rc), (int)v);
	}
	rc = ps_comm_bcast(comm, &v, 1, PS_COMM_INT32, 0);
	expect(comm, "split: the world, later", rc, PS_COMM_ERR_PEER,
	       "rank 3");
	if (now() - t > 10)
		fail("split", "failures took %.1f s", now() - t);
	ps_comm_finalize(sub);
}

/* Finalizes the world itself. */
static void test_left(void)
{
	const char *peer_timeout = getenv("PS_COMM_PEER_TIMEOUT");
	ps_comm_request_t req = NULL;
	ps_comm_t sub;
	char buf[8];
	double t, limit;
	int rc;

	CHECK_RC("left", ps_comm_split(comm, 0, rank, &sub));
	if (rank == 2)
		CHECK_RC("left", ps_comm_irecv(sub, buf, sizeof(buf), 3, 7,
					       &req));
	CHECK_RC("left", ps_comm_finalize(comm));
	/*
	 * Leave with the sub-communicator open; exit, not _exit, so that
	 * the process's files in /dev/shm go with it (fabric/sig.h).
	 */
	if (rank != 2)
		exit(failures ? 1 : 0);
	t = now();
	rc = ps_comm_wait(&req, NULL);
	expect(sub, "left: a receive from a rank that finalized", rc,
	       PS_COMM_ERR_PEER, "finalized");
	rc = ps_comm_send(sub, buf, 1, 0, 1);
	expect(sub, "left: a later send", rc, PS_COMM_ERR_PEER, "finalized");
	limit = (peer_timeout ? atof(peer_timeout) : 30) + 5;
	if (now() - t > limit)
		fail("left", "the wait ended after %.1f s", now() - t);
	ps_comm_finalize(sub);
}

static void test_reroot(void)
{
	const char *peer_timeout = getenv("PS_COMM_PEER_TIMEOUT");
	double limit = (peer_timeout ? atof(peer_timeout) : 30) + 5, t;
	int32_t v = 0, pid;
	ps_comm_t sub;
	int rc;

	split_and_lose("reroot", rank > 0, 0, &sub);
	rc = ps_comm_barrier(comm);
	expect(comm, "reroot: the world", rc, PS_COMM_ERR_PEER, "rank 0");
	expect_failed(comm, "reroot: the world's failed ranks", 0, "rank 0");
	/*
	 * A revoke after the root died still reaches every rank (through
	 * the new root, rank 1) and outranks their failure. Rank 3 revokes
	 * once ranks 1 and 2 saw the failure (they tell it on {1, 2, 3}).
	 */
	if (rank == 3) {
		for (int i = 0; i < 2; i++)
			CHECK_RC("reroot", ps_comm_recv(sub, &v, sizeof(v),
							PS_COMM_ANY_SOURCE, 7,
							NULL));
		CHECK_RC("reroot: revoke", ps_comm_revoke(comm));
	} else {
		CHECK_RC("reroot", ps_comm_send(sub, &v, sizeof(v), 2, 7));
	}
	t = now();
	/* Until the notice is here: each try fails at once, so pace them. */
	while ((rc = ps_comm_send(comm, &v, sizeof(v), 1, 6)) ==
		       PS_COMM_ERR_PEER &&
	       now() - t < limit)
		nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
	expect(comm, "reroot: the world revoked by rank 3", rc,
	       PS_COMM_ERR_REVOKED, rank == 3 ? "ps_comm_revoke"
					      : "rank 3 revoked");
	/* {1, 2, 3} goes on without rank 0. */
	v = rank;
	CHECK_RC("reroot: allreduce without rank 0",
		 ps_comm_allreduce(sub, PS_COMM_IN_PLACE, &v, 1, PS_COMM_INT32,
				   PS_COMM_SUM));
	if (v != 1 + 2 + 3)
		fail("reroot", "allreduce without rank 0: %d, not 6", (int)v);
	if (rank == 3) {
		pid = (int32_t)getpid();
		CHECK_RC("reroot", ps_comm_send(sub, &pid, sizeof(pid), 0, 4));
		raise(SIGSTOP);
		_exit(0); /* rank 1 let it go on: it is dead to them */
	}
	if (rank == 1)
		CHECK_RC("reroot", ps_comm_recv(sub, &pid, sizeof(pid), 2, 4,
						NULL));
	t = now();
	rc = ps_comm_recv(sub, &v, sizeof(v), 2, 5, NULL);
	expect(sub, rank == 1 ? "reroot: the new root sees rank 3 stop"
			      : "reroot: the new root tells rank 2",
	       rc, PS_COMM_ERR_PEER, "rank 3");
	if (now() - t > limit)
		fail("reroot", "rank 3's death took %.1f s", now() - t);
	if (rank == 1)
		kill((pid_t)pid, SIGCONT);
	ps_comm_finalize(sub);
}

/* ps_comm_agree on c with flag in; the result must be want. */
static void agree_is(ps_comm_t c, const char *test, int flag, int want)
{
	CHECK_RC(test, ps_comm_agree(c, &flag));
	if (flag != want)
		fail(test, "agreed 0x%x, want 0x%x", (unsigned)flag,
		     (unsigned)want);
}

static void test_agree(void)
{
	ps_comm_failure_t dead[4];
	ps_comm_t half, shrunk;
	int n = -1, r2 = -1, rc;
	int32_t v;

	for (int i = 0; i < 3; i++)
		agree_is(comm, "agree: the world", ~(1 << (rank + i)),
			 ~(0xf << i));
	/* Two agreements at once, one per half: {0, 2} and {1, 3}. */
	CHECK_RC("agree: split", ps_comm_split(comm, rank % 2, rank, &half));
	agree_is(half, "agree: a half", rank + 1, rank % 2 ? 0 : 1);
	ps_comm_finalize(half);
	if (rank == 2)
		_exit(0); /* without a goodbye: a death */
	/* The survivors: rank 3 revokes once it sees rank 2 dead. */
	if (rank == 3) {
		while (ps_comm_barrier(comm) == 0)
			;
		CHECK_RC("agree: revoke", ps_comm_revoke(comm));
	}
	agree_is(comm, "agree: after a death, revoked", ~(1 << rank),
		 ~0xb);
	CHECK_RC("agree: failed ranks", ps_comm_failed_ranks(comm, dead, 4,
							     &n));
	if (n != 1 || dead[0].rank != 2 || !dead[0].agreed)
		fail("agree", "%d failed ranks (the first %d, agreed %d), not "
		     "rank 2 agreed", n, n > 0 ? dead[0].rank : -1,
		     n > 0 ? dead[0].agreed : -1);
	rc = ps_comm_shrink(comm, &shrunk);
	CHECK_RC("agree: shrink", rc);
	ps_comm_rank(shrunk, &r2);
	ps_comm_size(shrunk, &n);
	if (n != 3 || r2 != (rank == 3 ? 2 : rank))
		fail("agree", "shrunk to rank %d of %d", r2, n);
	v = rank;
	CHECK_RC("agree: allreduce after shrink",
		 ps_comm_allreduce(shrunk, PS_COMM_IN_PLACE, &v, 1,
				   PS_COMM_INT32, PS_COMM_SUM));
	if (v != 0 + 1 + 3)
		fail("agree", "allreduce after shrink: %d, not 4", (int)v);
	agree_is(shrunk, "agree: after shrink", ~(1 << r2), ~0x7);
	ps_comm_finalize(shrunk);
}

int main(int argc, char **argv)
{
	double t;
	int rc;

	if (argc != 2 || (strcmp(argv[1], "--abort") &&
			  strcmp(argv[1], "--revoke") &&
			  strcmp(argv[1], "--split") &&
			  strcmp(argv[1], "--left") &&
			  strcmp(argv[1], "--reroot") &&
			  strcmp(argv[1], "--agree"))) {
		fprintf(stderr, "usage: live_suite "
			"--abort|--revoke|--split|--left|--reroot|--agree\n");
		return 2;
	}
	rc = ps_comm_init(&comm, NULL);
	if (rc) {
		fprintf(stderr, "not ok - ps_comm_init: %s\n",
			ps_comm_strerror(rc));
		return 1;
	}
	ps_comm_rank(comm, &rank);
	ps_comm_size(comm, &size);
	if (size != 4) {
		fprintf(stderr, "not ok - live_suite needs 4 ranks\n");
		return 1;
	}
	if (strcmp(argv[1], "--abort") == 0 ||
	    strcmp(argv[1], "--revoke") == 0) {
		test_abort(strcmp(argv[1], "--revoke") == 0);
	} else if (strcmp(argv[1], "--reroot") == 0) {
		test_reroot();
	} else if (strcmp(argv[1], "--agree") == 0) {
		test_agree();
	} else if (strcmp(argv[1], "--left") == 0) {
		test_left();
		return failures ? 1 : 0;
	} else {
		test_split();
	}
	t = now();
	ps_comm_finalize(comm);
	if (now() - t > 5)
		fail("finalize", "took %.1f s after the failure", now() - t);
	return failures ? 1 : 0;
}
