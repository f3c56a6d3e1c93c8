/*
 * elastic: a training-style loop that survives the death of ranks. Each
 * step passes a message around the ring of ranks (point-to-point), then
 * allreduces a vector of int64 whose exact sum is known from the step
 * and the members, and checks every message and element. When a step fails
 * because a rank died (PS_COMM_ERR_PEER) or another rank revoked the
 * communicator (PS_COMM_ERR_REVOKED), the survivors recover:
 *
 *   1. ps_comm_revoke, so every rank leaves the step it is in;
 *   2. ps_comm_agree on how far each rank got: the ranks are at most one
 *      step apart (a step completes nowhere until every rank entered it),
 *      so each passes its count of completed steps modulo 3 and all
 *      resume after the lowest count, redoing a step some completed;
 *   3. ps_comm_shrink to the ranks alive, in their old order;
 *
 * and carry on with the new communicator. Rank 0 of each communicator
 * prints every membership change; every survivor prints its last line
 * with the final membership, so a test can compare them.
 *
 * --grow N@S adds N ranks at step S (ps_comm_grow): every rank calls it
 * when it has completed S steps, and N new processes, started with
 * PS_COMM_JOIN set to where rank 0 serves the grow (PS_COMM_GROW_ROOT,
 * else PS_COMM_ROOT) and the same arguments, join; rank 0 then hands
 * them the step count and the members, and all carry on. A new process
 * is named after the ranks the job started with: the first is the
 * starting size, and so on. It may be started before the grow opens;
 * it waits up to PS_COMM_TIMEOUT.
 *
 * --fail R@S makes the process that started as rank R kill itself with
 * SIGKILL at step S: during the step's ring exchange or allreduce, after
 * a random delay of up to 2 ms, or at the latest before the next step;
 * with @recovery appended, at a random moment of the first recovery
 * from a death at step S or later, to test a death inside
 * ps_comm_agree or ps_comm_shrink. A rank meets such a death with S
 * steps done, or S - 1: the rank that died may have finished step S - 1
 * first.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ps_comm.h"
#include "args.h"
#include "example.h"

#define MAX_FAIL 64
#define RING_TAG 7
#define MAX_GROW 16

struct fail {
	int rank, step, in_recovery;
};

struct grow {
	int n, step;
	int done;	   /* this grow happened (or before this rank joined) */
};

struct opts {
	int steps;
	int count;
	int timing;	   /* --timing */
	int nfail;
	struct fail fail[MAX_FAIL];
	int ngrow;
	struct grow grow[MAX_GROW];
};

struct ctx {
	ps_comm_t comm;
	int rank, size;	   /* in the current communicator */
	int wrank;	   /* the rank this process started as, or for a
			      process that joined, its name (struct grow) */
	int next_name;	   /* the name of the next process to join */
	int *members;	   /* current rank -> starting rank or name */
	int done;	   /* steps completed */
	int64_t *send, *recv;
	uint64_t errors;   /* wrong elements */
	int changes;	   /* recoveries */
	double failed_at;  /* --timing: when a step failed, in us (0: none) */
	const char *what;  /* TRY's failed step */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: elastic [-s STEPS] [-n COUNT] [--fail R@S[@recovery]]... "
		"[--grow N@S]...\n"
		"  -s STEPS   steps to complete (default 20)\n"
		"  -n COUNT   int64 elements per allreduce (default 1024)\n"
		"  --fail R@S the process started as rank R kills itself at step "
		"S\n"
		"             (during its allreduce; with @recovery, during the "
		"first\n"
		"             recovery from a death at step S or later)\n"
		"  --timing   print when a step fails and when the next one "
		"completes\n"
		"  --grow N@S N new processes join at step S (start them with "
		"the same\n"
		"             arguments and PS_COMM_JOIN=host:port, where rank 0 "
		"serves it)\n");
}

static void parse_fail(const struct ex_args *a, const char *v,
		       struct opts *o)
{
	char rank[16], step[16], where[16] = "";
	struct fail *f;

	if (o->nfail == MAX_FAIL)
		ex_usage_error(a, "--fail %s: at most %d failures", v, MAX_FAIL);
	/* NOLINTNEXTLINE(cert-err34-c): the fields are parsed by ex_int. */
	if (sscanf(v, "%15[0-9]@%15[0-9]@%15s", rank, step, where) < 2 ||
	    (where[0] && strcmp(where, "recovery") != 0))
		ex_usage_error(a, "--fail %s: expected RANK@STEP or "
			       "RANK@STEP@recovery", v);
	f = &o->fail[o->nfail++];
	f->rank = ex_int(a, "--fail", rank, 0, 1 << 20, "rank");
	f->step = ex_int(a, "--fail", step, 0, 1 << 30, "step");
	f->in_recovery = where[0] != 0;
}

static void parse_grow(const struct ex_args *a, const char *v,
		       struct opts *o)
{
	char n[16], step[16];
	struct grow *g;

	if (o->ngrow == MAX_GROW)
		ex_usage_error(a, "--grow %s: at most %d grows", v, MAX_GROW);
	/* NOLINTNEXTLINE(cert-err34-c): the fields are parsed by ex_int. */
	if (sscanf(v, "%15[0-9]@%15[0-9]", n, step) != 2)
		ex_usage_error(a, "--grow %s: expected COUNT@STEP", v);
	g = &o->grow[o->ngrow++];
	g->n = ex_int(a, "--grow", n, 1, 1 << 20, "new ranks");
	g->step = ex_int(a, "--grow", step, 0, 1 << 30, "step");
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	struct ex_args a;
	const char *opt, *v;

	memset(o, 0, sizeof(*o));
	o->steps = 20;
	o->count = 1024;
	ex_args_init(&a, "elastic", usage, argc, argv);
	while ((opt = ex_args_next(&a)) != NULL) {
		if ((v = ex_value(&a, "-s")))
			o->steps = ex_int(&a, "-s", v, 1, 1 << 30, "steps");
		else if ((v = ex_value(&a, "-n")))
			o->count = ex_int(&a, "-n", v, 1, 1 << 24,
					  "elements");
		else if ((v = ex_value(&a, "--fail")))
			parse_fail(&a, v, o);
		else if ((v = ex_value(&a, "--grow")))
			parse_grow(&a, v, o);
		else if (ex_flag(&a, "--timing"))
			o->timing = 1;
		else
			ex_unknown(&a);
	}
}

/* ---------------------------------------------------- failure injection */

/* --timing: the kill's time goes out first (bench/recover.sh). */
static int timing;

static void *killer(void *arg)
{
	struct timespec ts = {0, (long)(uintptr_t)arg};

	nanosleep(&ts, NULL);
	if (timing)
		dprintf(STDOUT_FILENO, "elastic: timing: killed at %.1f us\n",
			now_us());
	kill(getpid(), SIGKILL);
	return NULL;
}

/* Kill this process after a random delay of up to 2 ms, from a thread. */
static void die_soon(const struct ctx *c)
{
	pthread_t t;
	long ns = (long)(((unsigned)rand() ^ (unsigned)c->wrank) % 2000000u);

	fflush(stdout);
	if (pthread_create(&t, NULL, killer, (void *)(uintptr_t)ns) != 0)
		kill(getpid(), SIGKILL);
	pthread_detach(t);
}

/*
 * Whether this process is to die now: at step, in a recovery or not.
 * Once it is, it gets no further than the start of the next step, so
 * that the others cannot finish without it.
 */
static void maybe_die(const struct ctx *c, const struct opts *o,
		      int in_recovery)
{
	static int armed;

	while (armed && !in_recovery)
		pause();
	for (int i = 0; i < o->nfail && !armed; i++)
		if (o->fail[i].rank == c->wrank &&
		    o->fail[i].in_recovery == in_recovery &&
		    c->done + in_recovery >= o->fail[i].step) {
			armed = 1;
			die_soon(c);
		}
}

/* ------------------------------------------------------------ the loop */

/* Element i of the sum over the members at step s: exact in int64. */
static int64_t expected(const struct ctx *c, int s, int i)
{
	int64_t ranks = 0;

	for (int m = 0; m < c->size; m++)
		ranks += c->members[m] + 1;
	return ranks * (s + 1) + (int64_t)c->size * i;
}

/*
 * A step's point-to-point part: each rank sends its name and the step to
 * the next rank of the ring and checks what the previous one sent.
 */
static int ring(struct ctx *c, int s)
{
	int64_t out[2] = {c->wrank, s}, in[2] = {-1, -1};
	int next = (c->rank + 1) % c->size;
	int prev = (c->rank + c->size - 1) % c->size;
	ps_comm_request_t r[2] = {NULL, NULL};

	if (c->size == 1)
		return 0;
	TRY(ps_comm_irecv(c->comm, in, sizeof(in), prev, RING_TAG, &r[0]), c,
	    "irecv");
	TRY(ps_comm_isend(c->comm, out, sizeof(out), next, RING_TAG, &r[1]), c,
	    "isend");
	TRY(ps_comm_waitall(2, r, NULL), c, "ring exchange");
	if (in[0] != c->members[prev] || in[1] != s)
		c->errors++;
	return 0;
}

/* One step: the ring exchange, the allreduce, then its check. */
static int step(struct ctx *c, const struct opts *o)
{
	int s = c->done;

	TRY(ring(c, s), c, "ring exchange");

	for (int i = 0; i < o->count; i++)
		c->send[i] = (int64_t)(c->wrank + 1) * (s + 1) + i;
	TRY(ps_comm_allreduce(c->comm, c->send, c->recv, (size_t)o->count,
			      PS_COMM_INT64, PS_COMM_SUM),
	    c, "allreduce");
	for (int i = 0; i < o->count; i++)
		if (c->recv[i] != expected(c, s, i))
			c->errors++;
	c->done++;
	return 0;
}

/* The members after shrink: the old ones less the agreed failed set. */
static int new_members(struct ctx *c, ps_comm_t old, int *gone, int *ngone)
{
	ps_comm_failure_t *f = calloc((size_t)c->size, sizeof(*f));
	int count = 0, n = 0, k = 0;

	if (!f)
		return PS_COMM_ERR_NOMEM;
	TRY(ps_comm_failed_ranks(old, f, c->size, &count), c, "failed_ranks");
	*ngone = 0;
	for (int r = 0; r < c->size; r++) {
		while (k < count && (f[k].rank < r || !f[k].agreed))
			k++;
		if (k < count && f[k].rank == r)
			gone[(*ngone)++] = c->members[r];
		else
			c->members[n++] = c->members[r];
	}
	free(f);
	return 0;
}

static void print_members(const struct ctx *c, FILE *out)
{
	fprintf(out, "[");
	for (int m = 0; m < c->size; m++)
		fprintf(out, "%s%d", m ? " " : "", c->members[m]);
	fprintf(out, "]");
}

/*
 * The agreement every recovery starts with, and the one that ends the
 * loop: each rank passes the residue of its step count (mod 3) as the
 * one bit it clears of 7, and 8 when it finished every step without a
 * failure. Returns whether all finished cleanly; otherwise c->done is
 * the lowest count, to resume from.
 */
static int agree_progress(struct ctx *c, int clean, int *finished)
{
	int flag = (7 & ~(1 << (c->done % 3))) | (clean ? 8 : 0);
	int present, low = c->done % 3;

	TRY(ps_comm_agree(c->comm, &flag), c, "agree");
	/* The residues present: one, or two adjacent ones. */
	present = ~flag & 7;
	*finished = (flag & 8) && present == (1 << low);
	if (present & (1 << ((low + 2) % 3)))
		c->done--;
	return 0;
}

/*
 * After agree_progress: shrink to the ranks alive, and say who left. On
 * return c->comm is the shrunk communicator.
 */
static int shrink(struct ctx *c)
{
	int *gone = calloc((size_t)c->size, sizeof(*gone)), ngone = 0;
	ps_comm_t old = c->comm, shrunk;

	if (!gone)
		return PS_COMM_ERR_NOMEM;
	TRY(ps_comm_shrink(old, &shrunk), c, "shrink");
	TRY(new_members(c, old, gone, &ngone), c, "failed_ranks");
	c->comm = shrunk;
	ps_comm_finalize(old);
	ps_comm_rank(c->comm, &c->rank);
	ps_comm_size(c->comm, &c->size);
	c->changes++;
	if (c->rank == 0) {
		printf("elastic: step %d: %d rank(s) failed (", c->done, ngone);
		for (int i = 0; i < ngone; i++)
			printf("%s%d", i ? " " : "", gone[i]);
		printf("); continuing with %d: ", c->size);
		print_members(c, stdout);
		printf("\n");
		fflush(stdout);
	}
	free(gone);
	return 0;
}

/*
 * After a grow, on every rank of c->comm: rank 0 hands out the step
 * count, the membership changes so far, the old size, the next name and
 * the old members; the new processes are named in rank order. A process
 * that joined learns its name here.
 */
static int share_state(struct ctx *c, int joined)
{
	int64_t st[4] = {c->done, c->changes, c->size, c->next_name};
	int old, size, *m;

	TRY(ps_comm_bcast(c->comm, st, 4, PS_COMM_INT64, 0), c, "bcast");
	old = (int)st[2];
	ps_comm_size(c->comm, &size);
	ps_comm_rank(c->comm, &c->rank);
	m = realloc(c->members, (size_t)size * sizeof(*m));
	if (!m)
		return PS_COMM_ERR_NOMEM;
	c->members = m;
	TRY(ps_comm_bcast(c->comm, m, (size_t)old, PS_COMM_INT32, 0), c,
	    "bcast");
	for (int i = old; i < size; i++)
		m[i] = (int)st[3] + i - old;
	c->done = (int)st[0];
	c->changes = (int)st[1] + 1;
	c->next_name = (int)st[3] + size - old;
	c->size = size;
	if (joined)
		c->wrank = m[c->rank];
	if (c->rank == 0) {
		printf("elastic: step %d: %d rank(s) joined; continuing with "
		       "%d: ", c->done, size - old, c->size);
		print_members(c, stdout);
		printf("\n");
		fflush(stdout);
	}
	return 0;
}

/* The grow due now, if any: ps_comm_grow, then share_state. */
static int maybe_grow(struct ctx *c, struct opts *o)
{
	int rc;

	for (int i = 0; i < o->ngrow; i++) {
		struct grow *g = &o->grow[i];
		ps_comm_t old = c->comm, grown;

		if (g->done || g->step != c->done)
			continue;
		rc = ps_comm_grow(old, g->n, &grown);
		if (rc) {
			char why[512];

			ps_comm_last_error(old, why, sizeof(why));
			if (c->rank == 0)
				printf("elastic: step %d: the grow failed (%s: "
				       "%s); recovering\n", c->done,
				       ps_comm_strerror(rc), why);
			return rc;
		}
		g->done = 1;
		c->comm = grown;
		ps_comm_finalize(old);
		TRY(share_state(c, 0), c, "grow");
	}
	return 0;
}

/*
 * --timing: when a step fails, and when the first step after it (on the
 * shrunk communicator) completes, in monotonic microseconds.
 */
static void report_recovery(struct ctx *c, const struct opts *o, int rc)
{
	if (!o->timing)
		return;
	if (rc && !c->failed_at) {
		c->failed_at = now_us();
	} else if (!rc && c->failed_at) {
		printf("elastic: timing: rank %d: step failed at %.1f us, next "
		       "step done at %.1f us\n", c->wrank, c->failed_at,
		       now_us());
		c->failed_at = 0;
	}
}

/*
 * Steps until every rank finished them all. A failed step starts a
 * recovery (revoke, agree, shrink); finishing starts the same agreement
 * without the revoke, so that a rank that finished joins the recovery
 * of ranks still in the last step.
 */
static int run(struct ctx *c, struct opts *o)
{
	for (;;) {
		int rc = 0, finished = 0;

		if (c->done < o->steps) {
			/* A grow that failed is recovered from like a step. */
			rc = maybe_grow(c, o);
			if (rc == 0) {
				maybe_die(c, o, 0);
				rc = step(c, o);
				if (rc && rc != PS_COMM_ERR_PEER &&
				    rc != PS_COMM_ERR_REVOKED)
					return rc;
				report_recovery(c, o, rc);
			}
			if (rc == 0 && c->done < o->steps)
				continue;
			if (rc) {
				maybe_die(c, o, 1);
				TRY(ps_comm_revoke(c->comm), c, "revoke");
			}
		}
		TRY(agree_progress(c, rc == 0, &finished), c, "agree");
		if (finished)
			return 0;
		TRY(shrink(c), c, "shrink");
	}
}

int main(int argc, char **argv)
{
	struct opts o;
	struct ctx c = {0};
	int rc;

	parse_opts(argc, argv, &o);
	timing = o.timing;
	rc = ps_comm_init(&c.comm, NULL);
	if (rc) {
		fprintf(stderr, "elastic: ps_comm_init: %s\n",
			ps_comm_strerror(rc));
		return 1;
	}
	ps_comm_rank(c.comm, &c.rank);
	ps_comm_size(c.comm, &c.size);
	c.wrank = c.rank;
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	c.members = calloc((size_t)c.size, sizeof(*c.members));
	c.send = calloc((size_t)o.count, sizeof(*c.send));
	c.recv = calloc((size_t)o.count, sizeof(*c.recv));
	if (!c.members || !c.send || !c.recv) {
		fprintf(stderr, "elastic: rank %d: out of memory\n", c.rank);
		return 1;
	}
	for (int m = 0; m < c.size; m++)
		c.members[m] = m;
	c.next_name = c.size;
	rc = 0;
	if (getenv("PS_COMM_JOIN") && *getenv("PS_COMM_JOIN")) {
		/* Joined a grow: the grows up to here are done. */
		rc = share_state(&c, 1);
		for (int i = 0; i < o.ngrow; i++)
			o.grow[i].done = o.grow[i].step <= c.done;
	}
	if (!rc)
		rc = run(&c, &o);
	if (rc) {
		char detail[512];

		ps_comm_last_error(c.comm, detail, sizeof(detail));
		fprintf(stderr, "elastic: rank %d: %s failed: %s%s%s\n",
			c.wrank, c.what, ps_comm_strerror(rc),
			detail[0] ? ": " : "", detail);
	} else {
		printf("elastic: rank %d: %d steps, %s, %d membership "
		       "change(s), %d ranks: ", c.wrank, c.done,
		       c.errors ? "WRONG RESULTS" : "every result exact",
		       c.changes, c.size);
		print_members(&c, stdout);
		printf("\n");
	}
	free(c.members);
	free(c.send);
	free(c.recv);
	if (ps_comm_finalize(c.comm) && !rc)
		rc = 1;
	return rc || c.errors ? 1 : 0;
}
