/*
 * The collectives dispatcher: the public ps_comm_* collectives validate
 * their arguments here once for every algorithm, handle in-place buffers,
 * zero counts and single-rank communicators, pick an algorithm (forced by
 * PS_COMM_<COLL>_ALGO, else by size and rank count against the thresholds
 * of the parameter table), build its schedule and start it under a
 * request. Blocking calls wait on that request with PS_COMM_OP_TIMEOUT.
 *
 * Every collective's messages carry one tag in the collective protocol:
 * a sequence number (collectives start in the same order on every rank)
 * and a 4-bit signature of the collective, data type, operation and root,
 * so that ranks that disagree on those never match each other's messages
 * and fail with a timeout instead of corrupting data.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/sched.h"
#include "util/copy.h"
#include "util/err.h"
#include "util/log.h"
#include "util/util.h"

enum coll_kind {
	COLL_BARRIER,
	COLL_BCAST,
	COLL_REDUCE,
	COLL_ALLREDUCE,
	COLL_ALLGATHER,
	COLL_REDUCE_SCATTER,
	COLL_KINDS
};

struct algo {
	const char *name;
	psc_coll_build_fn build;
	const char *cost; /* for ps_comm_info */
};

/* Index of the algorithm auto-selection picks for a call. */
typedef int (*choose_fn)(const struct psc_params *p,
			 const struct psc_coll_args *a, size_t bytes);

struct coll_desc {
	const char *name;
	bool reduces;	 /* combines data: deterministic mode applies */
	const char *env; /* the PS_COMM_<COLL>_ALGO variable */
	const struct algo *algos;
	int nalgos;
	size_t param;	 /* offset of the PS_COMM_<COLL>_ALGO string */
	choose_fn choose;
	const char *rule; /* the auto rule, in words */
};

/*
 * hier is the last entry of every table: intra-node steps over shm, few
 * messages between nodes (N = nodes, L = ranks per node; *_hier.c).
 */
static const struct algo barrier_algos[] = {
	{"dissemination", psc_barrier_dissemination, "ceil(log2 n) a"},
	{"hier", psc_barrier_hier, "2 a_shm + ceil(log2 N) a"},
};
static const struct algo bcast_algos[] = {
	{"binomial", psc_bcast_binomial, "ceil(log2 n)(a + m b)"},
	{"scatter_ring", psc_bcast_scatter_ring, "2(n-1) a + 2((n-1)/n) m b"},
	{"hier", psc_bcast_hier, "bcast on N nodes, then on L ranks (shm)"},
};
static const struct algo reduce_algos[] = {
	{"binomial", psc_reduce_binomial, "ceil(log2 n)(a + m b + m g)"},
	{"rs_gather", psc_reduce_rs_gather,
	 "2(n-1) a + 2((n-1)/n) m b + ((n-1)/n) m g"},
	{"hier", psc_reduce_hier, "reduce on L ranks (shm), then on N nodes"},
};
static const struct algo allreduce_algos[] = {
	{"rd", psc_allreduce_rd, "log2 p (a + m b + m g) [+2a+2mb if n!=2^k]"},
	{"rabenseifner", psc_allreduce_rabenseifner,
	 "2 log2 p a + 2((p-1)/p) m b + ((p-1)/p) m g"},
	{"ring", psc_allreduce_ring,
	 "2(n-1) a + 2((n-1)/n) m b + ((n-1)/n) m g"},
	{"hier", psc_allreduce_hier,
	 "rs on L (shm), allreduce of m/L on N nodes, ag on L (shm)"},
};
static const struct algo allgather_algos[] = {
	{"ring", psc_allgather_ring, "(n-1) a + ((n-1)/n) m b"},
	{"rd", psc_allgather_rd, "log2 n a + ((n-1)/n) m b (n = 2^k)"},
	{"hier", psc_allgather_hier,
	 "gather to leaders (shm), (N-1) a + ((N-1)/N) m b, bcast (shm)"},
};
static const struct algo reduce_scatter_algos[] = {
	{"ring", psc_reduce_scatter_ring,
	 "(n-1) a + ((n-1)/n) m b + ((n-1)/n) m g"},
	{"hier", psc_reduce_scatter_hier,
	 "allreduce hier's rs and inter steps, scatter on L (shm)"},
};

static bool is_pow2(int n)
{
	return (n & (n - 1)) == 0;
}

static int choose_first(const struct psc_params *p,
			const struct psc_coll_args *a, size_t bytes)
{
	(void)p, (void)a, (void)bytes;
	return 0;
}

static int choose_bcast(const struct psc_params *p,
			const struct psc_coll_args *a, size_t bytes)
{
	return bytes >= p->bcast_scatter_min && a->count >= (size_t)a->size;
}

static int choose_reduce(const struct psc_params *p,
			 const struct psc_coll_args *a, size_t bytes)
{
	return a->deterministic || bytes >= p->reduce_rs_min;
}

/*
 * rd for small messages, and on two ranks for more: there its single
 * exchange moves the bytes of rabenseifner's two. rabenseifner up to the
 * ring, which comes later on a power-of-two rank count, where
 * rabenseifner needs no fold-in step that moves the whole vector twice.
 */
static int choose_allreduce(const struct psc_params *p,
			    const struct psc_coll_args *a, size_t bytes)
{
	size_t ring_min = is_pow2(a->size) ? p->allreduce_ring_min_pow2
					   : p->allreduce_ring_min;

	if (bytes <= p->allreduce_rd_max ||
	    (a->size == 2 && bytes <= p->allreduce_pair_rd_max))
		return 0;
	return bytes < ring_min ? 1 : 2;
}

static int choose_allgather(const struct psc_params *p,
			    const struct psc_coll_args *a, size_t bytes)
{
	return is_pow2(a->size) && bytes * (size_t)a->size <= p->allgather_rd_max;
}

#define DESC(kind, nm, red, algos, field, choose, rule)                        \
	[COLL_##kind] = {#nm, red, "PS_COMM_" #kind "_ALGO", algos,             \
		  (int)PSC_ARRAY_SIZE(algos),                                  \
		  offsetof(struct psc_params, field), choose, rule}

/* The first words of every auto rule (hier_auto decides). */
#define HIER_RULE "hier on several nodes with several ranks on one, "
#define HIER_RULE_RED                                                          \
	"hier on several nodes with several ranks on one (not when "           \
	"deterministic), "

static const struct coll_desc colls[COLL_KINDS] = {
	DESC(BARRIER, barrier, false, barrier_algos, barrier_algo,
	     choose_first, HIER_RULE "else dissemination"),
	DESC(BCAST, bcast, false, bcast_algos, bcast_algo, choose_bcast,
	     HIER_RULE "else scatter_ring from PS_COMM_BCAST_SCATTER_MIN, "
	     "else binomial"),
	DESC(REDUCE, reduce, true, reduce_algos, reduce_algo, choose_reduce,
	     HIER_RULE_RED "else rs_gather from PS_COMM_REDUCE_RS_MIN or when "
	     "deterministic, else binomial"),
	DESC(ALLREDUCE, allreduce, true, allreduce_algos, allreduce_algo,
	     choose_allreduce,
	     HIER_RULE_RED "else rd up to PS_COMM_ALLREDUCE_RD_MAX (2 ranks: "
	     "..._PAIR_RD_MAX), ring from PS_COMM_ALLREDUCE_RING_MIN (a "
	     "power-of-two count: ..._RING_MIN_POW2), rabenseifner between"),
	DESC(ALLGATHER, allgather, false, allgather_algos, allgather_algo,
	     choose_allgather,
	     HIER_RULE "else rd up to PS_COMM_ALLGATHER_RD_MAX in total when "
	     "n = 2^k, else ring"),
	DESC(REDUCE_SCATTER, reduce_scatter, true, reduce_scatter_algos,
	     reduce_scatter_algo, choose_first, HIER_RULE_RED "else ring"),
};

/* The configured algorithm name for a collective. */
static const char *algo_param(const struct psc_params *p,
			      const struct coll_desc *d)
{
	return *(const char *const *)((const char *)p + d->param);
}

/*
 * Does auto pick hier? When the ranks span several nodes and at least one
 * node has several ranks: then the flat algorithms send most of their
 * messages over the network although node-local peers are reachable over
 * shm. This holds for every size: for large messages hier moves 1/L of
 * the data across nodes, and for tiny ones on few nodes it still pays,
 * since a network hop costs tens of microseconds and a shm hop about
 * one, so log2(N) network rounds plus a few shm ones beat log2(n)
 * mostly-network rounds. Not for reductions in deterministic mode: hier
 * builds the flat deterministic schedule then, so auto names that.
 */
static bool hier_auto(const struct ps_comm *c, enum coll_kind kind,
		      const struct psc_coll_args *a)
{
	int nnodes, lsize;

	if (!psc_comm_nodes(c, &nnodes, &lsize) || nnodes < 2 ||
	    nnodes == psc_comm_size(c))
		return false;
	return !(colls[kind].reduces && a->deterministic);
}

/*
 * The algorithm for this call: the forced one, else auto's choice.
 * Returns its index, or -1 with the communicator's error set.
 */
static int pick_algo(struct ps_comm *c, enum coll_kind kind,
		     const struct psc_coll_args *a, size_t bytes)
{
	const struct coll_desc *d = &colls[kind];
	const char *want = algo_param(psc_comm_params(c), d);
	int i;

	if (!want[0] || strcmp(want, "auto") == 0)
		return hier_auto(c, kind, a) ? d->nalgos - 1
					     : d->choose(psc_comm_params(c), a, bytes);
	for (i = 0; i < d->nalgos; i++)
		if (strcmp(want, d->algos[i].name) == 0)
			break;
	if (i == d->nalgos) {
		psc_comm_set_error(c, "unknown %s algorithm \"%s\"", d->name,
				   want);
		return -1;
	}
	/* Recursive-doubling allgather needs a power-of-two rank count. */
	if (kind == COLL_ALLGATHER && i == 1 && !is_pow2(a->size))
		i = 0;
	/* A binomial reduce has no fixed order: keep the promise. */
	if (kind == COLL_REDUCE && a->deterministic && i == 0)
		i = 1;
	return i;
}

/* The smallest node's rank count (1 when out of memory: still valid). */
static int min_node_size(const struct ps_comm *c)
{
	int nnodes, lsize, n = psc_comm_size(c), m = n;
	const int *node_of = psc_comm_nodes(c, &nnodes, &lsize);
	int *cnt = calloc((size_t)nnodes, sizeof(int));

	if (!cnt)
		return 1;
	for (int r = 0; r < n; r++)
		cnt[node_of[r]]++;
	for (int k = 0; k < nnodes; k++)
		m = PSC_MIN(m, cnt[k]);
	free(cnt);
	return PSC_MAX(m, 1);
}

/* The flat algorithm auto picks for a call like a on n ranks. */
static psc_coll_build_fn flat_choice(const struct ps_comm *c,
				     enum coll_kind kind,
				     const struct psc_coll_args *a, int n,
				     size_t count, size_t bytes)
{
	struct psc_coll_args t = *a;

	t.size = n;
	t.count = count;
	return colls[kind].algos[colls[kind].choose(psc_comm_params(c), &t, bytes)]
		.build;
}

/*
 * For hier: the node map, and the flat algorithms of its steps, chosen
 * by the auto rules for what each step moves on how many ranks (the
 * same on every rank of a step: node count, smallest node, local size).
 */
static void hier_steps(const struct ps_comm *c, enum coll_kind kind,
		       struct psc_coll_args *a, size_t bytes)
{
	int nnodes, lsize, m;
	const int *node_of = psc_comm_nodes(c, &nnodes, &lsize);
	int nn = node_of ? nnodes : 1;
	size_t n = (size_t)a->size;

	a->node_of = node_of;
	a->nnodes = nn;
	switch (kind) {
	case COLL_BCAST:
	case COLL_REDUCE:
		a->hier.inter = flat_choice(c, kind, a, nn, a->count, bytes);
		a->hier.intra = flat_choice(c, kind, a, lsize,
					    a->count, bytes);
		break;
	case COLL_ALLREDUCE:
	case COLL_REDUCE_SCATTER:
		/* Between nodes: an allreduce of one of m pieces. */
		m = node_of ? min_node_size(c) : a->size;
		n = kind == COLL_ALLREDUCE ? 1 : n;
		a->hier.inter = flat_choice(c, COLL_ALLREDUCE, a, nn,
					    a->count * n / (size_t)m,
					    bytes / (size_t)m);
		break;
	case COLL_ALLGATHER:
		/* Inside nodes: a bcast of the whole result. */
		a->hier.intra = flat_choice(c, COLL_BCAST, a, lsize,
					    a->count * n, bytes * n);
		break;
	default:
		break;
	}
}

/* Fold a few values into the 4-bit signature in the tag. */
static uint32_t signature(enum coll_kind kind, const struct psc_coll_args *a)
{
	uint32_t v[4] = {(uint32_t)kind, (uint32_t)a->dtype, (uint32_t)a->op,
			 (uint32_t)a->root};
	uint64_t h = psc_fnv1a(PSC_FNV_INIT, v, sizeof(v));

	return (uint32_t)(h ^ h >> 4 ^ h >> 8 ^ h >> 12) & 0xf;
}

/*
 * Build and start the schedule of one call. a is complete; the work of
 * in-place handling and single-rank copies is already done.
 */
static int coll_start(struct ps_comm *c, enum coll_kind kind,
		      struct psc_coll_args *a, size_t bytes,
		      ps_comm_request_t *req)
{
	unsigned ub = psc_chan_user_bits(psc_comm_chan(c)) - 4;
	uint32_t seq = psc_comm_next_seq(c);
	uint32_t tag = signature(kind, a) << ub | (seq & ((1u << ub) - 1));
	struct psc_sched *s;
	int algo = 0, rc;

	a->rank = psc_comm_rank(c);
	a->size = psc_comm_size(c);
	a->deterministic = psc_comm_params(c)->deterministic == 1;
	a->seg = PSC_MAX(psc_comm_params(c)->coll_segment / a->esize, 1);
	if (psc_comm_size(c) > 1 && (bytes || kind == COLL_BARRIER)) {
		algo = pick_algo(c, kind, a, bytes);
		if (algo < 0)
			return PS_COMM_ERR_CONFIG;
		if (algo == colls[kind].nalgos - 1) {
			hier_steps(c, kind, a, bytes);
			psc_comm_count_hier(c);
		}
	}
	s = psc_sched_new(c, tag, a->dtype, a->op);
	if (!s)
		return PS_COMM_ERR_NOMEM;
	if (psc_comm_size(c) > 1 && (bytes || kind == COLL_BARRIER))
		colls[kind].algos[algo].build(s, a);
	rc = psc_err_from_fi(psc_sched_error(s));
	if (rc) {
		psc_comm_set_error(c, "%s: building the schedule failed (%s)",
				   colls[kind].name, ps_comm_strerror(rc));
		psc_sched_free(s);
		return rc;
	}
	if (psc_log_enabled(PSC_LOG_TRACE))
		psc_log(PSC_LOG_TRACE, psc_comm_rank(c), "%s: %zu bytes, %s, %d steps",
			colls[kind].name, bytes, colls[kind].algos[algo].name,
			psc_sched_count(s));
	rc = psc_sched_start(s, req);
	return rc ? psc_comm_failure(c, rc) : 0;
}

/* ------------------------------------------------------------ checking */

static bool overlap(const void *a, size_t alen, const void *b, size_t blen)
{
	uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

	return alen && blen && x < y + blen && y < x + alen;
}

/* count * esize * mult bytes, or false on overflow. */
static bool bytes_of(size_t count, size_t esize, size_t mult, size_t *out)
{
	return !__builtin_mul_overflow(count, esize, out) &&
	       !__builtin_mul_overflow(*out, mult, out);
}

/*
 * Validate buffers: NULL with a nonzero size, overlap without in-place.
 * sendbuf may be PS_COMM_IN_PLACE (then in_place is set).
 */
static int check_bufs(struct ps_comm *c, const void *sendbuf, size_t slen,
		      const void *recvbuf, size_t rlen, bool *in_place)
{
	*in_place = sendbuf == PS_COMM_IN_PLACE;
	if ((slen && !*in_place && !sendbuf) || (rlen && !recvbuf)) {
		psc_comm_set_error(c, "NULL buffer with a nonzero count");
		return PS_COMM_ERR_ARG;
	}
	if (!*in_place && overlap(sendbuf, slen, recvbuf, rlen)) {
		psc_comm_set_error(c, "send and receive buffers overlap: pass "
				   "PS_COMM_IN_PLACE as the send buffer");
		return PS_COMM_ERR_ARG;
	}
	return 0;
}

static int check_root(struct ps_comm *c, int root)
{
	if (root < 0 || root >= psc_comm_size(c)) {
		psc_comm_set_error(c, "root %d is not a rank of a communicator "
				   "of %d", root, psc_comm_size(c));
		return PS_COMM_ERR_ARG;
	}
	return 0;
}

/* How many elements a buffer holds, in units of the call's count. */
enum span {
	SPAN_NONE, /* no buffer */
	SPAN_ONE,  /* count elements */
	SPAN_ALL,  /* count elements per rank */
	SPAN_ROOT, /* count elements at the root, none elsewhere */
};

/* What one call passes, for the checks every collective shares. */
struct call {
	ps_comm_dtype_t dtype;
	ps_comm_op_t op;
	bool use_op;	       /* a reduction: op must be valid */
	bool has_root;	       /* bcast, reduce */
	int root;
	size_t count;	       /* elements */
	const void *sendbuf;   /* may be PS_COMM_IN_PLACE */
	enum span send_span;
	const void *recvbuf;
	enum span recv_span;
	size_t bytes;	       /* out: count elements, in bytes */
	bool in_place;	       /* out */
};

/* The multiple of count that a buffer of span sp holds on c. */
static size_t span_mult(const struct ps_comm *c, enum span sp, int root)
{
	switch (sp) {
	case SPAN_ONE:
		return 1;
	case SPAN_ALL:
		return (size_t)psc_comm_size(c);
	case SPAN_ROOT:
		return psc_comm_rank(c) == root;
	default:
		return 0;
	}
}

/*
 * Check comm, request, element type, operation, root, sizes and buffers;
 * fill a (dtype, op, esize) and k's outputs. Returns 0 or PS_COMM_ERR_ARG
 * with the communicator's error set.
 */
static int check_call(struct ps_comm *c, ps_comm_request_t *req,
		      struct call *k, struct psc_coll_args *a)
{
	size_t slen, rlen;
	int rc;

	if (!psc_comm_valid(c) || !req)
		return PS_COMM_ERR_ARG;
	*req = NULL;
	memset(a, 0, sizeof(*a));
	a->dtype = k->dtype;
	a->op = k->use_op ? k->op : PS_COMM_SUM;
	a->esize = ps_comm_dtype_size(k->dtype);
	if (!a->esize) {
		psc_comm_set_error(c, "invalid data type %d", (int)k->dtype);
		return PS_COMM_ERR_ARG;
	}
	if (k->use_op && (unsigned)k->op >= PS_COMM_OP_COUNT) {
		psc_comm_set_error(c, "invalid reduction operation %d",
				   (int)k->op);
		return PS_COMM_ERR_ARG;
	}
	if (k->has_root && (rc = check_root(c, k->root)) != 0)
		return rc;
	if (!bytes_of(k->count, a->esize, 1, &k->bytes) ||
	    !bytes_of(k->count, a->esize, span_mult(c, k->send_span, k->root),
		      &slen) ||
	    !bytes_of(k->count, a->esize, span_mult(c, k->recv_span, k->root),
		      &rlen)) {
		psc_comm_set_error(c, "count too large: the byte size "
				   "overflows");
		return PS_COMM_ERR_ARG;
	}
	a->count = k->count;
	a->root = k->root;
	return check_bufs(c, k->sendbuf, slen, k->recvbuf, rlen, &k->in_place);
}

/* Wait for a blocking collective's request. */
static int finish_blocking(struct ps_comm *c, int rc, ps_comm_request_t *r)
{
	if (rc)
		return rc;
	return psc_comm_await(c, r, NULL, psc_comm_op_deadline(c),
			      "collective");
}

/* ---------------------------------------------------------- public API */

int ps_comm_ibarrier(ps_comm_t c, ps_comm_request_t *req)
{
	struct call k = {.dtype = PS_COMM_UINT8, };
	struct psc_coll_args a;
	int rc = check_call(c, req, &k, &a);

	return rc ? rc : coll_start(c, COLL_BARRIER, &a, 0, req);
}

int ps_comm_ibcast(ps_comm_t c, void *buf, size_t count,
		   ps_comm_dtype_t dtype, int root, ps_comm_request_t *req)
{
	struct call k = {.dtype = dtype, .has_root = true, .root = root,
			 .count = count, .recvbuf = buf, .recv_span = SPAN_ONE};
	struct psc_coll_args a;
	int rc = check_call(c, req, &k, &a);

	if (rc)
		return rc;
	a.sendbuf = a.recvbuf = buf;
	return coll_start(c, COLL_BCAST, &a, k.bytes, req);
}

/* Reductions read sendbuf, or recvbuf in place; one rank just copies. */
static void reduce_bufs(struct ps_comm *c, const struct call *k,
			struct psc_coll_args *a, size_t bytes)
{
	a->sendbuf = k->in_place ? k->recvbuf : k->sendbuf;
	a->recvbuf = (void *)k->recvbuf;
	if (psc_comm_size(c) == 1 && !k->in_place && bytes)
		psc_copy(a->recvbuf, k->sendbuf, bytes);
}

/*
 * An unrooted reduction whose buffers k describes: check, place the
 * input, start; its size is what every rank contributes.
 */
static int start_reduction(struct ps_comm *c, ps_comm_request_t *req,
			   enum coll_kind kind, struct call *k)
{
	struct psc_coll_args a;
	int rc = check_call(c, req, k, &a);

	if (rc)
		return rc;
	reduce_bufs(c, k, &a, k->bytes);
	return coll_start(c, kind, &a,
			  k->bytes * span_mult(c, k->send_span, 0), req);
}

int ps_comm_ireduce(ps_comm_t c, const void *sendbuf, void *recvbuf,
		    size_t count, ps_comm_dtype_t dtype, ps_comm_op_t op,
		    int root, ps_comm_request_t *req)
{
	struct call k = {.dtype = dtype, .op = op, .use_op = true,
			 .has_root = true, .root = root, .count = count,
			 .sendbuf = sendbuf, .send_span = SPAN_ONE,
			 .recvbuf = recvbuf, .recv_span = SPAN_ROOT};
	struct psc_coll_args a;
	int rc = check_call(c, req, &k, &a);

	if (rc)
		return rc;
	if (k.in_place && psc_comm_rank(c) != root) {
		psc_comm_set_error(c, "reduce: only the root may pass "
				   "PS_COMM_IN_PLACE");
		return PS_COMM_ERR_ARG;
	}
	reduce_bufs(c, &k, &a, k.bytes);
	return coll_start(c, COLL_REDUCE, &a, k.bytes, req);
}

int ps_comm_iallreduce(ps_comm_t c, const void *sendbuf, void *recvbuf,
		       size_t count, ps_comm_dtype_t dtype, ps_comm_op_t op,
		       ps_comm_request_t *req)
{
	struct call k = {.dtype = dtype, .op = op, .use_op = true,
			 .count = count, .sendbuf = sendbuf,
			 .send_span = SPAN_ONE, .recvbuf = recvbuf,
			 .recv_span = SPAN_ONE};

	/* The ring reads sendbuf itself; the others copy it first. */
	return start_reduction(c, req, COLL_ALLREDUCE, &k);
}

int ps_comm_iallgather(ps_comm_t c, const void *sendbuf, void *recvbuf,
		       size_t count, ps_comm_dtype_t dtype,
		       ps_comm_request_t *req)
{
	struct call k = {.dtype = dtype, .count = count,
			 .sendbuf = sendbuf, .send_span = SPAN_ONE,
			 .recvbuf = recvbuf, .recv_span = SPAN_ALL};
	struct psc_coll_args a;
	int rc = check_call(c, req, &k, &a);

	if (rc)
		return rc;
	if (!k.in_place && k.bytes)
		psc_copy((char *)recvbuf + (size_t)psc_comm_rank(c) * k.bytes, sendbuf,
		       k.bytes);
	a.sendbuf = a.recvbuf = recvbuf;
	return coll_start(c, COLL_ALLGATHER, &a, k.bytes, req);
}

int ps_comm_ireduce_scatter(ps_comm_t c, const void *sendbuf, void *recvbuf,
			    size_t recvcount, ps_comm_dtype_t dtype,
			    ps_comm_op_t op, ps_comm_request_t *req)
{
	struct call k = {.dtype = dtype, .op = op, .use_op = true,
			 .count = recvcount, .sendbuf = sendbuf,
			 .send_span = SPAN_ALL, .recvbuf = recvbuf,
			 .recv_span = SPAN_ONE};

	return start_reduction(c, req, COLL_REDUCE_SCATTER, &k);
}

int ps_comm_barrier(ps_comm_t c)
{
	ps_comm_request_t r;

	return finish_blocking(c, ps_comm_ibarrier(c, &r), &r);
}

int ps_comm_bcast(ps_comm_t c, void *buf, size_t count,
		  ps_comm_dtype_t dtype, int root)
{
	ps_comm_request_t r;

	return finish_blocking(c, ps_comm_ibcast(c, buf, count, dtype, root,
						 &r), &r);
}

int ps_comm_reduce(ps_comm_t c, const void *sendbuf, void *recvbuf,
		   size_t count, ps_comm_dtype_t dtype, ps_comm_op_t op,
		   int root)
{
	ps_comm_request_t r;

	return finish_blocking(c, ps_comm_ireduce(c, sendbuf, recvbuf, count,
						  dtype, op, root, &r), &r);
}

int ps_comm_allreduce(ps_comm_t c, const void *sendbuf, void *recvbuf,
		      size_t count, ps_comm_dtype_t dtype, ps_comm_op_t op)
{
	ps_comm_request_t r;

	return finish_blocking(c, ps_comm_iallreduce(c, sendbuf, recvbuf,
						     count, dtype, op, &r),
			       &r);
}

int ps_comm_allgather(ps_comm_t c, const void *sendbuf, void *recvbuf,
		      size_t count, ps_comm_dtype_t dtype)
{
	ps_comm_request_t r;

	return finish_blocking(c, ps_comm_iallgather(c, sendbuf, recvbuf,
						     count, dtype, &r), &r);
}

int ps_comm_reduce_scatter(ps_comm_t c, const void *sendbuf, void *recvbuf,
			   size_t recvcount, ps_comm_dtype_t dtype,
			   ps_comm_op_t op)
{
	ps_comm_request_t r;

	return finish_blocking(c, ps_comm_ireduce_scatter(c, sendbuf, recvbuf,
							  recvcount, dtype, op,
							  &r), &r);
}

/* ------------------------------------------------------------ describe */

/* The parameter table's entry for the variable env. */
static const struct psc_param_desc *param_named(const char *env)
{
	for (size_t i = 0; i < psc_param_count; i++)
		if (strcmp(psc_param_table[i].name, env) == 0)
			return &psc_param_table[i];
	return NULL;
}

int psc_coll_check_names(char *err, size_t len)
{
	for (int k = 0; k < COLL_KINDS; k++) {
		const struct coll_desc *d = &colls[k];
		const struct psc_param_desc *pd = param_named(d->env);
		const char *const *w = pd ? psc_param_choices(pd) : NULL;
		int n = 0;

		if (!w || strcmp(w[0], "auto") != 0) {
			snprintf(err, len, "%s takes no list of words "
				 "starting with auto", d->env);
			return -EINVAL;
		}
		for (n = 1; w[n]; n++)
			if (n > d->nalgos ||
			    strcmp(w[n], d->algos[n - 1].name) != 0) {
				snprintf(err, len, "%s: word %d is \"%s\", "
					 "algorithm %d is \"%s\"", d->env, n,
					 w[n], n - 1, n > d->nalgos ? "(none)"
						 : d->algos[n - 1].name);
				return -EINVAL;
			}
		if (n != d->nalgos + 1) {
			snprintf(err, len, "%s lists %d algorithms, the table "
				 "has %d", d->env, n - 1, d->nalgos);
			return -EINVAL;
		}
	}
	return 0;
}

/* The parameters auto-selection and segmentation read, by field. */
static bool is_threshold(const struct psc_param_desc *d)
{
	static const size_t fields[] = {
		offsetof(struct psc_params, coll_segment),
		offsetof(struct psc_params, bcast_scatter_min),
		offsetof(struct psc_params, reduce_rs_min),
		offsetof(struct psc_params, allreduce_rd_max),
		offsetof(struct psc_params, allreduce_pair_rd_max),
		offsetof(struct psc_params, allreduce_ring_min),
		offsetof(struct psc_params, allreduce_ring_min_pow2),
		offsetof(struct psc_params, allgather_rd_max),
	};

	for (size_t i = 0; i < PSC_ARRAY_SIZE(fields); i++)
		if (d->offset == fields[i])
			return true;
	return false;
}

void psc_coll_print_table(FILE *out, const struct psc_params *p)
{
	char val[64];

	fprintf(out, "collective algorithms (a = latency, b = time per byte, "
		"g = reduction time per byte, m = bytes, n = ranks, "
		"p = largest power of two <= n):\n");
	for (int k = 0; k < COLL_KINDS; k++) {
		const struct coll_desc *d = &colls[k];

		fprintf(out, "  %-15s %s=%s\n", d->name, d->env,
			algo_param(p, d));
		fprintf(out, "  %-15s auto: %s\n", "", d->rule);
		for (int i = 0; i < d->nalgos; i++)
			fprintf(out, "  %-15s   %-14s %s\n", "",
				d->algos[i].name, d->algos[i].cost);
	}
	fprintf(out, "  thresholds:\n");
	for (size_t i = 0; i < psc_param_count; i++) {
		const struct psc_param_desc *d = &psc_param_table[i];

		if (!is_threshold(d))
			continue;
		psc_param_format(p, d, val, sizeof(val));
		fprintf(out, "    %-32s %s\n", d->name, val);
	}
	fprintf(out, "  PS_COMM_DETERMINISTIC=%d: %s\n", p->deterministic,
		p->deterministic == 1
			? "reductions folded in rank order by each block's owner"
			: "fastest order; same bits on every rank");
}
