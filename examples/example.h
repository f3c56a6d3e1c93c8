/*
 * What the example programs share besides their argument parsing (args.h):
 * a monotonic clock, and TRY, which returns a pscomm error from the calling
 * function after noting in c->what which step failed. Each example is one
 * source file that includes this header once and is linked with args.c.
 */
#ifndef PSC_EXAMPLE_H
#define PSC_EXAMPLE_H

#include <time.h>

/* Monotonic time in microseconds. */
static inline double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Evaluate x; on an error, record step w in c->what and return it. */
#define TRY(x, c, w)                                                           \
	do {                                                                   \
		int rc_ = (x);                                                 \
		if (rc_) {                                                     \
			(c)->what = (w);                                       \
			return rc_;                                            \
		}                                                              \
	} while (0)

#endif /* PSC_EXAMPLE_H */
