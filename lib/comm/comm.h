/*
 * Communicators: the p2p channel of a fixed, ordered set of ranks, the
 * settings it was created with, and the errors users see. This layer
 * records ps_comm_last_error and, where a public call returns, turns
 * internal codes into PS_COMM_ERR_* values with the one translation,
 * psc_err_public (util/err.h); the collectives report through it, and
 * the van calls psc_err_public itself.
 */
#ifndef PSC_COMM_H
#define PSC_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "comm/view.h"
#include "p2p/chan.h"
#include "util/param.h"

struct psc_live;

/* A live communicator's magic word ("pscm"). */
#define PSC_COMM_MAGIC 0x7073636du

/* The communicator's fields, for comm and the van; see comm/view.h. */
struct ps_comm {
	uint32_t magic;	       /* PSC_COMM_MAGIC until psc_comm_free */
	struct psc_chan ch;    /* endpoint, context id, rank, size, peers */
	struct psc_live *live; /* the world's liveness monitor, or NULL */
	int *world;	       /* rank -> world rank (with live) */
	bool owns_live;	       /* the world communicator: it leaves */
	bool rebuilt;	       /* its survivors rebuilt a world from it
				  (ps_comm_shrink): it leaves the star in
				  good order although it failed */
	int *node_of;	       /* rank -> node, numbered by lowest rank */
	int nnodes;
	int local_rank;	       /* this rank among its node's ranks */
	int local_size;
	struct psc_params params;
	uint32_t coll_seq;     /* collectives started on this communicator */
	uint32_t hier_runs;    /* of them, run by the hierarchical algorithms
				  (atomic; the test suites read it) */
	double op_timeout;     /* seconds, 0 = none */
	uint32_t agree_seq;    /* agreements started on this communicator */
	bool *agreed_failed;   /* rank -> failed by the last agreement, or
				  NULL before one */
	char provider[64];
	char root[300];	       /* host:port where its world's tcp
				  rendezvous was served (by world rank 0),
				  or "" */
	char last_error[1024];
};

/*
 * Whether c is a communicator the caller may use: not NULL, and not
 * freed as far as its magic word tells (best effort, ps_comm.h). One
 * compare on the hot path; psc_comm_valid (comm/view.h) out of line.
 */
static inline bool psc_comm_ok(const struct ps_comm *c)
{
	return c && c->magic == PSC_COMM_MAGIC;
}

/*
 * Wait for a request of c until its operation deadline, as ps_comm_wait
 * does: returns a PS_COMM_ERR_* value, with status->error translated
 * too, and records the failure's words; what names the operation in a
 * timeout message ("collective", "operation"). psc_comm_waited is its
 * slow half: it takes the internal result rc and the malloc'd words
 * (freed here, may be NULL) of a wait that did not simply succeed.
 */
int psc_comm_waited(struct ps_comm *c, int rc, ps_comm_status_t *status,
		    char *words, const char *what);

/* A reaped request's result (rc, status, words) as the user sees it. */
static inline int psc_comm_result(struct ps_comm *c, int rc,
				  ps_comm_status_t *status, char *words,
				  const char *what)
{
	/* Success is the hot path: nothing to translate or record. */
	if (!rc && !words && (!status || !status->error))
		return 0;
	return psc_comm_waited(c, rc, status, words, what);
}

static inline int psc_comm_wait(struct ps_comm *c, ps_comm_request_t *req,
				ps_comm_status_t *status, double deadline,
				const char *what)
{
	char *words;
	int rc = psc_wait(req, status, deadline, &words);

	return psc_comm_result(c, rc, status, words, what);
}

/*
 * Connect c's ranks pairwise, each pair from its lower rank, on the
 * paths whose provider mishandles crossing connects (caps.connect_race;
 * comm/wire.c says why); nothing to do on the others. Call once a new
 * world's liveness monitor runs, before any other message on c. Waits
 * up to PS_COMM_TIMEOUT, and fails at once on a peer's death. Returns 0
 * or a PS_COMM_ERR_* value, with c's last error set.
 */
int psc_comm_wire(struct ps_comm *c);

/*
 * Fill c's node map from raw (rank -> any node label, n = c->ch.size):
 * nodes renumbered in the order of their lowest rank, c's local rank and
 * count. Returns 0 or -ENOMEM.
 */
int psc_comm_set_nodes(struct ps_comm *c, const int *raw);

/*
 * A grow's part in a bootstrap (ps_comm_grow): this old rank's place in
 * the grown communicator of size ranks, where the old ranks end (the
 * rest join), the context id the old ranks agreed on (the rendezvous
 * hands it to the joiners too) and the rendezvous, served by rank 0.
 */
struct psc_comm_grow {
	int rank, size, old_size;
	uint32_t ctx;
	const char *root;
	/* True, with words, once the communicator that grows failed. */
	bool (*dead)(void *arg, char *why, size_t len);
	void *dead_arg;
};

/*
 * Bootstrap a world communicator into c (zeroed, params loaded): rank
 * and size, rendezvous, endpoint, address exchange and agreement checks.
 * With grow, the grown communicator of a grow's old rank; with
 * PS_COMM_JOIN set (and no grow), a new process's place in a running
 * job's grow. Returns 0 or PS_COMM_ERR_* with c->last_error set.
 */
int psc_comm_bootstrap(struct ps_comm *c, const ps_comm_attr_t *attr,
		       const struct psc_comm_grow *grow);

/*
 * Free c: stop watching it and forget its failure; the caller drops
 * c's endpoint hold after this (the watchdog reads the endpoint while
 * it is watched).
 */
void psc_comm_free(struct ps_comm *c);

#endif /* PSC_COMM_H */
