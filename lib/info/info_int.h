/*
 * Inside the fabric report (<ps_comm/info.h>): the state its sections
 * share, the provider sections (providers.c) and the formatting helpers
 * (format.c).
 * lib/info is the top layer of the library: it reads every module below
 * it and nothing calls it but the public entry points.
 */
#ifndef PSC_INFO_INT_H
#define PSC_INFO_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fabric/select.h"
#include "net/net.h"
#include "util/param.h"

/* What every section of one report needs; filled by info.c. */
struct psc_info {
	FILE *out;
	bool verbose;		     /* PS_COMM_INFO_VERBOSE */
	struct psc_params params;
	bool params_ok;		     /* psc_params_load succeeded */
	char params_err[256];
	const char *filter;	     /* FI_PROVIDER, or NULL */
	struct psc_iface iface;	     /* the interface a rank would use */
	bool have_iface;
	psc_getinfo_fn gi;	     /* fi_getinfo, or the caller's */
	const struct fi_info *replayed; /* the caller's recorded entries */
	const char *replay_name;     /* where they came from */
	bool topo;		     /* PS_COMM_INFO_TOPO */
	const char *topo_xml;	     /* the topology to draw, NULL: here */
	int open_ranks;		     /* PS_COMM_INFO_OPEN: the job size
				      * endpoints are sized for; 0: off */
	struct psc_info_opened *opened; /* what opening each found */
};

/* With PS_COMM_INFO_OPEN: whether each provider tried opened. */
#define PSC_INFO_OPENED_MAX 32
struct psc_info_opened {
	size_t n;
	struct {
		char name[64];	     /* full provider name */
		int rc;		     /* psc_fab_try_open's */
	} p[PSC_INFO_OPENED_MAX];
};

/*
 * The providers section: every core provider libfabric lists (or the
 * recorded entries hold), usable with its attributes or why not, and the
 * families this libfabric lacks. Writes to cx->out; never fails.
 */
void psc_info_providers(const struct psc_info *cx);

/*
 * The choice: the entry ps_comm_init would pick (first usable entry in
 * libfabric's order, with the chosen interface, then the nearest NIC)
 * and its NIC's locality. Writes to cx->out; never fails.
 */
void psc_info_choice(const struct psc_info *cx);

/*
 * The topology section (topology.c): the drawing of this machine or of
 * cx->topo_xml (lib/fabric/topo.h), each NIC labelled with the providers
 * whose entries sit on it (same PCI address, or a domain named after one
 * of its OS devices: mlx5_0, eth0, efa_0-rdm), then the providers on no
 * NIC drawn. Writes to cx->out; never fails (an unreadable file is
 * reported in the section).
 */
void psc_info_topology(const struct psc_info *cx);

/* ------------------------------------------------------ format.c */

/*
 * A byte count as "SIZE_MAX", an exact K/M/G/T multiple ("16Ki"), or
 * bytes, so that limits read at a glance.
 */
void psc_info_fmt_size(size_t v, char *buf, size_t len);

/* mr_mode bits as names joined by '|' ("LOCAL|PROV_KEY"), or "none". */
void psc_info_fmt_mr_mode(int mr, char *buf, size_t len);

/* An entry's source address in its own format's notation, or "none". */
void psc_info_fmt_src_addr(const struct fi_info *i, char *buf, size_t len);

/* Providers may leave a name unset: s, or "?" when it is NULL. */
const char *psc_info_nz(const char *s);

/* Append s to the ", "-separated list in buf unless it is already there. */
void psc_info_list_add(char *buf, size_t len, const char *s);

#endif /* PSC_INFO_INT_H */
