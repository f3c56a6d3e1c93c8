/*
 * What the example programs share: a monotonic clock, size arguments with
 * K/M/G suffixes, and TRY, which returns a pscomm error from the calling
 * function after noting in c->what which step failed. Each example is one
 * source file that includes this header once.
 */
#ifndef PSC_EXAMPLE_H
#define PSC_EXAMPLE_H

#include <stdlib.h>
#include <time.h>

/* Monotonic time in microseconds. */
static inline double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Parse "123", "4K", "16M" or "1G" (binary). Returns 0, or -1 if bad. */
static inline int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s || *s == '-')
		return -1;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	else if (*end == 'G' || *end == 'g')
		v <<= 30, end++;
	if (*end)
		return -1;
	*out = (size_t)v;
	return 0;
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
