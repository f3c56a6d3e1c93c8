/*
 * Endpoints for unit suites that talk to themselves inside one process:
 * open one exclusively on a provider role, make another's address known
 * to it, and put a channel of a given rank and size over it. Failures
 * fail the calling test (Check asserts).
 */
#ifndef PSC_TEST_FIXTURE_H
#define PSC_TEST_FIXTURE_H

#include <stdbool.h>

#include <check.h>

#include "core/ep.h"
#include "p2p/chan.h"
#include "util/param.h"

struct fx_ep {
	struct psc_params params;
	struct psc_ep *ep;
	struct psc_chan ch;
	fi_addr_t peers[2];
};

/* Whether libfabric lists provider name (else the suite exits 77). */
bool fx_listed(const char *name);

/*
 * Open f->ep on role (exclusive, spin 0: waits block soon) and bind
 * f->ch to it as rank of size ranks, peers unset.
 */
void fx_open(struct fx_ep *f, enum psc_fab_role role, int rank, int size);

/* Make to's address rank peer of from's channel. */
void fx_connect(struct fx_ep *from, const struct fx_ep *to, int peer);

/* Release the endpoint. */
void fx_close(struct fx_ep *f);

/*
 * One endpoint on any provider (FI_PROVIDER chooses), rank 0 of 1, whose
 * peer 0 is itself: opened before each test of a case made by fx_tcase
 * and closed after it.
 */
extern struct fx_ep fx_one;

/* A test case on fx_one, with a timeout for tests that communicate. */
TCase *fx_tcase(const char *name);

/* Run s; returns the exit status for main (EXIT_FAILURE on failures). */
int fx_run(Suite *s);

#endif /* PSC_TEST_FIXTURE_H */
