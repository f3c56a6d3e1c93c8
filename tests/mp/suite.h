/*
 * What the multi-process suites share: this rank's place, the failure
 * count, reporting one failed check as a "not ok" line on stderr, and the
 * byte pattern senders write and receivers check.
 * Included once, by each suite's only source file.
 */
#ifndef PSC_TEST_SUITE_H
#define PSC_TEST_SUITE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "ps_comm.h"

static int rank, size, failures;

/* Report a failed check of test; the suite exits 1 if any failed. */
static void fail(const char *test, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fail(const char *test, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "not ok - rank %d %s: ", rank, test);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	failures++;
}

/* Run a pscomm call; on an error, fail test and leave the function. */
#define CHECK_RC(test, call)                                                   \
	do {                                                                   \
		int rc_ = (call);                                              \
		if (rc_) {                                                     \
			fail(test, "%s: %s (line %d)", #call,                  \
			     ps_comm_strerror(rc_), __LINE__);                 \
			return;                                                \
		}                                                              \
	} while (0)

/*
 * The byte pattern rank src sends for salt: any rank can recompute it,
 * so every received byte is checked. fill writes it; verify_from and
 * verify return the index of the first wrong byte in b[from..n), or -1.
 */
static inline unsigned char pat(int src, size_t salt, size_t i)
{
	return (unsigned char)((size_t)src * 37 + salt * 11 + i * 131 + 7);
}

static inline void fill(unsigned char *b, size_t n, int src, size_t salt)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat(src, salt, i);
}

static inline long verify_from(const unsigned char *b, size_t from, size_t n,
			       int src, size_t salt)
{
	for (size_t i = from; i < n; i++)
		if (b[i] != pat(src, salt, i))
			return (long)i;
	return -1;
}

static inline long verify(const unsigned char *b, size_t n, int src,
			  size_t salt)
{
	return verify_from(b, 0, n, src, salt);
}

#endif /* PSC_TEST_SUITE_H */
