/*
 * Provider selection, pure functions over fi_info lists so tests can run
 * them on recorded entries: pscomm's hints, the query with its fallback,
 * and the choice of entry by profile, interface and NIC locality.
 */
#ifndef PSC_SELECT_H
#define PSC_SELECT_H

#include <stdbool.h>

#include "fabric/fabric.h"
#include "ps_comm/info.h"

/*
 * fi_getinfo's signature, so tests and ps_comm_info --replay can replay
 * recorded entries; the public type of <ps_comm/info.h>.
 */
typedef ps_comm_info_getinfo_fn psc_getinfo_fn;

/*
 * How far an entry's NIC is from this process: 0 when the process runs
 * only on CPUs local to the NIC, 1 when some are, 2 when none are; -1
 * when unknown. arg is the selection's distance_arg.
 */
typedef int (*psc_nic_distance_fn)(const struct fi_info *info, void *arg);

/* One provider selection: inputs, then what psc_fab_select found. */
struct psc_select {
	const struct psc_params *params; /* NULL: no parameter overrides */
	const struct psc_iface *iface;	 /* NULL: no IP preference */
	psc_nic_distance_fn distance;	 /* NULL: no locality preference */
	void *distance_arg;
	int rank;			 /* for log lines */
	enum psc_fab_role role;		 /* which providers may serve */
	bool sw_match;			 /* software matching wanted */
	int min_rank;			 /* role NET: skip providers ranked
					  * before it (psc_provider_net_rank):
					  * those that failed to open */
	const struct fi_info *pick;	 /* out: points into the list */
	struct psc_caps caps;		 /* out: derived, params applied */
	int nic_distance;		 /* out: the pick's, -1 unknown */
	char rejects[512];		 /* out: "name (reason); ..." */
};

/*
 * Ask gi (fi_getinfo when NULL, or a replay) for entries with pscomm's hints for
 * prov_name (NULL: any). When nothing matches, ask again without
 * FI_ORDER_SAS (opx) and set *relaxed. Returns 0 with *list to free with
 * fi_freeinfo, or gi's negative error. Blocking only as gi is.
 */
int psc_fab_query(psc_getinfo_fn gi, const char *prov_name,
		 struct fi_info **list, bool *relaxed);

/*
 * Choose the entry of list an endpoint uses. The first entry its profile
 * accepts (and that, for IP-addressed providers, carries s->iface's
 * address, unless the family's interface variable such as FI_TCP_IFACE
 * is set) fixes provider and address format, so all ranks agree: first
 * in libfabric's order, or for s->role NET (where shm never serves) the
 * first of the best provider in pscomm's preference order, hardware
 * first and tcp last (psc_provider_net_rank); among
 * the entries of that provider and format (for role NET, none ranked
 * before s->min_rank), the NIC nearest to the
 * process by s->distance wins, ties keeping libfabric's order (no
 * reordering when FI_VERBS_IFACE and the like are set). Fills s->pick,
 * s->caps (with PS_COMM_MAX_MSG_SIZE and PS_COMM_SW_MATCH applied),
 * s->nic_distance and s->rejects. Returns s->pick, NULL if none fits.
 * Pure: no libfabric calls, so tests run it on replayed lists.
 */
const struct fi_info *psc_fab_select(const struct fi_info *list,
				    struct psc_select *s);

/*
 * pscomm's fi_getinfo hints, for one provider after its profile's
 * fixup_hints (prov_name NULL: any provider). Caller frees with
 * fi_freeinfo; NULL when out of memory.
 */
struct fi_info *psc_fab_hints(const char *prov_name);

#endif /* PSC_SELECT_H */
