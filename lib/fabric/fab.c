/*
 * The fabric endpoint: hints, choosing one fi_info entry (honouring
 * FI_PROVIDER and, for IP providers, the interface chosen for this rank;
 * among NICs of the chosen provider, the nearest; psc_fab_select runs on
 * any list, so tests replay recorded ones), and opening fabric, domain,
 * CQ, AV and endpoint as a staged sequence that unwinds on error.
 * Closing follows libfabric's order: endpoint, then the registrations,
 * AV and CQ, then domain and fabric.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

#include "fabric/fabric.h"
#include "fabric/mr.h"
#include "fabric/preflight.h"
#include "fabric/select.h"
#include "fabric/sig.h"
#include "fabric/topo.h"
#include "util/log.h"
#include "util/util.h"


struct fi_info *psc_fab_hints(const char *prov_name)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->caps = FI_TAGGED | FI_MSG | FI_DIRECTED_RECV;
	/* FI_ASYNC_IOV: caps.async_iov keeps iov arrays off the stack. */
	h->mode = FI_CONTEXT | FI_CONTEXT2 | FI_ASYNC_IOV;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->av_type = FI_AV_TABLE;
	h->domain_attr->resource_mgmt = FI_RM_ENABLED;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	/*
	 * Offer every mode pscomm honours; verbs;ofi_rxm and efa keep
	 * FI_MR_LOCAL only when offered, and caps.mr_local then says so.
	 */
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY |
				  FI_MR_ENDPOINT;
	h->tx_attr->msg_order = FI_ORDER_SAS;
	h->rx_attr->msg_order = FI_ORDER_SAS;
	if (prov_name) {
		h->fabric_attr->prov_name = strdup(prov_name);
		if (!h->fabric_attr->prov_name) {
			fi_freeinfo(h);
			return NULL;
		}
		psc_provider_lookup(prov_name)->fixup_hints(h);
	}
	return h;
}

/* Append "name (reason)" to a list of rejected providers once per name. */
static void note_reject(char *buf, size_t len, const char *name,
			const char *why)
{
	size_t used = strlen(buf);

	if (strstr(buf, name))
		return;
	snprintf(buf + used, len - used, "%s%s (%s)", used ? "; " : "", name,
		 why);
}

/* The providers installed in libfabric, for "nothing usable" errors. */
static void installed_providers(char *buf, size_t len)
{
	struct fi_info *all = NULL;
	size_t used = 0;

	buf[0] = '\0';
	if (psc_fab_providers(&all) != 0)
		return;
	for (struct fi_info *i = all; i; i = i->next) {
		const char *n = i->fabric_attr->prov_name;

		/* Utility and hook providers are layered, not chosen. */
		if (!n || psc_provider_layered(n) || strstr(buf, n))
			continue;
		PSC_APPEND(buf, len, used, "%s%s", used ? ", " : "", n);
	}
	fi_freeinfo(all);
}

/* The first fi_getinfo's cost (psc_fab_first_cost), under first_lock. */
static pthread_mutex_t first_lock = PTHREAD_MUTEX_INITIALIZER;
static bool first_done;
static double first_cpu, first_wall;

/*
 * fi_getinfo (or gi, a replay, which is not timed); the process's first
 * real call is timed, and the others wait for it. Call inside the signal
 * guard that the first call needs (sig.h).
 */
static int fab_getinfo(psc_getinfo_fn gi, uint64_t flags,
		       const struct fi_info *hints, struct fi_info **list)
{
	bool timed = gi == fi_getinfo;
	double cpu = 0, wall = 0;
	int rc;

	if (timed) {
		pthread_mutex_lock(&first_lock);
		timed = !first_done;
		if (timed) {
			cpu = psc_thread_cpu();
			wall = psc_now();
		} else {
			pthread_mutex_unlock(&first_lock);
		}
	}
	rc = gi(PSC_FI_VERSION, NULL, NULL, flags, hints, list);
	if (timed) {
		first_cpu = psc_thread_cpu() - cpu;
		first_wall = psc_now() - wall;
		first_done = true;
		pthread_mutex_unlock(&first_lock);
	}
	return rc;
}

bool psc_fab_first_cost(double *cpu, double *wall)
{
	bool done;

	pthread_mutex_lock(&first_lock);
	done = first_done;
	*cpu = first_cpu;
	*wall = first_wall;
	pthread_mutex_unlock(&first_lock);
	return done;
}

void psc_fab_first_cost_words(char *buf, size_t len)
{
	double cpu, wall;

	buf[0] = '\0';
	if (!psc_fab_first_cost(&cpu, &wall))
		return;
	snprintf(buf, len, "libfabric's first fi_getinfo took %.0f ms of CPU "
		 "(%.0f ms wall)%s", cpu * 1e3, wall * 1e3,
		 fi_version() < FI_VERSION(1, 19)
			 ? "; before libfabric 1.19 that includes two reads of "
			   "/proc/kallsyms by a provider's initialisation, "
			   "whatever FI_PROVIDER says (doc/fabrics.md, startup "
			   "cost)"
			 : "");
}

int psc_fab_query(psc_getinfo_fn gi, const char *prov_name,
		 struct fi_info **list, bool *relaxed)
{
	struct fi_info *hints = psc_fab_hints(prov_name);
	struct psc_sig_guard sg;
	int rc;

	*list = NULL;
	*relaxed = false;
	if (!gi)
		gi = fi_getinfo;
	if (!hints)
		return -ENOMEM;
	/* The first fi_getinfo loads the providers (sig.h). */
	psc_sig_guard_enter(&sg);
	rc = fab_getinfo(gi, 0, hints, list);
	if (rc == -FI_ENODATA && psc_provider_order_optional(prov_name)) {
		/* A family without FI_ORDER_SAS: ask again without it. */
		hints->tx_attr->msg_order = 0;
		hints->rx_attr->msg_order = 0;
		rc = fab_getinfo(gi, 0, hints, list);
		*relaxed = rc == 0;
	}
	psc_sig_guard_leave(&sg);
	fi_freeinfo(hints);
	return rc;
}

/* Whether the user pinned this family's interface (FI_TCP_IFACE ...). */
static bool iface_pinned(const struct psc_provider_ops *p)
{
	const char *v = p->iface_env ? getenv(p->iface_env) : NULL;

	return v && *v;
}

/*
 * Whether entry i is acceptable for this selection: its profile accepts
 * it and, for IP-addressed providers, it carries the chosen interface's
 * address (unless the user pinned the provider's interface). Fills caps.
 */
static bool entry_fits(const struct fi_info *i, struct psc_select *s,
		       struct psc_caps *caps)
{
	const char *name = i->fabric_attr->prov_name;
	const struct psc_provider_ops *p = psc_provider_lookup(name);
	char why[160];

	if (!p->accept(i, why, sizeof(why))) {
		note_reject(s->rejects, sizeof(s->rejects), name, why);
		return false;
	}
	p->derive_caps(i, caps);
	if (s->role != PSC_ROLE_ANY &&
	    (caps->link == PSC_LINK_SHM) != (s->role == PSC_ROLE_SHM))
		return false;
	if (caps->ip_addressed && s->iface && !iface_pinned(p) &&
	    (!i->src_addr ||
	     !psc_sockaddr_same_ip(i->src_addr,
				   (struct sockaddr *)&s->iface->addr)))
		return false;
	return true;
}

/* The distance of i's NIC, or -1 when unknown or not asked for. */
static int entry_distance(const struct fi_info *i, const struct psc_caps *c,
			  const struct psc_select *s)
{
	if (!s->distance || !c->nic_local ||
	    iface_pinned(psc_provider_lookup(i->fabric_attr->prov_name)))
		return -1;
	return s->distance(i, s->distance_arg);
}

/*
 * The caps the endpoint runs with: the profile's, with the parameters
 * and the selection's wish for software matching.
 */
static void apply_params(struct psc_caps *c, const struct psc_select *s)
{
	const struct psc_params *p = s->params;
	bool forced = p && p->sw_match == 1;

	if (p && p->max_msg_size && p->max_msg_size < c->max_msg_size)
		c->max_msg_size = p->max_msg_size;
	if (c->inject_size > c->max_msg_size)
		c->inject_size = c->max_msg_size;
	if (forced || s->sw_match)
		c->sw_match = true;
	if (c->sw_match && c->async_iov) {
		/* Software matching sends from an iov on the stack. */
		c->sw_match = false;
		if (forced)
			psc_log(PSC_LOG_WARN, s->rank, "PS_COMM_SW_MATCH=1 "
				"ignored: the provider needs FI_ASYNC_IOV");
	}
}

/*
 * The entry that fixes provider and address format: the first that fits
 * in libfabric's order, or for role NET the first of the most preferred
 * provider not ranked before s->min_rank.
 */
static const struct fi_info *first_fit(const struct fi_info *list,
				       struct psc_select *s)
{
	const struct fi_info *best = NULL;
	int best_rank = 0;
	struct psc_caps caps;

	for (const struct fi_info *i = list; i; i = i->next) {
		int rank;

		if (!entry_fits(i, s, &caps))
			continue;
		if (s->role != PSC_ROLE_NET)
			return i;
		rank = psc_provider_net_rank(i->fabric_attr->prov_name);
		if (rank >= s->min_rank && (!best || rank < best_rank)) {
			best = i;
			best_rank = rank;
		}
	}
	return best;
}

const struct fi_info *psc_fab_select(const struct fi_info *list,
				    struct psc_select *s)
{
	const struct fi_info *first;
	struct psc_caps caps;

	s->pick = NULL;
	s->nic_distance = -1;
	s->rejects[0] = '\0';
	/*
	 * The first fitting entry fixes the provider and address format, so
	 * every rank with the same fabric agrees; only the NIC within them
	 * follows this process's locality.
	 */
	first = first_fit(list, s);
	for (const struct fi_info *i = first; i; i = i->next) {
		int d;

		if (strcmp(i->fabric_attr->prov_name,
			   first->fabric_attr->prov_name) != 0 ||
		    i->addr_format != first->addr_format ||
		    !entry_fits(i, s, &caps))
			continue;
		d = entry_distance(i, &caps, s);
		if (!s->pick || (d >= 0 && (s->nic_distance < 0 ||
					    d < s->nic_distance))) {
			s->pick = i;
			s->caps = caps;
			s->nic_distance = d;
		}
	}
	if (s->pick)
		apply_params(&s->caps, s);
	return s->pick;
}

/* hwloc's view of the machine, loaded only if an entry names a NIC. */
struct lazy_topo {
	void *topo;
	bool tried;
};

static int lazy_distance(const struct fi_info *info, void *arg)
{
	struct lazy_topo *t = arg;

	if (!t->tried) {
		t->topo = psc_topo_open();
		t->tried = true;
	}
	return psc_topo_nic_distance(info, t->topo);
}

/*
 * Choose from list (fi_getinfo's answer qrc) the entry an endpoint of
 * cfg uses, skipping for role NET the providers ranked before min_rank,
 * into ep->info (a copy), with its profile, caps and preflight checks.
 * Returns 0, or -ENODATA with the reason in err.
 */
static int fab_choose(struct psc_fab *ep, const struct psc_fab_config *cfg,
		      const struct fi_info *list, int qrc, bool relaxed,
		      int min_rank, char *err, size_t len)
{
	struct lazy_topo topo = {NULL, false};
	struct psc_select sel = {
		.params = cfg->params,
		.iface = cfg->iface,
		.distance = lazy_distance,
		.distance_arg = &topo,
		.rank = cfg->rank,
		.role = cfg->role,
		.sw_match = cfg->sw_match,
		.min_rank = min_rank,
	};
	const char *filter = getenv("FI_PROVIDER");
	const struct fi_info *pick;
	char installed[256];
	int rc;

	pick = qrc == 0 ? psc_fab_select(list, &sel) : NULL;
	psc_topo_close(topo.topo);
	if (!pick && ep->fell_back[0]) {
		snprintf(err, len, "no provider left to fall back to: %s",
			 ep->fell_back);
		return -ENODATA;
	}
	if (!pick) {
		const char *rejects = sel.rejects;

		installed_providers(installed, sizeof(installed));
		snprintf(err, len, "no usable libfabric provider%s%s%s%s. "
			 "Providers installed here: %s. Unset FI_PROVIDER or "
			 "set it to one of them; `ps_comm_info` shows which "
			 "work on this machine and why",
			 filter ? " for FI_PROVIDER=" : "",
			 filter ? filter : "",
			 cfg->iface && qrc == 0 ? " on interface " : "",
			 cfg->iface && qrc == 0 ? cfg->iface->name : "",
			 installed);
		if (rejects[0]) {
			size_t u = strlen(err);

			snprintf(err + u, len - u, " (rejected: %s)", rejects);
		}
		return -ENODATA;
	}
	ep->info = fi_dupinfo(pick);
	if (!ep->info)
		return -ENOMEM;
	ep->prov = psc_provider_lookup(ep->info->fabric_attr->prov_name);
	ep->caps = sel.caps;
	if (relaxed)
		psc_log(PSC_LOG_INFO, cfg->rank, "provider %s offers no "
			"send-after-send ordering; asked again without it",
			ep->info->fabric_attr->prov_name);
	rc = psc_preflight_check(ep->info, &ep->caps, sel.nic_distance,
				 cfg->rank, err, len);
	if (rc) {
		fi_freeinfo(ep->info);
		ep->info = NULL;
		return rc;
	}
	return 0;
}

/*
 * Open a wait set for the CQ (caps.wait_set), an fd to block on that
 * fi_wait(set, 0) clears; on failure the CQ gets its own wait fd. Only
 * net asks for one, and net exists only up to libfabric 1.17; 2.x
 * headers deprecate wait sets, so a build against them has none.
 */
static void open_wait_set(struct psc_fab *ep, struct fi_cq_attr *attr)
{
#if FI_MAJOR_VERSION < 2
	struct fi_wait_attr wattr = {.wait_obj = FI_WAIT_FD};

	if (fi_wait_open(ep->fabric, &wattr, &ep->wait_set) != 0) {
		ep->wait_set = NULL;
		return;
	}
	attr->wait_obj = FI_WAIT_SET;
	attr->wait_set = ep->wait_set;
#else
	(void)attr;
	ep->wait_set = NULL;
#endif
}

int psc_fab_wait_set_try(struct psc_fab *f)
{
#if FI_MAJOR_VERSION < 2
	return fi_wait(f->wait_set, 0);
#else
	(void)f;
	return -FI_ENOSYS;
#endif
}

static void close_wait_set(struct psc_fab *ep)
{
	if (ep->wait_set)
		fi_close(&ep->wait_set->fid);
	ep->wait_set = NULL;
}

/*
 * Open the CQ with the best wait object that works for this provider, or
 * none when waits poll (with one, tcp's and net's progress passes also
 * poll its epoll sets: several more system calls per message).
 */
static int open_cq(struct psc_fab *ep, bool poll_wait)
{
	struct fi_cq_attr attr = {0};
	int rc;

	attr.format = FI_CQ_FORMAT_TAGGED;
	/* At least tx + rx depth, so the CQ can never overrun. */
	attr.size = ep->caps.tx_size + ep->caps.rx_size;
	attr.wait_obj = poll_wait	      ? FI_WAIT_NONE
			: ep->caps.wait_fd    ? FI_WAIT_FD
			: ep->caps.wait_sread ? FI_WAIT_UNSPEC
					      : FI_WAIT_NONE;
	if (!poll_wait && ep->caps.wait_fd && ep->caps.wait_set)
		open_wait_set(ep, &attr);
	rc = fi_cq_open(ep->domain, &attr, &ep->cq, NULL);
	if (rc && attr.wait_obj == FI_WAIT_SET) {
		close_wait_set(ep);
		attr.wait_obj = FI_WAIT_FD;
		attr.wait_set = NULL;
		rc = fi_cq_open(ep->domain, &attr, &ep->cq, NULL);
	}
	if (rc && attr.wait_obj != FI_WAIT_NONE) {
		attr.wait_obj = FI_WAIT_NONE;
		rc = fi_cq_open(ep->domain, &attr, &ep->cq, NULL);
	}
	if (rc)
		return rc;
	ep->wait_mode = PSC_WAIT_POLL;
	if ((attr.wait_obj == FI_WAIT_SET || attr.wait_obj == FI_WAIT_FD) &&
	    fi_control(attr.wait_obj == FI_WAIT_SET ? &ep->wait_set->fid
						    : &ep->cq->fid,
		       FI_GETWAIT, &ep->wait_fd) == 0)
		ep->wait_mode = PSC_WAIT_FD;
	else if (attr.wait_obj == FI_WAIT_UNSPEC)
		ep->wait_mode = PSC_WAIT_SREAD;
	return 0;
}

static const char *wait_mode_name(enum psc_wait_mode m)
{
	return m == PSC_WAIT_FD ? "wait fd" : m == PSC_WAIT_SREAD
						      ? "cq_sread"
						      : "poll+backoff";
}

/*
 * Before the first fi_enable, no file of this endpoint's name can be
 * ours: one there was left by an earlier process with our pid, killed
 * before it closed its endpoint. shm (1.17) would refuse to enable over
 * it (EBUSY, "shm file in use") while its owner's pid is alive, and ours
 * is. And the files fi_enable makes go if a termination signal ends the
 * process (sig.h). Families without such files have no remove_regions.
 */
static void prepare_region(struct psc_fab *ep)
{
	char name[sizeof(ep->name)], prefix[32];
	size_t n = sizeof(name);

	if (!ep->prov->remove_regions)
		return;
	if (fi_getname(&ep->ep->fid, name, &n) == 0 && n <= sizeof(name))
		ep->prov->remove_regions(name, n, 0);
	ep->prov->region_prefix(getpid(), prefix, sizeof(prefix));
	psc_sig_remove_on_term(prefix);
}

/*
 * "STEP on provider P failed: WHY", with the profile's explanation and
 * the fix when it has one, and where FI_UNIVERSE_SIZE came from.
 */
static void explain_open_error(const struct psc_fab *ep, const char *step,
			       int rc, char *err, size_t len)
{
	enum psc_universe_from from;
	size_t universe = psc_preflight_universe(&from);
	char why[768];
	size_t used;

	snprintf(err, len, "%s on provider %s failed: %s", step,
		 ep->info->fabric_attr->prov_name, fi_strerror(-rc));
	if (!ep->prov->explain_open_error)
		return;
	ep->prov->explain_open_error(ep->info, step, rc, universe, why,
				     sizeof(why));
	used = strlen(err);
	if (!why[0] || used + 1 >= len)
		return;
	snprintf(err + used, len - used, ". %s (FI_UNIVERSE_SIZE %zu: %s)",
		 why, universe,
		 from == PSC_UNIVERSE_USER ? "set in the environment"
		 : from == PSC_UNIVERSE_JOB ? "the job's size, set by pscomm"
					    : "libfabric's default");
}

/*
 * PS_COMM_TEST_FAIL_OPEN: whether its list names the provider of ep, in
 * full ("tcp;ofi_rxm") or by its core ("tcp", every layering of it), or
 * exactly with a leading '=' ("=tcp": libfabric 1.18's native tcp RDM,
 * not tcp;ofi_rxm), so that the tests can make its open fail as a device
 * that refuses would.
 */
static bool fail_injected(const struct psc_fab *ep,
			  const struct psc_fab_config *cfg)
{
	const char *list = cfg->params ? cfg->params->test_fail_open : NULL;
	const char *name = ep->info->fabric_attr->prov_name;
	char core[64];

	snprintf(core, sizeof(core), "%.*s", (int)strcspn(name, ";"), name);
	while (list && *list) {
		size_t n = strcspn(list, ",");

		if (*list == '=') {
			if (n - 1 == strlen(name) &&
			    strncmp(list + 1, name, n - 1) == 0)
				return true;
		} else if (psc_provider_filter_names(list, n, name) ||
			   psc_provider_filter_names(list, n, core)) {
			return true;
		}
		list += n + (list[n] == ',');
	}
	return false;
}

/*
 * Open fabric, domain, CQ, AV and endpoint on ep->info (chosen by
 * fab_choose), enable it, and open the MR cache: a staged sequence that
 * unwinds on error. On failure ep->info is freed, nothing is left open
 * and err says which step failed and why.
 */
static int fab_open_steps(struct psc_fab *ep, const struct psc_fab_config *cfg,
			  char *err, size_t len)
{
	struct fi_av_attr av_attr = {0};
	bool injected = false;
	const char *step;
	int rc;

	step = "fi_fabric";
	rc = fi_fabric(ep->info->fabric_attr, &ep->fabric, NULL);
	if (rc)
		goto err_step;
	step = "fi_domain";
	rc = fi_domain(ep->fabric, ep->info, &ep->domain, NULL);
	if (rc)
		goto err_close_fabric;
	step = "fi_cq_open";
	rc = open_cq(ep, cfg->poll_wait);
	if (rc)
		goto err_close_domain;
	step = "fi_av_open";
	av_attr.type = FI_AV_TABLE;
	rc = fi_av_open(ep->domain, &av_attr, &ep->av, NULL);
	if (rc)
		goto err_close_cq;
	step = "fi_endpoint";
	rc = fi_endpoint(ep->domain, ep->info, &ep->ep, NULL);
	if (rc)
		goto err_close_av;
	step = "fi_ep_bind (CQ)";
	rc = fi_ep_bind(ep->ep, &ep->cq->fid, FI_TRANSMIT | FI_RECV);
	if (rc)
		goto err_close_ep;
	step = "fi_ep_bind (AV)";
	rc = fi_ep_bind(ep->ep, &ep->av->fid, 0);
	if (rc)
		goto err_close_ep;
	step = "fi_enable";
	prepare_region(ep);
	injected = fail_injected(ep, cfg);
	rc = injected ? -FI_EINVAL : fi_enable(ep->ep);
	if (rc)
		goto err_close_ep;
	step = "fi_getname";
	ep->namelen = sizeof(ep->name);
	rc = fi_getname(&ep->ep->fid, ep->name, &ep->namelen);
	if (rc)
		goto err_close_ep;
	if (ep->prov->trim_region)
		ep->prov->trim_region(ep->name, ep->namelen);
	step = NULL; /* psc_mr_fab_open explains its own failure */
	rc = psc_mr_fab_open(ep, cfg->params, err, len);
	if (rc)
		goto err_close_ep;
	if (psc_log_enabled(PSC_LOG_DEBUG)) {
		char txt[128];
		size_t tl = sizeof(txt);

		if (!fi_av_straddr(ep->av, ep->name, txt, &tl))
			snprintf(txt, sizeof(txt), "(unprintable)");
		psc_log(PSC_LOG_DEBUG, ep->rank, "endpoint name %s (%zu bytes)",
			txt, ep->namelen);
	}
	psc_log(PSC_LOG_INFO, ep->rank, "provider %s, fabric %s, domain %s, "
		"tag bits %u, max_msg_size %zu, inject %zu, %s progress, "
		"waits by %s", ep->info->fabric_attr->prov_name,
		ep->info->fabric_attr->name, ep->info->domain_attr->name,
		ep->caps.tag_bits, ep->caps.max_msg_size,
		ep->caps.inject_size,
		ep->caps.manual_progress ? "manual" : "auto",
		ep->wait_set ? "a wait set's fd" : wait_mode_name(ep->wait_mode));
	return 0;

err_close_ep:
	fi_close(&ep->ep->fid);
err_close_av:
	fi_close(&ep->av->fid);
err_close_cq:
	fi_close(&ep->cq->fid);
	close_wait_set(ep);
err_close_domain:
	fi_close(&ep->domain->fid);
err_close_fabric:
	fi_close(&ep->fabric->fid);
err_step:
	if (injected)
		snprintf(err, len, "%s on provider %s failed: %s (injected by "
			 "PS_COMM_TEST_FAIL_OPEN)", step,
			 ep->info->fabric_attr->prov_name, fi_strerror(-rc));
	else if (step)
		explain_open_error(ep, step, rc, err, len);
	fi_freeinfo(ep->info);
	ep->info = NULL;
	ep->fabric = NULL;
	ep->domain = NULL;
	ep->cq = NULL;
	ep->av = NULL;
	ep->ep = NULL;
	return rc;
}

/* fab_open_steps, with the signals a provider may take guarded (sig.h). */
static int fab_open_entry(struct psc_fab *ep, const struct psc_fab_config *cfg,
			  char *err, size_t len)
{
	struct psc_sig_guard sg;
	int rc;

	psc_sig_guard_enter(&sg);
	rc = fab_open_steps(ep, cfg, err, len);
	psc_sig_guard_leave(&sg);
	return rc;
}

/*
 * Why a provider the user named is not replaced by another when it
 * fails: appended to the error of a role ANY endpoint whose FI_PROVIDER
 * names one provider.
 */
static void named_no_fallback(char *err, size_t len)
{
	const char *filter = getenv("FI_PROVIDER");
	size_t u = strlen(err);

	if (!psc_provider_filter_single(filter) || u + 1 >= len)
		return;
	snprintf(err + u, len - u, ". FI_PROVIDER=%s names this provider, "
		 "so pscomm does not fall back to another; unset FI_PROVIDER "
		 "(or list several) to let it try the next one in its order",
		 filter);
}

/* Append "name: why" to ep->fell_back and say so in the log. */
static void note_fall_back(struct psc_fab *ep, const struct psc_fab_config *cfg,
			   const char *name, const char *why)
{
	size_t u = strlen(ep->fell_back);

	snprintf(ep->fell_back + u, sizeof(ep->fell_back) - u, "%s%s: %s",
		 u ? "; " : "", name, why);
	psc_log(PSC_LOG_INFO, cfg->rank, "provider %s did not open (%s); "
		"trying the next provider in pscomm's order", name, why);
}

int psc_fab_open(struct psc_fab *ep, const struct psc_fab_config *cfg,
		 char *err, size_t len)
{
	bool fallback = cfg->role == PSC_ROLE_NET;
	int min_rank = fallback ? cfg->min_rank : 0;
	struct fi_info *list = NULL;
	bool relaxed = false;
	int qrc, rc;

	ep->wait_fd = -1;
	ep->rank = cfg->rank;
	ep->fell_back[0] = '\0';
	if (cfg->iface)
		snprintf(ep->iface, sizeof(ep->iface), "%s", cfg->iface->name);
	/* Fork safety, job UUIDs and shm's CMA must precede fi_getinfo. */
	psc_preflight_env(cfg->params, cfg->rank, cfg->universe);
	qrc = psc_fab_query(fi_getinfo,
			   cfg->role == PSC_ROLE_SHM ? PSC_SHM_PROVIDER : NULL,
			   &list, &relaxed);
	for (;;) {
		char name[64];
		int rank;

		rc = fab_choose(ep, cfg, list, qrc, relaxed, min_rank, err,
				len);
		if (rc)
			break;
		snprintf(name, sizeof(name), "%s",
			 ep->info->fabric_attr->prov_name);
		rank = psc_provider_net_rank(name);
		rc = fab_open_entry(ep, cfg, err, len);
		if (!rc || !fallback || rc == -ENOMEM) {
			if (rc && cfg->role == PSC_ROLE_ANY)
				named_no_fallback(err, len);
			break;
		}
		note_fall_back(ep, cfg, name, err);
		min_rank = rank + 1;
	}
	fi_freeinfo(list);
	return rc;
}

int psc_fab_try_open(const struct fi_info *entry,
		     const struct psc_params *p, int ranks, char *err,
		     size_t len)
{
	struct psc_fab_config cfg = {.params = p, .rank = -1,
				    .role = PSC_ROLE_ANY, .universe = ranks};
	struct psc_fab ep;
	int rc;

	memset(&ep, 0, sizeof(ep));
	ep.wait_fd = -1;
	ep.rank = -1;
	psc_preflight_env(p, -1, ranks);
	ep.info = fi_dupinfo(entry);
	if (!ep.info)
		return -ENOMEM;
	ep.prov = psc_provider_lookup(ep.info->fabric_attr->prov_name);
	ep.prov->derive_caps(ep.info, &ep.caps);
	rc = fab_open_entry(&ep, &cfg, err, len);
	if (rc)
		return rc;
	psc_fab_close_ep(&ep);
	psc_fab_close(&ep);
	return 0;
}

void psc_fab_close_ep(struct psc_fab *f)
{
	fi_close(&f->ep->fid);
}

void psc_fab_close(struct psc_fab *f)
{
	psc_mr_fab_close(f);
	fi_close(&f->av->fid);
	fi_close(&f->cq->fid);
	close_wait_set(f);
	fi_close(&f->domain->fid);
	fi_close(&f->fabric->fid);
	fi_freeinfo(f->info);
	f->info = NULL;
}

int psc_fab_av_insert(struct psc_fab *f, const void *addr,
		      fi_addr_t *fi_addr)
{
	/* One at a time: string-format names (shm) vary in length. */
	int rc = fi_av_insert(f->av, addr, 1, fi_addr, 0, NULL);

	if (rc < 0)
		return rc;
	return rc == 1 ? 0 : -EADDRNOTAVAIL;
}

const char *psc_fab_provider(const struct psc_fab *f)
{
	return f->info->fabric_attr->prov_name;
}

uint32_t psc_fab_addr_format(const struct psc_fab *f)
{
	return f->info->addr_format;
}

int psc_fab_check_version(char *err, size_t len)
{
	uint32_t run = fi_version();
	uint32_t built = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);

	if (run >= built)
		return 0;
	snprintf(err, len, "libfabric %u.%u found at run time, but pscomm was "
		 "built against %u.%u: install a newer libfabric or fix "
		 "LD_LIBRARY_PATH", FI_MAJOR(run), FI_MINOR(run),
		 FI_MAJOR(built), FI_MINOR(built));
	return -ENOSYS;
}

void psc_fab_version(char *buf, size_t len)
{
	snprintf(buf, len, "libfabric %u.%u", FI_MAJOR(fi_version()),
		 FI_MINOR(fi_version()));
}

const char *psc_fab_strerror(int err)
{
	return fi_strerror(err);
}

int psc_fab_providers(struct fi_info **all)
{
	struct psc_sig_guard sg;
	int rc;

	*all = NULL;
	psc_sig_guard_enter(&sg);
	rc = fab_getinfo(fi_getinfo, FI_PROV_ATTR_ONLY, NULL, all);
	psc_sig_guard_leave(&sg);
	return rc;
}

void psc_fab_freeinfo(struct fi_info *list)
{
	fi_freeinfo(list);
}

const char *psc_fab_addr_format_name(uint32_t addr_format)
{
	return fi_tostr(&addr_format, FI_TYPE_ADDR_FORMAT);
}
