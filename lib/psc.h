/*
 * Internal umbrella header of pscomm. It declares the contracts between
 * the modules of lib/: logging, parameters, errors, networking helpers,
 * the bootstrap store, the endpoint and its progress engine, requests and
 * the tag layout. Nothing here is exported from the shared library.
 */
#ifndef PSC_H
#define PSC_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_tagged.h>

#include "ps_comm.h"
#include "provider.h"

#define PSC_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define PSC_MIN(a, b) ((a) < (b) ? (a) : (b))
#define PSC_MAX(a, b) ((a) > (b) ? (a) : (b))
#define psc_container_of(ptr, type, member)                                    \
	((type *)((char *)(ptr)-offsetof(type, member)))

/* ---------------------------------------------------------------- log */

enum psc_log_level {
	PSC_LOG_ERROR,
	PSC_LOG_WARN,
	PSC_LOG_INFO,
	PSC_LOG_DEBUG,
	PSC_LOG_TRACE,
};

/*
 * Configure the process-wide log sink from PS_COMM_LOG_LEVEL and
 * PS_COMM_LOG_FILE. Idempotent and thread-safe; called by ps_comm_init.
 * A bad level or an unopenable file falls back to warn/stderr with a
 * warning rather than failing.
 */
void psc_log_setup(void);

/* Whether a message at this level would be printed. */
bool psc_log_enabled(int level);

/*
 * Print one line "pscomm[host:pid] rank R LEVEL: message". rank < 0 omits
 * the rank. Thread-safe: a line is written with one write(2).
 */
void psc_log(int level, int rank, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Parse a level name; returns -1 if unknown. */
int psc_log_level_parse(const char *name);

/* ------------------------------------------------------------- params */

enum psc_param_type { PSC_PARAM_INT, PSC_PARAM_SIZE, PSC_PARAM_DOUBLE,
		      PSC_PARAM_STR };

/* Every parameter, from params.def, as a member of struct psc_params. */
struct psc_params {
#define PSC_PARAM(name, field, type, ctype, def, agree, help) ctype field;
#include "params.def"
#undef PSC_PARAM
};

/* Metadata of one parameter, for ps_comm_info -p and the settings hash. */
struct psc_param_desc {
	const char *name;    /* environment variable */
	enum psc_param_type type;
	const char *def;     /* default, as text */
	bool agree;	     /* must be identical on every rank */
	const char *help;
	size_t offset;	     /* into struct psc_params */
};

/* The table, in params.def order, and its length. */
extern const struct psc_param_desc psc_param_table[];
extern const size_t psc_param_count;

/*
 * Fill p with defaults, then values from the environment. Returns 0, or
 * -EINVAL with a message naming the variable in err (len bytes). String
 * fields point into the environment or into static defaults.
 */
int psc_params_load(struct psc_params *p, char *err, size_t len);

/*
 * Parse one value. Sizes accept K/M/G suffixes (binary); doubles accept
 * a non-negative number, or -1 for "automatic". Returns 0 or -EINVAL.
 */
int psc_param_parse_int(const char *s, int *out);
int psc_param_parse_size(const char *s, size_t *out);
int psc_param_parse_double(const char *s, double *out);

/* Print the current value of parameter d in p into buf. */
void psc_param_format(const struct psc_params *p,
		      const struct psc_param_desc *d, char *buf, size_t len);

/*
 * Write "NAME=value;..." for every parameter that must agree across ranks,
 * plus the libfabric variables that must agree (rxm eager limits), into
 * buf. Returns the FNV-1a hash of that text.
 */
uint64_t psc_params_agree_text(const struct psc_params *p, char *buf,
			       size_t len);

/* FNV-1a over bytes, continuing from h (start with PSC_FNV_INIT). */
#define PSC_FNV_INIT 0xcbf29ce484222325ULL
uint64_t psc_fnv1a(uint64_t h, const void *data, size_t len);

/* Big-endian encoding of the low `bytes` bytes of v, for wire formats. */
static inline void psc_be_put(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static inline uint64_t psc_be_get(const uint8_t *p, int bytes)
{
	uint64_t v = 0;

	for (int i = 0; i < bytes; i++)
		v = v << 8 | p[i];
	return v;
}

/* ------------------------------------------------------------- errors */

/* Map a negative errno or -FI_E* code to a PS_COMM_ERR_* value. */
int psc_err_from_fi(int err);

/* Monotonic time in seconds. */
double psc_now(void);

/* -------------------------------------------------------------- net */

/* A parsed "host:port", "[v6]:port" or "host" (port 0). */
struct psc_hostport {
	char host[256];
	uint16_t port;
};

/* Parse s into hp. Returns 0 or -EINVAL (bad brackets, port, length). */
int psc_hostport_parse(const char *s, struct psc_hostport *hp);

/*
 * NCCL_SOCKET_IFNAME syntax: comma list of prefixes; leading '^' makes it
 * an exclude list; leading '=' requires exact names. Returns true if name
 * is selected by spec.
 */
bool psc_ifname_match(const char *spec, const char *name);

/* The chosen interface for this rank. */
struct psc_iface {
	char name[64];
	struct sockaddr_storage addr; /* port 0 */
	socklen_t addrlen;
	char addrstr[64];
};

/*
 * Choose the interface to advertise. spec is PS_COMM_IFNAME (may be NULL
 * or empty), root the rendezvous address (may be NULL). family is AF_INET,
 * AF_INET6 or AF_UNSPEC. Loopback is chosen only when root is loopback or
 * spec selects it; docker* and veth* are skipped unless spec selects them.
 * Returns 0, or -ENODEV with a message listing the interfaces in err.
 */
int psc_iface_choose(const char *spec, const struct sockaddr *root,
		     int family, struct psc_iface *out, char *err,
		     size_t len);

/* Format addr as "a.b.c.d:port" or "[v6]:port". */
void psc_sockaddr_str(const struct sockaddr *addr, char *buf, size_t len);

/*
 * Resolve hp to a socket address (numeric or DNS, family AF_UNSPEC).
 * Returns 0 or -EHOSTUNREACH with the resolver's text in err.
 */
int psc_resolve(const struct psc_hostport *hp, struct sockaddr_storage *ss,
		socklen_t *sslen, char *err, size_t len);

/* True if a and b hold the same IP address (ports ignored). */
bool psc_sockaddr_same_ip(const struct sockaddr *a, const struct sockaddr *b);

/* True if addr is a loopback address. */
bool psc_sockaddr_is_loopback(const struct sockaddr *addr);

/*
 * Open a listening TCP socket on addr. If addr's port is nonzero it is
 * used as is (the root); else a port from range "lo-hi" (may be NULL or
 * empty: the kernel picks one). Backlog is large. The bound port is
 * written back into addr. Returns the fd or a negative errno.
 */
int psc_listen(struct sockaddr_storage *addr, socklen_t addrlen,
	       const char *range);

/*
 * Connect to addr, retrying refused or unreachable attempts with jittered
 * exponential backoff until deadline (psc_now() seconds). Returns the fd,
 * or -ETIMEDOUT when the deadline passed with the last attempt's errno in
 * *last_err (for the message).
 */
int psc_connect_retry(const struct sockaddr *addr, socklen_t addrlen,
		      double deadline, int *last_err);

/*
 * Write or read exactly len bytes before deadline. Return 0, -ETIMEDOUT,
 * -ECONNRESET on EOF, or another negative errno.
 */
int psc_write_full(int fd, const void *buf, size_t len, double deadline);
int psc_read_full(int fd, void *buf, size_t len, double deadline);

/* ------------------------------------------------------------- store */

/*
 * The tcp store's wire format. Every message starts with this header,
 * big-endian on the wire. len counts the payload that follows.
 */
#define PSC_WIRE_MAGIC 0x50534353u /* "PSCS" */
#define PSC_WIRE_VERSION 1
#define PSC_WIRE_HDR_LEN 28
#define PSC_WIRE_MAX_PAYLOAD (1u << 20)

enum psc_wire_type {
	PSC_WIRE_HELLO = 1, /* payload: hostname */
	PSC_WIRE_SET,	    /* payload: key '\0' value */
	PSC_WIRE_GET,	    /* payload: key; reply VALUE when set */
	PSC_WIRE_VALUE,	    /* payload: value */
	PSC_WIRE_OK,	    /* empty */
	PSC_WIRE_ERROR,	    /* payload: message text */
	PSC_WIRE_BYE,	    /* empty: this rank is done */
	PSC_WIRE_TYPE_MAX,
};

struct psc_wire_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint64_t job;
	int32_t rank;
	int32_t size;
	uint32_t len;
};

/* Encode h into PSC_WIRE_HDR_LEN bytes at buf. */
void psc_wire_encode(const struct psc_wire_hdr *h, uint8_t *buf);

/*
 * Decode and validate PSC_WIRE_HDR_LEN bytes. Returns 0, or -EPROTO with a
 * reason in err (bad magic, version, type or oversized length).
 */
int psc_wire_decode(const uint8_t *buf, struct psc_wire_hdr *h, char *err,
		    size_t len);

struct psc_store;

/*
 * A rendezvous store (tcp, file, pmix). Keys are published by a rank and
 * read by rank. All calls block at most until the store's deadline and
 * fail with -ETIMEDOUT then; errors leave a message in the store's err.
 */
struct psc_store_ops {
	size_t size;
	const char *name;
	/* Publish key=val as this rank. */
	int (*put)(struct psc_store *s, const char *key, const void *val,
		   size_t len);
	/* Make this rank's puts visible to all (PMIx fence); may block. */
	int (*commit)(struct psc_store *s);
	/* Read key as published by rank, waiting for it. *val is malloc'd. */
	int (*get)(struct psc_store *s, int rank, const char *key, void **val,
		   size_t *len);
	/* This rank is done with the store; blocks until all are (root). */
	int (*finish)(struct psc_store *s);
	/* Free everything. Never blocks for long. */
	void (*close)(struct psc_store *s);
};

struct psc_store {
	const struct psc_store_ops *ops;
	int rank;
	int size;
	double deadline; /* psc_now() + PS_COMM_TIMEOUT */
	char err[512];
	void *priv;
};

/*
 * Open a store backend. spec is "tcp", "file:DIR" or "pmix"; root is the
 * "host:port" for tcp. Returns 0 or a negative errno with s->err set.
 */
int psc_store_tcp_open(struct psc_store *s, const char *root,
		       const struct psc_params *p);
int psc_store_file_open(struct psc_store *s, const char *dir);
int psc_store_pmix_open(struct psc_store *s);
/* Whether PMIx support is compiled in and a PMIx server is present. */
bool psc_store_pmix_available(void);
/* Rank and size as PMIx reports them; -ENOSYS without PMIx. */
int psc_store_pmix_rank_size(int *rank, int *size);

/*
 * Job id for the tcp store: a hash of PS_COMM_JOB_KEY (of the empty key
 * when unset) in the high 48 bits; the low 16 count communicators.
 */
uint64_t psc_store_job_id(const struct psc_params *p);

/* ------------------------------------------------------------- tags */

/*
 * The 64-bit tag: [protocol | large | context | source rank | user tag],
 * packed below the provider's usable bits (from mem_tag_format).
 */
enum psc_proto {
	PSC_PROTO_USER = 0, /* user point-to-point */
	PSC_PROTO_CONT = 1, /* continuation chunks of a large message */
	PSC_PROTO_COLL = 2, /* collectives */
	PSC_PROTO_VAN = 3,  /* ps-lite van */
	PSC_PROTO_CTRL = 4, /* control: finalize barrier */
};

#define PSC_TAG_PROTO_BITS 3
#define PSC_TAG_CTX_BITS 12
#define PSC_TAG_RANK_BITS 20
#define PSC_TAG_MIN_USER_BITS 15
#define PSC_TAG_MAX_USER_BITS 28

struct psc_tag_layout {
	unsigned usable_bits; /* from mem_tag_format */
	unsigned user_bits;
	unsigned rank_shift, ctx_shift, large_shift, proto_shift;
	uint64_t user_mask, rank_mask, ctx_mask, large_bit, proto_mask;
	int tag_ub;
};

/*
 * Size the layout from an output mem_tag_format (0 means 64 bits).
 * Returns 0, or -ENOSPC when the provider offers too few bits.
 */
int psc_tag_layout_init(struct psc_tag_layout *l, uint64_t mem_tag_format);

uint64_t psc_tag_make(const struct psc_tag_layout *l, unsigned proto,
		      bool large, uint32_t ctx, uint32_t rank, uint32_t tag);

/*
 * Tag and ignore mask for a receive. src or tag may be -1 (any). The
 * large bit is always ignored so a receive matches both forms.
 */
void psc_tag_match(const struct psc_tag_layout *l, unsigned proto,
		   uint32_t ctx, int src, int64_t tag, uint64_t *tagp,
		   uint64_t *ignore);

uint32_t psc_tag_rank(const struct psc_tag_layout *l, uint64_t t);
uint32_t psc_tag_user(const struct psc_tag_layout *l, uint64_t t);
unsigned psc_tag_proto(const struct psc_tag_layout *l, uint64_t t);
bool psc_tag_is_large(const struct psc_tag_layout *l, uint64_t t);

/* ---------------------------------------------------------- requests */

enum psc_req_kind {
	PSC_REQ_SEND,
	PSC_REQ_RECV,
	PSC_REQ_PARENT, /* a large message: children do the work */
	PSC_REQ_BOUNCE, /* an endpoint's software-matching buffer */
	PSC_REQ_COLL,	/* a collective: its schedule does the work */
};
enum psc_req_state { PSC_REQ_QUEUED, PSC_REQ_POSTED, PSC_REQ_DONE };

struct psc_ep;
struct ps_comm;

/*
 * One operation. A request that libfabric knows about embeds the
 * fi_context2 passed to the provider, so it must live until its
 * completion is reaped. A large message is a PARENT request with one child
 * per libfabric operation. Owned by its endpoint's lock.
 */
struct ps_comm_request {
	struct fi_context2 fctx; /* handed to libfabric */
	enum psc_req_kind kind;
	enum psc_req_state state; /* DONE is stored atomically */
	struct ps_comm *comm;
	struct psc_ep *ep;
	void *buf;
	size_t len;
	fi_addr_t addr;
	uint64_t tag;
	uint64_t ignore;
	uint64_t data;	      /* CQ data to send (length check) */
	ps_comm_status_t status;
	struct ps_comm_request *parent;
	struct ps_comm_request *kids;	 /* PARENT: its children */
	struct ps_comm_request *sibling; /* next child of the parent */
	size_t children_left; /* PARENT: children not yet done */
	struct ps_comm_request *next;	 /* queue link */
	struct ps_comm_request *live_prev, *live_next; /* ep->live */
	bool abandoned;	      /* owner gone: free when done */
	bool first;	      /* first receive of a user message */
	bool expect_trunc;    /* chunk past the buffer: truncation is ok */
	bool untagged;	      /* software matching: header in scratch */
	bool owns_buf;	      /* buf is malloc'd: free it with the request */
	bool no_inject;	      /* complete only once the provider sent it */
	size_t user_len;      /* receive: the caller's buffer length */
	void *user_buf;
	uint8_t scratch[32];  /* large header or short-receive bounce */
	struct psc_sched *sched; /* COLL: the schedule while it runs */
	/*
	 * COLL: fail the operation with err (a timeout) without the endpoint
	 * lock held; it completes soon after.
	 */
	void (*abort)(struct ps_comm_request *r, int err);
	/* Registration (lib/mr.c): held from posting until completion. */
	struct psc_mr *mr;	       /* the buffer's, or its parent's range */
	struct psc_mr_slot *mr_slot;   /* pre-registered copy of a small one */
};

/* A FIFO of requests waiting to be posted (EAGAIN). */
struct psc_req_queue {
	struct ps_comm_request *head, *tail;
};

/*
 * Allocate a zeroed request bound to comm and link it on the endpoint's
 * live list. Lock held. NULL when out of memory.
 */
struct ps_comm_request *psc_req_alloc(struct ps_comm *comm,
				      enum psc_req_kind kind);
/* The same for an endpoint-owned request (no communicator). */
struct ps_comm_request *psc_req_alloc_ep(struct psc_ep *ep,
					 enum psc_req_kind kind);
/* Unlink and free a request and its children. Lock held. */
void psc_req_free(struct ps_comm_request *r);
/* Add child to parent (lock held). */
void psc_req_adopt(struct ps_comm_request *parent,
		   struct ps_comm_request *child);
/* Whether r has completed (safe without the lock). */
bool psc_req_done(const struct ps_comm_request *r);

/*
 * Take a completed request's status and free it; *req becomes NULL.
 * Lock not held. Returns its status error.
 */
int psc_req_reap(ps_comm_request_t *req, ps_comm_status_t *status);

/*
 * Withdraw a posted send or receive and free it. Returns 0 once it is
 * gone, or -EBUSY if the provider still holds it: it is then abandoned
 * (frees itself later) and its buffer must stay valid. Lock not held.
 */
int psc_req_cancel(ps_comm_request_t *req);

/*
 * Record completion of r (err 0 or PS_COMM_ERR_*), propagate to its
 * parent, and free it if abandoned. Called with the endpoint lock held.
 */
void psc_req_complete(struct ps_comm_request *r, int err);

void psc_queue_push(struct psc_req_queue *q, struct ps_comm_request *r);
struct ps_comm_request *psc_queue_pop(struct psc_req_queue *q);
/* Remove r if present; returns true if it was there. */
bool psc_queue_remove(struct psc_req_queue *q, struct ps_comm_request *r);

/* --------------------------------------------------------- endpoint */

enum psc_wait_mode { PSC_WAIT_POLL, PSC_WAIT_FD, PSC_WAIT_SREAD };

/*
 * One libfabric endpoint with its CQ and AV, shared by the communicators
 * built on it. lock serialises every libfabric call on it and every
 * request state change.
 */
struct psc_ep {
	pthread_mutex_t lock;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	const struct psc_provider_ops *prov;
	struct psc_caps caps;
	struct psc_tag_layout tl;
	enum psc_wait_mode wait_mode;
	int wait_fd;
	uint8_t name[256];
	size_t namelen;
	struct psc_req_queue txq, rxq; /* posts deferred by EAGAIN */
	struct ps_comm_request *live;  /* every allocated request */
	struct ps_comm_request *sw_posted; /* software-matched receives */
	struct psc_sw_unexp *sw_unexp;	   /* arrivals not yet wanted */
	size_t sw_eager;		   /* largest untagged payload */
	bool sw_tag_in_data;		   /* tag in CQ data, no header */
	uint64_t sw_dropped;		   /* malformed arrivals dropped */
	size_t posted[2];	       /* sends, receives libfabric holds */
	size_t post_limit[2];	       /* at most this many (queue depth) */
	bool in_progress;	       /* inside psc_progress's CQ reads */
	double spin_us;		       /* busy-poll before backing off */
	int rank;		       /* for log lines */
	char iface[64];		       /* interface used, or "" */
	struct psc_ep *next_ep;	       /* the process's endpoint list */
	char key[160];		       /* what sharing it requires */
	int refs;		       /* communicators using it */
	uint32_t next_ctx;	       /* context id of the next one */
	/* Memory registration (lib/mr.c). */
	struct psc_mr_cache *mr;       /* registrations of this domain */
	bool mr_local;		       /* a descriptor with every buffer */
	void *sw_slab;		       /* the software-matching buffers */
};

/*
 * The process's list of open endpoints, which blocking waits progress.
 * psc_ep_find_shared returns the endpoint with this key with its refs
 * raised, or NULL; register adds a new endpoint (refs 1); unregister
 * drops a reference and returns true when it was the last, removing the
 * endpoint from the list. Thread-safe; never called with ep->lock held.
 */
struct psc_ep *psc_ep_find_shared(const char *key);
void psc_ep_register(struct psc_ep *ep);
bool psc_ep_unregister(struct psc_ep *ep);
/* Take one more reference on an open endpoint (a split communicator). */
void psc_ep_hold(struct psc_ep *ep);

/* The libfabric API version pscomm asks for. */
#define PSC_FI_VERSION FI_VERSION(1, 9)

/*
 * pscomm's fi_getinfo hints, for one provider after its profile's
 * fixup_hints (prov_name NULL: any provider). Caller frees with
 * fi_freeinfo; NULL when out of memory.
 */
struct fi_info *psc_ep_hints(const char *prov_name);

/* How an endpoint is chosen and opened. */
struct psc_ep_config {
	const struct psc_params *params;
	const struct psc_iface *iface; /* NULL: no IP preference */
	int rank;
};

/*
 * Get an endpoint for a communicator: the process's open endpoint opened
 * with the same settings if there is one (one endpoint serves several
 * communicators, told apart by context ids), else a new one: choose a
 * provider entry (honouring FI_PROVIDER) and open fabric, domain,
 * endpoint, CQ and AV. *ctx receives the communicator's context id; ranks
 * that create communicators in the same order get the same ids. Returns
 * 0, or a negative errno with a message in err, which for "nothing
 * usable" lists the providers installed.
 */
int psc_ep_acquire(struct psc_ep **out, const struct psc_ep_config *cfg,
		   uint32_t *ctx, char *err, size_t len);

/*
 * Like psc_ep_acquire, but always a new endpoint that no later acquire
 * shares (lib/van/: a van serves its endpoint's fabric address and owns
 * all VAN-protocol traffic on it, so two vans in one process must not
 * meet on one endpoint). It is still registered, so blocking waits on
 * other endpoints progress it. Its one user's context id is 0. Release
 * with psc_ep_release.
 */
int psc_ep_acquire_exclusive(struct psc_ep **out,
			     const struct psc_ep_config *cfg, char *err,
			     size_t len);

/*
 * Drop a communicator's hold; the last one closes in order (endpoint,
 * CQ/AV, domain, fabric) and frees every request left.
 */
void psc_ep_release(struct psc_ep *ep);

/*
 * Insert one peer address (as fi_getname returned it) into the AV; called
 * in rank order so FI_AV_TABLE indices equal ranks. Returns 0 or a
 * negative errno.
 */
int psc_ep_av_insert(struct psc_ep *ep, const void *addr, fi_addr_t *fi_addr);

/*
 * Hand a request to libfabric, or queue it behind earlier ones when the
 * provider says EAGAIN. Lock held. Returns 0 or a negative fi error for a
 * failure that is not EAGAIN (the request is then not posted).
 */
int psc_ep_post(struct psc_ep *ep, struct ps_comm_request *r);

/*
 * Read the CQ in batches, dispatch completions and errors, then retry
 * queued posts. Lock held. Returns the number of events handled or a
 * negative fi error when the CQ itself failed.
 */
int psc_progress(struct psc_ep *ep);

/*
 * Block until done(arg) is true or deadline (psc_now() seconds, 0 = no
 * limit) passes, driving progress. Takes and releases ep->lock itself;
 * never spins forever: busy-polls for spin_us, then yields, then blocks on
 * the CQ wait object or sleeps with backoff. Returns 0 or -ETIMEDOUT.
 */
int psc_ep_wait(struct psc_ep *ep, bool (*done)(void *), void *arg,
		double deadline);

/*
 * Install the one progress hook (the collective engine) that blocking
 * waits and ps_comm_test call after reading the CQ, without any endpoint
 * lock held. The hook returns how many things moved and never blocks.
 * psc_progress_hooks runs it (0 if none).
 */
void psc_progress_set_hook(int (*hook)(void));
int psc_progress_hooks(void);

/* Ask libfabric to cancel r (posted) or drop it from the queue. Lock held. */
void psc_ep_cancel(struct psc_ep *ep, struct ps_comm_request *r);

/*
 * Called by the progress engine when the first receive of a user message
 * completes successfully (ev describes it); handles large-message headers
 * and short-receive bounces. Lock held. Returns 1 if the request
 * continues (children posted), 0 if it is complete, or a PS_COMM_ERR_*.
 */
int psc_p2p_first_recv(struct ps_comm_request *r,
		       const struct fi_cq_tagged_entry *ev);

/* ---------------------------------------------- software matching */

/*
 * Header and largest eager payload of a software-matched first message
 * (less when the provider's max_msg_size is smaller: ep->sw_eager).
 */
#define PSC_SW_HDR 16
#define PSC_SW_EAGER 8192

struct psc_sw_unexp;

/* Post the endpoint's bounce buffers (caps.sw_match). Returns 0/-errno. */
int psc_sw_open(struct psc_ep *ep);
/*
 * Free the bounce buffers and arrivals nobody received (at close, after
 * psc_mr_ep_close dropped the buffers' registration).
 */
void psc_sw_close(struct psc_ep *ep);
/*
 * Write r's tag and length into r->scratch for an untagged send (unused
 * when the tag travels as CQ data).
 */
void psc_sw_encode_hdr(struct ps_comm_request *r);
/*
 * A bounce buffer b received got bytes: match it to the first fitting
 * receive or keep it, then repost b. Lock held.
 */
void psc_sw_arrival(struct psc_ep *ep, struct ps_comm_request *b,
		    const struct fi_cq_tagged_entry *ev);
/* Match first receive r against kept arrivals, or queue it. Lock held. */
void psc_sw_recv(struct psc_ep *ep, struct ps_comm_request *r);
/* Withdraw a queued receive; true if it was queued. Lock held. */
bool psc_sw_cancel(struct psc_ep *ep, struct ps_comm_request *r);

/* ------------------------------------------------------ communicator */

struct ps_comm {
	struct psc_ep *ep;
	int rank;
	int size;
	uint32_t ctx;
	fi_addr_t *peers;      /* rank -> fi_addr */
	struct psc_params params;
	uint32_t large_seq;    /* continuation stream id, per sender */
	uint32_t coll_seq;     /* collectives started on this communicator */
	bool aborted;
	double op_timeout;     /* seconds, 0 = none */
	char provider[64];
	char last_error[512];
};

/* Record a diagnostic on comm (lock not required). */
void psc_comm_set_error(struct ps_comm *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Deadline for a blocking operation started now (0 = none). */
double psc_comm_op_deadline(const struct ps_comm *c);

/*
 * Post a send or receive with an explicit protocol (user, coll, ctrl).
 * Arguments are already validated. Returns 0 or PS_COMM_ERR_*.
 */
int psc_isend(struct ps_comm *c, unsigned proto, const void *buf,
	      size_t len, int peer, uint32_t tag, ps_comm_request_t *req);
int psc_irecv(struct ps_comm *c, unsigned proto, void *buf, size_t len,
	      int peer, int64_t tag, ps_comm_request_t *req);

/*
 * The ps-lite van's send (lib/van/): like psc_isend, but to an explicit
 * fi_addr, with src carried in the tag's rank field instead of c->rank,
 * because a van's peers join one at a time and are keyed by node id, not
 * by rank. Same locking, ordering and errors as psc_isend.
 */
int psc_isend_to(struct ps_comm *c, unsigned proto, const void *buf,
		 size_t len, fi_addr_t addr, uint32_t src, uint32_t tag,
		 ps_comm_request_t *req);

/*
 * Wait for r with deadline; on timeout, cancel and abandon it. Frees the
 * request and sets *req NULL in every case. Returns its status error.
 */
int psc_wait(ps_comm_request_t *req, ps_comm_status_t *status,
	     double deadline);

/*
 * Bootstrap: fill rank/size, open the endpoint, exchange addresses through
 * the store and check that every rank agrees. Returns PS_COMM_ERR_*.
 */
int psc_bootstrap(struct ps_comm *c, const ps_comm_attr_t *attr);

/* Rank and size from PS_COMM_* or the usual launcher variables. */
int psc_env_rank_size(int *rank, int *size, char *err, size_t len);

/* ------------------------------------------------ memory registration */

/*
 * lib/mr.c: descriptors for every buffer handed to libfabric, on
 * providers that need them (caps.mr_local, or PS_COMM_MR_MODE=local).
 *
 * One cache per endpoint (so per domain). Three kinds of registration:
 *  - cached: an interval index of disjoint, page-aligned ranges; a buffer
 *    inside a range hits it. Idle ranges (no holder) sit on an LRU list
 *    bounded by PS_COMM_MR_CACHE_BYTES and PS_COMM_MR_CACHE_ENTRIES; a
 *    range in use is never deregistered. A miss that overlaps cached
 *    ranges registers their union and retires them. A range larger than
 *    the byte bound (or any range when the entry bound is 0) is
 *    registered for its holders only and dropped with the last one.
 *  - pinned: ranges registered for the endpoint's lifetime or until
 *    unpinned (ps_comm_mem_register, the software-matching buffers); they
 *    are searched before the cache.
 *  - bounce slots: pre-registered buffers of PS_COMM_MR_BOUNCE_SIZE bytes
 *    (plus room for a software-matching header) that small messages and
 *    request scratch areas are copied through; the pool grows on demand.
 *
 * Every function below is called with the endpoint lock held (the cache
 * has no lock of its own), except create/destroy, called while nobody
 * else can reach the cache. The registering functions return 0 or a
 * negative errno/-FI_E* code from the backend; they never block beyond
 * the registration itself.
 */
struct psc_mr_cache;

struct psc_mr {
	uintptr_t start, end;	/* registered range [start, end) */
	void *handle;		/* the backend's (struct fid_mr *) */
	void *desc;		/* descriptor for buffers inside the range */
	uint64_t key;		/* fi_mr_key (provider's or requested) */
	int refs;		/* holders: posted operations, a pin */
	unsigned flags;		/* PSC_MR_F_* */
	struct psc_mr *lru_prev, *lru_next; /* idle cached ranges */
	struct psc_mr *pin_next;	    /* pinned list */
	struct psc_mr *all_prev, *all_next; /* every live registration */
};

#define PSC_MR_F_INDEXED 1u /* in the interval index */
#define PSC_MR_F_PINNED 2u  /* pinned: never evicted */

/*
 * How the cache registers: reg fills mr->handle, desc and key for the
 * range [mr->start, mr->end), requesting key (unique in the cache) where
 * the provider does not choose keys; returns 0 or a negative code. dereg
 * undoes it and cannot fail from the cache's view. ctx is the creator's.
 * Unit tests pass a fake backend.
 */
struct psc_mr_backend {
	int (*reg)(void *ctx, struct psc_mr *mr, uint64_t key);
	void (*dereg)(void *ctx, struct psc_mr *mr);
};

/* Counters, for logs and tests. */
struct psc_mr_stats {
	uint64_t hits, misses, evictions, regs, deregs;
	size_t entries, bytes; /* in the index */
	size_t idle;	       /* of those, on the LRU list */
	size_t live;	       /* registrations currently held by the backend */
};

/*
 * Create a cache. max_bytes/max_entries bound the index, bounce_size is
 * the largest message copied through a slot. Returns 0 or -ENOMEM.
 */
int psc_mr_cache_create(const struct psc_mr_backend *be, void *ctx,
			size_t max_bytes, size_t max_entries,
			size_t bounce_size, struct psc_mr_cache **out);

/*
 * Deregister everything (cached, pinned, slots, user handles, even ranges
 * still held) and free the cache. NULL is a no-op. After it, every psc_mr,
 * slot and ps_comm_mem_t of this cache is invalid.
 */
void psc_mr_cache_destroy(struct psc_mr_cache *c);

/*
 * A registration covering [buf, buf + len), with one hold taken: a pinned
 * range, a cached range (hit), or a new one. len 0 gives *out NULL and 0.
 * Release the hold with psc_mr_release once the operation is over.
 */
int psc_mr_acquire(struct psc_mr_cache *c, const void *buf, size_t len,
		   struct psc_mr **out);

/* Drop one hold; an idle cached range joins the LRU list. NULL: no-op. */
void psc_mr_release(struct psc_mr_cache *c, struct psc_mr *mr);

/*
 * Retire every cached range overlapping [buf, buf + len): memory about to
 * be freed. Idle ones are deregistered now, held ones when released.
 * Pinned ranges are not touched.
 */
void psc_mr_invalidate(struct psc_mr_cache *c, const void *buf, size_t len);

/*
 * Register exactly [buf, buf + len) until psc_mr_unpin (or destroy), ahead
 * of the cache in lookups. unpin retires the pin's hold (deregistering once no
 * operation holds it) and invalidates cached ranges overlapping it.
 */
int psc_mr_pin(struct psc_mr_cache *c, const void *buf, size_t len,
	       struct psc_mr **out);
void psc_mr_unpin(struct psc_mr_cache *c, struct psc_mr *mr);

/* Whether mr covers [buf, buf + len). */
bool psc_mr_covers(const struct psc_mr *mr, const void *buf, size_t len);

void psc_mr_get_stats(const struct psc_mr_cache *c, struct psc_mr_stats *st);

/* A pre-registered bounce buffer of psc_mr_slot_size() bytes. */
struct psc_mr_slot {
	struct psc_mr_slot *next; /* free list */
	struct psc_mr *mr;	  /* the registration of its pool chunk */
	void *buf;
};

/* Take a free slot, growing the pool; -ENOMEM or a backend error. */
int psc_mr_slot_get(struct psc_mr_cache *c, struct psc_mr_slot **out);
void psc_mr_slot_put(struct psc_mr_cache *c, struct psc_mr_slot *s);
size_t psc_mr_slot_size(const struct psc_mr_cache *c);

/*
 * Endpoint glue. psc_mr_ep_open (after fi_enable, before any post) sets
 * ep->mr_local from caps.mr_local and PS_COMM_MR_MODE and creates ep->mr
 * with a libfabric backend: FI_SEND|FI_RECV registrations, key 0 under
 * FI_MR_PROV_KEY (the provider's key is read back) else unique keys,
 * fi_mr_bind + fi_mr_enable under FI_MR_ENDPOINT. Without mr_local the
 * backend registers nothing (user registrations are bookkeeping only).
 * Returns 0, or -EINVAL (bad PS_COMM_MR_MODE) / -ENOMEM with err set.
 * psc_mr_ep_close (after fi_close of the endpoint and after every request
 * is freed, before the domain closes) logs the counters and destroys it.
 */
int psc_mr_ep_open(struct psc_ep *ep, const struct psc_params *p, char *err,
		   size_t len);
void psc_mr_ep_close(struct psc_ep *ep);

/*
 * The buffer and descriptor to post r with (ep->mr_local only): r->buf
 * inside its parent's held range, a pinned range or a cached one; small
 * ones (and request scratch) through a slot, into which a send's bytes
 * are copied now. The holds are recorded in r (r->mr, r->mr_slot), so
 * calling it again after -FI_EAGAIN reuses them. Returns 0 or an error
 * (nothing held then).
 */
int psc_mr_req_prepare(struct psc_ep *ep, struct ps_comm_request *r,
		       void **buf, void **desc);

/*
 * The same for an untagged send of hdr (hdrlen bytes) followed by r->buf:
 * one flat slot when both fit, else the header in a slot and the payload
 * registered. Fills iov/desc (2 entries) and *count.
 */
int psc_mr_req_prepare_hdr(struct psc_ep *ep, struct ps_comm_request *r,
			   const void *hdr, size_t hdrlen, struct iovec *iov,
			   void **desc, size_t *count);

/*
 * r's operation is over: copy a receive's first `got` bytes (at most
 * r->len) from its slot to r->buf, then drop r's holds. Idempotent;
 * safe on any request.
 */
void psc_mr_req_done(struct psc_ep *ep, struct ps_comm_request *r,
		     size_t got);

/*
 * Hold [buf, buf + len) for the children of a large message parent, so
 * they pass its descriptor without lookups; dropped by psc_mr_req_done on
 * the parent. No-op without ep->mr_local. Returns 0 or an error.
 */
int psc_mr_req_hold(struct psc_ep *ep, struct ps_comm_request *parent,
		    const void *buf, size_t len);

/* -------------------------------------------------------- collectives */

/*
 * Print the collective algorithm table, the automatic choice and its
 * thresholds with the values in p (ps_comm_info).
 */
void psc_coll_print_table(FILE *out, const struct psc_params *p);

/* --------------------------------------------------------------- topo */

/* Describe this process's CPU binding and its NUMA node into buf. */
void psc_topo_describe(char *buf, size_t len);

/* ------------------- provider selection, NIC locality, preflight (#4) */

/* fi_getinfo's signature, so tests can replay recorded entries. */
typedef int (*psc_getinfo_fn)(uint32_t version, const char *node,
			      const char *service, uint64_t flags,
			      const struct fi_info *hints,
			      struct fi_info **info);

/*
 * How far an entry's NIC is from this process: 0 when the process runs
 * only on CPUs local to the NIC, 1 when some are, 2 when none are; -1
 * when unknown. arg is the selection's distance_arg.
 */
typedef int (*psc_nic_distance_fn)(const struct fi_info *info, void *arg);

/* One provider selection: inputs, then what psc_ep_select found. */
struct psc_select {
	const struct psc_params *params; /* NULL: no parameter overrides */
	const struct psc_iface *iface;	 /* NULL: no IP preference */
	psc_nic_distance_fn distance;	 /* NULL: no locality preference */
	void *distance_arg;
	int rank;			 /* for log lines */
	const struct fi_info *pick;	 /* out: points into the list */
	struct psc_caps caps;		 /* out: derived, params applied */
	int nic_distance;		 /* out: the pick's, -1 unknown */
	char rejects[512];		 /* out: "name (reason); ..." */
};

/*
 * Ask gi (fi_getinfo, or a replay) for entries with pscomm's hints for
 * prov_name (NULL: any). When nothing matches, ask again without
 * FI_ORDER_SAS (opx) and set *relaxed. Returns 0 with *list to free with
 * fi_freeinfo, or gi's negative error. Blocking only as gi is.
 */
int psc_ep_query(psc_getinfo_fn gi, const char *prov_name,
		 struct fi_info **list, bool *relaxed);

/*
 * Choose the entry of list an endpoint uses. The first entry its profile
 * accepts (and that, for IP-addressed providers, carries s->iface's
 * address, unless the family's interface variable such as FI_TCP_IFACE
 * is set) fixes provider and address format, so all ranks agree; among
 * the entries of that provider and format, the NIC nearest to the
 * process by s->distance wins, ties keeping libfabric's order (no
 * reordering when FI_VERBS_IFACE and the like are set). Fills s->pick,
 * s->caps (with PS_COMM_MAX_MSG_SIZE and PS_COMM_SW_MATCH applied),
 * s->nic_distance and s->rejects. Returns s->pick, NULL if none fits.
 * Pure: no libfabric calls, so tests run it on replayed lists.
 */
const struct fi_info *psc_ep_select(const struct fi_info *list,
				    struct psc_select *s);

/*
 * An hwloc topology with I/O devices for psc_topo_nic_distance, or NULL
 * when hwloc fails (distances are then unknown). Close with
 * psc_topo_close (NULL is fine).
 */
void *psc_topo_open(void);
void psc_topo_close(void *topo);

/*
 * psc_nic_distance_fn over the PCI address in info->nic->bus_attr and
 * this process's CPU binding; arg is from psc_topo_open.
 */
int psc_topo_nic_distance(const struct fi_info *info, void *arg);

/*
 * Describe the NIC of info and its locality ("mlx5_0 at 0000:3b:00.0,
 * NUMA node 0, local to this process's CPUs") into buf; arg as above.
 */
void psc_topo_nic_describe(const struct fi_info *info, void *arg, char *buf,
			   size_t len);

/*
 * Before the first fi_getinfo (lib/preflight.c): set every family's
 * fork-safety variable (RDMAV_FORK_SAFE, FI_EFA_FORK_SAFE) and job UUID
 * (FI_PSM2_UUID ..., derived from the job's identity) unless the user set
 * them; set FI_SHM_DISABLE_CMA=1 when cross-memory attach is blocked;
 * install a pthread_atfork warning. Once per process, thread-safe; p may
 * be NULL. Never fails: problems are logged with their fix.
 */
void psc_preflight_env(const struct psc_params *p, int rank);

/*
 * After an entry is chosen: warn with the fix when RLIMIT_MEMLOCK is too
 * low for a provider that pins memory, when /dev/shm is small for shm,
 * log the RoCE GID in use and the NIC's locality (nic_distance from
 * psc_ep_select). Returns 0; a negative errno with err set is reserved
 * for conditions that make the provider unusable.
 */
int psc_preflight_check(const struct fi_info *info,
			const struct psc_caps *caps, int nic_distance,
			int rank, char *err, size_t len);

/*
 * The job UUID that ranks of one job derive alike: a hash of
 * PS_COMM_JOB_KEY, the rendezvous address and the launcher's job id
 * (SLURM_JOB_ID, PMIX_NAMESPACE ...), as "xxxxxxxx-xxxx-xxxx-xxxx-
 * xxxxxxxxxxxx" into buf (at least 37 bytes).
 */
void psc_preflight_job_uuid(const struct psc_params *p, char *buf,
			    size_t len);

/*
 * Whether process_vm_readv works between processes of this user here,
 * tested on this process itself; false in containers without
 * CAP_SYS_PTRACE or under a strict Yama ptrace_scope.
 */
bool psc_preflight_cma_works(void);

/*
 * Replay of recorded `fi_info -v` text (lib/replay.c), for tests and
 * `ps_comm_info --replay`. psc_replay_parse builds a list of real
 * fi_info entries (free with fi_freeinfo) from text; lines starting with
 * '#' are comments. Returns 0, or a negative errno with "line N: ..." in
 * err. psc_replay_load does the same for a file.
 */
int psc_replay_parse(const char *text, struct fi_info **list, char *err,
		     size_t len);
int psc_replay_load(const char *path, struct fi_info **list, char *err,
		    size_t len);

/*
 * A psc_getinfo_fn answering from the list given to psc_replay_use
 * (which must outlive the calls): the entries that satisfy the hints as
 * libfabric checks them (provider name, endpoint type, caps, modes the
 * entry needs, mr_mode duties, message order, AV type), duplicated, with
 * caps and mr_mode narrowed to the hints. -FI_ENODATA when none. Not
 * thread-safe: one replay at a time per process.
 */
void psc_replay_use(const struct fi_info *list);
int psc_replay_getinfo(uint32_t version, const char *node,
		       const char *service, uint64_t flags,
		       const struct fi_info *hints, struct fi_info **info);

#endif /* PSC_H */
