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
 * and new codes are only ever added at the end.
 */
enum ps_comm_error {
	PS_COMM_OK = 0,
	PS_COMM_ERR_ARG = -1,	     /* invalid argument (usage error) */
	PS_COMM_ERR_NOMEM = -2,	     /* out of memory */
	PS_COMM_ERR_TRUNCATE = -3,   /* message longer than receive buffer */
	PS_COMM_ERR_TIMEOUT = -4,    /* a deadline passed */
	PS_COMM_ERR_PEER = -5,	     /* a peer died or cannot be reached */
	PS_COMM_ERR_PROVIDER = -6,   /* no usable provider, or it failed */
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
	int rank;	       /* -1: from the environment */
	int size;	       /* -1: from the environment */
	const char *root;      /* "host:port" of the rendezvous, or NULL */
	const char *bootstrap; /* "auto", "tcp", "file:DIR", "pmix", or NULL */
} ps_comm_attr_t;

PS_COMM_API int ps_comm_attr_init(ps_comm_attr_t *attr);

/*
 * Join a communicator. With attr NULL, everything comes from the
 * environment (see README: PS_COMM_RANK, PS_COMM_SIZE, PS_COMM_ROOT, ...).
 * Blocks until every rank has joined or PS_COMM_TIMEOUT expires. Several
 * communicators may exist in one process.
 */
PS_COMM_API int ps_comm_init(ps_comm_t *comm, const ps_comm_attr_t *attr);

/*
 * Leave and free a communicator. Outstanding requests are cancelled and
 * their handles become invalid. Returns the first error met while
 * tearing down, but always frees everything.
 */
PS_COMM_API int ps_comm_finalize(ps_comm_t comm);

/*
 * Mark a communicator as failed: every pending and future operation on it
 * completes with PS_COMM_ERR_ABORTED. Always returns promptly; call
 * ps_comm_finalize() afterwards to free it.
 */
PS_COMM_API int ps_comm_abort(ps_comm_t comm);

PS_COMM_API int ps_comm_rank(ps_comm_t comm, int *rank);
PS_COMM_API int ps_comm_size(ps_comm_t comm, int *size);
/* The libfabric provider in use, e.g. "tcp;ofi_rxm". Owned by comm. */
PS_COMM_API int ps_comm_provider_name(ps_comm_t comm, const char **name);
/* The largest tag a user may pass (at least 32767). */
PS_COMM_API int ps_comm_tag_ub(ps_comm_t comm, int *tag_ub);

/*
 * Blocking point-to-point. peer is a rank of comm; tag is 0..tag_ub.
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

#ifdef __cplusplus
}
#endif

#endif /* PS_COMM_H */
