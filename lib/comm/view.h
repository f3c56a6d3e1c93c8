/*
 * A communicator as the layers above comm (the collectives) see it:
 * opaque, with its channel (opaque too, p2p/p2p.h), rank, size, node map
 * and settings, and the calls that report its errors. This layer is the
 * only one that records ps_comm_last_error and turns internal codes into
 * PS_COMM_ERR_* values; the layers above it report through it. No
 * libfabric type appears here.
 */
#ifndef PSC_COMM_VIEW_H
#define PSC_COMM_VIEW_H

#include <stdint.h>

#include "p2p/p2p.h"
#include "ps_comm.h"
#include "util/param.h"

struct ps_comm;

/*
 * Whether c is a communicator the caller may use: not NULL and not
 * finalized (best effort: its magic word, ps_comm.h).
 */
bool psc_comm_valid(const struct ps_comm *c);

/* c's channel, rank, rank count and settings; constant while c lives. */
struct psc_chan *psc_comm_chan(struct ps_comm *c);
int psc_comm_rank(const struct ps_comm *c);
int psc_comm_size(const struct ps_comm *c);
const struct psc_params *psc_comm_params(const struct ps_comm *c);

/*
 * c's node map: rank -> node, numbered by lowest rank, or NULL when it
 * has none; *nnodes and *local_size (this rank's node's rank count)
 * receive its counts.
 */
const int *psc_comm_nodes(const struct ps_comm *c, int *nnodes,
			  int *local_size);

/* The sequence number of a new collective on c (any thread). */
uint32_t psc_comm_next_seq(struct ps_comm *c);

/* Count a collective on c that runs hierarchically (any thread). */
void psc_comm_count_hier(struct ps_comm *c);

/* Record a diagnostic on comm (lock not required). */
void psc_comm_set_error(struct ps_comm *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));


/*
 * Turn an internal code into the PS_COMM_ERR_* value the user gets,
 * recording msg (when not empty) as the communicator's last error.
 * Returns 0 for 0.
 */
int psc_comm_report(struct ps_comm *c, int err, const char *msg);


/*
 * The PS_COMM_ERR_* value for internal code rc of an operation of c that
 * could not start, recording the words of c's failure when c failed (a
 * peer died, an abort) and rc is that failure.
 */
int psc_comm_failure(struct ps_comm *c, int rc);


/* Deadline for a blocking operation started now (0 = none). */
double psc_comm_op_deadline(const struct ps_comm *c);


/*
 * Take context id ctx, agreed among c's ranks for a new communicator
 * (the largest of their psc_p2p_ctx_next), so that later communicators
 * get ids past it: 0, or PS_COMM_ERR_NOMEM with c's error set, headed by
 * what, when every id is used.
 */
int psc_comm_take_ctx(struct ps_comm *c, uint32_t ctx, const char *what);

/*
 * Grow, the communicator's side (lib/coll/grow.c has the public call).
 * psc_comm_grow_root: where rank r0 of c serves a rendezvous for a new
 * communicator, into root, or "" for none: PS_COMM_GROW_ROOT, else where
 * c's world's rendezvous was served (PS_COMM_ROOT for the job's own, or
 * MASTER_ADDR:MASTER_PORT) when r0 is world rank 0, else r0's own
 * address (its liveness listener's) at that port; every rank computes
 * the same. psc_comm_grow_to: the communicator of c's
 * ranks then n_new processes that join at root (from rank 0), under the
 * agreed context id ctx, bootstrapped like a world, in *newcomm.
 * Returns a PS_COMM_ERR_* value, with c's error set (PS_COMM_ERR_PEER
 * when a rank of c died).
 */
void psc_comm_grow_root(const struct ps_comm *c, int r0, char *root,
			size_t len);
int psc_comm_grow_to(struct ps_comm *c, const char *root, int n_new,
		     uint32_t ctx, struct ps_comm **newcomm);

/* psc_comm_wait (comm/comm.h), out of line. */
int psc_comm_await(struct ps_comm *c, ps_comm_request_t *req,
		   ps_comm_status_t *status, double deadline, const char *what);

/*
 * A communicator over the ranks of parent listed in ranks (n of them, in
 * their new order), this rank being me among them, sharing parent's
 * endpoint under context id ctx. Returns 0 or PS_COMM_ERR_NOMEM.
 */
int psc_comm_create_sub(struct ps_comm *parent, const int *ranks, int n,
			int me, uint32_t ctx, struct ps_comm **out);


/*
 * Agreement and shrink, the communicator's side (lib/coll/agree.c has
 * the public calls and the fast path). Calls on one communicator come in
 * the same order on every rank, one at a time.
 *
 * psc_comm_agree_seq: the sequence number of a new agreement on c (1,
 * 2, ...), or 0, with c's error set, when c has more than one rank and
 * no liveness monitor.
 *
 * psc_comm_failed: whether c failed here (a death, an abort, a revoke).
 *
 * psc_comm_agree_star: c's seq-th agreement through the liveness star
 * (psc_live_agree: flag and next in and out); its failed set becomes
 * c's agreed one. Returns a PS_COMM_ERR_* value, recording words headed
 * by what.
 *
 * psc_comm_agree_decided: every rank of c completed the seq-th
 * agreement on the fabric, with flag and next: record it for ranks that
 * did not (psc_live_agree_decided); c's agreed failed set becomes empty.
 * Returns 0 or PS_COMM_ERR_NOMEM.
 *
 * psc_comm_usable: whether c's endpoints can still be used: false once a
 * node-local death on shared memory poisoned one.
 *
 * psc_comm_shrink_to: the communicator of c's ranks outside its agreed
 * failed set, in their order, under context id ctx, in *newcomm. On c's
 * endpoints (the world's goodbye moves to it), unless rebuild (agreed:
 * some survivor's endpoints are not usable): then psc_comm_rebuild, and
 * the survivors bootstrap it as a world on fresh endpoints, at the
 * rendezvous psc_comm_grow_root gives for its rank 0 (PS_COMM_ERR_NOTSUP
 * with words when there is none; PS_COMM_ERR_PEER when a survivor died
 * meanwhile).
 */
uint32_t psc_comm_agree_seq(struct ps_comm *c);
bool psc_comm_failed(struct ps_comm *c);
int psc_comm_agree_star(struct ps_comm *c, uint32_t seq, uint32_t *flag,
			uint32_t *next, const char *what);
int psc_comm_agree_decided(struct ps_comm *c, uint32_t seq, uint32_t flag,
			   uint32_t next);
bool psc_comm_usable(struct ps_comm *c);
int psc_comm_shrink_to(struct ps_comm *c, uint32_t ctx, bool rebuild,
		       struct ps_comm **newcomm);
int psc_comm_rebuild(struct ps_comm *c, uint32_t ctx,
		     struct ps_comm **newcomm);

#endif /* PSC_COMM_VIEW_H */
