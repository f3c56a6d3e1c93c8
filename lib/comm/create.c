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
#include "fabric/topo.h"
#include "live/live.h"
#include "provider.h"
#include "util/err.h"
#include "util/log.h"
#include "util/util.h"

/*
 * The caller's attributes and PS_COMM_BOOTSTRAP, before anything opens:
 * PS_COMM_ERR_ARG naming a field of attr, PS_COMM_ERR_CONFIG naming the
 * variable.
 */
static int check_start(struct ps_comm *c, const ps_comm_attr_t *attr)
{
	char err[256];

	if (attr && attr->rank < -1) {
		psc_comm_set_error(c, "attr.rank=%d: a rank is 0 or more (-1: "
				   "from the environment)", attr->rank);
		return PS_COMM_ERR_ARG;
	}
	if (attr && (attr->size == 0 || attr->size < -1)) {
		psc_comm_set_error(c, "attr.size=%d: a communicator has at "
				   "least one rank (-1: from the "
				   "environment)", attr->size);
		return PS_COMM_ERR_ARG;
	}
	if (attr && attr->bootstrap &&
	    psc_boot_spec_check(attr->bootstrap, "attr.bootstrap", err,
				sizeof(err)) != 0) {
		psc_comm_set_error(c, "%s", err);
		return PS_COMM_ERR_ARG;
	}
	if (psc_boot_spec_check(c->params.bootstrap, "PS_COMM_BOOTSTRAP", err,
				sizeof(err)) != 0) {
		psc_comm_set_error(c, "%s", err);
		return PS_COMM_ERR_CONFIG;
	}
	return 0;
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
	if (c->ch.rank < 0) {
		psc_comm_set_error(c, "PS_COMM_SIZE=%d is set but no rank is: "
				   "set PS_COMM_RANK too (or attr.rank)",
				   c->ch.size);
		return PS_COMM_ERR_CONFIG;
	}
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

/* The cores this process may run on, or 0 if unknown. */
static int usable_cpus(void)
{
	cpu_set_t set;

	return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
							    : 0;
}

/*
 * PS_COMM_WAIT for a communicator's endpoints, which are opened before
 * the exchange tells how many ranks share this host: auto counts the
 * job's, so that it polls only where no rank can share a core.
 */
static int wait_policy(struct ps_comm *c, bool *poll)
{
	char err[128];

	if (psc_wait_policy(c->params.wait, c->ch.size, usable_cpus(), poll,
			    err, sizeof(err)) == 0)
		return 0;
	psc_comm_set_error(c, "%s", err);
	return PS_COMM_ERR_CONFIG;
}

/*
 * Busy-polling only pays when every rank has a core. Like MPI's
 * yield-when-idle, PS_COMM_SPIN_US=-1 spins 200 us, or not at all when
 * this host runs more ranks (local) than the cores this process may use.
 */
static void spin_policy(struct ps_comm *c, int local, bool own_core)
{
	int cpus = usable_cpus();
	double us;

	if (c->params.spin_us >= 0)
		return;
	/* Bound to a core of its own (PS_COMM_BIND=core): no one to yield to. */
	us = !own_core && cpus > 0 && local > cpus ? 0 : 200;
	for (int i = 0; i < c->ch.npaths; i++)
		psc_ep_set_spin(c->ch.path[i].ep, us);
	psc_log(PSC_LOG_INFO, c->ch.rank, "%d ranks on this host, %d cores: "
		"blocking calls %s", local, cpus,
		us ? "spin 200 us, then yield" : "yield at once");
}

/*
 * How a world communicator reaches its peers (psc_provider_fabrics): one
 * provider, the network for all, or shm inside nodes (FAB_NODE).
 */
enum fabrics {
	FAB_ONE = PSC_FABRICS_ONE,
	FAB_NET = PSC_FABRICS_NET,
	FAB_NODE = PSC_FABRICS_NODE
};

static int fabric_mode(struct ps_comm *c, enum fabrics *mode)
{
	const char *fp = getenv("FI_PROVIDER");
	enum psc_fabrics f;
	enum psc_bind bind;
	bool ignored;
	char err[256];

	/* PS_COMM_BIND applies after the exchange: check it before. */
	if (psc_topo_bind_parse(c->params.bind, &bind, err, sizeof(err))) {
		psc_comm_set_error(c, "PS_COMM_BIND: %s", err);
		return PS_COMM_ERR_CONFIG;
	}

	if (psc_provider_fabrics(fp, c->params.intra, &f, &ignored, err,
				 sizeof(err))) {
		psc_comm_set_error(c, "%s", err);
		return PS_COMM_ERR_CONFIG;
	}
	if (ignored)
		psc_log(PSC_LOG_WARN, c->ch.rank, "PS_COMM_INTRA=shm ignored: "
			"FI_PROVIDER=%s names one provider, so every peer, "
			"node-local or not, uses it (unset FI_PROVIDER for shm "
			"inside nodes)", fp);
	*mode = (enum fabrics)f;
	return 0;
}

/* What the record exchange of a bootstrap builds up. */
struct boot_ctx {
	struct ps_comm *c;
	struct psc_boot_record *me;
	enum fabrics mode;
	struct psc_fab_config *cfg; /* how c's endpoints were opened */
	const struct psc_auth_key *key; /* the job key, for the monitor */
	struct psc_ep *shm;	/* a pair's shared-memory endpoint (path 1) */
	int *raw;		/* rank -> index into ids */
	char (*ids)[96];	/* distinct node identities */
	int nids;
	int used[2];		/* other ranks served by each path */
	int same_host;		/* ranks with this rank's host name */
	int fell_rank;		/* the first rank whose network provider */
	char fell_why[PSC_BOOT_VOTE_NOTE]; /* fell back, and why; -1: none */
	char net_why[768];	/* why there is no network endpoint */
};

/* The index of node identity id among those seen, adding it. */
static int node_index(struct boot_ctx *b, const char *id)
{
	for (int i = 0; i < b->nids; i++)
		if (strcmp(b->ids[i], id) == 0)
			return i;
	snprintf(b->ids[b->nids], sizeof(b->ids[0]), "%s", id);
	return b->nids++;
}

/*
 * Where rank r goes: a pair sends to a rank of this node that has a
 * shared-memory address over shm (path 1), to any other over the
 * network (path 0); a single endpoint serves all, unless it is shm and
 * r is elsewhere. Both ends of every link decide alike.
 */
static int peer_path(struct boot_ctx *b, int r,
		     const struct psc_boot_record *rec, char *err, size_t len)
{
	bool same = strcmp(rec->node, b->me->node) == 0;
	struct ps_comm *c = b->c;

	if (b->shm)
		return same && rec->shmlen ? 1 : 0;
	if (!same && psc_ep_caps(c->ch.ep)->link == PSC_LINK_SHM) {
		snprintf(err, len, "rank %d (%s) is on another node (%s, this "
			 "one is %s) and %s cannot reach it: set FI_PROVIDER "
			 "to a network provider, or unset it (shm inside "
			 "nodes, the network between them)", r, rec->host,
			 rec->node, b->me->node, c->provider);
		return -EHOSTUNREACH;
	}
	return 0;
}

/*
 * A peer's record: its address goes into the AV of its path at its
 * rank, its node into the node map, its liveness part to the monitor.
 */
static int add_peer(void *arg, int r, const struct psc_boot_record *rec,
		    char *err, size_t len)
{
	struct boot_ctx *b = arg;
	struct ps_comm *c = b->c;
	int path = peer_path(b, r, rec, err, len);
	int rc = path < 0 ? path
		 : c->live ? psc_live_peer(c->live, r, rec->host, rec->live,
					   err, len)
			   : 0;

	if (rc)
		return rc;
	b->raw[r] = node_index(b, rec->node);
	b->same_host += strcmp(rec->host, b->me->host) == 0;
	if (r != c->ch.rank)
		b->used[path]++;
	if (c->ch.via)
		c->ch.via[r] = (uint8_t)path;
	rc = psc_ep_av_insert(c->ch.path[path].ep, path ? rec->shm : rec->addr,
			      &c->ch.peers[r]);
	psc_log(PSC_LOG_DEBUG, c->ch.rank, "rank %d on %s (node %d): %s "
		"fi_addr %llu", r, rec->host, b->raw[r],
		psc_ep_provider(c->ch.path[path].ep),
		(unsigned long long)c->ch.peers[r]);
	if (rc)
		snprintf(err, len, "fi_av_insert of rank %d (%s) failed: %s",
			 r, rec->host, psc_fab_strerror(-rc));
	return rc;
}

/* This rank's record: the bootstrap's part plus the endpoints'. */
static void my_record(const struct ps_comm *c, const struct psc_ep *shm,
		      struct psc_boot_record *rec)
{
	const void *name;

	psc_boot_record_init(rec, &c->params);
	/* The families' variables that must agree join the parameters'. */
	psc_provider_agree_append(rec->agree, sizeof(rec->agree));
	snprintf(rec->provider, sizeof(rec->provider), "%s",
		 psc_ep_provider(c->ch.ep));
	snprintf(rec->addr_format, sizeof(rec->addr_format), "%u",
		 psc_ep_addr_format(c->ch.ep));
	snprintf(rec->ctx, sizeof(rec->ctx), "%u", c->ch.ctx);
	name = psc_ep_name(c->ch.ep, &rec->addrlen);
	memcpy(rec->addr, name, rec->addrlen);
	if (shm) {
		name = psc_ep_name(shm, &rec->shmlen);
		memcpy(rec->shm, name, rec->shmlen);
	}
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

/*
 * Watch c's ranks on each of its endpoints (for the watchdog and shm),
 * each with its address on that endpoint: FI_ADDR_UNSPEC for the ranks
 * another path serves, so that a death poisons only the endpoint the
 * dead rank shared queues on.
 */
static int live_watch_chan(struct psc_live *l, struct ps_comm *c)
{
	fi_addr_t *addrs = NULL;
	int rc = 0;

	if (c->ch.via &&
	    !(addrs = malloc((size_t)c->ch.size * sizeof(*addrs))))
		return -ENOMEM;
	for (int i = 0; i < c->ch.npaths && !rc; i++) {
		for (int r = 0; addrs && r < c->ch.size; r++)
			addrs[r] = c->ch.via[r] == i ? c->ch.peers[r]
						     : FI_ADDR_UNSPEC;
		rc = psc_live_watch(l, c->ch.path[i].ep, &c->ch, c->ch.ctx,
				    c->world, addrs ? addrs : c->ch.peers,
				    c->ch.size);
	}
	free(addrs);
	return rc;
}

/*
 * The exchange's records are all in: rank 0 starts its monitor now,
 * before it waits for the slowest rank's goodbye, so that the ranks that
 * finish first are answered when they join (a lossy network can hold
 * one rank's goodbye back for seconds). Other ranks join later.
 */
static int gathered(void *arg, char *err, size_t len)
{
	struct boot_ctx *b = arg;
	struct ps_comm *c = b->c;

	if (!c->live || c->ch.rank != 0)
		return 0;
	psc_live_set_key(c->live, b->key);
	return psc_live_start(c->live, err, len);
}

static int live_start(struct ps_comm *c, char *err, size_t len)
{
	int rc = 0;

	if (c->ch.rank != 0)
		rc = psc_live_start(c->live, err, len);
	psc_live_arm(c->live);
	if (!rc)
		rc = live_watch_chan(c->live, c);
	/* The watch holds the monitor now (or nothing does). */
	psc_live_release(c->live);
	if (rc)
		c->live = NULL;
	c->owns_live = rc == 0;
	return rc;
}

/*
 * A job across hosts (by host name, or by node: another network
 * namespace) without a key: anyone who reaches its ports can join or
 * disturb it. Rank 0 says so once, with the way out.
 */
static void warn_no_key(const struct ps_comm *c,
			const struct psc_boot_plan *plan, int local,
			int same_host)
{
	if (plan->key.keyed || c->ch.rank != 0 ||
	    (local >= c->ch.size && same_host >= c->ch.size))
		return;
	psc_log(PSC_LOG_WARN, 0, "this job spans several hosts and has no "
		"PS_COMM_JOB_KEY: anyone who can reach its rendezvous and "
		"liveness ports can join it as a rank or disturb it. Give "
		"every rank the same secret, e.g. PS_COMM_JOB_KEY_FILE=FILE "
		"with FILE made by 'umask 077; head -c 32 /dev/urandom | "
		"base64 > FILE' (ps_comm_run and PMIx launchers do this "
		"for you; doc/security.md)");
}

/*
 * Bind this rank as PS_COMM_BIND asks, now that its place among its
 * node's ranks is known (the value was checked before the exchange);
 * *own_core says whether it got a core to itself. Returns 0 or -errno
 * with words in err.
 */
static int bind_rank(struct ps_comm *c, bool *own_core, char *err,
		     size_t len)
{
	char msg[512];
	int rc = psc_topo_bind_self(c->params.bind, c->local_rank,
				    c->local_size, msg, sizeof(msg));

	*own_core = rc == 0 && strcmp(c->params.bind, "core") == 0;
	if (rc < 0) {
		snprintf(err, len, "%s", msg);
		return rc;
	}
	if (msg[0])
		psc_log(rc == PSC_TOPO_BIND_FALLBACK ? PSC_LOG_WARN
						     : PSC_LOG_INFO,
			c->ch.rank, "%s", msg);
	return 0;
}

/*
 * Open c's endpoints for mode: one (ANY or NET role), or for FAB_NODE
 * the pair, either half of which may be missing; *shm receives the
 * pair's shm endpoint when both opened. c takes a context id, unless
 * keep_ctx (a reopen keeps the one it has). Returns 0 or an internal
 * code (-ENODATA: no usable provider) with c's error set, and words in
 * err.
 */
static int open_endpoints(struct ps_comm *c, enum fabrics mode,
			  struct psc_fab_config *cfg, struct psc_ep **shm,
			  bool keep_ctx, char *err, size_t len)
{
	struct psc_ep *ep = NULL, *net = NULL;
	uint32_t *ctx = keep_ctx ? NULL : &c->ch.ctx;
	int rc;

	*shm = NULL;
	cfg->role = mode == FAB_NET ? PSC_ROLE_NET : PSC_ROLE_ANY;
	if (mode == FAB_NODE) {
		rc = psc_ep_acquire_pair(&net, shm, cfg, ctx, err, len);
		ep = net ? net : *shm;
		if (!net)
			*shm = NULL;
	} else {
		rc = psc_ep_acquire(&ep, cfg, ctx, err, len);
	}
	if (rc) {
		psc_comm_set_error(c, "%s", err);
		return rc;
	}
	psc_chan_bind(&c->ch, ep, *shm);
	if (*shm) {
		c->ch.via = calloc((size_t)c->ch.size, sizeof(*c->ch.via));
		if (!c->ch.via)
			return -ENOMEM;
	}
	return 0;
}

/* A vote's value for "no network endpoint": above every provider's rank. */
#define NET_NONE (1 << 20)

/*
 * Where c's network endpoint stands in pscomm's order of providers
 * (psc_provider_net_rank), or NET_NONE when it has only shm.
 */
static int net_value(const struct ps_comm *c)
{
	if (psc_ep_caps(c->ch.ep)->link == PSC_LINK_SHM)
		return NET_NONE;
	return psc_provider_net_rank(psc_ep_provider(c->ch.ep));
}

/*
 * Give up c's endpoints and open them again on a provider not ranked
 * before floor, keeping c's context id; b's record follows. Before the
 * exchange: nothing was posted on them yet.
 */
static int reopen(struct boot_ctx *b, int floor, char *err, size_t len)
{
	struct ps_comm *c = b->c;
	int rc;

	psc_chan_release(&c->ch);
	c->ch.npaths = 0;
	free(c->ch.via);
	c->ch.via = NULL;
	b->shm = NULL;
	b->cfg->min_rank = floor;
	rc = open_endpoints(c, b->mode, b->cfg, &b->shm, true, err, len);
	if (rc)
		/* The bootstrap's stage reports -ENODEV as the provider's. */
		return rc == -ENOMEM || rc == -ENODATA ? rc : -ENODEV;
	err[0] = '\0';
	snprintf(c->provider, sizeof(c->provider), "%s",
		 psc_ep_provider(c->ch.ep));
	my_record(c, b->shm, b->me);
	return 0;
}

/*
 * The vote on the network provider (boot.h): every rank offers where its
 * network endpoint stands in pscomm's order, and a rank below the
 * largest offer opens its endpoints again from there, so that a provider
 * one rank could not open is given up by all. The note says which
 * providers failed here and why.
 */
static int vote_offer(void *arg, int floor, int from, const char *why,
		      int *value, char *note, size_t nlen, char *err,
		      size_t elen)
{
	struct boot_ctx *b = arg;
	struct ps_comm *c = b->c;
	char was[64];
	int rc;

	*value = net_value(c);
	if (floor < 0) {
		/* What this rank chose alone: say why if it fell back. */
		if (*value == NET_NONE && b->mode == FAB_NODE)
			snprintf(note, nlen, "no network provider opened: %s",
				 b->net_why);
		else
			snprintf(note, nlen, "%s", psc_ep_fell_back(c->ch.ep));
		return 0;
	}
	if (floor <= *value)
		return 0;
	snprintf(was, sizeof(was), "%s", psc_ep_provider(c->ch.ep));
	rc = reopen(b, floor, err, elen);
	if (rc)
		return rc;
	*value = net_value(c);
	psc_log(PSC_LOG_INFO, c->ch.rank, "leaving %s for %s with every rank: "
		"on rank %d, %s", was, *value == NET_NONE ? "no network provider"
		: psc_ep_provider(c->ch.ep), from,
		*why ? why : "no better provider is usable");
	/* Above the floor: the provider there failed here too. */
	if (*value > floor && *value != NET_NONE)
		snprintf(note, nlen, "%s", psc_ep_fell_back(c->ch.ep));
	return 0;
}

/*
 * After a fallback whose network endpoint stayed in use (settle_paths):
 * rank 0 says once, for the job, which provider failed to open on which
 * rank and why, and what every rank uses instead.
 */
static void warn_fell_back(const struct ps_comm *c, const struct boot_ctx *b)
{
	if (c->ch.rank != 0 || b->fell_rank < 0 ||
	    psc_ep_caps(c->ch.ep)->link == PSC_LINK_SHM)
		return;
	psc_log(PSC_LOG_WARN, 0, "fell back: on rank %d, %s; every rank uses "
		"%s instead. Fix the provider, or set FI_PROVIDER to choose "
		"one (`ps_comm_info --open` tries to open each provider)",
		b->fell_rank, b->fell_why, psc_ep_provider(c->ch.ep));
}

/*
 * After the exchange: a pair whose one path serves no other rank becomes
 * a single endpoint (all ranks on one node: shm only; alone on its node:
 * the network, self-sends included), and c's name for its fabrics is
 * set. Returns 0 or a negative errno with words in err.
 */
static int settle_paths(struct ps_comm *c, struct boot_ctx *b, char *err,
			size_t len)
{
	const char *net = psc_ep_provider(c->ch.ep);
	int rc = 0;

	if (b->shm && (!b->used[0] || !b->used[1])) {
		struct psc_ep *keep = b->used[0] ? c->ch.ep : b->shm;
		struct psc_ep *drop = keep == b->shm ? c->ch.ep : b->shm;

		free(c->ch.via);
		c->ch.via = NULL;
		psc_chan_bind(&c->ch, keep, NULL);
		if (keep != b->shm)
			rc = psc_ep_av_insert(keep, b->me->addr,
					      &c->ch.peers[c->ch.rank]);
		psc_ep_release(drop);
		b->shm = NULL;
		if (rc) {
			snprintf(err, len, "fi_av_insert of this rank's own "
				 "address failed: %s", psc_fab_strerror(-rc));
			return rc;
		}
	}
	if (b->shm)
		snprintf(c->provider, sizeof(c->provider), "%s+%s",
			 PSC_SHM_PROVIDER, net);
	else
		snprintf(c->provider, sizeof(c->provider), "%s",
			 psc_ep_provider(c->ch.ep));
	psc_log(c->ch.rank == 0 ? PSC_LOG_INFO : PSC_LOG_DEBUG, c->ch.rank,
		"fabrics: %s (%d nodes; %s)", c->provider, c->nnodes,
		b->shm ? "shm inside nodes, the network between them"
		       : "one provider for every peer");
	return 0;
}

/*
 * The bootstrap's record exchange, with b's node map filled. Unless
 * FI_PROVIDER named the provider (FAB_ONE), the ranks first vote on the
 * network provider, so that a fallback on one rank moves them all.
 */
static int exchange(struct ps_comm *c, struct psc_boot_plan *plan,
		    struct boot_ctx *b, int *local, char *err, size_t len)
{
	struct psc_boot_vote vote = {.offer = vote_offer, .arg = b,
				     .note_rank = -1};
	int rc;

	b->raw = calloc((size_t)c->ch.size, sizeof(*b->raw));
	b->ids = calloc((size_t)c->ch.size, sizeof(*b->ids));
	if (!b->raw || !b->ids)
		return -ENOMEM;
	b->fell_rank = -1;
	if (strcmp(plan->spec, "none") == 0) {
		/* One rank, no rendezvous. */
		*local = 1;
		if (*psc_ep_fell_back(c->ch.ep)) {
			b->fell_rank = 0;
			snprintf(b->fell_why, sizeof(b->fell_why), "%s",
				 psc_ep_fell_back(c->ch.ep));
		}
		return add_peer(b, 0, b->me, err, len);
	}
	b->key = &plan->key;
	rc = psc_boot_exchange(plan, b->mode == FAB_ONE ? NULL : &vote, b->me,
			       add_peer, gathered, b, local, err, len);
	if (b->mode != FAB_ONE && vote.note_rank >= 0) {
		b->fell_rank = vote.note_rank;
		snprintf(b->fell_why, sizeof(b->fell_why), "%s", vote.note);
	}
	if (rc && b->fell_rank >= 0) {
		size_t u = strlen(err);

		snprintf(err + u, len - u, " (after the ranks fell back: on "
			 "rank %d, %s)", b->fell_rank, b->fell_why);
	}
	if (!rc)
		warn_no_key(c, plan, *local, b->same_host);
	return rc;
}

/* Whether PS_COMM_JOIN's value is host:port with a nonzero port. */
static bool join_valid(const char *join)
{
	struct psc_hostport hp;

	return psc_hostport_parse(join, &hp) == 0 && hp.port != 0;
}

/*
 * A grow's bootstrap, or a joiner's, meets at the grow's rendezvous over
 * tcp, in place of what attr or the environment say: ga is filled, and
 * c gets the old rank's place (a joiner learns its own there).
 */
static void grow_attr(struct ps_comm *c, const struct psc_comm_grow *grow,
		      const char *join, ps_comm_attr_t *ga)
{
	ps_comm_attr_init(ga);
	ga->bootstrap = PSC_BOOT_TCP;
	ga->root = grow ? grow->root : join;
	c->ch.rank = grow ? grow->rank : -1;
	c->ch.size = grow ? grow->size : -1;
}

/*
 * The grow's part of the plan: rank 0 serves the joiners' places, every
 * old rank claims the agreed generation; a joiner first joins, learning
 * its rank, the size and the context id. c takes the context id.
 * Returns 0 or a negative errno with words in err.
 */
static int grow_plan(struct ps_comm *c, const struct psc_comm_grow *grow,
		     struct psc_boot_plan *plan, char *err, size_t len)
{
	int rc;

	if (grow) {
		plan->grow = (struct psc_store_grow){
			.grow_from = grow->rank == 0 ? grow->old_size : 0,
			.grant = grow->ctx,
			.fixed_gen = true,
			.gen = grow->ctx,
			.dead = grow->dead,
			.dead_arg = grow->dead_arg};
		c->ch.ctx = grow->ctx;
		return 0;
	}
	rc = psc_boot_join(plan, err, len);
	if (rc)
		return rc;
	if (plan->grow.grant >= 1u << PSC_EP_CTX_BITS ||
	    plan->size > (1 << PSC_TAG_RANK_BITS)) {
		snprintf(err, len, "the grow at PS_COMM_JOIN=%s handed out "
			 "context id %u and size %d, beyond pscomm's limits",
			 plan->root, plan->grow.grant, plan->size);
		return -EPROTO;
	}
	c->ch.rank = plan->rank;
	c->ch.size = plan->size;
	c->ch.ctx = plan->grow.grant;
	psc_ctx_reserve(plan->grow.grant);
	psc_log(PSC_LOG_INFO, c->ch.rank, "joined the running job at %s as "
		"rank %d of %d", plan->root, c->ch.rank, c->ch.size);
	return 0;
}

/*
 * The bootstrap once planned: endpoints (keep_ctx: c has its context id
 * already), the liveness monitor, the exchange and what follows it.
 */
static int boot_planned(struct ps_comm *c, struct psc_boot_plan *plan,
			enum fabrics mode, bool keep_ctx)
{
	struct psc_fab_config cfg = {.params = &c->params,
				     .role = PSC_ROLE_ANY};
	struct psc_boot_record me;
	struct boot_ctx b = {.c = c, .me = &me, .cfg = &cfg, .mode = mode};
	bool own_core = false;
	char err[1024];
	int rc, local = 0;

	rc = wait_policy(c, &cfg.poll_wait);
	if (rc)
		return rc;
	cfg.rank = c->ch.rank;
	cfg.universe = c->ch.size;
	cfg.iface = plan->have_iface ? &plan->iface : NULL;
	c->ch.peers = calloc((size_t)c->ch.size, sizeof(*c->ch.peers));
	if (!c->ch.peers)
		return PS_COMM_ERR_NOMEM;
	rc = open_endpoints(c, mode, &cfg, &b.shm, keep_ctx, err, sizeof(err));
	if (rc)
		return psc_err_public(rc, PSC_ERR_OPEN);
	if (mode == FAB_NODE && net_value(c) == NET_NONE)
		snprintf(b.net_why, sizeof(b.net_why), "%s", err);
	snprintf(c->provider, sizeof(c->provider), "%s",
		 psc_ep_provider(c->ch.ep));
	if (strcmp(plan->spec, "none") != 0 &&
	    (rc = live_open(c, plan, err, sizeof(err))) != 0) {
		psc_comm_set_error(c, "%s", err);
		return psc_err_public(rc, PSC_ERR_LOCAL);
	}
	my_record(c, b.shm, &me);
	rc = exchange(c, plan, &b, &local, err, sizeof(err));
	if (!rc)
		rc = psc_comm_set_nodes(c, b.raw);
	if (!rc)
		rc = bind_rank(c, &own_core, err, sizeof(err));
	free(b.raw);
	free(b.ids);
	if (!rc)
		rc = settle_paths(c, &b, err, sizeof(err));
	if (!rc)
		warn_fell_back(c, &b);
	if (!rc && c->live) {
		psc_live_set_key(c->live, &plan->key);
		rc = live_start(c, err, sizeof(err));
	}
	if (rc && c->live) {
		psc_live_release(c->live);
		c->live = NULL;
	}
	if (rc) {
		psc_comm_set_error(c, "%s", rc == -ENOMEM ? "out of memory"
							  : err);
		return psc_err_public(rc, PSC_ERR_BOOT);
	}
	if (strcmp(plan->spec, PSC_BOOT_TCP) == 0)
		snprintf(c->root, sizeof(c->root), "%s", plan->root);
	/*
	 * Ranks that share this host's cores, whatever their node (network
	 * namespaces on one host are separate nodes but share its CPUs).
	 */
	spin_policy(c, b.same_host, own_core);
	rc = psc_comm_wire(c);
	if (rc && c->live) {
		psc_live_release(c->live);
		c->live = NULL;
	}
	return rc;
}

int psc_comm_bootstrap(struct ps_comm *c, const ps_comm_attr_t *attr,
		       const struct psc_comm_grow *grow)
{
	const char *join = !grow && *c->params.join ? c->params.join : NULL;
	struct psc_boot_plan plan;
	ps_comm_attr_t ga;
	enum fabrics mode;
	char err[1024];
	int rc;

	rc = check_start(c, attr);
	if (!rc && join && !join_valid(join)) {
		psc_comm_set_error(c, "PS_COMM_JOIN=\"%s\" is not host:port "
				   "or [v6addr]:port with a nonzero port", join);
		rc = PS_COMM_ERR_CONFIG;
	}
	if (!rc && (grow || join)) {
		grow_attr(c, grow, join, &ga);
		attr = &ga;
	} else if (!rc) {
		rc = rank_size(c, attr);
	}
	if (!rc)
		rc = fabric_mode(c, &mode);
	if (rc)
		return rc;
	if (psc_boot_plan(&plan, &c->params, attr, c->ch.rank, c->ch.size,
			  err, sizeof(err))) {
		psc_comm_set_error(c, "%s", err);
		return PS_COMM_ERR_CONFIG;
	}
	if ((grow || join) &&
	    (rc = grow_plan(c, grow, &plan, err, sizeof(err))) != 0) {
		psc_comm_set_error(c, "%s", err);
		rc = psc_err_public(rc, PSC_ERR_BOOT);
	} else {
		rc = boot_planned(c, &plan, mode, grow || join);
	}
	psc_boot_unjoin(&plan);
	memset(&plan.key, 0, sizeof(plan.key));
	return rc;
}

int psc_comm_set_nodes(struct ps_comm *c, const int *raw)
{
	int n = c->ch.size;
	int *label = malloc((size_t)n * sizeof(*label));

	free(c->node_of);
	c->node_of = calloc((size_t)n, sizeof(*c->node_of));
	if (!label || !c->node_of) {
		free(label);
		return -ENOMEM;
	}
	c->nnodes = 0;
	c->local_rank = c->local_size = 0;
	for (int r = 0; r < n; r++) {
		int k;

		/* label[i]: the raw value of node i, in order of first rank. */
		for (k = 0; k < c->nnodes && label[k] != raw[r]; k++)
			;
		if (k == c->nnodes)
			label[c->nnodes++] = raw[r];
		c->node_of[r] = k;
	}
	for (int r = 0; r < n; r++) {
		if (c->node_of[r] != c->node_of[c->ch.rank])
			continue;
		if (r < c->ch.rank)
			c->local_rank++;
		c->local_size++;
	}
	free(label);
	return 0;
}

int psc_comm_create_sub(struct ps_comm *parent, const int *ranks, int n,
			int me, uint32_t ctx, struct ps_comm **out)
{
	struct ps_comm *c = calloc(1, sizeof(*c));
	int *raw, rc;

	if (!c)
		return PS_COMM_ERR_NOMEM;
	c->magic = PSC_COMM_MAGIC;
	c->ch.peers = calloc((size_t)n, sizeof(*c->ch.peers));
	c->world = calloc((size_t)n, sizeof(*c->world));
	if (!c->ch.peers || !c->world) {
		psc_comm_free(c);
		return PS_COMM_ERR_NOMEM;
	}
	raw = malloc((size_t)n * sizeof(*raw));
	if (parent->ch.via)
		c->ch.via = malloc((size_t)n * sizeof(*c->ch.via));
	if (!raw || (parent->ch.via && !c->ch.via)) {
		free(raw);
		psc_comm_free(c);
		return PS_COMM_ERR_NOMEM;
	}
	for (int i = 0; i < n; i++) {
		c->ch.peers[i] = parent->ch.peers[ranks[i]];
		c->world[i] = parent->world ? parent->world[ranks[i]] : -1;
		raw[i] = parent->node_of ? parent->node_of[ranks[i]] : 0;
		if (c->ch.via)
			c->ch.via[i] = parent->ch.via[ranks[i]];
	}
	psc_chan_bind(&c->ch, parent->ch.ep,
		      parent->ch.npaths > 1 ? parent->ch.path[1].ep : NULL);
	c->ch.rank = me;
	c->ch.size = n;
	c->ch.ctx = ctx;
	c->params = parent->params;
	c->op_timeout = parent->op_timeout;
	memcpy(c->provider, parent->provider, sizeof(c->provider));
	memcpy(c->root, parent->root, sizeof(c->root));
	rc = psc_comm_set_nodes(c, raw);
	free(raw);
	if (rc || (parent->live && live_watch_chan(parent->live, c) != 0)) {
		psc_comm_free(c);
		return PS_COMM_ERR_NOMEM;
	}
	c->live = parent->live;
	psc_chan_hold(&c->ch);
	*out = c;
	return 0;
}

void psc_comm_free(struct ps_comm *c)
{
	psc_magic_clear(&c->magic);
	if (c->live)
		psc_live_unwatch(c->live, &c->ch);
	for (int i = 0; i < c->ch.npaths; i++) {
		psc_ep_disown(c->ch.path[i].ep, &c->ch);
		psc_ep_forget_owner(c->ch.path[i].ep, &c->ch);
	}
	free(c->node_of);
	free(c->agreed_failed);
	free(c->world);
	free(c->ch.via);
	free(c->ch.peers);
	free(c);
}
