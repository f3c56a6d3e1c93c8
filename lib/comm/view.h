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


#endif /* PSC_COMM_VIEW_H */
