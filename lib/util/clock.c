/*
 * Time: the monotonic clock and backoff sleeps.
 */
#include <stdlib.h>
#include <time.h>

#include "util/util.h"

double psc_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double psc_deadline(double secs)
{
	return secs > 0 ? psc_now() + secs : 0;
}

double psc_thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct timespec psc_timespec(double secs)
{
	struct timespec ts;

	ts.tv_sec = (time_t)secs;
	ts.tv_nsec = (long)((secs - (double)ts.tv_sec) * 1e9);
	return ts;
}

void psc_backoff_sleep(double first, double cap, unsigned step, bool jitter,
		       double deadline)
{
	double t = first * (double)(1u << PSC_MIN(step, 20u));
	struct timespec ts;

	if (t > cap)
		t = cap;
	if (jitter)
		/* Jitter only spreads retries: rand() is enough. */
		/* NOLINTNEXTLINE(cert-msc30-c,cert-msc50-cpp) */
		t *= 0.5 + (double)(rand() % 1000) / 1000.0;
	if (deadline > 0) {
		double left = deadline - psc_now();

		if (left < t)
			t = left > 0 ? left : 0;
	}
	ts = psc_timespec(t);
	nanosleep(&ts, NULL);
}
