/*
 * ps_comm_info: the fabric explainer. It answers "why does pscomm (not)
 * run here?" without starting a job: the pscomm and libfabric versions,
 * the interface and CPU placement a rank would get, and for every
 * installed libfabric provider whether pscomm can use it, with the
 * attributes that decide its behaviour or the reason it cannot. It asks
 * libfabric with the very hints the library uses and judges each entry
 * with the library's own provider profiles, so its verdict is the
 * library's. -p adds the parameter table, -v one line per fi_info entry.
 *
 * It links the internal convenience library, so it may use psc_*
 * internals; it never opens a fabric, so it is safe to run anywhere.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "coll/coll.h"
#include "core/tag.h"
#include "fabric/fabric.h"
#include "fabric/select.h"
#include "fabric/topo.h"
#include "net/net.h"
#include "replay/replay.h"
#include "util/param.h"
#include "util/util.h"


enum {
	EXIT_USAGE = 2,
	MAX_GROUPS = 8,	   /* distinct full names one provider returns */
	MAX_INSTALLED = 64, /* core providers listed */
};

static const char progname[] = "ps_comm_info";

struct options {
	bool params;  /* -p: parameter table */
	bool verbose; /* -v: one line per fi_info entry */
	const char *replay; /* --replay FILE: judge a recorded fi_info -v */
};

/* What the rest of the report needs from the environment. */
struct context {
	struct options opt;
	struct psc_params params;
	bool params_ok;		 /* psc_params_load succeeded */
	char params_err[256];
	const char *filter;	 /* FI_PROVIDER, or NULL */
	struct psc_iface iface;
	bool have_iface;
	psc_getinfo_fn gi;	 /* fi_getinfo, or the replay of --replay */
	struct fi_info *replayed; /* the --replay file's entries */
};

/* The entries of one provider that share a full name ("tcp;ofi_rxm"). */
struct group {
	const char *name;	   /* points into the fi_info list */
	const struct fi_info *pick; /* first accepted entry, or NULL */
	char why[160];		   /* the first rejection's reason */
	size_t entries, accepted;
	bool on_iface;		   /* an accepted entry has the iface's IP */
	char domains[256];	   /* of the accepted entries */
};

static void usage(FILE *f)
{
	fprintf(f, "usage: %s [-p] [-v] [-h] [--replay FILE]\n", progname);
}

static void help(void)
{
	usage(stdout);
	printf("Explain which libfabric providers pscomm can use here.\n"
	       "  -p  add the parameter table (PS_COMM_* variables)\n"
	       "  -v  add fabric, domain and address of every entry, and "
	       "each provider's tunables\n"
	       "  -h  print this help\n"
	       "  --replay FILE  judge the entries of a recorded `fi_info -v` "
	       "instead of this machine's\n");
}

/*
 * Parse the command line into o. Returns 0 to run, 1 when help was
 * printed, or -1 on bad usage (usage line already on stderr).
 */
static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longs[] = {
		{"replay", required_argument, NULL, 'r'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	memset(o, 0, sizeof(*o));
	opterr = 0; /* our own message, in the usual one-line form */
	while ((c = getopt_long(argc, argv, "pvh", longs, NULL)) != -1) {
		switch (c) {
		case 'r':
			o->replay = optarg;
			break;
		case 'p':
			o->params = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'h':
			help();
			return 1;
		default:
			if (optopt)
				fprintf(stderr, "%s: unknown option -%c\n",
					progname, optopt);
			else
				fprintf(stderr, "%s: unknown option %s\n",
					progname, argv[optind - 1]);
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument \"%s\"\n", progname,
			argv[optind]);
		usage(stderr);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ format */

/*
 * Print a byte count as "SIZE_MAX", an exact K/M/G/T multiple, or bytes,
 * so that limits such as 16 KiB read at a glance.
 */
static void fmt_size(size_t v, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	unsigned u = 0;
	size_t n = v;

	if (v == SIZE_MAX) {
		snprintf(buf, len, "SIZE_MAX");
		return;
	}
	while (n >= 1024 && n % 1024 == 0 && u < sizeof(units) - 1) {
		n /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%zu", v);
	else
		snprintf(buf, len, "%zu%ci", n, units[u - 1]);
}

/* Decode mr_mode bits into names joined by '|', or "none". */
static void fmt_mr_mode(int mr, char *buf, size_t len)
{
	static const struct {
		int bit;
		const char *name;
	} bits[] = {
		{FI_MR_LOCAL, "LOCAL"},
		{FI_MR_RAW, "RAW"},
		{FI_MR_VIRT_ADDR, "VIRT_ADDR"},
		{FI_MR_ALLOCATED, "ALLOCATED"},
		{FI_MR_PROV_KEY, "PROV_KEY"},
		{FI_MR_MMU_NOTIFY, "MMU_NOTIFY"},
		{FI_MR_RMA_EVENT, "RMA_EVENT"},
		{FI_MR_ENDPOINT, "ENDPOINT"},
		{FI_MR_HMEM, "HMEM"},
		{FI_MR_COLLECTIVE, "COLLECTIVE"},
	};
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < PSC_ARRAY_SIZE(bits); i++) {
		if (!(mr & bits[i].bit))
			continue;
		mr &= ~bits[i].bit;
		used += (size_t)snprintf(buf + PSC_MIN(used, len),
					 len - PSC_MIN(used, len), "%s%s",
					 used ? "|" : "", bits[i].name);
	}
	/* Legacy FI_MR_BASIC/SCALABLE values or bits newer than 1.17. */
	if (mr)
		used += (size_t)snprintf(buf + PSC_MIN(used, len),
					 len - PSC_MIN(used, len), "%s0x%x",
					 used ? "|" : "", (unsigned)mr);
	if (!used)
		snprintf(buf, len, "none");
}

/* Print an entry's source address in its own format's notation. */
static void fmt_src_addr(const struct fi_info *i, char *buf, size_t len)
{
	const uint8_t *b = i->src_addr;
	size_t used = 0;

	if (!i->src_addr || !i->src_addrlen) {
		snprintf(buf, len, "none");
		return;
	}
	switch (i->addr_format) {
	case FI_SOCKADDR:
	case FI_SOCKADDR_IN:
	case FI_SOCKADDR_IN6:
		psc_sockaddr_str(i->src_addr, buf, len);
		return;
	case FI_ADDR_STR:
		snprintf(buf, len, "%.*s", (int)i->src_addrlen,
			 (const char *)i->src_addr);
		return;
	default:
		/* Opaque formats: the first bytes tell entries apart. */
		for (size_t k = 0; k < PSC_MIN(i->src_addrlen, 16); k++)
			used += (size_t)snprintf(buf + PSC_MIN(used, len),
						 len - PSC_MIN(used, len),
						 "%02x", b[k]);
		if (i->src_addrlen > 16)
			snprintf(buf + PSC_MIN(used, len),
				 len - PSC_MIN(used, len), "...");
	}
}

/* Providers may leave a name unset; print and compare "?" then. */
static const char *nz(const char *s)
{
	return s ? s : "?";
}

/* Append s to the comma list in buf unless it is already there. */
static void list_add(char *buf, size_t len, const char *s)
{
	size_t used = strlen(buf), n = strlen(s);

	for (const char *p = buf; (p = strstr(p, s)); p += n)
		if ((p == buf || p[-1] == ' ') && (p[n] == ',' || !p[n]))
			return;
	snprintf(buf + used, len - used, "%s%s", used ? ", " : "", s);
}

/* ---------------------------------------------------------- versions */

static void print_versions(void)
{
	uint32_t rt = fi_version();

	printf("pscomm %s\n", ps_comm_version());
	printf("libfabric %u.%u at run time (built against %d.%d; pscomm "
	       "asks for API %u.%u)\n", FI_MAJOR(rt), FI_MINOR(rt),
	       FI_MAJOR_VERSION, FI_MINOR_VERSION, FI_MAJOR(PSC_FI_VERSION),
	       FI_MINOR(PSC_FI_VERSION));
}

/* -------------------------------------------------------- placement */

/*
 * Choose the interface as the bootstrap would for a multi-rank job:
 * PS_COMM_IFNAME, and PS_COMM_ROOT when set (a loopback root allows
 * loopback). Prints the result or the reason there is none.
 */
static void choose_iface(struct context *cx)
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
			printf("  PS_COMM_ROOT=\"%s\" is not host:port; "
			       "ignored\n", root);
		else if (psc_resolve(&hp, &ss, &sl, err, sizeof(err)) != 0)
			printf("  PS_COMM_ROOT=\"%s\": %s; ignored\n", root,
			       err);
		else
			have_root = true;
	}
	cx->have_iface = psc_iface_choose(spec, have_root ?
					  (struct sockaddr *)&ss : NULL,
					  AF_UNSPEC, &cx->iface, err,
					  sizeof(err)) == 0;
	if (!cx->have_iface) {
		printf("  interface: none: %s\n", err);
		return;
	}
	printf("  interface: %s, address %s (%s%s%s)\n", cx->iface.name,
	       cx->iface.addrstr, have_root ? "routes to PS_COMM_ROOT=" :
	       "no usable PS_COMM_ROOT, so no loopback",
	       have_root ? root : "", spec && *spec ? "; PS_COMM_IFNAME set"
						     : "");
}

static void print_placement(struct context *cx)
{
	char topo[512];

	printf("\nThis process, as one rank of a multi-rank job:\n");
	choose_iface(cx);
	psc_topo_describe(topo, sizeof(topo));
	printf("  placement: %s\n", topo);
}

/* ----------------------------------------------------------- filter */

/*
 * Whether FI_PROVIDER (filter) hides core provider name, by libfabric
 * 1.17's init filter: "^a,b" hides those named; "a,b" hides all others,
 * where "a;x" also keeps a. libfabric applies it while loading, so a
 * hidden provider still appears in the FI_PROV_ATTR_ONLY list.
 */
static bool filter_hides(const char *filter, const char *name)
{
	bool negated = filter[0] == '^', found = false;
	size_t n = strlen(name);
	char copy[512], *save = NULL;

	snprintf(copy, sizeof(copy), "%s", filter + negated);
	for (char *t = strtok_r(copy, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		if (strcasecmp(t, name) == 0)
			found = true;
		else if (!negated && strncasecmp(t, name, n) == 0 &&
			 t[n] == ';')
			found = true;
	}
	return negated ? found : !found;
}

/* Say which names in FI_PROVIDER match no installed provider. */
static void filter_check_names(const char *filter, const struct fi_info *all)
{
	char copy[512], *save = NULL;

	snprintf(copy, sizeof(copy), "%s", filter + (filter[0] == '^'));
	for (char *t = strtok_r(copy, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		const struct fi_info *i;
		size_t n = strcspn(t, ";");

		for (i = all; i; i = i->next)
			if (strlen(i->fabric_attr->prov_name) == n &&
			    strncasecmp(i->fabric_attr->prov_name, t, n) == 0)
				break;
		if (!i)
			printf("  FI_PROVIDER names \"%.*s\", which is not "
			       "installed here\n", (int)n, t);
	}
}

/* ------------------------------------------------------- providers */

/* Why a family finds no device, for providers that need hardware. */
static const char *hardware_hint(const char *name)
{
	const char *hint = psc_provider_lookup(name)->missing_hint;

	if (hint)
		return hint;
	/* psm (PSM 1) drives the older True Scale HCAs; no profile. */
	if (psc_provider_is(name, "psm"))
		return "no Omni-Path or True Scale HFI (hfi1 or ib_qib "
		       "driver)";
	return NULL;
}

/* Whether an IP-addressed entry carries the chosen interface's IP. */
static bool entry_on_iface(const struct context *cx, const struct fi_info *i)
{
	return cx->have_iface && i->src_addr &&
	       psc_sockaddr_same_ip(i->src_addr,
				    (const struct sockaddr *)&cx->iface.addr);
}

/*
 * Sort list into groups by full provider name (at most max) and judge
 * every entry with its profile's accept(). Returns the group count; the
 * groups point into list.
 */
static size_t group_entries(const struct context *cx,
			    const struct fi_info *list, struct group *g,
			    size_t max)
{
	size_t n = 0, k;

	for (const struct fi_info *i = list; i; i = i->next) {
		const char *name = i->fabric_attr->prov_name;
		const struct psc_provider_ops *p = psc_provider_lookup(name);
		char why[160];

		for (k = 0; k < n && strcmp(g[k].name, name) != 0; k++)
			;
		if (k == n) {
			if (n == max)
				continue;
			memset(&g[n], 0, sizeof(g[n]));
			g[n++].name = name;
		}
		g[k].entries++;
		if (!p->accept(i, why, sizeof(why))) {
			if (!g[k].why[0])
				snprintf(g[k].why, sizeof(g[k].why), "%s",
					 why);
			continue;
		}
		g[k].accepted++;
		if (!g[k].pick)
			g[k].pick = i;
		g[k].on_iface |= entry_on_iface(cx, i);
		list_add(g[k].domains, sizeof(g[k].domains),
			 nz(i->domain_attr->name));
	}
	return n;
}

/* How a rank on this provider waits, as lib/endpoint.c open_cq picks. */
static const char *wait_name(const struct psc_caps *c)
{
	return c->wait_fd ? "wait fd" : c->wait_sread ? "cq_sread"
						      : "poll+backoff";
}

/*
 * The caps the endpoint would run with: the profile's, with the
 * PS_COMM_MAX_MSG_SIZE cap that lib/endpoint.c applies.
 */
static void effective_caps(const struct context *cx, const struct fi_info *i,
			   struct psc_caps *c)
{
	psc_provider_lookup(i->fabric_attr->prov_name)->derive_caps(i, c);
	if (cx->params_ok && cx->params.max_msg_size &&
	    cx->params.max_msg_size < c->max_msg_size)
		c->max_msg_size = cx->params.max_msg_size;
	if (c->inject_size > c->max_msg_size)
		c->inject_size = c->max_msg_size;
}

/* Append "name=value (set here)" or "name (unset)" for variable env. */
static void env_state(const char *env, char *buf, size_t len)
{
	const char *v = getenv(env);
	size_t used = strlen(buf);

	snprintf(buf + used, len - used, "%s%s%s%s", used ? ", " : "", env,
		 v ? "=" : " unset", v ? v : "");
}

/*
 * A second line: the link family and what the provider needs from the
 * process, as its profile records them (registration, job UUID, fork
 * safety, pinned memory, ordering), with the variables' current values.
 */
static void print_needs(const char *name, const struct psc_caps *c)
{
	const struct psc_provider_ops *p = psc_provider_lookup(name);
	char vars[256] = "";

	printf("      link %s; %s", psc_link_name(c->link),
	       c->mr_local ? "registers every buffer (FI_MR_LOCAL" :
	       "no local registration");
	if (c->mr_local)
		printf("%s%s)", c->mr_endpoint ? ", FI_MR_ENDPOINT" : "",
		       c->mr_prov_key ? ", FI_MR_PROV_KEY" : "");
	if (c->needs_memlock)
		printf("; pins memory (RLIMIT_MEMLOCK)");
	if (!c->ordered_sas)
		printf("; no FI_ORDER_SAS advertised");
	if (c->async_iov)
		printf("; FI_ASYNC_IOV");
	if (p->uuid_env)
		env_state(p->uuid_env, vars, sizeof(vars));
	if (p->fork_env)
		env_state(p->fork_env, vars, sizeof(vars));
	if (p->iface_env)
		env_state(p->iface_env, vars, sizeof(vars));
	if (vars[0])
		printf("; %s", vars);
	printf("\n");
}

/* -v: a profile's tunables and pitfalls, with values set here. */
static void print_tunables(const char *name)
{
	const struct psc_provider_ops *p = psc_provider_lookup(name);

	for (const struct psc_tunable *t = p->tunables; t && t->what; t++) {
		const char *v = t->env ? getenv(t->env) : NULL;

		if (t->env)
			printf("      %s%s%s: %s\n", t->env, v ? "=" : "",
			       v ? v : "", t->what);
		else
			printf("      note: %s\n", t->what);
	}
}

/* One line for a usable group: the attributes that shape pscomm's path. */
static void print_usable(const struct context *cx, const struct group *g,
			 const struct psc_caps *c,
			 const struct psc_tag_layout *tl)
{
	char mr[128], max[32], inj[32];

	fmt_mr_mode(g->pick->domain_attr->mr_mode, mr, sizeof(mr));
	fmt_size(c->max_msg_size, max, sizeof(max));
	fmt_size(c->inject_size, inj, sizeof(inj));
	printf("  %-14s yes: tag bits %u (user %u), mr_mode %s, "
	       "max_msg %s, inject %s, %s progress, waits by %s, "
	       "cq_data %zu B; %zu of %zu entries on %s", g->name,
	       c->tag_bits, tl->user_bits, mr, max, inj,
	       c->manual_progress ? "manual" : "auto", wait_name(c),
	       c->cq_data_size, g->accepted, g->entries, g->domains);
	if (c->ip_addressed && cx->have_iface)
		printf("%s", g->on_iface ? "; has the chosen interface"
					 : "; NOT on the chosen interface");
	printf("\n");
	print_needs(g->name, c);
}

/* Whether entries a and b agree in what -v shows. */
static bool same_place(const struct fi_info *a, const struct fi_info *b)
{
	const char *fa = nz(a->fabric_attr->name);
	const char *da = nz(a->domain_attr->name);

	return strcmp(fa, nz(b->fabric_attr->name)) == 0 &&
	       strcmp(da, nz(b->domain_attr->name)) == 0 &&
	       a->src_addrlen == b->src_addrlen &&
	       (!a->src_addrlen ||
		memcmp(a->src_addr, b->src_addr, a->src_addrlen) == 0);
}

/*
 * How many entries of group name repeat i's place, or 0 when an earlier
 * entry already did: rxm returns one copy of the core list per protocol
 * variant, which -v folds into one line.
 */
static size_t repeats(const struct fi_info *list, const struct fi_info *i,
		      const char *name)
{
	const struct fi_info *first = NULL;
	size_t n = 0;

	for (const struct fi_info *j = list; j; j = j->next) {
		if (strcmp(j->fabric_attr->prov_name, name) != 0 ||
		    !same_place(i, j))
			continue;
		if (!first)
			first = j;
		n++;
	}
	return first == i ? n : 0;
}

/* -v: fabric, domain and source address of every entry of a group. */
static void print_entries(const struct fi_info *list, const char *name)
{
	const struct psc_provider_ops *p = psc_provider_lookup(name);

	for (const struct fi_info *i = list; i; i = i->next) {
		char addr[128], why[160];
		size_t n;

		if (strcmp(i->fabric_attr->prov_name, name) != 0 ||
		    !(n = repeats(list, i, name)))
			continue;
		fmt_src_addr(i, addr, sizeof(addr));
		printf("      fabric %s, domain %s, src_addr %s (%s)",
		       nz(i->fabric_attr->name), nz(i->domain_attr->name), addr,
		       fi_tostr(&i->addr_format, FI_TYPE_ADDR_FORMAT));
		if (n > 1)
			printf(" x%zu", n);
		if (!p->accept(i, why, sizeof(why)))
			printf(": rejected, %s", why);
		printf("\n");
	}
}

/* Report one group: usable with its attributes, or why not. */
static void print_group(const struct context *cx, const struct fi_info *list,
			const struct group *g)
{
	struct psc_tag_layout tl;
	struct psc_caps c;

	if (!g->pick) {
		printf("  %-14s no: %s (all %zu entries)\n", g->name, g->why,
		       g->entries);
		return;
	}
	effective_caps(cx, g->pick, &c);
	if (psc_tag_layout_init(&tl, c.mem_tag_format) != 0) {
		printf("  %-14s no: %u tag bits, too few for pscomm's "
		       "tag layout\n", g->name, c.tag_bits);
		return;
	}
	print_usable(cx, g, &c, &tl);
	if (cx->opt.verbose) {
		print_entries(list, g->name);
		print_tunables(g->name);
	}
}

/* Explain an fi_getinfo failure for provider name in words. */
static void print_no_entries(const struct context *cx, const char *name,
			     int rc)
{
	const char *hint = hardware_hint(name);

	if (cx->filter && filter_hides(cx->filter, name)) {
		printf("  %-14s filtered: excluded by FI_PROVIDER=%s\n", name,
		       cx->filter);
		return;
	}
	for (const struct fi_info *i = cx->replayed; i; i = i->next) {
		char why[160];

		/* A recorded entry exists: say what pscomm objects to. */
		if (strcmp(i->fabric_attr->prov_name, name) != 0 ||
		    psc_provider_lookup(name)->accept(i, why, sizeof(why)))
			continue;
		printf("  %-14s no: %s\n", name, why);
		return;
	}
	if (rc == -FI_ENODATA)
		printf("  %-14s no: no device or no entry matches pscomm's "
		       "needs%s%s\n", name, hint ? "; " : "",
		       hint ? hint : "");
	else
		printf("  %-14s no: fi_getinfo failed: %s\n", name,
		       fi_strerror(-rc));
}

/* Ask libfabric about one core provider with pscomm's hints; report. */
static void explain_provider(const struct context *cx, const char *name)
{
	struct fi_info *list = NULL;
	struct group g[MAX_GROUPS];
	bool relaxed;
	size_t n;
	int rc;

	/* The library's own query: its hints, then its FI_ORDER_SAS retry. */
	rc = psc_ep_query(cx->gi, name, &list, &relaxed);
	if (rc == -ENOMEM) {
		printf("  %-14s ?: out of memory\n", name);
		return;
	}
	if (rc != 0 || !list) {
		print_no_entries(cx, name, rc ? rc : -FI_ENODATA);
		return;
	}
	n = group_entries(cx, list, g, MAX_GROUPS);
	for (size_t k = 0; k < n; k++)
		print_group(cx, list, &g[k]);
	fi_freeinfo(list);
}

/*
 * Collect the distinct core provider names, in libfabric's order.
 * Utility (ofi_rxm, ofi_rxd, ofi_mrail) and hook providers are layered
 * over a core provider, never chosen alone, so they are skipped.
 */
static size_t core_providers(const struct fi_info *all, const char **names,
			     size_t max)
{
	size_t n = 0, k;

	for (const struct fi_info *i = all; i && n < max; i = i->next) {
		const char *name = i->fabric_attr->prov_name;

		if (!name || strncmp(name, "ofi_", 4) == 0)
			continue;
		for (k = 0; k < n && strcmp(names[k], name) != 0; k++)
			;
		if (k == n)
			names[n++] = name;
	}
	return n;
}

/* Families pscomm has a profile for that this libfabric lacks. */
static void print_not_built(const char *const *names, size_t n)
{
	size_t count;
	const struct psc_provider_ops *all = psc_provider_all(&count);

	for (size_t k = 0; k < count; k++) {
		size_t j;

		for (j = 0; j < n && !psc_provider_is(names[j], all[k].name);
		     j++)
			;
		if (j < n)
			continue;
		printf("  %-14s missing: not in this libfabric build%s%s\n",
		       all[k].name, all[k].missing_hint ? "; where wanted, "
		       "install a libfabric with it; then: " : "",
		       all[k].missing_hint ? all[k].missing_hint : "");
	}
}

static void print_providers(const struct context *cx)
{
	const char *names[MAX_INSTALLED];
	struct fi_info *all = NULL;
	size_t n;
	int rc;

	printf("\nlibfabric providers (can pscomm use it?):\n");
	if (cx->replayed) {
		printf("  (entries replayed from %s)\n", cx->opt.replay);
		n = core_providers(cx->replayed, names, MAX_INSTALLED);
		for (size_t k = 0; k < n; k++)
			explain_provider(cx, names[k]);
		return;
	}
	rc = fi_getinfo(PSC_FI_VERSION, NULL, NULL, FI_PROV_ATTR_ONLY, NULL,
			&all);
	if (rc != 0) {
		printf("  none listed: %s\n", fi_strerror(-rc));
		return;
	}
	if (cx->filter) {
		printf("  FI_PROVIDER=%s filters this list; providers it "
		       "excludes appear as filtered\n", cx->filter);
		filter_check_names(cx->filter, all);
	}
	n = core_providers(all, names, MAX_INSTALLED);
	for (size_t k = 0; k < n; k++)
		explain_provider(cx, names[k]);
	print_not_built(names, n);
	fi_freeinfo(all);
}

/*
 * What lib/endpoint.c would pick: the first accepted entry of an
 * unrestricted query that, for IP providers, has the chosen interface.
 */
static void print_choice(const struct context *cx)
{
	struct psc_select sel = {
		.params = cx->params_ok ? &cx->params : NULL,
		.iface = cx->have_iface ? &cx->iface : NULL,
		.rank = -1,
	};
	const struct fi_info *pick = NULL;
	struct fi_info *list = NULL;
	char nic[256];
	bool relaxed;

	if (psc_ep_query(cx->gi, NULL, &list, &relaxed) == 0)
		pick = psc_ep_select(list, &sel);
	/*
	 * The library's NIC choice by locality (live only), with hwloc's
	 * I/O view loaded only when the provider's entries name a NIC.
	 */
	if (pick && sel.caps.nic_local && !cx->replayed) {
		sel.distance = psc_topo_nic_distance;
		sel.distance_arg = psc_topo_open();
		pick = psc_ep_select(list, &sel);
	}
	if (!pick)
		printf("\npscomm would use: nothing; ps_comm_init would fail "
		       "with \"no usable libfabric provider\"\n");
	else if (!cx->have_iface && sel.caps.ip_addressed)
		/* lib/bootstrap.c skips the interface only for this case. */
		printf("\npscomm would use: nothing in a multi-rank job (no "
		       "interface); a single rank without PS_COMM_IFNAME "
		       "would use %s, domain %s\n",
		       pick->fabric_attr->prov_name,
		       nz(pick->domain_attr->name));
	else
		printf("\npscomm would use: %s, domain %s (the first usable "
		       "entry in libfabric's order%s%s)\n",
		       pick->fabric_attr->prov_name,
		       nz(pick->domain_attr->name),
		       sel.nic_distance >= 0 ? ", then the nearest NIC" : "",
		       cx->filter ? ", after FI_PROVIDER"
				  : "; FI_PROVIDER chooses another");
	if (pick && sel.caps.nic_local) {
		psc_topo_nic_describe(pick, sel.distance_arg, nic,
				      sizeof(nic));
		printf("  NIC: %s\n", nic);
	}
	if (pick && relaxed)
		printf("  (found only without FI_ORDER_SAS in the hints)\n");
	psc_topo_close(sel.distance_arg);
	fi_freeinfo(list);
}

/* -------------------------------------------------------- parameters */

/* The value of parameter k as the library would read it now. */
static void param_current(const struct context *cx, size_t k, char *buf,
			  size_t len)
{
	const struct psc_param_desc *d = &psc_param_table[k];
	const char *env = getenv(d->name);

	/* A secret: that it is set is all this tool may say. */
	if (strcmp(d->name, "PS_COMM_JOB_KEY") == 0 && env && *env)
		snprintf(buf, len, "(hidden)");
	/* After a load error the struct is partial: show the raw text. */
	else if (!cx->params_ok)
		snprintf(buf, len, "%s", env && *env ? env : d->def);
	else
		psc_param_format(&cx->params, d, buf, len);
	if (!*buf)
		snprintf(buf, len, "\"\"");
}

static void print_params(const struct context *cx)
{
	char cur[256];

	printf("\nParameters (agree: must be identical on every rank):\n");
	if (!cx->params_ok)
		printf("  error: %s\n", cx->params_err);
	printf("  %-22s %-5s %-8s %s\n", "NAME", "AGREE", "DEFAULT",
	       "CURRENT");
	for (size_t k = 0; k < psc_param_count; k++) {
		const struct psc_param_desc *d = &psc_param_table[k];
		const char *env = getenv(d->name);

		param_current(cx, k, cur, sizeof(cur));
		printf("  %-22s %-5s %-8s %s%s\n", d->name,
		       d->agree ? "yes" : "no", *d->def ? d->def : "\"\"",
		       cur, env && *env ? " (from the environment)" : "");
		printf("      %s\n", d->help);
	}
}

int main(int argc, char **argv)
{
	struct context cx;
	int rc;

	memset(&cx, 0, sizeof(cx));
	rc = parse_args(argc, argv, &cx.opt);
	if (rc)
		return rc > 0 ? 0 : EXIT_USAGE;
	cx.filter = getenv("FI_PROVIDER");
	if (cx.filter && !*cx.filter)
		cx.filter = NULL;
	cx.params_ok = psc_params_load(&cx.params, cx.params_err,
				       sizeof(cx.params_err)) == 0;
	cx.gi = fi_getinfo;
	if (cx.opt.replay) {
		char err[256];

		if (psc_replay_load(cx.opt.replay, &cx.replayed, err,
				    sizeof(err)) != 0) {
			fprintf(stderr, "%s: --replay: %s\n", progname, err);
			return EXIT_FAILURE;
		}
		psc_replay_use(cx.replayed);
		cx.gi = psc_replay_getinfo;
		/* FI_PROVIDER filters libfabric, not a recorded file. */
		cx.filter = NULL;
	}
	print_versions();
	/* Every later section assumes valid settings: say so up front. */
	if (!cx.params_ok)
		printf("\nerror: %s; ps_comm_init would fail\n",
		       cx.params_err);
	print_placement(&cx);
	print_providers(&cx);
	print_choice(&cx);
	if (cx.params_ok) {
		printf("\n");
		psc_coll_print_table(stdout, &cx.params);
	}
	if (cx.opt.params)
		print_params(&cx);
	fi_freeinfo(cx.replayed);
	return 0;
}
