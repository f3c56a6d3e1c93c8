/*
 * What the multi-process suites share: this rank's place, the failure
 * count, and reporting one failed check as a "not ok" line on stderr.
 * Included once, by each suite's only source file.
 */
#ifndef PSC_TEST_SUITE_H
#define PSC_TEST_SUITE_H

#include <stdarg.h>
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

#endif /* PSC_TEST_SUITE_H */
