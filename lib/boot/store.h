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

#include "util/param.h"

struct psc_store;

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
	void *priv;
};

/*
 * Open a store backend. spec is "tcp", "file:DIR" or "pmix"; root is the
 * "host:port" for tcp. Returns 0 or a negative errno with s->err set.
 */
int psc_store_tcp_open(struct psc_store *s, const char *root,
		       const struct psc_params *p);
int psc_store_file_open(struct psc_store *s, const char *dir);
int psc_store_pmix_open(struct psc_store *s);
/* Whether PMIx support is compiled in and a PMIx server is present. */
bool psc_store_pmix_available(void);
/* Rank and size as PMIx reports them; -ENOSYS without PMIx. */
int psc_store_pmix_rank_size(int *rank, int *size);

/*
 * Job id for the tcp store: a hash of PS_COMM_JOB_KEY (of the empty key
 * when unset) in the high 48 bits; the low 16 count communicators.
 */
uint64_t psc_store_job_id(const struct psc_params *p);

#endif /* PSC_STORE_H */
