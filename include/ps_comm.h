/*
 * pscomm: fast, portable communication for distributed machine learning.
 *
 * This is the whole public C API. A communicator (ps_comm_t) is a fixed,
 * ordered group of ranks joined over one libfabric provider. Point-to-point
 * operations have MPI's semantics: tagged, matched by (source, tag), with
 * wildcards, and non-overtaking between one pair of ranks.
 *
 * Every function returns 0 on success or a negative PS_COMM_ERR_* code,
 * except ps_comm_strerror(), which returns a message, and ps_comm_version(),
 * which returns the library version. Any thread may call any function.
 *
 * Handles used after they were freed: a communicator after
 * ps_comm_finalize(), a request after it completed (or after its
 * communicator was finalized), a registration after
 * ps_comm_mem_deregister(). This is a bug in the caller, and pscomm
 * catches it on a best-effort basis only: each handle carries a magic
 * word that is cleared when it is freed, so a call with a stale handle
 * returns PS_COMM_ERR_ARG as long as its memory is still mapped and has
 * not been reused for a new handle of the same kind. It may also crash,
 * or act on the new handle. Registrations are checked against a list
 * instead, so a stale one is always refused unless its address was
 * reused by a newer registration.
 */
#ifndef PS_COMM_H
#define PS_COMM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define PS_COMM_API __attribute__((visibility("default")))
#else
#define PS_COMM_API
#endif

#define PS_COMM_VERSION_MAJOR 0
#define PS_COMM_VERSION_MINOR 1
#define PS_COMM_VERSION_PATCH 0
/* Encoded as major * 10000 + minor * 100 + patch. */
#define PS_COMM_VERSION                                                        \
	(PS_COMM_VERSION_MAJOR * 10000 + PS_COMM_VERSION_MINOR * 100 +         \
	 PS_COMM_VERSION_PATCH)

/*
 * Error codes. The values are frozen: they never change between releases,
 * and new codes are only ever added at the end. PS_COMM_ERR_PROVIDER
 * means no provider could be chosen (none installed or allowed by
 * FI_PROVIDER passes pscomm's checks); PS_COMM_ERR_FABRIC means the one
 * chosen failed: while opening (fabric, domain, endpoint...) or under an
 * operation. ps_comm_strerror() has a message for each.
 */
enum ps_comm_error {
	PS_COMM_OK = 0,
	PS_COMM_ERR_ARG = -1,	     /* invalid argument (usage error) */
	PS_COMM_ERR_NOMEM = -2,	     /* out of memory */
	PS_COMM_ERR_TRUNCATE = -3,   /* message longer than receive buffer */
	PS_COMM_ERR_TIMEOUT = -4,    /* a deadline passed */
	PS_COMM_ERR_PEER = -5,	     /* a peer died or cannot be reached */
	PS_COMM_ERR_PROVIDER = -6,   /* no usable provider */
	PS_COMM_ERR_BOOTSTRAP = -7,  /* rendezvous failed */
	PS_COMM_ERR_MISMATCH = -8,   /* ranks disagree on settings/version */
	PS_COMM_ERR_PROTO = -9,	     /* malformed or foreign message */
	PS_COMM_ERR_CANCELED = -10,  /* operation was cancelled */
	PS_COMM_ERR_VERSION = -11,   /* libfabric at run time is too old */
	PS_COMM_ERR_CONFIG = -12,    /* bad environment or configuration */
	PS_COMM_ERR_SYSTEM = -13,    /* a system call failed */
	PS_COMM_ERR_NOTSUP = -14,    /* not supported by this build/provider */
	PS_COMM_ERR_INTERNAL = -15,  /* internal error: please report it */
	PS_COMM_ERR_ABORTED = -16,   /* the communicator was aborted */
	PS_COMM_ERR_FABRIC = -17,    /* the provider failed: open or op */
	PS_COMM_ERR_REVOKED = -18,   /* the communicator was revoked */
};

/* Wildcards for ps_comm_recv() and ps_comm_irecv(). */
#define PS_COMM_ANY_SOURCE (-1)
#define PS_COMM_ANY_TAG (-1)

/* An opaque communicator. */
typedef struct ps_comm *ps_comm_t;

/* An opaque nonblocking operation; NULL once it has completed. */
typedef struct ps_comm_request *ps_comm_request_t;

/* What a completed receive (or send) reports. */
typedef struct ps_comm_status {
	int source;  /* rank the message came from */
	int tag;     /* its tag */
	size_t len;  /* bytes delivered into the buffer */
	int error;   /* 0 or a PS_COMM_ERR_* code */
} ps_comm_status_t;

/*
 * Optional settings for ps_comm_init(). Call ps_comm_attr_init() first: it
 * fills every field with "take it from the environment". Fields may be
 * added at the end in later versions; attr_size records the caller's view.
 */
typedef struct ps_comm_attr {
	size_t attr_size;      /* set by ps_comm_attr_init() */
	int rank;	       /* -1: from the environment, else >= 0 */
	int size;	       /* -1: from the environment, else >= 1 */
	const char *root;      /* "host:port" of the rendezvous, or NULL */
	const char *bootstrap; /* "auto", "tcp", "file:DIR", "pmix", "pmi2", or NULL */
} ps_comm_attr_t;

PS_COMM_API int ps_comm_attr_init(ps_comm_attr_t *attr);

/*
 * Join a communicator. With attr NULL, everything comes from the
 * environment (see README: PS_COMM_RANK, PS_COMM_SIZE, PS_COMM_ROOT, ...).
 * Blocks until every rank has joined or PS_COMM_TIMEOUT expires. Several
 * communicators may exist in one process. Fails, before anything opens,
 * with PS_COMM_ERR_ARG for an attribute that cannot be (a rank below -1,
 * a size of 0 or below -1, a bootstrap that is not one of the values
 * above), and with PS_COMM_ERR_CONFIG for an environment variable that
 * cannot be (README, "Parameters"); the log names the field or variable.
 *
 * Signals: the dispositions of SIGINT, SIGTERM, SIGHUP and the crash
 * signals stay the program's. Handlers that a provider's library installs
 * (libinfinipath's, as libfabric is loaded or a provider opens) are
 * undone, so a SIGTERM ends the process by the signal (status 143) and
 * an application's handlers set before this call stay. While the calling
 * thread is inside libfabric, SIGINT, SIGTERM and SIGHUP are blocked in
 * that thread and delivered as the call returns (within one libfabric
 * call); other threads should block them too for that time, or not
 * change their dispositions meanwhile.
 */
PS_COMM_API int ps_comm_init(ps_comm_t *comm, const ps_comm_attr_t *attr);

/*
 * Leave and free a communicator. Outstanding requests are cancelled and
 * their handles become invalid. Returns the first error met while
 * tearing down, but always frees everything. A second call on the same
 * handle is a stale handle (above): PS_COMM_ERR_ARG, best effort.
 */
PS_COMM_API int ps_comm_finalize(ps_comm_t comm);

/*
 * Abort a communicator on every rank, like ncclCommAbort: every pending
 * and future operation on it completes with PS_COMM_ERR_ABORTED, here at
 * once and on the other ranks as soon as the notice reaches them (through
 * rank 0's liveness link, where it is still up). err is the caller's
 * reason (a PS_COMM_ERR_* value or any int), shown in their
 * ps_comm_last_error. Never blocks; call ps_comm_finalize() afterwards
 * to free the communicator.
 */
PS_COMM_API int ps_comm_abort(ps_comm_t comm, int err);

/*
 * Revoke a communicator on every live rank, like ULFM's
 * MPIX_Comm_revoke: every pending and future operation on it completes
 * with PS_COMM_ERR_REVOKED (even one that failed with PS_COMM_ERR_PEER
 * before), here at once and on the other ranks as soon as the notice
 * reaches them through the liveness links. It reaches every live rank
 * even if only this one saw a failure, and whichever rank died, rank 0
 * included. Unlike ps_comm_abort it is a step of recovery: what a
 * revoked communicator still answers is ps_comm_failed_ranks, rank,
 * size and finalize. Never blocks.
 */
PS_COMM_API int ps_comm_revoke(ps_comm_t comm);

/* One rank of a communicator known dead (ps_comm_failed_ranks). */
typedef struct ps_comm_failure {
	int rank;	    /* its rank in the communicator */
	int agreed;	    /* 1: in the failed set of the last ps_comm_agree
			       or ps_comm_shrink on comm, the same on every
			       rank; 0: known here only */
	char evidence[256]; /* who saw it die, and how */
} ps_comm_failure_t;

/*
 * The ranks of comm this rank knows to be dead, in rank order: up to max
 * of them in failed[] (NULL when max is 0), and how many there are in
 * *count (which may exceed max). Works on a failed or revoked
 * communicator. What one rank knows may lag another's by the time a
 * death takes to reach it (PS_COMM_PEER_TIMEOUT at most); the ranks
 * marked agreed are the same on every rank that returned from the last
 * agreement.
 */
PS_COMM_API int ps_comm_failed_ranks(ps_comm_t comm, ps_comm_failure_t *failed,
				     int max, int *count);

/*
 * Fault-tolerant uniform agreement, like ULFM's MPIX_Comm_agree:
 * collective over the live ranks of comm. Every rank that returns 0
 * gets the same *flag, the bitwise AND of the flags the ranks the
 * agreement counts alive passed, and the same failed set (the ranks
 * marked agreed by ps_comm_failed_ranks afterwards), even when ranks,
 * rank 0 included, die during the call: a rank that dies is counted
 * failed and never waited for. Works on a failed or revoked
 * communicator (it then runs over the liveness links, not the fabric),
 * so it returns 0 after failures too: they are in the failed set; a
 * rank that finds comm failed revokes it, so that no rank waits for it
 * on the fabric. Calls on
 * one communicator must come in the same order on every rank, one at a
 * time, like collectives. Blocks until decided, up to
 * PS_COMM_OP_TIMEOUT when set (PS_COMM_ERR_TIMEOUT). Errors:
 * PS_COMM_ERR_ARG, PS_COMM_ERR_ABORTED (comm was aborted),
 * PS_COMM_ERR_PEER (the liveness root gave this rank up),
 * PS_COMM_ERR_NOTSUP (no liveness monitor: PS_COMM_BOOTSTRAP=none; or a
 * job above 3680 ranks), PS_COMM_ERR_NOMEM.
 */
PS_COMM_API int ps_comm_agree(ps_comm_t comm, int *flag);

/*
 * A new communicator of comm's ranks that are alive, in their old
 * order, like ULFM's MPIX_Comm_shrink: collective over the live ranks
 * of comm, usually after ps_comm_revoke. The ranks left out are the
 * failed set of an agreement (ps_comm_agree), so every survivor gets
 * the same membership; ranks that die during the call are left out, not
 * waited for. Works on a failed or revoked comm, which stays valid
 * (finalize it). Hierarchical collectives plan for the new node layout.
 * A rank that died on shared memory leaves the queues it shared unusable:
 * then the survivors rebuild, bootstrapping *newcomm on fresh endpoints
 * at a rendezvous that their rank 0 serves (PS_COMM_GROW_ROOT, else
 * PS_COMM_ROOT's port), and *newcomm has a liveness monitor of its own.
 * Errors as ps_comm_agree, and PS_COMM_ERR_NOTSUP when a rebuild is
 * needed and the job has no such address (a PMIx or Slurm start: set
 * PS_COMM_GROW_ROOT). Free *newcomm with ps_comm_finalize.
 */
PS_COMM_API int ps_comm_shrink(ps_comm_t comm, ps_comm_t *newcomm);

/*
 * Grow a running job: a new communicator of comm's ranks, first and in
 * their order, then n_new new processes, collective over comm (every
 * rank passes the same n_new). A new process starts with
 * PS_COMM_JOIN=host:port (and the job's PS_COMM_JOB_KEY) and calls
 * ps_comm_init, which returns its place in *newcomm: rank comm's size
 * and up, in the order the new processes proved the job key. Rank 0 of
 * comm serves the join at PS_COMM_GROW_ROOT, else at PS_COMM_ROOT (or
 * MASTER_ADDR:MASTER_PORT), which must be an address of its host; it
 * authenticates every new process like a bootstrap (a stranger or a
 * replayed join is refused, and the grow goes on without it). Blocks
 * until every new process joined, up to PS_COMM_TIMEOUT. comm stays
 * valid (finalize it); *newcomm has its own liveness monitor, so it is
 * revoked, agreed on and shrunk like a world. Errors: PS_COMM_ERR_ARG
 * (n_new < 1, or more ranks than pscomm's limit, or ranks that passed
 * different n_new), PS_COMM_ERR_CONFIG (rank 0 has no address to serve
 * at), PS_COMM_ERR_PEER or PS_COMM_ERR_REVOKED (comm failed: shrink it
 * first), PS_COMM_ERR_TIMEOUT (the new processes did not all join), and
 * the errors of ps_comm_init.
 */
PS_COMM_API int ps_comm_grow(ps_comm_t comm, int n_new, ps_comm_t *newcomm);

PS_COMM_API int ps_comm_rank(ps_comm_t comm, int *rank);
PS_COMM_API int ps_comm_size(ps_comm_t comm, int *size);
/* The libfabric provider in use, e.g. "tcp;ofi_rxm". Owned by comm. */
PS_COMM_API int ps_comm_provider_name(ps_comm_t comm, const char **name);
/* The largest tag a user may pass (at least 32767). */
PS_COMM_API int ps_comm_tag_ub(ps_comm_t comm, int *tag_ub);

/*
 * The longest message, in bytes: 2^56 - 1 on 64-bit systems, more than
 * any user address space holds (x86-64 with 5-level paging has 2^56
 * bytes), and PTRDIFF_MAX on 32-bit ones. Sends and receives of a longer
 * len fail at once with PS_COMM_ERR_ARG (ps_comm_last_error names the
 * length). Any len up to it costs the same memory: a message larger than
 * the provider's max_msg_size goes in chunks, a few at a time.
 */
#define PS_COMM_MSG_MAX \
	((size_t)PTRDIFF_MAX >> (sizeof(size_t) >= 8 ? 7 : 0))

/*
 * Blocking point-to-point. peer is a rank of comm; tag is 0..tag_ub; len
 * is at most PS_COMM_MSG_MAX.
 * ps_comm_recv accepts PS_COMM_ANY_SOURCE and PS_COMM_ANY_TAG; status may
 * be NULL. A message longer than len fills the buffer and returns
 * PS_COMM_ERR_TRUNCATE. Blocking calls fail with PS_COMM_ERR_TIMEOUT after
 * PS_COMM_OP_TIMEOUT seconds without completing.
 */
PS_COMM_API int ps_comm_send(ps_comm_t comm, const void *buf, size_t len,
			     int peer, int tag);
PS_COMM_API int ps_comm_recv(ps_comm_t comm, void *buf, size_t len, int peer,
			     int tag, ps_comm_status_t *status);

/*
 * Nonblocking point-to-point. The buffer must stay valid and untouched
 * until the request completes through ps_comm_test/wait/waitall.
 * Receives pending at once may share a buffer (a bandwidth test's
 * window) on tcp, net, shm and verbs;ofi_rxm, where pscomm matches
 * messages itself: each completes, and the buffer then holds one of the
 * messages' bytes, or a mix of them. On the providers that match tagged
 * messages in the NIC or their own library (efa, psm2, psm3, opx, udp,
 * sockets, verbs;ofi_rxd), a receive that may get a message longer than
 * the provider's largest single message must not share the first 24
 * bytes of its buffer with another pending receive: its header could be
 * overwritten before pscomm reads it.
 */
PS_COMM_API int ps_comm_isend(ps_comm_t comm, const void *buf, size_t len,
			      int peer, int tag, ps_comm_request_t *req);
PS_COMM_API int ps_comm_irecv(ps_comm_t comm, void *buf, size_t len, int peer,
			      int tag, ps_comm_request_t *req);

/*
 * Completion. On completion the request is freed and *req set to NULL; the
 * return value is the operation's result (0, PS_COMM_ERR_TRUNCATE, ...).
 * A NULL *req is already complete: test reports done with status zeroed.
 * ps_comm_test never blocks: *done is 0 while the operation is pending.
 * ps_comm_wait blocks (see PS_COMM_OP_TIMEOUT). ps_comm_waitall completes
 * all n requests and returns the first error; statuses may be NULL.
 */
PS_COMM_API int ps_comm_test(ps_comm_request_t *req, int *done,
			     ps_comm_status_t *status);
PS_COMM_API int ps_comm_wait(ps_comm_request_t *req, ps_comm_status_t *status);
PS_COMM_API int ps_comm_waitall(size_t n, ps_comm_request_t *reqs,
				ps_comm_status_t *statuses);

/* A static, never-NULL message for any value, known or not. */
PS_COMM_API const char *ps_comm_strerror(int err);

/*
 * The detail of the last failure on comm (provider text, errno, peer), as
 * a NUL-terminated string copied into buf. Empty when nothing failed.
 */
PS_COMM_API int ps_comm_last_error(ps_comm_t comm, char *buf, size_t len);

/* The library version as "MAJOR.MINOR.PATCH". */
PS_COMM_API const char *ps_comm_version(void);

/* ------------------------------------------------------------------------
 * Collectives and sub-communicators.
 *
 * Every rank of comm calls a collective with matching arguments, and
 * starts collectives on one communicator in the same order. Nonblocking
 * twins (ps_comm_i*) return a request completed by ps_comm_test/wait;
 * several may be in flight on one communicator, they progress while the
 * caller does other work with pscomm, and may complete in any order.
 * Collective traffic uses its own tag protocol and never matches a user
 * receive. Buffers must stay untouched until the operation completes.
 *
 * Results are bitwise identical on every rank. With PS_COMM_DETERMINISTIC=1
 * every element is reduced in rank order ((x0 op x1) op x2 ...), so the
 * bits do not depend on the algorithm, segment size or message size.
 * float16/bfloat16 are computed in float32 and rounded to nearest even.
 * min/max: if either operand is NaN the result is NaN.
 * Integer sum/prod wrap around (two's complement).
 *
 * Errors: PS_COMM_ERR_ARG for an invalid dtype/op/root, a NULL buffer with
 * a nonzero count, or send and receive buffers that overlap without
 * PS_COMM_IN_PLACE; PS_COMM_ERR_MISMATCH when a peer's message has another
 * length than this rank expects (ranks passed different counts or element
 * sizes); PS_COMM_ERR_TIMEOUT after PS_COMM_OP_TIMEOUT when a peer never
 * sends (for example it called another collective or passed another
 * dtype/op of the same size); the point-to-point errors otherwise.
 * ---------------------------------------------------------------------- */

typedef enum ps_comm_dtype {
	PS_COMM_INT8 = 0,
	PS_COMM_UINT8,
	PS_COMM_INT32,
	PS_COMM_UINT32,
	PS_COMM_INT64,
	PS_COMM_UINT64,
	PS_COMM_FLOAT16,  /* IEEE 754 binary16 */
	PS_COMM_BFLOAT16, /* the upper half of a float32 */
	PS_COMM_FLOAT32,
	PS_COMM_FLOAT64,
	PS_COMM_DTYPE_COUNT
} ps_comm_dtype_t;

typedef enum ps_comm_op {
	PS_COMM_SUM = 0,
	PS_COMM_PROD,
	PS_COMM_MIN,
	PS_COMM_MAX,
	PS_COMM_OP_COUNT
} ps_comm_op_t;

/* As the send buffer: the input is taken from (and replaced in) recvbuf. */
#define PS_COMM_IN_PLACE ((const void *)1)

/* As the color of ps_comm_split: this rank joins no new communicator. */
#define PS_COMM_UNDEFINED (-1)

/* Size in bytes of one element of dtype, or 0 if dtype is invalid. */
PS_COMM_API size_t ps_comm_dtype_size(ps_comm_dtype_t dtype);

PS_COMM_API int ps_comm_barrier(ps_comm_t comm);
PS_COMM_API int ps_comm_ibarrier(ps_comm_t comm, ps_comm_request_t *req);

/* Copy count elements of buf on root to buf on every rank. */
PS_COMM_API int ps_comm_bcast(ps_comm_t comm, void *buf, size_t count,
			      ps_comm_dtype_t dtype, int root);
PS_COMM_API int ps_comm_ibcast(ps_comm_t comm, void *buf, size_t count,
			       ps_comm_dtype_t dtype, int root,
			       ps_comm_request_t *req);

/*
 * Reduce count elements from every rank into recvbuf on root (recvbuf is
 * ignored elsewhere). root may pass PS_COMM_IN_PLACE as sendbuf.
 */
PS_COMM_API int ps_comm_reduce(ps_comm_t comm, const void *sendbuf,
			       void *recvbuf, size_t count,
			       ps_comm_dtype_t dtype, ps_comm_op_t op, int root);
PS_COMM_API int ps_comm_ireduce(ps_comm_t comm, const void *sendbuf,
				void *recvbuf, size_t count,
				ps_comm_dtype_t dtype, ps_comm_op_t op,
				int root, ps_comm_request_t *req);

/* Reduce count elements from every rank into recvbuf on every rank. */
PS_COMM_API int ps_comm_allreduce(ps_comm_t comm, const void *sendbuf,
				  void *recvbuf, size_t count,
				  ps_comm_dtype_t dtype, ps_comm_op_t op);
PS_COMM_API int ps_comm_iallreduce(ps_comm_t comm, const void *sendbuf,
				   void *recvbuf, size_t count,
				   ps_comm_dtype_t dtype, ps_comm_op_t op,
				   ps_comm_request_t *req);

/*
 * Gather count elements from every rank into recvbuf (size * count
 * elements, rank order) on every rank. With PS_COMM_IN_PLACE, each rank's
 * contribution is already at recvbuf + rank * count elements.
 */
PS_COMM_API int ps_comm_allgather(ps_comm_t comm, const void *sendbuf,
				  void *recvbuf, size_t count,
				  ps_comm_dtype_t dtype);
PS_COMM_API int ps_comm_iallgather(ps_comm_t comm, const void *sendbuf,
				   void *recvbuf, size_t count,
				   ps_comm_dtype_t dtype,
				   ps_comm_request_t *req);

/*
 * Reduce size * recvcount elements from every rank; rank r receives block
 * r (recvcount elements). With PS_COMM_IN_PLACE the input is the first
 * size * recvcount elements of recvbuf, and block r is left at its start.
 */
PS_COMM_API int ps_comm_reduce_scatter(ps_comm_t comm, const void *sendbuf,
				       void *recvbuf, size_t recvcount,
				       ps_comm_dtype_t dtype, ps_comm_op_t op);
PS_COMM_API int ps_comm_ireduce_scatter(ps_comm_t comm, const void *sendbuf,
					void *recvbuf, size_t recvcount,
					ps_comm_dtype_t dtype,
					ps_comm_op_t op,
					ps_comm_request_t *req);

/*
 * Collective over comm: ranks passing the same color form a new
 * communicator, ordered by key, then by rank in comm. A rank passing
 * PS_COMM_UNDEFINED gets *newcomm = NULL. Release with ps_comm_finalize.
 */
PS_COMM_API int ps_comm_split(ps_comm_t comm, int color, int key,
			      ps_comm_t *newcomm);

/* ------------------------------------------------------------------------
 * Memory registration.
 *
 * Some fabrics (verbs, efa) need every buffer registered with the NIC.
 * pscomm does that itself, with a cache, so any buffer may be passed to
 * any call. Long-lived buffers (ps-lite's parameter arrays, for example)
 * can be registered once instead: every send or receive whose buffer lies
 * inside a registered region uses that registration, with no lookup in
 * the cache and no copy. On fabrics that need no registration these calls
 * only record the region and cost nothing later.
 *
 * A registration belongs to comm's endpoint and serves every communicator
 * that shares it. Deregister it before freeing or unmapping the memory and
 * before finalizing the last communicator on it; deregistering also drops
 * any registration pscomm cached inside the range. Operations in flight on
 * the region keep it registered until they complete. Any thread may call
 * these functions.
 *
 * Errors: PS_COMM_ERR_ARG for a NULL comm, buf or handle, len 0, a range
 * that wraps around or is not all mapped memory of this process (nothing
 * is recorded or pinned then), or (deregister) a handle that is not
 * registered on comm's endpoint or was already deregistered;
 * PS_COMM_ERR_NOMEM when out of memory or when the provider cannot pin
 * more memory (raise `ulimit -l`, RLIMIT_MEMLOCK); PS_COMM_ERR_FABRIC or
 * PS_COMM_ERR_SYSTEM when the provider refuses the registration (details
 * in ps_comm_last_error).
 * ---------------------------------------------------------------------- */

/* An opaque registered region; NULL is never a valid one. */
typedef struct ps_comm_mem *ps_comm_mem_t;

PS_COMM_API int ps_comm_mem_register(ps_comm_t comm, void *buf, size_t len,
				     ps_comm_mem_t *handle);
PS_COMM_API int ps_comm_mem_deregister(ps_comm_t comm, ps_comm_mem_t handle);

#ifdef __cplusplus
}
#endif

#endif /* PS_COMM_H */
