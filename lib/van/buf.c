/*
 * Receive buffers of the van. ps_comm_van_recv hands its buffers to the
 * caller, who gives them back with ps_comm_van_free, so the van can keep
 * large ones for the next messages instead of returning them to the
 * system: a fresh buffer of a megabyte or more costs a page fault per
 * page on first touch, which at fabric speeds costs more than the
 * transfer. Each buffer carries a small header (its size class) in front
 * of the 64-byte aligned data. Buffers of PSC_VAN_POOL_MIN bytes and more
 * are kept per power-of-two class, up to PSC_VAN_POOL_KEEP per class and
 * PSC_VAN_POOL_BYTES in all; smaller ones go to malloc and free.
 */
#include <stdlib.h>
#include <string.h>

#include "ps_comm/van.h"
#include "van_int.h"

#define HDR 64
#define BUF_MAGIC 0x5053434256554631ull /* "PSCBVUF1" */
#define CLASS_MIN 16			 /* 64 KiB */
#define CLASS_MAX 40
#define PSC_VAN_POOL_KEEP 64
#define PSC_VAN_POOL_BYTES ((size_t)1 << 30)

struct buf_hdr {
	uint64_t magic;
	unsigned cls; /* 0: not pooled */
	struct buf_hdr *next;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct buf_hdr *pool[CLASS_MAX + 1];
static unsigned pool_count[CLASS_MAX + 1];
static size_t pool_bytes;

/* The pool class of a length: the smallest power of two holding it. */
static unsigned class_of(size_t len)
{
	unsigned c = CLASS_MIN;

	while (c < CLASS_MAX && ((size_t)1 << c) < len)
		c++;
	return ((size_t)1 << c) >= len ? c : 0;
}

void *psc_van_buf_alloc(size_t len)
{
	unsigned cls = len >= ((size_t)1 << CLASS_MIN) / 2 ? class_of(len) : 0;
	size_t cap = cls ? (size_t)1 << cls : len;
	struct buf_hdr *h = NULL;

	if (cls) {
		pthread_mutex_lock(&pool_lock);
		h = pool[cls];
		if (h) {
			pool[cls] = h->next;
			pool_count[cls]--;
			pool_bytes -= cap;
		}
		pthread_mutex_unlock(&pool_lock);
	}
	if (!h && posix_memalign((void **)&h, HDR, HDR + (cap ? cap : 1)))
		return NULL;
	h->magic = BUF_MAGIC;
	h->cls = cls;
	h->next = NULL;
	return (char *)h + HDR;
}

void ps_comm_van_free(void *ptr)
{
	struct buf_hdr *h;
	size_t cap;

	if (!ptr)
		return;
	h = (struct buf_hdr *)((char *)ptr - HDR);
	if (h->magic != BUF_MAGIC) {
		psc_log(PSC_LOG_ERROR, -1, "van: ps_comm_van_free of memory the "
			"van did not hand out; ignored");
		return;
	}
	cap = (size_t)1 << h->cls;
	if (h->cls) {
		pthread_mutex_lock(&pool_lock);
		if (pool_count[h->cls] < PSC_VAN_POOL_KEEP &&
		    pool_bytes + cap <= PSC_VAN_POOL_BYTES) {
			h->next = pool[h->cls];
			pool[h->cls] = h;
			pool_count[h->cls]++;
			pool_bytes += cap;
			h = NULL;
		}
		pthread_mutex_unlock(&pool_lock);
	}
	if (h) {
		/* volatile: the compiler drops a store into memory it frees. */
		*(volatile uint64_t *)&h->magic = 0;
		free(h);
	}
}
