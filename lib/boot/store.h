/*
 * The rendezvous store: a small set/get interface with tcp, file and pmix
 * backends, used only during bootstrap. Every call is bounded by the
 * store's deadline.
 */
#ifndef PSC_STORE_H
#define PSC_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/auth.h"
#include "util/param.h"

struct psc_store;

/*
 * A tcp rendezvous's part in ps_comm_grow, set before
 * psc_store_tcp_open (zero: none):
 * - grow_from > 0 (at rank 0): the root serves a grow, where the ranks
 *   from grow_from to size - 1 go to processes that join, in the order
 *   they prove the job key, each told grant;
 * - fixed_gen: every rank claims generation gen (agreed by the grow's
 *   old ranks), not this process's next one;
 * - dead(dead_arg, why, len) is true, with words, once a rank of the
 *   communicator that grows is known dead: rank 0's server then aborts
 *   the grow, and an old rank that cannot reach rank 0 gives up, instead
 *   of waiting for PS_COMM_TIMEOUT. NULL: none.
 * A process that joins a grow opens the store as rank -1 instead: the
 * root gives it a rank, and the open fills rank, size and grant.
 */
struct psc_store_grow {
	int grow_from;
	uint32_t grant;
	bool fixed_gen;
	uint32_t gen;
	bool (*dead)(void *arg, char *why, size_t len);
	void *dead_arg;
};

/*
 * A rendezvous store (tcp, file, pmix). Keys are published by a rank and
 * read by rank. All calls block at most until the store's deadline and
 * fail with -ETIMEDOUT then; errors leave a message in the store's err.
 */
struct psc_store_ops {
	size_t size;
	const char *name;
	/* Publish key=val as this rank. */
	int (*put)(struct psc_store *s, const char *key, const void *val,
		   size_t len);
	/* Make this rank's puts visible to all (PMIx fence); may block. */
	int (*commit)(struct psc_store *s);
	/* Read key as published by rank, waiting for it. *val is malloc'd. */
	int (*get)(struct psc_store *s, int rank, const char *key, void **val,
		   size_t *len);
	/* This rank is done with the store; blocks until all are (root). */
	int (*finish)(struct psc_store *s);
	/* Free everything. Never blocks for long. */
	void (*close)(struct psc_store *s);
};

struct psc_store {
	const struct psc_store_ops *ops;
	int rank;
	int size;
	double deadline; /* psc_now() + PS_COMM_TIMEOUT */
	char err[512];
	/*
	 * The rendezvous id that records are bound to (net/auth.h): the
	 * tcp root's random session, all zero for file and pmix.
	 */
	uint8_t session[PSC_AUTH_SESSION_LEN];
	/* A key the backend made for a job that set none (pmix), or "". */
	char made_key[PSC_AUTH_MADE_LEN + 1];
	struct psc_store_grow grow; /* tcp only */
	void *priv;
};

/*
 * Open a store backend. spec is "tcp", "file:DIR", "pmix" or "pmi2"; root is the
 * "host:port" for tcp. Returns 0 or a negative errno with s->err set.
 */
int psc_store_tcp_open(struct psc_store *s, const char *root,
		       const struct psc_params *p,
		       const struct psc_auth_key *key);
int psc_store_file_open(struct psc_store *s, const char *dir);
/* With make_key, rank 0 makes a random job key and hands it out. */
int psc_store_pmix_open(struct psc_store *s, bool make_key);
/*
 * PMI2 (Slurm's libpmi2, srun --mpi=pmi2): put hex-encodes values in
 * pieces that fit PMI2's 1024-byte values, commit is PMI2_KVS_Fence.
 * With make_key, as for PMIx. -ENOSYS when built without it.
 */
int psc_store_pmi2_open(struct psc_store *s, bool make_key);
/* Whether PMI2 support is compiled in and a PMI2 server is present. */
bool psc_store_pmi2_available(void);
/*
 * Rank 0 makes a random job key (hex, in s->made_key) and every rank
 * reads it through s's put, commit and get. Returns 0 or a negative
 * errno with s->err set.
 */
int psc_store_share_key(struct psc_store *s);
/* Whether PMIx support is compiled in and a PMIx server is present. */
bool psc_store_pmix_available(void);
/* Rank and size as PMIx reports them; -ENOSYS without PMIx. */
int psc_store_pmix_rank_size(int *rank, int *size);

#endif /* PSC_STORE_H */
