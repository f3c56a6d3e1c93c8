/*
 * psc_scratch: large scratch blocks kept for reuse between collectives.
 *
 * A collective's schedule allocates its scratch (received partials, a
 * copy of the input) when it is built and frees it when it ends. Blocks
 * of glibc's mmap size (128 KiB and up, or trimmed from the top of the
 * heap) go back to the kernel on free, so every call faulted its pages in
 * again, and a page missing under a peer's cross-memory copy (shm's
 * process_vm_readv) made that copy crawl: a 3-rank allreduce of 4 MiB on
 * shm took 30-45 ms instead of 3 ms. Blocks of PSC_SCRATCH_MIN bytes or
 * more therefore come from a small process-wide cache: at most
 * PSC_SCRATCH_KEEP idle blocks, the largest kept, holding at most
 * PS_COMM_COLL_SCRATCH_CACHE bytes. Thread-safe.
 */
#ifndef PSC_SCRATCH_H
#define PSC_SCRATCH_H

#include <stddef.h>

/* Smallest block that goes through the cache. */
#define PSC_SCRATCH_MIN ((size_t)64 * 1024)

/*
 * A block of at least len bytes, 64-byte aligned: an idle cached one when
 * one is large enough, else a new one. NULL when out of memory. Free it
 * with psc_scratch_put only.
 */
void *psc_scratch_get(size_t len);

/*
 * Give back a block from psc_scratch_get: kept idle when the cache has
 * room under limit bytes in all (it replaces a smaller idle block when
 * full), else freed. NULL is ignored.
 */
void psc_scratch_put(void *p, size_t limit);

/* Free every idle block (at finalize; blocks still in use are not). */
void psc_scratch_drain(void);

#endif /* PSC_SCRATCH_H */
