/*
 * The scratch block cache (scratch.h). Each block starts with a header
 * of one cache line that records its usable size; the caller's pointer
 * follows it. Idle blocks sit in a fixed array under one mutex: a
 * collective takes and returns at most a few blocks per call, so a scan
 * of PSC_SCRATCH_KEEP slots is all the search it needs.
 */
#include <pthread.h>
#include <stdlib.h>

#include "util/scratch.h"

#define PSC_SCRATCH_KEEP 4
#define HDR 64

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *idle[PSC_SCRATCH_KEEP]; /* blocks (headers), or NULL */
static size_t idle_bytes;

static size_t cap_of(const char *blk)
{
	return *(const size_t *)(const void *)blk;
}

void *psc_scratch_get(size_t len)
{
	int best = -1;
	void *mem;
	char *blk;

	pthread_mutex_lock(&lock);
	/* The smallest idle block that is large enough. */
	for (int i = 0; i < PSC_SCRATCH_KEEP; i++)
		if (idle[i] && cap_of(idle[i]) >= len &&
		    (best < 0 || cap_of(idle[i]) < cap_of(idle[best])))
			best = i;
	if (best >= 0) {
		blk = idle[best];
		idle[best] = NULL;
		idle_bytes -= cap_of(blk);
		pthread_mutex_unlock(&lock);
		return blk + HDR;
	}
	pthread_mutex_unlock(&lock);
	if (len > (size_t)-1 - HDR || posix_memalign(&mem, HDR, HDR + len))
		return NULL;
	blk = mem;
	*(size_t *)mem = len;
	return blk + HDR;
}

void psc_scratch_put(void *p, size_t limit)
{
	char *blk = p ? (char *)p - HDR : NULL;
	int slot = -1;
	size_t cap;

	if (!blk)
		return;
	cap = cap_of(blk);
	pthread_mutex_lock(&lock);
	/* An empty slot, else the smallest idle block if smaller than blk. */
	for (int i = 0; i < PSC_SCRATCH_KEEP && cap <= limit; i++) {
		if (!idle[i]) {
			slot = i;
			break;
		}
		if (cap_of(idle[i]) < cap &&
		    (slot < 0 || cap_of(idle[i]) < cap_of(idle[slot])))
			slot = i;
	}
	if (slot >= 0) {
		char *old = idle[slot];
		size_t freed = old ? cap_of(old) : 0;

		if (idle_bytes - freed + cap <= limit) {
			idle[slot] = blk;
			idle_bytes = idle_bytes - freed + cap;
			blk = old;
		}
	}
	pthread_mutex_unlock(&lock);
	free(blk);
}

void psc_scratch_drain(void)
{
	char *gone[PSC_SCRATCH_KEEP];

	pthread_mutex_lock(&lock);
	for (int i = 0; i < PSC_SCRATCH_KEEP; i++) {
		gone[i] = idle[i];
		idle[i] = NULL;
	}
	idle_bytes = 0;
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < PSC_SCRATCH_KEEP; i++)
		free(gone[i]);
}
