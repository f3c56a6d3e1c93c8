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
#include "util/log.h"

/* Map a bootstrap errno to the public code for bootstrap failures. */
static int bootstrap_err(int rc)
{
	switch (rc) {
	case -ETIMEDOUT:
		return PS_COMM_ERR_TIMEOUT;
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

/* A peer's record: its address goes into the AV at its rank. */
static int add_peer(void *arg, int r, const struct psc_boot_record *rec,
		    char *err, size_t len)
{
	struct ps_comm *c = arg;
	int rc = psc_ep_av_insert(c->ch.ep, rec->addr, &c->ch.peers[r]);

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
	my_record(c, &me);
	if (strcmp(plan.spec, "none") == 0)
		return psc_ep_av_insert(c->ch.ep, me.addr, &c->ch.peers[0])
			       ? PS_COMM_ERR_PROVIDER
			       : 0;
	rc = psc_boot_exchange(&plan, &me, add_peer, c, &local, err,
			       sizeof(err));
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
	if (!c->ch.peers) {
		free(c);
		return PS_COMM_ERR_NOMEM;
	}
	for (int i = 0; i < n; i++)
		c->ch.peers[i] = parent->ch.peers[ranks[i]];
	psc_chan_bind(&c->ch, parent->ch.ep);
	c->ch.rank = me;
	c->ch.size = n;
	c->ch.ctx = ctx;
	c->params = parent->params;
	c->op_timeout = parent->op_timeout;
	memcpy(c->provider, parent->provider, sizeof(c->provider));
	psc_ep_hold(c->ch.ep);
	*out = c;
	return 0;
}

void psc_comm_free(struct ps_comm *c)
{
	free(c->ch.peers);
	free(c);
}
