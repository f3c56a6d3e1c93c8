/*
 * Creating communicators: a world communicator by bootstrap (rank and
 * size, rendezvous plan, endpoint, then the record exchange, whose every
 * record's address goes into the AV in rank order), and the
 * sub-communicators of ps_comm_split on their parent's endpoint.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot/boot.h"
#include "comm/comm.h"
#include "live/live.h"
#include "util/log.h"

/*
 * Map a bootstrap errno to the public code for bootstrap failures; a
 * rank that never came is a bootstrap failure too, not a timeout.
 */
static int bootstrap_err(int rc)
{
	switch (rc) {
	case -EBADE:
		return PS_COMM_ERR_MISMATCH;
	case -EPROTO:
		return PS_COMM_ERR_PROTO;
	case -EINVAL:
	case -ENOTDIR:
		return PS_COMM_ERR_CONFIG;
	case -ENOSYS:
		return PS_COMM_ERR_NOTSUP;
	default:
		return PS_COMM_ERR_BOOTSTRAP;
	}
}

static int rank_size(struct ps_comm *c, const ps_comm_attr_t *attr)
{
	char err[256];
	int rc = psc_env_rank_size(&c->ch.rank, &c->ch.size, err, sizeof(err));

	if (rc) {
		psc_comm_set_error(c, "%s", err);
		return PS_COMM_ERR_CONFIG;
	}
	if (attr && attr->size >= 1)
		c->ch.size = attr->size;
	if (attr && attr->rank >= 0)
		c->ch.rank = attr->rank;
	if (c->ch.rank >= c->ch.size) {
		psc_comm_set_error(c, "rank %d is not below size %d",
				   c->ch.rank, c->ch.size);
		return PS_COMM_ERR_CONFIG;
	}
	if (c->ch.size > (1 << PSC_TAG_RANK_BITS)) {
		psc_comm_set_error(c, "size %d exceeds pscomm's limit of %d "
				   "ranks", c->ch.size, 1 << PSC_TAG_RANK_BITS);
		return PS_COMM_ERR_CONFIG;
	}
	return 0;
}

/*
 * Busy-polling only pays when every rank has a core. Like MPI's
 * yield-when-idle, PS_COMM_SPIN_US=-1 spins 200 us, or not at all when
 * this host runs more ranks (local) than the cores this process may use.
 */
static void spin_policy(struct ps_comm *c, int local)
{
	cpu_set_t set;
	int cpus = 0;
	double us;

	if (c->params.spin_us >= 0)
		return;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		cpus = CPU_COUNT(&set);
	us = cpus > 0 && local > cpus ? 0 : 200;
	psc_ep_set_spin(c->ch.ep, us);
	psc_log(PSC_LOG_INFO, c->ch.rank, "%d ranks on this host, %d cores: "
		"blocking calls %s", local, cpus,
		us ? "spin 200 us, then yield" : "yield at once");
}

/*
 * A peer's record: its address goes into the AV at its rank, its
 * liveness part to the monitor.
 */
static int add_peer(void *arg, int r, const struct psc_boot_record *rec,
		    char *err, size_t len)
{
	struct ps_comm *c = arg;
	int rc = c->live ? psc_live_peer(c->live, r, rec->host, rec->live, err,
					 len)
			 : 0;

	if (rc)
		return rc;
	rc = psc_ep_av_insert(c->ch.ep, rec->addr, &c->ch.peers[r]);

	psc_log(PSC_LOG_DEBUG, c->ch.rank, "rank %d on %s: fi_addr %llu", r,
		rec->host, (unsigned long long)c->ch.peers[r]);
	if (rc)
		snprintf(err, len, "fi_av_insert of rank %d (%s) failed: %s",
			 r, rec->host, psc_fab_strerror(-rc));
	return rc;
}

/* This rank's record: the bootstrap's part plus the endpoint's. */
static void my_record(const struct ps_comm *c, struct psc_boot_record *rec)
{
	const void *name;

	psc_boot_record_init(rec, &c->params);
	snprintf(rec->provider, sizeof(rec->provider), "%s", c->provider);
	snprintf(rec->addr_format, sizeof(rec->addr_format), "%u",
		 psc_ep_addr_format(c->ch.ep));
	snprintf(rec->ctx, sizeof(rec->ctx), "%u", c->ch.ctx);
	name = psc_ep_name(c->ch.ep, &rec->addrlen);
	memcpy(rec->addr, name, rec->addrlen);
	if (c->live)
		psc_live_self(c->live, rec->live, sizeof(rec->live));
}

/*
 * The world's liveness monitor: open before the exchange (rank 0
 * listens, and its record says where), started and watching c after it.
 */
static int live_open(struct ps_comm *c, const struct psc_boot_plan *plan,
		     char *err, size_t len)
{
	struct psc_live_config cfg = {
		.rank = c->ch.rank,
		.size = c->ch.size,
		.timeout = c->params.peer_timeout,
		.watchdog = c->params.watchdog == 1,
		.iface = &plan->iface,
		.port_range = c->params.port_range,
		.unauth_max = c->params.unauth_max,
	};

	c->world = calloc((size_t)c->ch.size, sizeof(*c->world));
	if (!c->world)
		return -ENOMEM;
	for (int r = 0; r < c->ch.size; r++)
		c->world[r] = r;
	return psc_live_open(&c->live, &cfg, err, len);
}

static int live_start(struct ps_comm *c, char *err, size_t len)
{
	int rc = psc_live_start(c->live, err, len);

	if (!rc)
		rc = psc_live_watch(c->live, c->ch.ep, &c->ch, c->ch.ctx,
				    c->world, c->ch.peers, c->ch.size);
	/* The watch holds the monitor now (or nothing does). */
	psc_live_release(c->live);
	if (rc)
		c->live = NULL;
	c->owns_live = rc == 0;
	return rc;
}

/*
 * A job across hosts without a key: anyone who reaches its ports can
 * join or disturb it. Rank 0 says so once, with the way out.
 */
static void warn_no_key(const struct ps_comm *c,
			const struct psc_boot_plan *plan, int local)
{
	if (plan->key.keyed || c->ch.rank != 0 || local >= c->ch.size)
		return;
	psc_log(PSC_LOG_WARN, 0, "this job spans several hosts and has no "
		"PS_COMM_JOB_KEY: anyone who can reach its rendezvous and "
		"liveness ports can join it as a rank or disturb it. Give "
		"every rank the same secret, e.g. PS_COMM_JOB_KEY_FILE=FILE "
		"with FILE made by 'umask 077; head -c 32 /dev/urandom | "
		"base64 > FILE' (ps_comm_run and PMIx launchers do this "
		"for you; doc/security.md)");
}

int psc_comm_bootstrap(struct ps_comm *c, const ps_comm_attr_t *attr)
{
	struct psc_boot_plan plan;
	struct psc_ep_config cfg = {&c->params, NULL, 0};
	struct psc_boot_record me;
	struct psc_ep *ep;
	char err[1024];
	int rc, local = 0;

	rc = rank_size(c, attr);
	if (rc)
		return rc;
	cfg.rank = c->ch.rank;
	if (psc_boot_plan(&plan, &c->params, attr, c->ch.rank, c->ch.size,
			  err, sizeof(err))) {
		psc_comm_set_error(c, "%s", err);
		return PS_COMM_ERR_CONFIG;
	}
	cfg.iface = plan.have_iface ? &plan.iface : NULL;
	c->ch.peers = calloc((size_t)c->ch.size, sizeof(*c->ch.peers));
	if (!c->ch.peers)
		return PS_COMM_ERR_NOMEM;
	rc = psc_ep_acquire(&ep, &cfg, &c->ch.ctx, err, sizeof(err));
	if (rc) {
		psc_comm_set_error(c, "%s", err);
		return rc == -ENOMEM ? PS_COMM_ERR_NOMEM : PS_COMM_ERR_PROVIDER;
	}
	psc_chan_bind(&c->ch, ep);
	snprintf(c->provider, sizeof(c->provider), "%s",
		 psc_ep_provider(c->ch.ep));
	if (strcmp(plan.spec, "none") != 0 &&
	    (rc = live_open(c, &plan, err, sizeof(err))) != 0) {
		psc_comm_set_error(c, "%s", err);
		return rc == -ENOMEM ? PS_COMM_ERR_NOMEM : PS_COMM_ERR_SYSTEM;
	}
	my_record(c, &me);
	if (strcmp(plan.spec, "none") == 0)
		return psc_ep_av_insert(c->ch.ep, me.addr, &c->ch.peers[0])
			       ? PS_COMM_ERR_PROVIDER
			       : 0;
	rc = psc_boot_exchange(&plan, &me, add_peer, c, &local, err,
			       sizeof(err));
	if (!rc)
		warn_no_key(c, &plan, local);
	if (!rc && c->live) {
		psc_live_set_key(c->live, &plan.key);
		rc = live_start(c, err, sizeof(err));
	}
	memset(&plan.key, 0, sizeof(plan.key));
	if (rc && c->live) {
		psc_live_release(c->live);
		c->live = NULL;
	}
	if (rc) {
		psc_comm_set_error(c, "%s", err);
		return bootstrap_err(rc);
	}
	spin_policy(c, local);
	return 0;
}

int psc_comm_create_sub(struct ps_comm *parent, const int *ranks, int n,
			int me, uint32_t ctx, struct ps_comm **out)
{
	struct ps_comm *c = calloc(1, sizeof(*c));

	if (!c)
		return PS_COMM_ERR_NOMEM;
	c->ch.peers = calloc((size_t)n, sizeof(*c->ch.peers));
	c->world = calloc((size_t)n, sizeof(*c->world));
	if (!c->ch.peers || !c->world) {
		psc_comm_free(c);
		return PS_COMM_ERR_NOMEM;
	}
	for (int i = 0; i < n; i++) {
		c->ch.peers[i] = parent->ch.peers[ranks[i]];
		c->world[i] = parent->world ? parent->world[ranks[i]] : -1;
	}
	psc_chan_bind(&c->ch, parent->ch.ep);
	c->ch.rank = me;
	c->ch.size = n;
	c->ch.ctx = ctx;
	c->params = parent->params;
	c->op_timeout = parent->op_timeout;
	memcpy(c->provider, parent->provider, sizeof(c->provider));
	if (parent->live &&
	    psc_live_watch(parent->live, c->ch.ep, &c->ch, ctx, c->world,
			   c->ch.peers, n) != 0) {
		psc_comm_free(c);
		return PS_COMM_ERR_NOMEM;
	}
	c->live = parent->live;
	psc_ep_hold(c->ch.ep);
	*out = c;
	return 0;
}

void psc_comm_free(struct ps_comm *c)
{
	if (c->live)
		psc_live_unwatch(c->live, &c->ch);
	if (c->ch.ep)
		psc_ep_forget_owner(c->ch.ep, &c->ch);
	free(c->world);
	free(c->ch.peers);
	free(c);
}
