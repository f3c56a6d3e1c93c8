/*
 * Checks and environment set-up around provider selection: variables
 * that must be set before the first fi_getinfo, and warnings with their
 * fix once an entry is chosen.
 */
#ifndef PSC_PREFLIGHT_H
#define PSC_PREFLIGHT_H

#include <stdbool.h>
#include <stddef.h>

#include "provider.h"
#include "util/param.h"

struct fi_info;
struct sockaddr;

/*
 * Before the first fi_getinfo (lib/fabric/preflight.c): set every family's
 * fork-safety variable (RDMAV_FORK_SAFE, FI_EFA_FORK_SAFE) and job UUID
 * (FI_PSM2_UUID ..., derived from the job's identity) unless the user set
 * them; set FI_UNIVERSE_SIZE to ranks (the job's size; 0: unknown, left
 * alone), at most libfabric's default of 1024, unless the user set it;
 * set FI_SHM_DISABLE_CMA=1 when cross-memory attach is blocked; install
 * a pthread_atfork warning. Once per process (the first call decides),
 * thread-safe; p may be NULL. Never fails: problems are logged with
 * their fix.
 */
void psc_preflight_env(const struct psc_params *p, int rank, int ranks);

/* Who decided the FI_UNIVERSE_SIZE libfabric reads. */
enum psc_universe_from {
	PSC_UNIVERSE_DEFAULT, /* nobody: libfabric's default */
	PSC_UNIVERSE_USER,    /* the environment, before pscomm */
	PSC_UNIVERSE_JOB,     /* pscomm, from the job's size */
};

/*
 * The FI_UNIVERSE_SIZE libfabric reads (as far as pscomm knows: it was
 * not initialised before psc_preflight_env), and in *from (may be NULL)
 * who set it.
 */
size_t psc_preflight_universe(enum psc_universe_from *from);

/*
 * After an entry is chosen: warn with the fix when RLIMIT_MEMLOCK is too
 * low for a provider that pins memory, when /dev/shm is small for shm,
 * log the RoCE GID the endpoint will use (psc_preflight_roce_gid; a
 * warning only when there is something to do) and the NIC's locality
 * (nic_distance from psc_fab_select). Returns 0; a negative errno with err set is reserved
 * for conditions that make the provider unusable.
 */
int psc_preflight_check(const struct fi_info *info,
			const struct psc_caps *caps, int nic_distance,
			int rank, char *err, size_t len);

/* How much a RoCE GID finding needs the user (psc_roce_gid.level). */
enum psc_gid_level {
	PSC_GID_OK,	 /* nothing to do */
	PSC_GID_ADVICE,	 /* works, with limits: said once per job */
	PSC_GID_PROBLEM, /* will fail: said by every rank */
};

/* The GID a RoCE endpoint uses, as far as sysfs tells. */
struct psc_roce_gid {
	int index;		  /* the GID index in use; -1: none, unknown */
	enum psc_gid_level level;
	int suggest;		  /* an index to set gid_env to; -1: none */
	char line[384];		  /* what is used, for an info line */
	char why[640];		  /* with a level: the finding and its fix */
};

/*
 * Which GID of RoCE device dev (port 1) an endpoint uses, from sysfs under
 * fsroot ("" for this machine; tests build a tree elsewhere):
 * - from_addr (connections through rdma_cm: verbs;ofi_rxm): the GID of
 *   IP address addr (::ffff:a.b.c.d for IPv4, the address for IPv6) of
 *   the type rdma_cm asks for (the port's configfs default_roce_mode if
 *   set, else RoCE v2 where the port has v2 GIDs); a problem when the
 *   port has no such GID, as rdma_cm then cannot connect from addr.
 *   The profile's gid_env (FI_VERBS_GID_IDX) plays no part; the line
 *   says so when it is set.
 * - else (datagram endpoints: verbs;ofi_rxd): the index the profile's
 *   gid_env gives, or 0; a problem when no GID is there, advice when
 *   gid_env is unset and index
 *   0 is link-local or RoCE v1 while a routable RoCE v2 GID exists
 *   (suggest: its index).
 * Fills out; never fails (unreadable sysfs is said in out->line).
 */
void psc_preflight_roce_gid(const char *fsroot, const char *dev,
			    const struct sockaddr *addr, bool from_addr,
			    const struct psc_provider_ops *prov,
			    struct psc_roce_gid *out);

/*
 * The job UUID that ranks of one job derive alike: a hash of
 * PS_COMM_JOB_KEY, the rendezvous address and the launcher's job id
 * (SLURM_JOB_ID, PMIX_NAMESPACE ...), as "xxxxxxxx-xxxx-xxxx-xxxx-
 * xxxxxxxxxxxx" into buf (at least 37 bytes).
 */
void psc_preflight_job_uuid(const struct psc_params *p, char *buf,
			    size_t len);

/*
 * Whether process_vm_readv works between processes of this user here,
 * tested on this process itself; false in containers without
 * CAP_SYS_PTRACE or under a strict Yama ptrace_scope.
 */
bool psc_preflight_cma_works(void);

#endif /* PSC_PREFLIGHT_H */
