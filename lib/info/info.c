/*
 * The fabric report behind <ps_comm/info.h> and `ps_comm_info`: it reads
 * the settings as ps_comm_init would, then prints the versions, the
 * interface and CPU placement a rank would get, the providers and the
 * choice (providers.c), the collective algorithm table and, on request,
 * the topology drawing (topology.c), the parameter table and an attempt
 * to open each usable provider. Each section reports what it cannot find
 * rather than failing, so the report explains a machine where pscomm
 * cannot run.
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>

#include "boot/boot.h"
#include "coll/coll.h"
#include "fabric/fabric.h"
#include "fabric/preflight.h"
#include "fabric/topo.h"
#include "info/info_int.h"
#include "ps_comm/info.h"
#include "util/util.h"

/* The size of the first ps_comm_info_opts_t: what every caller sets. */
#define OPTS_SIZE_V1                                                           \
	(offsetof(ps_comm_info_opts_t, entries_name) + sizeof(const char *))

#define KNOWN_FLAGS                                                            \
	(PS_COMM_INFO_PARAMS | PS_COMM_INFO_VERBOSE | PS_COMM_INFO_TOPO |      \
	 PS_COMM_INFO_OPEN)

/* ---------------------------------------------------------- versions */

static void print_versions(FILE *out)
{
	char rt[64];

	/* "libfabric 1.17": the version found at run time. */
	psc_fab_version(rt, sizeof(rt));
	fprintf(out, "pscomm %s\n", ps_comm_version());
	fprintf(out, "%s at run time (built against %d.%d; pscomm asks for "
		"API %u.%u)\n", rt, FI_MAJOR_VERSION, FI_MINOR_VERSION,
		FI_MAJOR(PSC_FI_VERSION), FI_MINOR(PSC_FI_VERSION));
}

/* -------------------------------------------------------- placement */

/*
 * Choose the interface as the bootstrap would for a multi-rank job:
 * PS_COMM_IFNAME, and PS_COMM_ROOT when set (a loopback root allows
 * loopback). Prints the result or the reason there is none.
 */
static void choose_iface(struct psc_info *cx)
{
	const char *spec = getenv("PS_COMM_IFNAME");
	const char *root = getenv("PS_COMM_ROOT");
	struct sockaddr_storage ss;
	struct psc_hostport hp;
	socklen_t sl;
	bool have_root = false;
	char err[1024];

	if (root && *root) {
		if (psc_hostport_parse(root, &hp) != 0)
			fprintf(cx->out, "  PS_COMM_ROOT=\"%s\" is not "
				"host:port; ignored\n", root);
		else if (psc_resolve(&hp, &ss, &sl, err, sizeof(err)) != 0)
			fprintf(cx->out, "  PS_COMM_ROOT=\"%s\": %s; ignored\n",
				root, err);
		else
			have_root = true;
	}
	cx->have_iface = psc_iface_choose(spec, have_root ?
					  (struct sockaddr *)&ss : NULL,
					  AF_UNSPEC, &cx->iface, err,
					  sizeof(err)) == 0;
	if (!cx->have_iface) {
		fprintf(cx->out, "  interface: none: %s\n", err);
		return;
	}
	fprintf(cx->out, "  interface: %s, address %s (%s%s%s)\n",
		cx->iface.name, cx->iface.addrstr, have_root ?
		"routes to PS_COMM_ROOT=" :
		"no usable PS_COMM_ROOT, so no loopback",
		have_root ? root : "", spec && *spec ? "; PS_COMM_IFNAME set"
						     : "");
}

static void print_placement(struct psc_info *cx)
{
	char topo[512];

	fprintf(cx->out, "\nThis process, as one rank of a multi-rank job:\n");
	choose_iface(cx);
	psc_topo_describe(topo, sizeof(topo));
	fprintf(cx->out, "  placement: %s\n", topo);
}

/* -------------------------------------------------------- parameters */

/* The value of parameter k as the library would read it now. */
static void param_current(const struct psc_info *cx, size_t k, char *buf,
			  size_t len)
{
	const struct psc_param_desc *d = &psc_param_table[k];
	const char *env = getenv(d->name);

	/*
	 * A secret: that it is set is all the report may say, whether it
	 * came from the environment or from PS_COMM_JOB_KEY_FILE.
	 */
	if (strcmp(d->name, "PS_COMM_JOB_KEY") == 0 &&
	    ((env && *env) || (cx->params_ok && *cx->params.job_key)))
		snprintf(buf, len, "(hidden)");
	/* After a load error the struct is partial: show the raw text. */
	else if (!cx->params_ok)
		snprintf(buf, len, "%s", env && *env ? env : d->def);
	else
		psc_param_format(&cx->params, d, buf, len);
	if (!*buf)
		snprintf(buf, len, "\"\"");
}

static void print_params(const struct psc_info *cx)
{
	char cur[256];

	fprintf(cx->out, "\nParameters (agree: must be identical on every "
		"rank):\n");
	if (!cx->params_ok)
		fprintf(cx->out, "  error: %s\n", cx->params_err);
	fprintf(cx->out, "  %-22s %-5s %-8s %s\n", "NAME", "AGREE", "DEFAULT",
		"CURRENT");
	for (size_t k = 0; k < psc_param_count; k++) {
		const struct psc_param_desc *d = &psc_param_table[k];
		const char *env = getenv(d->name);

		param_current(cx, k, cur, sizeof(cur));
		fprintf(cx->out, "  %-22s %-5s %-8s %s%s\n", d->name,
			d->agree ? "yes" : "no", *d->def ? d->def : "\"\"",
			cur, env && *env ? " (from the environment)" : "");
		fprintf(cx->out, "      %s\n", d->help);
	}
}

/* ------------------------------------------------------------ report */

/*
 * Check opts (NULL: the defaults) and copy the caller's view of it into
 * o, later fields zeroed. Returns 0 or PS_COMM_ERR_ARG.
 */
static int read_opts(const ps_comm_info_opts_t *opts, ps_comm_info_opts_t *o)
{
	memset(o, 0, sizeof(*o));
	if (!opts)
		return 0;
	if (opts->size < OPTS_SIZE_V1)
		return PS_COMM_ERR_ARG;
	memcpy(o, opts, PSC_MIN(opts->size, sizeof(*o)));
	if ((o->flags & ~KNOWN_FLAGS) || (o->entries && !o->getinfo) ||
	    ((o->flags & PS_COMM_INFO_OPEN) && o->entries) ||
	    o->open_ranks < 0)
		return PS_COMM_ERR_ARG;
	return 0;
}

/*
 * The job size --open sizes endpoints for: the caller's, or the one
 * ps_comm_init would read from the environment, or 1.
 */
static int open_ranks(const ps_comm_info_opts_t *o)
{
	char err[256];
	int rank, size;

	if (o->open_ranks > 0)
		return o->open_ranks;
	if (psc_env_rank_size(&rank, &size, err, sizeof(err)) != 0)
		return 1;
	return size;
}

/* The settings every section reads, as ps_comm_init would read them. */
static void load_context(struct psc_info *cx, FILE *out,
			 const ps_comm_info_opts_t *o)
{
	memset(cx, 0, sizeof(*cx));
	cx->out = out;
	cx->verbose = o->flags & PS_COMM_INFO_VERBOSE;
	cx->params_ok = psc_params_load(&cx->params, cx->params_err,
					sizeof(cx->params_err)) == 0;
	/* psc_fab_query (lib/fabric) calls it, or fi_getinfo for NULL. */
	cx->gi = o->getinfo;
	cx->replayed = o->entries;
	cx->replay_name = o->entries_name ? o->entries_name : "the caller";
	cx->topo = o->flags & PS_COMM_INFO_TOPO;
	cx->topo_xml = o->topo_xml;
	/* FI_PROVIDER filters libfabric, not recorded entries. */
	cx->filter = o->entries ? NULL : getenv("FI_PROVIDER");
	if (cx->filter && !*cx->filter)
		cx->filter = NULL;
	if (o->flags & PS_COMM_INFO_OPEN) {
		cx->open_ranks = open_ranks(o);
		/* What ps_comm_init sets before libfabric loads. */
		psc_preflight_env(cx->params_ok ? &cx->params : NULL, -1,
				  cx->open_ranks);
	}
}

int ps_comm_info_opts_init(ps_comm_info_opts_t *opts)
{
	if (!opts)
		return PS_COMM_ERR_ARG;
	memset(opts, 0, sizeof(*opts));
	opts->size = sizeof(*opts);
	return 0;
}

int ps_comm_info_print(FILE *out, const ps_comm_info_opts_t *opts)
{
	struct psc_info_opened opened = {0};
	ps_comm_info_opts_t o;
	struct psc_info cx;

	if (!out || read_opts(opts, &o) != 0)
		return PS_COMM_ERR_ARG;
	load_context(&cx, out, &o);
	cx.opened = &opened;
	print_versions(out);
	/* Every later section assumes valid settings: say so up front. */
	if (!cx.params_ok)
		fprintf(out, "\nerror: %s; ps_comm_init would fail\n",
			cx.params_err);
	print_placement(&cx);
	psc_info_providers(&cx);
	psc_info_choice(&cx);
	if (cx.topo)
		psc_info_topology(&cx);
	if (cx.params_ok) {
		fprintf(out, "\n");
		psc_coll_print_table(out, &cx.params);
	}
	if (o.flags & PS_COMM_INFO_PARAMS)
		print_params(&cx);
	if (fflush(out) != 0 || ferror(out))
		return PS_COMM_ERR_SYSTEM;
	return 0;
}
