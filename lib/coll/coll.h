/*
 * The narrow interface collective algorithms are written against: a
 * schedule of point-to-point operations and local steps with dependencies
 * (sched.c), the reduction kernels (reduce_ops.c), and the arguments of
 * one collective call. Algorithms see ranks, sizes, buffers and peers
 * only: no libfabric, no endpoint, no request.
 *
 * A schedule runs every operation once its dependencies are done. The
 * messages of one schedule all carry the same tag, so the order matters:
 * sends to one peer are posted in the order they were added, and so are
 * receives from one peer, and the algorithm must add the sends on one
 * rank in the order the peer adds the matching receives.
 */
#ifndef PSC_COLL_H
#define PSC_COLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ps_comm.h"
#include "util/copy.h"

struct psc_sched;

/* What one collective call asks for; counts are in elements. */
struct psc_coll_args {
	int rank, size;
	const void *sendbuf; /* never PS_COMM_IN_PLACE here */
	void *recvbuf;
	size_t count;	     /* allgather: per rank; reduce_scatter: per rank */
	ps_comm_dtype_t dtype;
	ps_comm_op_t op;
	size_t esize;	     /* bytes per element */
	int root;
	size_t seg;	     /* pipelining segment, elements (>= 1) */
	bool deterministic;  /* fixed rank-order reduction */
	/*
	 * For hier: the node map (rank -> node, numbered by lowest rank;
	 * NULL: one node) and the flat algorithms the dispatcher chose for
	 * the step between nodes and the one inside a node (hier_*.c say
	 * which collective's algorithm each is; may be NULL where unused).
	 */
	const int *node_of;
	int nnodes;
	struct psc_coll_algos {
		int (*inter)(struct psc_sched *s,
			     const struct psc_coll_args *a);
		int (*intra)(struct psc_sched *s,
			     const struct psc_coll_args *a);
	} hier;
};

/*
 * Builds the schedule of one algorithm. Returns 0; allocation failures
 * are sticky in the schedule and reported by the dispatcher.
 */
typedef int (*psc_coll_build_fn)(struct psc_sched *s,
				 const struct psc_coll_args *a);

/* ---------------------------------------------------- schedule building */

/*
 * Each call adds one operation and returns its index, or -1 once the
 * schedule has failed to allocate (later calls are then no-ops, and
 * psc_sched_after ignores -1).
 */
int psc_sched_send(struct psc_sched *s, const void *buf, size_t len,
		   int peer);
int psc_sched_recv(struct psc_sched *s, void *buf, size_t len, int peer);
/*
 * inout[i] = in_left ? op(in[i], inout[i]) : op(inout[i], in[i]) for count
 * elements of the schedule's dtype and op; in and inout must not overlap.
 */
int psc_sched_reduce(struct psc_sched *s, void *inout, const void *in,
		     size_t count, bool in_left);
int psc_sched_copy(struct psc_sched *s, void *dst, const void *src,
		   size_t len);
/*
 * A no-op that is done once every operation added before it is done,
 * sends included (whose buffers may be read until then): for a step that
 * overwrites memory earlier steps may still be sending from.
 */
int psc_sched_fence(struct psc_sched *s);
/*
 * Start a new phase: every operation added from now on starts only once
 * every operation added before this call is done, sends included. For
 * algorithms chained from building blocks that take no ready input.
 * Returns the fence operation's index (or -1).
 */
int psc_sched_phase(struct psc_sched *s);
/*
 * Peers of the sends and receives added from now on are indices into
 * map (map[peer] is the communicator rank), or communicator ranks when
 * map is NULL. map is read while operations are added only; it lets a
 * building block written for ranks 0..n-1 run on a subset of ranks.
 */
void psc_sched_peers(struct psc_sched *s, const int *map);
/* Operation op starts only after operation dep is done. dep < op. */
void psc_sched_after(struct psc_sched *s, int op, int dep);
/* Scratch memory freed with the schedule; NULL (sticky error) if none. */
void *psc_sched_tmp(struct psc_sched *s, size_t len);
/*
 * Per-segment operation marks for count elements split over the ranks:
 * an array of *nseg ints (segments of the largest block), all -1, freed
 * with the schedule; NULL (sticky error) if out of memory.
 */
int *psc_sched_marks(struct psc_sched *s, const struct psc_coll_args *a,
		     size_t count, size_t *nseg);

/* ------------------------------------------------------ shared helpers */

/*
 * Block b of count elements split into n nearly equal blocks (the first
 * count % n blocks have one more element).
 */
static inline void psc_block(size_t count, int n, int b, size_t *off,
			     size_t *len)
{
	size_t q = count / (size_t)n, r = count % (size_t)n;
	size_t ub = (size_t)b;

	*off = ub * q + (ub < r ? ub : r);
	*len = q + (ub < r ? 1 : 0);
}

/* Algorithms that work in recvbuf from the start: copy the input there. */
static inline void psc_input_to_recvbuf(const struct psc_coll_args *a)
{
	if (a->sendbuf != a->recvbuf && a->count)
		psc_copy(a->recvbuf, a->sendbuf, a->count * a->esize);
}

/* Non-negative remainder. */
static inline int psc_mod(int a, int n)
{
	return ((a % n) + n) % n;
}

/* Largest power of two <= n (n >= 1). */
static inline int psc_pow2_floor(int n)
{
	int p = 1;

	while (p * 2 <= n)
		p *= 2;
	return p;
}

/*
 * Whether an allreduce by exchanges (rd, rabenseifner) takes its first
 * step straight from the input: out of place, without the deterministic
 * order, on a power-of-two rank count (no fold-in step writes work
 * first). That step then sends from sendbuf and receives the peer's part
 * into recvbuf, where it is reduced with the input: the input is not
 * copied into recvbuf, and the reduction does not wait for the send.
 */
static inline bool psc_allreduce_from_input(const struct psc_coll_args *a)
{
	return a->sendbuf != a->recvbuf && !a->deterministic &&
	       psc_pow2_floor(a->size) == a->size;
}

/* Length of the segment at offset o of a len-element run. */
#define PSC_SEG_LEN(len, o, seg) ((len) - (o) < (seg) ? (len) - (o) : (seg))

/* Number of segments of at most seg elements covering len elements. */
static inline size_t psc_nseg(size_t len, size_t seg)
{
	return (len + seg - 1) / seg;
}

/*
 * Ring reduce-scatter of the n blocks of src (count elements, block b
 * from psc_block) into work, pipelined in segments: afterwards rank r
 * holds the full reduction of block (r + shift) % n in work. Each block's
 * result is computed by one rank only. src may be work (in place); else
 * work needs no initial contents and src is only read. With
 * a->deterministic the rank-ordered direct exchange is used instead.
 * last[j] (array from psc_sched_marks, may be NULL) receives the
 * operation after which segment j of the final block is ready.
 * Implemented in reduce_scatter_ring.c.
 */
void psc_ring_reduce_scatter(struct psc_sched *s,
			     const struct psc_coll_args *a, const char *src,
			     char *work, size_t count, int shift, int *last);

/*
 * Deterministic reduce-scatter: rank r receives block (r + shift) % n of
 * every rank and folds the n contributions in rank order (x0 op x1 op
 * ...), per segment. Same contract as psc_ring_reduce_scatter.
 * Implemented in reduce_scatter_direct.c.
 */
void psc_direct_reduce_scatter(struct psc_sched *s,
			       const struct psc_coll_args *a, char *work,
			       size_t count, int shift, int *last);

/*
 * Ring allgather over the n blocks of work (count elements): rank r
 * starts with block (r + shift) % n (segment j ready after ready[j], or at
 * once when ready is NULL) and ends with all blocks. Rank skip (or -1)
 * already has every block: it receives nothing and its left neighbour
 * sends it nothing. Implemented in allgather_ring.c.
 */
void psc_ring_allgather(struct psc_sched *s, const struct psc_coll_args *a,
			char *work, size_t count, int shift, const int *ready,
			int skip);

/*
 * Recursive-doubling allgather among p ranks (p a power of two) over work
 * (count elements) split into p blocks. This rank is me (0..p-1) and
 * starts with block me, ready after operation ready (-1: at once);
 * ranks[i] is the communicator rank of participant i (NULL: i itself).
 * Returns an operation done once every block is in place.
 * Implemented in allgather_rd.c.
 */
int psc_rd_allgather(struct psc_sched *s, const struct psc_coll_args *a,
		     char *work, size_t count, int p, int me,
		     const int *ranks, int ready);

/*
 * The non-power-of-two step of recursive doubling and halving: with p the
 * largest power of two <= n and rem = n - p, each even rank below 2 rem
 * hands its vector (count elements in work) to the odd rank above it,
 * which reduces the pair and takes part for both. Returns this rank's
 * index among the p participants, or -1 if it sits out; *done receives
 * the operation after which work holds its input for the power-of-two
 * phase. ranks (p ints, scratch) receives the participants' communicator
 * ranks. Implemented in allreduce_rd.c.
 */
int psc_rd_fold_in(struct psc_sched *s, const struct psc_coll_args *a,
		   char *work, size_t count, int *ranks, int *done);

/*
 * The matching final step: an odd rank below 2 rem sends the result
 * (ready after operation ready) to the even rank that sat out, which
 * receives it into work.
 */
void psc_rd_fold_out(struct psc_sched *s, const struct psc_coll_args *a,
		     char *work, size_t count, int ready);

/* ------------------------------------------------- hierarchical steps */

/*
 * Where the ranks of a call sit, from a->node_of (hier.c): filled by
 * psc_hier_layout, arrays in schedule scratch.
 */
struct psc_hier {
	int *lidx;	/* rank -> its index among its node's ranks */
	int *nsize;	/* node -> number of ranks */
	int node, li;	/* this rank's node and index on it */
	int nnodes;
	int minsize;	/* the smallest node's rank count */
};

/* A subset of the ranks that one step of a hierarchical algorithm uses. */
struct psc_group {
	int *ranks;	/* communicator rank of member i, ascending */
	int n;
	int me;		/* this rank's index, or -1 if not a member */
};

/* Fill h for a; false (sticky error in s) when out of memory. */
bool psc_hier_layout(struct psc_sched *s, const struct psc_coll_args *a,
		     struct psc_hier *h);

/* Selects the members of a group: rank r is in it. */
typedef bool (*psc_member_fn)(const struct psc_hier *h,
			      const struct psc_coll_args *a, int r);

/*
 * The group of the ranks in() selects, in rank order; false (sticky
 * error) when out of memory.
 */
bool psc_group_of(struct psc_sched *s, const struct psc_coll_args *a,
		  const struct psc_hier *h, psc_member_fn in,
		  struct psc_group *g);

/* Selectors: the ranks of this rank's node; each node's lowest rank. */
bool psc_on_my_node(const struct psc_hier *h, const struct psc_coll_args *a,
		    int r);
bool psc_node_leader(const struct psc_hier *h,
		     const struct psc_coll_args *a, int r);
/*
 * One rank per node that speaks for it in a rooted collective: the root
 * on the root's node, the lowest rank on the others.
 */
bool psc_node_rep(const struct psc_hier *h, const struct psc_coll_args *a,
		  int r);

/* Index of communicator rank r in g, or -1. */
int psc_group_index(const struct psc_group *g, int r);

/*
 * Begin a step on g: a new phase of s (the step waits for everything
 * before it), peers become g's member indices, and sub receives a with
 * g's rank and size (root 0; the caller sets buffers, count and root).
 * g NULL: back to the whole communicator. Returns true if this rank
 * takes part in a step with other ranks (member of g, g->n > 1).
 */
bool psc_hier_step(struct psc_sched *s, const struct psc_coll_args *a,
		   const struct psc_group *g, struct psc_coll_args *sub);

/*
 * The first two steps of the hierarchical allreduce of src (count
 * elements, this rank's input; may be work) into work: on a node with more
 * ranks than the smallest node's m, the rank of index li >= m folds its
 * vector into the one of index li % m (binomial reduce); the first m
 * ranks of each node reduce-scatter work into m pieces (piece i on index
 * i, from psc_block); the ranks of index i on all nodes allreduce piece
 * i with a->hier.inter. Out of place where no fold involves this rank,
 * so neither a copy of the input nor scratch is needed. Returns this
 * rank's piece, fully reduced in work, or -1 for a rank that folded. In
 * allreduce_hier.c.
 */
int psc_hier_reduce_pieces(struct psc_sched *s, const struct psc_coll_args *a,
			   const struct psc_hier *h, const char *src, char *work,
			   size_t count);

/* ---------------------------------------------------------- algorithms */

/*
 * The deterministic allreduce of the logarithmic algorithms: rank-ordered
 * direct reduce-scatter, then recursive doubling (ring when the rank count
 * is not a power of two) to gather. In allreduce_rd.c.
 */
int psc_allreduce_det_log(struct psc_sched *s, const struct psc_coll_args *a);

int psc_allreduce_ring(struct psc_sched *s, const struct psc_coll_args *a);
int psc_allreduce_rd(struct psc_sched *s, const struct psc_coll_args *a);
int psc_allreduce_rabenseifner(struct psc_sched *s,
			       const struct psc_coll_args *a);
int psc_bcast_binomial(struct psc_sched *s, const struct psc_coll_args *a);
int psc_bcast_scatter_ring(struct psc_sched *s,
			   const struct psc_coll_args *a);
int psc_barrier_dissemination(struct psc_sched *s,
			      const struct psc_coll_args *a);
int psc_allgather_ring(struct psc_sched *s, const struct psc_coll_args *a);
int psc_allgather_rd(struct psc_sched *s, const struct psc_coll_args *a);
int psc_reduce_binomial(struct psc_sched *s, const struct psc_coll_args *a);
int psc_reduce_rs_gather(struct psc_sched *s, const struct psc_coll_args *a);
int psc_reduce_scatter_ring(struct psc_sched *s,
			    const struct psc_coll_args *a);

/*
 * Hierarchical algorithms (one file each, *_hier.c): few, large messages
 * between nodes and the rest inside them. Any node layout.
 */
int psc_allreduce_hier(struct psc_sched *s, const struct psc_coll_args *a);
int psc_reduce_scatter_hier(struct psc_sched *s,
			    const struct psc_coll_args *a);
int psc_reduce_hier(struct psc_sched *s, const struct psc_coll_args *a);
int psc_bcast_hier(struct psc_sched *s, const struct psc_coll_args *a);
int psc_allgather_hier(struct psc_sched *s, const struct psc_coll_args *a);
int psc_barrier_hier(struct psc_sched *s, const struct psc_coll_args *a);

/* ------------------------------------------------------------- kernels */

/*
 * inout[i] = op(inout[i], in[i]) (in_left false) or op(in[i], inout[i])
 * (in_left true) for count elements. The buffers must not overlap.
 * float16/bfloat16 are computed in float32 and rounded to nearest even;
 * min/max return NaN if either operand is NaN (the left one's if both).
 * Returns 0 or -EINVAL for an unknown dtype or op.
 */
int psc_reduce_local(ps_comm_dtype_t dtype, ps_comm_op_t op, void *inout,
		     const void *in, size_t count, bool in_left);

/* Conversions used by the kernels and by tests' references. */
float psc_half_to_float(uint16_t h);
uint16_t psc_float_to_half(float f);
float psc_bf16_to_float(uint16_t h);
uint16_t psc_float_to_bf16(float f);

/* ------------------------------------------------------------ describe */

struct psc_params;

/*
 * Print the collective algorithm table, the automatic choice and its
 * thresholds with the values in p (ps_comm_info).
 */
void psc_coll_print_table(FILE *out, const struct psc_params *p);

/*
 * Whether the words each PS_COMM_<COLL>_ALGO takes (psc_param_choices,
 * which psc_params_load enforces) are "auto" and then the names of the
 * collective's algorithm table, in order. Returns 0, or -EINVAL with the
 * first difference in err.
 */
int psc_coll_check_names(char *err, size_t len);

#endif /* PSC_COLL_H */
