/*
 * The memory-registration cache of one domain, and its libfabric
 * backend. The core layer owns the lock that guards it.
 */
#ifndef PSC_MR_H
#define PSC_MR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/param.h"

/*
 * Descriptors for every buffer handed to libfabric, on
 * providers that need them (caps.mr_local, or PS_COMM_MR_MODE=local).
 *
 * One cache per endpoint (so per domain). Three kinds of registration:
 *  - cached (only when PS_COMM_MR_CACHE_ENTRIES > 0; by default every
 *    operation registers its buffer and releases it, and libfabric's
 *    verbs and EFA cache those registrations behind a memory monitor
 *    that sees munmap, which this cache cannot: a range cached here
 *    keeps the old pages of memory the program unmapped and mapped
 *    again, as glibc's free and malloc do): an interval index of
 *    disjoint, page-aligned ranges; a buffer
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

/*
 * Every slot holds at least PSC_MR_MIN_BOUNCE bytes (a request's scratch
 * area) plus PSC_MR_SLOT_HDR bytes of header room in front (a
 * software-matching header); the core checks both at compile time.
 */
#define PSC_MR_MIN_BOUNCE 32
#define PSC_MR_SLOT_HDR 16

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
 * A user registration (ps_comm_mem_register): a pin that the cache
 * tracks, so a handle is checked against this cache before it is used
 * and all are dropped at destroy. Returns 0, -EINVAL when the range is
 * not all mapped memory of this process, or an error from psc_mr_pin
 * (-ENOMEM, a backend error); unpin returns -ENOENT for a handle that is
 * not this cache's (or was already unpinned).
 */
struct ps_comm_mem;
int psc_mr_user_pin(struct psc_mr_cache *c, const void *buf, size_t len,
		    struct ps_comm_mem **out);
int psc_mr_user_unpin(struct psc_mr_cache *c, struct ps_comm_mem *u);

/*
 * A hold on a pinned range covering [buf, buf + len), counted as a hit:
 * the cheap first lookup for buffers the caller expects pinned. -ENOENT
 * when no pin covers it (nothing held).
 */
int psc_mr_acquire_pinned(struct psc_mr_cache *c, const void *buf,
			  size_t len, struct psc_mr **out);

/* The largest message copied through a slot (PS_COMM_MR_BOUNCE_SIZE). */
size_t psc_mr_bounce_size(const struct psc_mr_cache *c);

struct psc_fab;
/*
 * Endpoint glue. psc_mr_fab_open (after fi_enable, before any post) sets
 * f->mr_local from caps.mr_local and PS_COMM_MR_MODE and creates ep->mr
 * with a libfabric backend: FI_SEND|FI_RECV registrations, key 0 under
 * FI_MR_PROV_KEY (the provider's key is read back) else unique keys,
 * fi_mr_bind + fi_mr_enable under FI_MR_ENDPOINT. Without mr_local the
 * backend registers nothing (user registrations are bookkeeping only).
 * Returns 0, or -EINVAL (bad PS_COMM_MR_MODE) / -ENOMEM with err set.
 * psc_mr_fab_close (after fi_close of the endpoint and after every request
 * is freed, before the domain closes) logs the counters and destroys it.
 */
int psc_mr_fab_open(struct psc_fab *f, const struct psc_params *p, char *err,
		   size_t len);
void psc_mr_fab_close(struct psc_fab *f);

#endif /* PSC_MR_H */
