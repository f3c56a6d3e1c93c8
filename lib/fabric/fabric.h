/*
 * The fabric layer's endpoint: the libfabric objects of one endpoint
 * (fabric, domain, endpoint, CQ, AV) chosen from fi_getinfo by provider
 * profile, opened as a staged sequence that unwinds on error, and closed
 * in libfabric's order. The core layer embeds a struct psc_fab in its
 * endpoint and serialises every call on it with that endpoint's lock;
 * nothing above the core sees these objects.
 */
#ifndef PSC_FABRIC_H
#define PSC_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_tagged.h>

#include "net/net.h"
#include "provider.h"
#include "util/param.h"

/* The libfabric API version pscomm asks for. */
#define PSC_FI_VERSION FI_VERSION(1, 9)

enum psc_wait_mode { PSC_WAIT_POLL, PSC_WAIT_FD, PSC_WAIT_SREAD };

struct psc_mr_cache;

/* One endpoint's libfabric objects and what its provider can do. */
struct psc_fab {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_wait *wait_set; /* the CQ's, with caps.wait_set; or NULL */
	struct fid_av *av;
	const struct psc_provider_ops *prov;
	struct psc_caps caps;
	enum psc_wait_mode wait_mode;
	int wait_fd;
	uint8_t name[256];	   /* fi_getname */
	size_t namelen;
	int rank;		   /* for log lines */
	char iface[64];		   /* interface used, or "" */
	struct psc_mr_cache *mr;   /* registrations of this domain */
	bool mr_local;		   /* a descriptor with every buffer */
	/*
	 * Role NET: the providers that failed to open before this one,
	 * each with why ("P: STEP failed: WHY; ..."), or "".
	 */
	char fell_back[768];
};

/*
 * Which providers an endpoint may use: ANY is FI_PROVIDER's choice, or
 * libfabric's first; NET the best provider between nodes (never shm), in
 * pscomm's preference order (psc_fab_select); SHM shared memory only.
 */
enum psc_fab_role { PSC_ROLE_ANY, PSC_ROLE_NET, PSC_ROLE_SHM };

/* How an endpoint is chosen and opened. */
struct psc_fab_config {
	const struct psc_params *params;
	const struct psc_iface *iface; /* NULL: no IP preference */
	int rank;
	enum psc_fab_role role;
	bool sw_match;		       /* match in software if at all possible */
	bool poll_wait;		       /* no CQ wait object: waits yield and
					* sleep (PS_COMM_WAIT) */
	int universe;		       /* the job's ranks, which size
					* libfabric's per-peer structures
					* (FI_UNIVERSE_SIZE) if this is the
					* process's first endpoint; 0 unknown */
	int min_rank;		       /* role NET: start at this rank of
					* pscomm's order, skipping better
					* providers (psc_provider_net_rank) */
};

/*
 * Choose a provider entry (honouring FI_PROVIDER, preflight first) and
 * open fabric, domain, CQ, AV, endpoint and the MR cache into f, which
 * the caller zeroed. For role NET, a provider that fails to open is
 * logged and the next one in pscomm's order is tried (f->fell_back says
 * which failed and why); the other roles serve a provider the user
 * named, or the van, whose peers cannot follow a fallback, and fail.
 * Returns 0, or a negative errno with a message in err; -ENODATA
 * ("nothing usable") lists the providers installed. On failure nothing
 * is left open.
 */
int psc_fab_open(struct psc_fab *f, const struct psc_fab_config *cfg,
		 char *err, size_t len);

/*
 * Open and close again, in psc_fab_open's steps and with its attributes,
 * an endpoint on entry (a copy is taken), to tell whether the provider
 * opens here: 0, or the failure's negative errno with the step, the
 * reason and the profile's explanation in err. Never falls back. Calls
 * psc_preflight_env first (ranks sizes FI_UNIVERSE_SIZE, as for a job of
 * that many ranks). p, the settings (the registration cache's), must
 * not be NULL. Blocking only as libfabric's open and close are.
 */
int psc_fab_try_open(const struct fi_info *entry,
		     const struct psc_params *p, int ranks, char *err,
		     size_t len);

/*
 * Close the endpoint only: no completion arrives after it, so the caller
 * may free the requests libfabric held. Then psc_fab_close closes the
 * MR cache, AV, CQ, domain and fabric, in that order.
 */
/*
 * fi_wait(f->wait_set, 0): -FI_ETIMEDOUT when nothing is pending, which
 * also clears the completions' signal. Only for f->wait_set != NULL
 * (never so in a build against libfabric 2.x headers: -FI_ENOSYS).
 */
int psc_fab_wait_set_try(struct psc_fab *f);

void psc_fab_close_ep(struct psc_fab *f);
void psc_fab_close(struct psc_fab *f);

/*
 * Insert one peer address (as fi_getname returned it) into the AV; in
 * rank order, FI_AV_TABLE indices equal ranks. Returns 0 or a negative
 * errno. The caller holds the endpoint's lock or has it alone.
 */
int psc_fab_av_insert(struct psc_fab *f, const void *addr,
		      fi_addr_t *fi_addr);

/* The provider's name ("tcp;ofi_rxm") and address format. */
const char *psc_fab_provider(const struct psc_fab *f);
uint32_t psc_fab_addr_format(const struct psc_fab *f);

/*
 * Check that the libfabric found at run time is not older than the one
 * pscomm was built against. Returns 0, or -ENOSYS with the fix in err.
 */
int psc_fab_check_version(char *err, size_t len);

/* "libfabric 1.17" for log lines. */
void psc_fab_version(char *buf, size_t len);

/* fi_strerror, for callers that must not call libfabric themselves. */
const char *psc_fab_strerror(int err);

/*
 * Every provider libfabric has loaded (FI_PROV_ATTR_ONLY: those that
 * FI_PROVIDER hides are listed too), into *all to free with
 * psc_fab_freeinfo. Returns 0 or fi_getinfo's negative error.
 */
int psc_fab_providers(struct fi_info **all);

/*
 * What this process's first fi_getinfo cost (it loads and initialises
 * every provider): CPU seconds of the calling thread and wall seconds.
 * False before that call. Thread-safe.
 */
bool psc_fab_first_cost(double *cpu, double *wall);

/*
 * That cost in words for users ("" before the first call), with what
 * libfabric before 1.19 spends in it.
 */
void psc_fab_first_cost_words(char *buf, size_t len);

/* fi_freeinfo, for callers that must not call libfabric themselves. */
void psc_fab_freeinfo(struct fi_info *list);

/* The name libfabric gives an address format ("FI_SOCKADDR_IN"). */
const char *psc_fab_addr_format_name(uint32_t addr_format);

#endif /* PSC_FABRIC_H */
