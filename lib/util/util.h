/*
 * Small helpers every layer may use: array and arithmetic macros, bounded
 * appending to a text buffer, the monotonic clock, big-endian byte order for wire formats, and FNV-1a.
 * Nothing here allocates, blocks or fails.
 */
#ifndef PSC_UTIL_H
#define PSC_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define PSC_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define PSC_MIN(a, b) ((a) < (b) ? (a) : (b))
#define PSC_MAX(a, b) ((a) > (b) ? (a) : (b))
#define psc_container_of(ptr, type, member)                                    \
	((type *)((char *)(ptr)-offsetof(type, member)))

/*
 * Append printf-style text at offset used of buf (len bytes), as much as
 * fits, always NUL-terminated; used grows by what was asked for, so a
 * caller can tell whether anything was written and whether it fitted.
 */
#define PSC_APPEND(buf, len, used, ...)                                        \
	((used) += (size_t)snprintf((buf) + PSC_MIN((used), (len)),            \
				    (len)-PSC_MIN((used), (len)), __VA_ARGS__))

/* Monotonic time in seconds. */
double psc_now(void);

/*
 * When something started now with a timeout of secs seconds times out:
 * psc_now() + secs, or 0 (none) when secs is not above 0 (the "0 = none"
 * of PS_COMM_OP_TIMEOUT and its kind).
 */
double psc_deadline(double secs);

/* CPU time the calling thread has used, in seconds. */
double psc_thread_cpu(void);

/*
 * secs (>= 0) as a timespec: a relative timeout, or with psc_now()
 * added, an absolute CLOCK_MONOTONIC time.
 */
struct timespec psc_timespec(double secs);

/*
 * Sleep for backoff step `step`: first * 2^step seconds, at most cap,
 * scaled by a random factor in [0.5, 1.5) when jitter is set (so peers
 * retrying together spread out), and never past deadline (psc_now()
 * seconds; 0 = none).
 */
void psc_backoff_sleep(double first, double cap, unsigned step, bool jitter,
		       double deadline);

/*
 * The identity of this kernel and its namespace ns ("net", "pid"):
 * "<boot id>/<ns>:<inode>" (the host name stands in for a missing boot
 * id), or override when it is set and not empty (PS_COMM_NODE_ID).
 * Processes with equal identities share that namespace in one kernel.
 * The one exception to this header's rule: it reads /proc.
 */
void psc_node_id(const char *override, const char *ns, char *buf, size_t len);

/* FNV-1a over bytes, continuing from h (start with PSC_FNV_INIT). */
#define PSC_FNV_INIT 0xcbf29ce484222325ULL
uint64_t psc_fnv1a(uint64_t h, const void *data, size_t len);

/*
 * Clear a handle's magic word just before its memory is freed, so that a
 * stale copy of the handle is refused while the memory stays mapped.
 * volatile, or the compiler drops a store into memory it frees.
 */
static inline void psc_magic_clear(uint32_t *magic)
{
	*(volatile uint32_t *)magic = 0;
}

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

#endif /* PSC_UTIL_H */
