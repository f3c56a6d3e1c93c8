/*
 * The collective engine: a schedule is a list of operations (send,
 * receive, reduce, copy) with dependencies, built once by an algorithm and
 * then advanced without blocking. Every schedule in flight is a progress
 * source of its communicator's endpoint, which blocking waits and
 * ps_comm_test poll, so nonblocking collectives move while the caller
 * does point-to-point work or other collectives, and complete in any
 * order. A collective's user request completes when its last operation
 * does.
 *
 * Dependencies always point from an earlier operation to a later one, so
 * one forward pass over the operations starts everything that is ready.
 * Point-to-point operations on one channel (peer and direction) are posted
 * in the order they were added, which is what lets one tag serve a whole
 * collective: pscomm's messages between two ranks do not overtake.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll/sched.h"
#include "p2p/p2p.h"
#include "util/copy.h"
#include "util/scratch.h"
#include "util/util.h"

enum sop_kind { SOP_SEND, SOP_RECV, SOP_REDUCE, SOP_COPY };
enum sop_state { SOP_WAIT, SOP_RUN, SOP_DONE };

struct sop {
	uint8_t kind, state;
	bool in_left;
	bool fence;	/* starts only once every earlier operation is done */
	int pending;	/* dependencies not yet done */
	int chan_prev;	/* previous operation on this channel, or -1 */
	int succ;	/* first edge to a dependent, or -1 */
	int peer;
	void *dst;
	const void *src;
	size_t len;	/* bytes (send/recv/copy) or elements (reduce) */
	ps_comm_request_t req;
};

struct edge {
	int to, next;
};

struct psc_sched {
	struct ps_comm *comm;
	uint32_t tag;
	ps_comm_dtype_t dtype;
	ps_comm_op_t op;
	struct sop *ops;
	int nops, cap;
	struct edge *edges;
	int nedges, ecap;
	int *last_chan;	/* per peer: last send [2p], last receive [2p+1] */
	struct tmp {
		void *p;
		bool cached; /* from psc_scratch_get */
	} *tmps;
	int ntmps, tmpcap;
	const int *map;	/* peers of new operations: map[peer], or as given */
	int gate;	/* every new operation waits for it, or -1 */
	int first;	/* operations before this one are done */
	int err;	/* internal code once failed */
	bool leak_tmp;	/* a receive could not be withdrawn */
	struct psc_chan *ch;	/* the communicator's channel */
	struct psc_chan_op base;     /* on the channel while it runs */
};

/* -------------------------------------------------------------- building */

struct psc_sched *psc_sched_new(struct ps_comm *c, uint32_t tag,
				ps_comm_dtype_t dtype, ps_comm_op_t op)
{
	struct psc_sched *s = calloc(1, sizeof(*s));
	int n = psc_comm_size(c);

	if (!s)
		return NULL;
	s->last_chan = malloc(sizeof(int) * 2 * (size_t)n);
	if (!s->last_chan) {
		free(s);
		return NULL;
	}
	for (int i = 0; i < 2 * n; i++)
		s->last_chan[i] = -1;
	s->comm = c;
	s->ch = psc_comm_chan(c);
	s->gate = -1;
	s->tag = tag;
	s->dtype = dtype;
	s->op = op;
	return s;
}

/*
 * A buffer a receive that could not be withdrawn may still write to is
 * never freed, on purpose. Tell LeakSanitizer so, under --enable-sanitizers;
 * a real leak of scratch memory is still reported.
 */
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#define psc_keep_for_provider(p) __lsan_ignore_object(p)
#else
#define psc_keep_for_provider(p) ((void)(p))
#endif

void psc_sched_free(struct psc_sched *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->ntmps; i++)
		if (s->leak_tmp)
			psc_keep_for_provider(s->tmps[i].p);
		else if (s->tmps[i].cached)
			psc_scratch_put(s->tmps[i].p,
					psc_comm_params(s->comm)->coll_scratch_cache);
		else
			free(s->tmps[i].p);
	free(s->tmps);
	free(s->ops);
	free(s->edges);
	free(s->last_chan);
	free(s);
}

int psc_sched_error(const struct psc_sched *s)
{
	return s->err;
}

int psc_sched_count(const struct psc_sched *s)
{
	return s->nops;
}

/* Make room for one more element in an array; false (sticky) if none. */
static bool grow(struct psc_sched *s, void **arr, int n, int *cap,
		 size_t elem)
{
	void *p;
	int ncap;

	if (s->err)
		return false;
	if (n < *cap)
		return true;
	ncap = *cap ? *cap * 2 : 64;
	p = realloc(*arr, (size_t)ncap * elem);
	if (!p) {
		s->err = -ENOMEM;
		return false;
	}
	*arr = p;
	*cap = ncap;
	return true;
}

static int add_op(struct psc_sched *s, enum sop_kind kind)
{
	struct sop *o;

	if (!grow(s, (void **)&s->ops, s->nops, &s->cap, sizeof(*s->ops)))
		return -1;
	o = &s->ops[s->nops];
	memset(o, 0, sizeof(*o));
	o->kind = (uint8_t)kind;
	o->state = SOP_WAIT;
	o->chan_prev = -1;
	o->succ = -1;
	s->nops++;
	psc_sched_after(s, s->nops - 1, s->gate);
	return s->nops - 1;
}

void psc_sched_after(struct psc_sched *s, int op, int dep)
{
	if (op < 0 || dep < 0 || s->err)
		return;
	if (dep >= op) {
		s->err = -ENOTRECOVERABLE;
		return;
	}
	if (!grow(s, (void **)&s->edges, s->nedges, &s->ecap,
		  sizeof(*s->edges)))
		return;
	s->edges[s->nedges].to = op;
	s->edges[s->nedges].next = s->ops[dep].succ;
	s->ops[dep].succ = s->nedges++;
	s->ops[op].pending++;
}

static int add_p2p(struct psc_sched *s, enum sop_kind kind, void *buf,
		   size_t len, int peer)
{
	int i = add_op(s, kind);
	int ch;

	if (i < 0)
		return -1;
	if (s->map)
		peer = s->map[peer];
	ch = 2 * peer + (kind == SOP_RECV);
	s->ops[i].peer = peer;
	s->ops[i].dst = buf;
	s->ops[i].len = len;
	s->ops[i].chan_prev = s->last_chan[ch];
	s->last_chan[ch] = i;
	return i;
}

int psc_sched_send(struct psc_sched *s, const void *buf, size_t len,
		   int peer)
{
	return add_p2p(s, SOP_SEND, (void *)buf, len, peer);
}

int psc_sched_recv(struct psc_sched *s, void *buf, size_t len, int peer)
{
	return add_p2p(s, SOP_RECV, buf, len, peer);
}

/* A local step (reduce or copy) from src into dst. */
static int add_local(struct psc_sched *s, enum sop_kind kind, void *dst,
		     const void *src, size_t len)
{
	int i = add_op(s, kind);

	if (i < 0)
		return -1;
	s->ops[i].dst = dst;
	s->ops[i].src = src;
	s->ops[i].len = len;
	return i;
}

int psc_sched_reduce(struct psc_sched *s, void *inout, const void *in,
		     size_t count, bool in_left)
{
	int i = add_local(s, SOP_REDUCE, inout, in, count);

	if (i >= 0)
		s->ops[i].in_left = in_left;
	return i;
}

int psc_sched_copy(struct psc_sched *s, void *dst, const void *src,
		   size_t len)
{
	return add_local(s, SOP_COPY, dst, src, len);
}

int psc_sched_fence(struct psc_sched *s)
{
	int i = add_local(s, SOP_COPY, NULL, NULL, 0);

	if (i >= 0)
		s->ops[i].fence = true;
	return i;
}

int psc_sched_phase(struct psc_sched *s)
{
	int f = psc_sched_fence(s);

	if (f >= 0)
		s->gate = f;
	return f;
}

void psc_sched_peers(struct psc_sched *s, const int *map)
{
	s->map = map;
}

int *psc_sched_marks(struct psc_sched *s, const struct psc_coll_args *a,
		     size_t count, size_t *nseg)
{
	size_t off, maxblk;
	int *m;

	psc_block(count, a->size, 0, &off, &maxblk);
	*nseg = psc_nseg(maxblk, a->seg);
	m = psc_sched_tmp(s, (*nseg ? *nseg : 1) * sizeof(int));
	for (size_t j = 0; m && j < *nseg; j++)
		m[j] = -1;
	return m;
}

void *psc_sched_tmp(struct psc_sched *s, size_t len)
{
	/* tmps keeps no capacity: each call grows it to twice its count. */
	int cap = s->ntmps;
	bool big = len >= PSC_SCRATCH_MIN;
	void *p;

	if (s->err ||
	    !grow(s, (void **)&s->tmps, s->ntmps, &cap, sizeof(*s->tmps)))
		return NULL;
	/* Large blocks are reused: see util/scratch.h for why. */
	p = big ? psc_scratch_get(len) : malloc(len ? len : 1);
	if (!p) {
		s->err = -ENOMEM;
		return NULL;
	}
	s->tmps[s->ntmps].p = p;
	s->tmps[s->ntmps++].cached = big;
	return p;
}

/* ------------------------------------------------------------- running */

/* A local copy: psc_copy where the blocks are apart, memmove if not. */
static void copy_op(void *dst, const void *src, size_t len)
{
	uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;

	if (d + len <= s || s + len <= d)
		psc_copy(dst, src, len);
	else
		memmove(dst, src, len);
}

static void op_done(struct psc_sched *s, struct sop *o)
{
	o->state = SOP_DONE;
	for (int e = o->succ; e >= 0; e = s->edges[e].next)
		s->ops[s->edges[e].to].pending--;
}

/* Start o; local steps finish at once. Returns 0 or an internal code. */
static int op_start(struct psc_sched *s, struct sop *o)
{
	char err[256];
	int rc = 0;

	switch (o->kind) {
	case SOP_SEND:
		rc = psc_isend(s->ch, PSC_PROTO_COLL, o->dst, o->len,
			       o->peer, s->tag, &o->req, err, sizeof(err));
		break;
	case SOP_RECV:
		rc = psc_irecv(s->ch, PSC_PROTO_COLL, o->dst, o->len,
			       o->peer, s->tag, &o->req, err, sizeof(err));
		break;
	case SOP_REDUCE:
		rc = psc_reduce_local(s->dtype, s->op, o->dst, o->src, o->len,
				      o->in_left) ? -ENOTRECOVERABLE : 0;
		op_done(s, o);
		return rc;
	case SOP_COPY:
		/* In-place reduce_scatter moves its block within one buffer. */
		if (o->len && o->dst != o->src)
			copy_op(o->dst, o->src, o->len);
		op_done(s, o);
		return 0;
	}
	if (!rc)
		o->state = SOP_RUN;
	else if (rc != -ESHUTDOWN)
		psc_comm_set_error(s->comm, "collective: %s", err);
	return rc;
}

/* Reap a completed point-to-point operation and check what it got. */
static int op_finish(struct psc_sched *s, struct sop *o)
{
	ps_comm_status_t st;
	char *words;
	int rc = psc_p2p_reap(&o->req, &st, &words);

	/* The request is gone either way; failure ends the schedule. */
	o->state = SOP_DONE;

	if (o->kind == SOP_RECV && (rc == -PSC_P2P_ETRUNC ||
				    (!rc && st.len != o->len))) {
		psc_comm_set_error(s->comm, "collective: rank %d sent %s bytes "
				   "than this rank expects (%zu): the ranks "
				   "passed different counts or data types",
				   o->peer, rc ? "more" : "fewer", o->len);
		free(words);
		return -EBADE;
	}
	if (rc && words)
		psc_comm_set_error(s->comm, "%s", words);
	free(words);
	if (rc)
		return rc;
	op_done(s, o);
	return 0;
}

/*
 * Withdraw every operation still running after a failure. A receive the
 * provider will not give back keeps its scratch buffer alive.
 */
static void sched_cancel(struct psc_sched *s)
{
	for (int i = s->first; i < s->nops; i++) {
		struct sop *o = &s->ops[i];

		if (o->state != SOP_RUN || !o->req)
			continue;
		if (psc_p2p_cancel(&o->req) != 0)
			s->leak_tmp = true;
		o->state = SOP_DONE;
	}
}

/*
 * One forward pass. Returns 1 if the schedule moved, 0 if not; sets s->err
 * on failure. Called by one thread at a time (a progress source).
 */
static int sched_advance(struct psc_sched *s)
{
	int moved = 0;

	for (int i = s->first; i < s->nops && !s->err; i++) {
		struct sop *o = &s->ops[i];
		int rc = 0;

		if (o->state == SOP_RUN) {
			if (!psc_p2p_done(o->req))
				continue;
			rc = op_finish(s, o);
			moved = 1;
		} else if (o->state == SOP_WAIT && !o->pending &&
			   (!o->fence || i == s->first) &&
			   (o->chan_prev < 0 ||
			    s->ops[o->chan_prev].state != SOP_WAIT)) {
			rc = op_start(s, o);
			moved = 1;
		}
		if (rc)
			s->err = rc;
		if (o->state == SOP_DONE && i == s->first)
			s->first++;
	}
	if (s->err)
		sched_cancel(s);
	return moved;
}

/*
 * Advance the schedule; once it is over, p2p completes the request with
 * its result and releases it.
 */
static int sched_poll(struct psc_chan_op *op)
{
	struct psc_sched *s = psc_container_of(op, struct psc_sched, base);
	int moved = sched_advance(s);

	if (s->err || s->first == s->nops) {
		op->result = s->err;
		op->over = true;
	}
	return moved;
}

/* Fail a running schedule (a timeout); the next poll completes it. */
static void sched_abort(struct psc_chan_op *op, int err)
{
	struct psc_sched *s = psc_container_of(op, struct psc_sched, base);

	if (!s->err) {
		s->err = err;
		sched_cancel(s);
	}
}

static void sched_release(struct psc_chan_op *op)
{
	psc_sched_free(psc_container_of(op, struct psc_sched, base));
}

int psc_sched_start(struct psc_sched *s, ps_comm_request_t *req)
{
	int rc;

	s->base.poll = sched_poll;
	s->base.abort = sched_abort;
	s->base.release = sched_release;
	rc = psc_chan_op_start(s->ch, &s->base, req);
	if (rc)
		psc_sched_free(s);
	return rc;
}
