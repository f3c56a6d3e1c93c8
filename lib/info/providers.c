/*
 * The provider sections of the fabric report. For every core provider
 * libfabric lists, it asks with the library's own query (psc_fab_query:
 * pscomm's hints, then the FI_ORDER_SAS retry) and judges each entry with
 * the provider's profile, so the verdict is the library's: usable, with
 * the attributes that shape pscomm's path, or the reason it is not; with
 * --open it also opens and closes an endpoint on each usable provider
 * (psc_fab_try_open). Then it runs the library's selection
 * (psc_fab_select) to say which entry and NIC ps_comm_init would choose,
 * past the providers that failed to open, as its fallback does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "p2p/tag.h"
#include "fabric/fabric.h"
#include "fabric/topo.h"
#include "info/info_int.h"
#include "provider.h"

enum {
	MAX_GROUPS = 8,	    /* distinct full names of one provider */
	MAX_INSTALLED = 64, /* core providers listed */
};

/* The entries of one provider that share a full name ("tcp;ofi_rxm"). */
struct group {
	const char *name;	    /* points into the fi_info list */
	const struct fi_info *pick; /* first accepted entry, or NULL */
	char why[160];		    /* the first rejection's reason */
	size_t entries, accepted;
	bool on_iface;		    /* an accepted entry is on the iface */
	char domains[256];	    /* of the accepted entries */
};

/* ------------------------------------------------------------ filter */

/* Say which names in FI_PROVIDER match no installed provider. */
static void filter_check_names(FILE *out, const char *filter,
			       const struct fi_info *all)
{
	char copy[512], *save = NULL;

	snprintf(copy, sizeof(copy), "%s", filter + (filter[0] == '^'));
	for (char *t = strtok_r(copy, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		const struct fi_info *i;
		size_t n = strcspn(t, ";");

		for (i = all; i; i = i->next)
			if (psc_provider_filter_names(t, n,
						      i->fabric_attr->prov_name))
				break;
		if (!i)
			fprintf(out, "  FI_PROVIDER names \"%.*s\", which is "
				"not installed here\n", (int)n, t);
	}
}

/* --------------------------------------------------------- entries */

/* Whether an IP-addressed entry carries the chosen interface's IP. */
static bool entry_on_iface(const struct psc_info *cx, const struct fi_info *i)
{
	return cx->have_iface && i->src_addr &&
	       psc_sockaddr_same_ip(i->src_addr,
				    (const struct sockaddr *)&cx->iface.addr);
}

/* The group of g[0..*n) named name, a new one, or NULL when g is full. */
static struct group *group_of(struct group *g, size_t *n, size_t max,
			      const char *name)
{
	size_t k;

	for (k = 0; k < *n && strcmp(g[k].name, name) != 0; k++)
		;
	if (k < *n)
		return &g[k];
	if (*n == max)
		return NULL;
	memset(&g[k], 0, sizeof(g[k]));
	g[k].name = name;
	(*n)++;
	return &g[k];
}

/*
 * Sort list into groups by full provider name (at most max) and judge
 * every entry with its profile's accept(). Returns the group count; the
 * groups point into list.
 */
static size_t group_entries(const struct psc_info *cx,
			    const struct fi_info *list, struct group *g,
			    size_t max)
{
	size_t n = 0;

	for (const struct fi_info *i = list; i; i = i->next) {
		const char *name = i->fabric_attr->prov_name;
		struct group *gr = group_of(g, &n, max, name);
		char why[160];

		if (!gr)
			continue;
		gr->entries++;
		if (!psc_provider_lookup(name)->accept(i, why, sizeof(why))) {
			if (!gr->why[0])
				snprintf(gr->why, sizeof(gr->why), "%s", why);
			continue;
		}
		gr->accepted++;
		if (!gr->pick)
			gr->pick = i;
		gr->on_iface |= entry_on_iface(cx, i);
		psc_info_list_add(gr->domains, sizeof(gr->domains),
				  psc_info_nz(i->domain_attr->name));
	}
	return n;
}

/* How a rank on this provider waits, as lib/fabric's open_cq picks. */
static const char *wait_name(const struct psc_caps *c)
{
	return c->wait_fd ? "wait fd" : c->wait_sread ? "cq_sread"
						      : "poll+backoff";
}

/*
 * The caps the endpoint would run with: the profile's, with the
 * PS_COMM_MAX_MSG_SIZE cap that lib/fabric applies.
 */
static void effective_caps(const struct psc_info *cx, const struct fi_info *i,
			   struct psc_caps *c)
{
	psc_provider_lookup(i->fabric_attr->prov_name)->derive_caps(i, c);
	if (cx->params_ok && cx->params.max_msg_size &&
	    cx->params.max_msg_size < c->max_msg_size)
		c->max_msg_size = cx->params.max_msg_size;
	if (c->inject_size > c->max_msg_size)
		c->inject_size = c->max_msg_size;
}

/* Append "name=value" or "name unset" for variable env. */
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
static void print_needs(FILE *out, const char *name, const struct psc_caps *c)
{
	const struct psc_provider_ops *p = psc_provider_lookup(name);
	char vars[256] = "";

	fprintf(out, "      link %s; %s", psc_link_name(c->link),
		c->mr_local ? "registers every buffer (FI_MR_LOCAL" :
		"no local registration");
	if (c->mr_local)
		fprintf(out, "%s%s)", c->mr_endpoint ? ", FI_MR_ENDPOINT" : "",
			c->mr_prov_key ? ", FI_MR_PROV_KEY" : "");
	if (c->needs_memlock)
		fprintf(out, "; pins memory (RLIMIT_MEMLOCK)");
	if (!c->ordered_sas)
		fprintf(out, "; no FI_ORDER_SAS advertised");
	if (c->async_iov)
		fprintf(out, "; FI_ASYNC_IOV");
	if (p->uuid_env)
		env_state(p->uuid_env, vars, sizeof(vars));
	if (p->fork_env)
		env_state(p->fork_env, vars, sizeof(vars));
	if (p->iface_env)
		env_state(p->iface_env, vars, sizeof(vars));
	if (vars[0])
		fprintf(out, "; %s", vars);
	fprintf(out, "\n");
}

/* Verbose: a profile's tunables and pitfalls, with values set here. */
static void print_tunables(FILE *out, const char *name)
{
	const struct psc_provider_ops *p = psc_provider_lookup(name);

	for (const struct psc_tunable *t = p->tunables; t && t->what; t++) {
		const char *v = t->env ? getenv(t->env) : NULL;

		if (t->env)
			fprintf(out, "      %s%s%s: %s\n", t->env, v ? "=" : "",
				v ? v : "", t->what);
		else
			fprintf(out, "      note: %s\n", t->what);
	}
}

/* One line for a usable group: the attributes that shape pscomm's path. */
static void print_usable(const struct psc_info *cx, const struct group *g,
			 const struct psc_caps *c,
			 const struct psc_tag_layout *tl)
{
	char mr[128], max[32], inj[32];

	psc_info_fmt_mr_mode(g->pick->domain_attr->mr_mode, mr, sizeof(mr));
	psc_info_fmt_size(c->max_msg_size, max, sizeof(max));
	psc_info_fmt_size(c->inject_size, inj, sizeof(inj));
	fprintf(cx->out, "  %-14s yes: tag bits %u (user %u), mr_mode %s, "
		"max_msg %s, inject %s, %s progress, waits by %s, "
		"cq_data %zu B; %zu of %zu entries on %s", g->name,
		c->tag_bits, tl->user_bits, mr, max, inj,
		c->manual_progress ? "manual" : "auto", wait_name(c),
		c->cq_data_size, g->accepted, g->entries, g->domains);
	if (c->ip_addressed && cx->have_iface)
		fprintf(cx->out, "%s", g->on_iface
				     ? "; has the chosen interface"
				     : "; NOT on the chosen interface");
	fprintf(cx->out, "\n");
	print_needs(cx->out, g->name, c);
}

/* Whether entries a and b agree in what the verbose report shows. */
static bool same_place(const struct fi_info *a, const struct fi_info *b)
{
	const char *fa = psc_info_nz(a->fabric_attr->name);
	const char *da = psc_info_nz(a->domain_attr->name);

	return strcmp(fa, psc_info_nz(b->fabric_attr->name)) == 0 &&
	       strcmp(da, psc_info_nz(b->domain_attr->name)) == 0 &&
	       a->src_addrlen == b->src_addrlen &&
	       (!a->src_addrlen ||
		memcmp(a->src_addr, b->src_addr, a->src_addrlen) == 0);
}

/*
 * How many entries of group name repeat i's place, or 0 when an earlier
 * entry already did: rxm returns one copy of the core list per protocol
 * variant, which the verbose report folds into one line.
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

/* Verbose: fabric, domain and source address of every entry of a group. */
static void print_entries(FILE *out, const struct fi_info *list,
			  const char *name)
{
	const struct psc_provider_ops *p = psc_provider_lookup(name);

	for (const struct fi_info *i = list; i; i = i->next) {
		char addr[128], why[160];
		size_t n;

		if (strcmp(i->fabric_attr->prov_name, name) != 0 ||
		    !(n = repeats(list, i, name)))
			continue;
		psc_info_fmt_src_addr(i, addr, sizeof(addr));
		fprintf(out, "      fabric %s, domain %s, src_addr %s (%s)",
			psc_info_nz(i->fabric_attr->name),
			psc_info_nz(i->domain_attr->name), addr,
			psc_fab_addr_format_name(i->addr_format));
		if (n > 1)
			fprintf(out, " x%zu", n);
		if (!p->accept(i, why, sizeof(why)))
			fprintf(out, ": rejected, %s", why);
		fprintf(out, "\n");
	}
}

/*
 * --open: open and close an endpoint on g's first usable entry, as
 * ps_comm_init would, and say whether it worked or which step failed and
 * why; the result is kept for the choice.
 */
static void try_open(const struct psc_info *cx, const struct group *g)
{
	struct psc_info_opened *o = cx->opened;
	char err[1024];
	int rc;

	if (!cx->params_ok) {
		fprintf(cx->out, "      open: not tried (the settings are "
			"invalid)\n");
		return;
	}
	rc = psc_fab_try_open(g->pick, &cx->params, cx->open_ranks, err,
			      sizeof(err));
	if (rc)
		fprintf(cx->out, "      open: FAILED: %s\n", err);
	else
		fprintf(cx->out, "      open: ok (fabric, domain, CQ, AV, "
			"endpoint, enable, registration cache)\n");
	if (o->n < PSC_INFO_OPENED_MAX) {
		snprintf(o->p[o->n].name, sizeof(o->p[0].name), "%s", g->name);
		o->p[o->n++].rc = rc;
	}
}

/* --open: whether provider name failed to open (false: opened, untried). */
static bool open_failed(const struct psc_info *cx, const char *name)
{
	for (size_t k = 0; cx->opened && k < cx->opened->n; k++)
		if (strcmp(cx->opened->p[k].name, name) == 0)
			return cx->opened->p[k].rc != 0;
	return false;
}

/* Report one group: usable with its attributes, or why not. */
static void print_group(const struct psc_info *cx, const struct fi_info *list,
			const struct group *g)
{
	struct psc_tag_layout tl;
	struct psc_caps c;

	if (!g->pick) {
		fprintf(cx->out, "  %-14s no: %s (all %zu entries)\n", g->name,
			g->why, g->entries);
		return;
	}
	effective_caps(cx, g->pick, &c);
	if (psc_tag_layout_init(&tl, c.mem_tag_format) != 0) {
		fprintf(cx->out, "  %-14s no: %u tag bits, too few for "
			"pscomm's tag layout\n", g->name, c.tag_bits);
		return;
	}
	print_usable(cx, g, &c, &tl);
	if (cx->open_ranks)
		try_open(cx, g);
	if (cx->verbose) {
		print_entries(cx->out, list, g->name);
		print_tunables(cx->out, g->name);
	}
}

/* ------------------------------------------------------- providers */

/* Explain a query failure for provider name in words. */
static void print_no_entries(const struct psc_info *cx, const char *name,
			     int rc)
{
	const char *hint = psc_provider_missing_hint(name);

	if (cx->filter && psc_provider_filter_hides(cx->filter, name)) {
		fprintf(cx->out, "  %-14s filtered: excluded by "
			"FI_PROVIDER=%s\n", name, cx->filter);
		return;
	}
	for (const struct fi_info *i = cx->replayed; i; i = i->next) {
		char why[160];

		/* A recorded entry exists: say what pscomm objects to. */
		if (strcmp(i->fabric_attr->prov_name, name) != 0 ||
		    psc_provider_lookup(name)->accept(i, why, sizeof(why)))
			continue;
		fprintf(cx->out, "  %-14s no: %s\n", name, why);
		return;
	}
	if (rc == -FI_ENODATA)
		fprintf(cx->out, "  %-14s no: no device or no entry matches "
			"pscomm's needs%s%s\n", name, hint ? "; " : "",
			hint ? hint : "");
	else
		fprintf(cx->out, "  %-14s no: fi_getinfo failed: %s\n", name,
			psc_fab_strerror(-rc));
}

/* Ask about one core provider with pscomm's hints; report. */
static void explain_provider(const struct psc_info *cx, const char *name)
{
	struct fi_info *list = NULL;
	struct group g[MAX_GROUPS];
	bool relaxed;
	size_t n;
	int rc;

	rc = psc_fab_query(cx->gi, name, &list, &relaxed);
	if (rc == -ENOMEM) {
		fprintf(cx->out, "  %-14s ?: out of memory\n", name);
		return;
	}
	if (rc != 0 || !list) {
		print_no_entries(cx, name, rc ? rc : -FI_ENODATA);
		return;
	}
	n = group_entries(cx, list, g, MAX_GROUPS);
	for (size_t k = 0; k < n; k++)
		print_group(cx, list, &g[k]);
	psc_fab_freeinfo(list);
}

/*
 * Collect the distinct core provider names, in libfabric's order.
 * Utility and hook providers are layered over a core provider, never
 * chosen alone, so they are skipped.
 */
static size_t core_providers(const struct fi_info *all, const char **names,
			     size_t max)
{
	size_t n = 0, k;

	for (const struct fi_info *i = all; i && n < max; i = i->next) {
		const char *name = i->fabric_attr->prov_name;

		if (!name || psc_provider_layered(name))
			continue;
		for (k = 0; k < n && strcmp(names[k], name) != 0; k++)
			;
		if (k == n)
			names[n++] = name;
	}
	return n;
}

/* Report every core provider of all, in libfabric's order. */
static size_t explain_all(const struct psc_info *cx,
			  const struct fi_info *all, const char **names)
{
	size_t n = core_providers(all, names, MAX_INSTALLED);

	for (size_t k = 0; k < n; k++)
		explain_provider(cx, names[k]);
	return n;
}

/* Families pscomm has a profile for that this libfabric lacks. */
static void print_not_built(FILE *out, const char *const *names, size_t n)
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
		if (all[k].renamed) {
			fprintf(out, "  %-14s missing: %s\n", all[k].name,
				all[k].renamed);
			continue;
		}
		fprintf(out, "  %-14s missing: not in this libfabric "
			"build%s%s\n", all[k].name, all[k].missing_hint ?
			"; where wanted, install a libfabric with it; then: " :
			"", all[k].missing_hint ? all[k].missing_hint : "");
	}
}

void psc_info_providers(const struct psc_info *cx)
{
	const char *names[MAX_INSTALLED];
	struct fi_info *all = NULL;
	char cost[400];
	size_t n;
	int rc;

	fprintf(cx->out, "\nlibfabric providers (can pscomm use it?):\n");
	if (cx->open_ranks)
		fprintf(cx->out, "  (opening an endpoint on each usable one, "
			"sized for a job of %d rank%s: FI_UNIVERSE_SIZE=%s)\n",
			cx->open_ranks, cx->open_ranks == 1 ? "" : "s",
			getenv("FI_UNIVERSE_SIZE")
				? getenv("FI_UNIVERSE_SIZE") : "unset");
	if (cx->replayed) {
		fprintf(cx->out, "  (entries replayed from %s)\n",
			cx->replay_name);
		explain_all(cx, cx->replayed, names);
		return;
	}
	rc = psc_fab_providers(&all);
	if (rc != 0) {
		fprintf(cx->out, "  none listed: %s\n", psc_fab_strerror(-rc));
		return;
	}
	if (cx->filter) {
		fprintf(cx->out, "  FI_PROVIDER=%s filters this list; "
			"providers it excludes appear as filtered\n",
			cx->filter);
		filter_check_names(cx->out, cx->filter, all);
	}
	n = explain_all(cx, all, names);
	print_not_built(cx->out, names, n);
	psc_fab_freeinfo(all);
	psc_fab_first_cost_words(cost, sizeof(cost));
	if (cost[0])
		fprintf(cx->out, "  startup: %s\n", cost);
}

/* ---------------------------------------------------------- choice */

/* The "pscomm would use" line for pick (NULL: nothing usable). */
static void print_pick(const struct psc_info *cx, const struct fi_info *pick,
		       const struct psc_select *sel)
{
	if (!pick)
		fprintf(cx->out, "\npscomm would use: nothing; ps_comm_init "
			"would fail with \"no usable libfabric provider\"\n");
	else if (!cx->have_iface && sel->caps.ip_addressed)
		/* The bootstrap skips the interface only for this case. */
		fprintf(cx->out, "\npscomm would use: nothing in a multi-rank "
			"job (no interface); a single rank without "
			"PS_COMM_IFNAME would use %s, domain %s\n",
			pick->fabric_attr->prov_name,
			psc_info_nz(pick->domain_attr->name));
	else if (sel->role == PSC_ROLE_NET)
		fprintf(cx->out, "\npscomm would use: %s, domain %s, between "
			"nodes (the best usable provider in pscomm's order: "
			"hardware first, then tcp%s%s)\n",
			pick->fabric_attr->prov_name,
			psc_info_nz(pick->domain_attr->name),
			sel->nic_distance >= 0 ? "; then the nearest NIC" : "",
			cx->filter ? "; after FI_PROVIDER" : "");
	else
		fprintf(cx->out, "\npscomm would use: %s, domain %s (the first "
			"usable entry in libfabric's order%s%s)\n",
			pick->fabric_attr->prov_name,
			psc_info_nz(pick->domain_attr->name),
			sel->nic_distance >= 0 ? ", then the nearest NIC" : "",
			cx->filter ? ", after FI_PROVIDER"
				   : "; FI_PROVIDER chooses another");
}

/*
 * The path between ranks of one node that ps_comm_init would take, for
 * a node-aware choice (FI_PROVIDER not naming one provider): shm when
 * it is usable and PS_COMM_INTRA allows it.
 */
static void print_intra(const struct psc_info *cx, const char *intra,
			const struct fi_info *net)
{
	struct psc_select sel = {
		.params = cx->params_ok ? &cx->params : NULL,
		.rank = -1,
		.role = PSC_ROLE_SHM,
	};
	const struct fi_info *shm = NULL;
	struct fi_info *list = NULL;
	bool relaxed;

	if (strcmp(intra, "net") != 0 &&
	    psc_fab_query(cx->gi, PSC_SHM_PROVIDER, &list, &relaxed) == 0)
		shm = psc_fab_select(list, &sel);
	if (shm)
		fprintf(cx->out, "  inside a node: shm (all ranks on one node: "
			"shm only; PS_COMM_INTRA=net sends everything over "
			"the network)\n");
	else
		fprintf(cx->out, "  inside a node: %s too (%s)\n",
			net ? net->fabric_attr->prov_name : "nothing",
			strcmp(intra, "net") == 0 ? "PS_COMM_INTRA=net"
						  : "shm is not usable here");
	psc_fab_freeinfo(list);
}

void psc_info_choice(const struct psc_info *cx)
{
	struct psc_select sel = {
		.params = cx->params_ok ? &cx->params : NULL,
		.iface = cx->have_iface ? &cx->iface : NULL,
		.rank = -1,
	};
	const struct fi_info *pick = NULL;
	struct fi_info *list = NULL;
	const char *intra = cx->params_ok ? cx->params.intra : "auto";
	/* FI_PROVIDER naming one provider sends everything over it. */
	bool one = psc_provider_filter_single(cx->filter);
	char nic[256], failed[256] = "";
	bool relaxed;

	if (!one)
		sel.role = PSC_ROLE_NET;
	if (psc_fab_query(cx->gi, NULL, &list, &relaxed) == 0)
		pick = psc_fab_select(list, &sel);
	/* --open: past what failed to open, as ps_comm_init falls back. */
	while (pick && !one && open_failed(cx, pick->fabric_attr->prov_name)) {
		psc_info_list_add(failed, sizeof(failed),
				  pick->fabric_attr->prov_name);
		sel.min_rank =
			psc_provider_net_rank(pick->fabric_attr->prov_name) + 1;
		pick = psc_fab_select(list, &sel);
	}
	if (pick && one && open_failed(cx, pick->fabric_attr->prov_name)) {
		fprintf(cx->out, "\npscomm would use: nothing; %s failed to "
			"open, and FI_PROVIDER=%s names it, so ps_comm_init "
			"would fail without falling back\n",
			pick->fabric_attr->prov_name, cx->filter);
		psc_fab_freeinfo(list);
		return;
	}
	/*
	 * The library's NIC choice by locality (live only), with hwloc's
	 * I/O view loaded only when the provider's entries name a NIC.
	 */
	if (pick && sel.caps.nic_local && !cx->replayed) {
		sel.distance = psc_topo_nic_distance;
		sel.distance_arg = psc_topo_open();
		pick = psc_fab_select(list, &sel);
	}
	print_pick(cx, pick, &sel);
	if (failed[0])
		fprintf(cx->out, "  (after falling back: %s failed to open "
			"above)\n", failed);
	if (!one) {
		print_intra(cx, intra, pick);
		/* The van chooses its fabrics as communicators do. */
		fprintf(cx->out, "  the van (ps-lite): the same\n");
	}
	if (pick && sel.caps.nic_local) {
		psc_topo_nic_describe(pick, sel.distance_arg, nic,
				      sizeof(nic));
		fprintf(cx->out, "  NIC: %s\n", nic);
	}
	if (pick && relaxed)
		fprintf(cx->out, "  (found only without FI_ORDER_SAS in the "
			"hints)\n");
	psc_topo_close(sel.distance_arg);
	psc_fab_freeinfo(list);
}
