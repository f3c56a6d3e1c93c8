/*
 * pscomm's fabric report, the one `ps_comm_info` prints: the pscomm and
 * libfabric versions, the interface and CPU placement a rank would get,
 * every libfabric provider with whether pscomm can use it (and the
 * attributes that decide its behaviour, or the reason it cannot), the
 * provider and NIC ps_comm_init would choose, the collective algorithms
 * with their thresholds and, on request, the parameter table and a
 * drawing of the machine's topology (packages, NUMA nodes, cores and the
 * NICs near each, with the providers that use them). It asks
 * libfabric with the hints ps_comm_init uses and judges each entry with
 * the same provider profiles, so its verdict is the library's. It opens
 * no fabric unless asked to (PS_COMM_INFO_OPEN), so it is safe to call
 * anywhere.
 *
 * The report can also judge entries recorded elsewhere (`fi_info -v`
 * output): the caller passes them with a replacement for fi_getinfo that
 * answers from them.
 *
 * Every function returns 0 or a negative PS_COMM_ERR_* code.
 */
#ifndef PS_COMM_INFO_H
#define PS_COMM_INFO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ps_comm.h"

#ifdef __cplusplus
extern "C" {
#endif

struct fi_info;

/*
 * fi_getinfo's signature (<rdma/fabric.h>), for a replacement that
 * answers from recorded entries: 0 with a list the report frees with
 * fi_freeinfo, or a negative FI_E* code (-FI_ENODATA: no entry fits).
 */
typedef int (*ps_comm_info_getinfo_fn)(uint32_t version, const char *node,
				       const char *service, uint64_t flags,
				       const struct fi_info *hints,
				       struct fi_info **info);

/* Sections added to the report (ps_comm_info_opts_t.flags). */
#define PS_COMM_INFO_PARAMS 0x1u  /* the parameter table (PS_COMM_*) */
#define PS_COMM_INFO_VERBOSE 0x2u /* each entry's fabric, domain and */
				  /* address; each provider's tunables */
#define PS_COMM_INFO_TOPO 0x4u	  /* the topology drawing */
#define PS_COMM_INFO_OPEN 0x8u	  /* open an endpoint on every usable */
				  /* provider and say what fails, and */
				  /* the choice after any fallback */

/*
 * What the report covers. Call ps_comm_info_opts_init() first: it sets
 * size and leaves every other field at "this machine, default sections".
 * Fields may be added at the end in later versions; size records the
 * caller's view, so older callers keep working.
 */
typedef struct ps_comm_info_opts {
	size_t size;	 /* set by ps_comm_info_opts_init() */
	unsigned flags;	 /* PS_COMM_INFO_* bits */
	/*
	 * Where entries come from: NULL for libfabric's fi_getinfo, or a
	 * replacement that answers from recorded entries.
	 */
	ps_comm_info_getinfo_fn getinfo;
	/*
	 * The recorded entries getinfo answers from, or NULL to judge this
	 * machine's. When set, the providers listed are theirs, a provider
	 * getinfo finds nothing for is judged by its recorded entries,
	 * FI_PROVIDER is ignored (it filters libfabric, not a recording) and
	 * NIC locality is not measured. Read only; owned by the caller.
	 */
	const struct fi_info *entries;
	/* Where entries came from (a file name), shown in the report. */
	const char *entries_name;
	/*
	 * With PS_COMM_INFO_TOPO: an hwloc XML file (`lstopo FILE.xml`) to
	 * draw instead of this machine, or NULL. Its NICs are matched to
	 * providers only when entries are set too (a recording of the same
	 * machine), since this machine's libfabric does not describe it.
	 */
	const char *topo_xml;
	/*
	 * With PS_COMM_INFO_OPEN: the job size the endpoints are sized for
	 * (FI_UNIVERSE_SIZE, as ps_comm_init sets it), or 0 for the size
	 * ps_comm_init would read from the environment (PS_COMM_SIZE or
	 * the launcher's), 1 when none is set.
	 */
	int open_ranks;
} ps_comm_info_opts_t;

/*
 * Fill opts with the defaults: the current size, no extra section, this
 * machine's libfabric. Returns PS_COMM_ERR_ARG when opts is NULL.
 */
PS_COMM_API int ps_comm_info_opts_init(ps_comm_info_opts_t *opts);

/*
 * Print the report to out, as `ps_comm_info` does; opts NULL means the
 * defaults. It reads the environment (PS_COMM_*, FI_PROVIDER, the
 * providers' variables) as ps_comm_init would and changes nothing;
 * with PS_COMM_INFO_OPEN it first sets what ps_comm_init sets before
 * libfabric loads (fork safety, job UUIDs, FI_UNIVERSE_SIZE), which
 * works only if nothing in the process called libfabric before, then
 * opens and closes an endpoint on each usable provider (fabric, domain,
 * CQ, AV, endpoint, enable, registration cache).
 * Settings ps_comm_init would reject, or finding no usable provider, are
 * part of the report, not errors. Blocks only while libfabric (or
 * getinfo) and hwloc answer; safe on any thread when getinfo is.
 *
 * Errors: PS_COMM_ERR_ARG for a NULL out, an opts not set up by
 * ps_comm_info_opts_init(), unknown flags, entries without getinfo, or
 * PS_COMM_INFO_OPEN with entries (recorded entries cannot be opened);
 * PS_COMM_ERR_SYSTEM when writing to out failed (the report may then be
 * incomplete).
 */
PS_COMM_API int ps_comm_info_print(FILE *out, const ps_comm_info_opts_t *opts);

#ifdef __cplusplus
}
#endif

#endif /* PS_COMM_INFO_H */
