/*
 * The core endpoint's life: opening one on a fabric endpoint (tag layout,
 * queue depths, first messages' buffers), sharing it between
 * communicators with the same settings through the process's registry,
 * closing it in order, and the accessors the layers above use.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ep_int.h"
#include "util/log.h"
#include "util/util.h"

_Static_assert(sizeof(((struct ps_comm_request *)0)->scratch) <=
		       PSC_MR_MIN_BOUNCE,
	       "request scratch must fit a registration slot");
_Static_assert(PSC_EP_FIRST_HDR <= PSC_MR_SLOT_HDR,
	       "a first message's prefix must fit a slot's header room");

/*
 * Every open endpoint of the process. Data progress is manual on most
 * providers, so a thread blocked on one endpoint also drives the others:
 * otherwise two communicators in one process can wait on each other.
 */
static pthread_mutex_t eps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct psc_ep *eps_head;
static int eps_count;

/*
 * Context ids come from one counter for the whole process, under
 * eps_lock: whichever endpoints a communicator gets (shared, new, one or
 * a pair), ranks that create communicators in the same order give them
 * the same ids, and no two users of an endpoint share one.
 */
static uint32_t next_ctx;

static uint32_t ctx_take(void)
{
	uint32_t ctx;

	pthread_mutex_lock(&eps_lock);
	ctx = next_ctx++ & ((1u << PSC_EP_CTX_BITS) - 1);
	pthread_mutex_unlock(&eps_lock);
	return ctx;
}

/*
 * Whether e (or its pair) was poisoned by a node-local death: later
 * communicators get a fresh endpoint instead of sharing it (ps_comm_shrink
 * rebuilds on one).
 */
static bool unusable(struct psc_ep *e)
{
	return psc_ep_poisoned(e) || (e->pair && psc_ep_poisoned(e->pair));
}

/* The usable endpoint with this key with its refs raised, or NULL. */
static struct psc_ep *find_shared(const char *key)
{
	struct psc_ep *e;

	pthread_mutex_lock(&eps_lock);
	for (e = eps_head; e; e = e->next_ep)
		if (strcmp(e->key, key) == 0 && !unusable(e)) {
			e->refs++;
			break;
		}
	pthread_mutex_unlock(&eps_lock);
	return e;
}

/* Add a new endpoint to the registry with one reference. */
static void ep_register(struct psc_ep *ep)
{
	pthread_mutex_lock(&eps_lock);
	ep->refs = 1;
	ep->next_ep = eps_head;
	eps_head = ep;
	__atomic_add_fetch(&eps_count, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&eps_lock);
}

/* Drop a reference; true when it was the last (ep left the registry). */
static bool ep_unregister(struct psc_ep *ep)
{
	bool last;

	pthread_mutex_lock(&eps_lock);
	last = --ep->refs == 0;
	for (struct psc_ep **p = &eps_head; last && *p; p = &(*p)->next_ep)
		if (*p == ep) {
			*p = ep->next_ep;
			__atomic_sub_fetch(&eps_count, 1, __ATOMIC_RELAXED);
			break;
		}
	pthread_mutex_unlock(&eps_lock);
	return last;
}

void psc_ep_hold(struct psc_ep *ep)
{
	pthread_mutex_lock(&eps_lock);
	ep->refs++;
	pthread_mutex_unlock(&eps_lock);
}

int psc_ep_count(void)
{
	return __atomic_load_n(&eps_count, __ATOMIC_RELAXED);
}

void psc_ep_each_other(const struct psc_ep *self,
		       void (*fn)(struct psc_ep *))
{
	if (psc_ep_count() < 2)
		return;
	pthread_mutex_lock(&eps_lock);
	for (struct psc_ep *e = eps_head; e; e = e->next_ep)
		if (e != self)
			fn(e);
	pthread_mutex_unlock(&eps_lock);
}

/* What two communicators must share to share an endpoint. */
static void ep_key(const struct psc_fab_config *cfg, char *key, size_t len)
{
	const char *filter = getenv("FI_PROVIDER");

	/* The fallback floor first: a long FI_PROVIDER may be cut. */
	snprintf(key, len, "min=%d;role=%d;if=%s;max=%zu;spin=%g;sw=%d/%d;"
		 "poll=%d;prov=%s", cfg->min_rank, (int)cfg->role,
		 cfg->iface ? cfg->iface->addrstr : "",
		 cfg->params->max_msg_size, cfg->params->spin_us,
		 cfg->params->sw_match, (int)cfg->sw_match,
		 (int)cfg->poll_wait, filter ? filter : "");
}

/* Queue depths and message limits that follow from the caps. */
static void ep_limits(struct psc_ep *ep)
{
	const struct psc_caps *c = &ep->fab.caps;

	/* Leave a quarter of the receive pool for unexpected messages. */
	ep->post_limit[0] = PSC_MIN(c->tx_size, 64);
	ep->post_limit[1] = c->rx_unbounded ? 0 : c->rx_size - c->rx_size / 4;
	/* The immediate rides in the CQ data where the profile trusts it. */
	ep->first_imm = c->sw_tag_in_data;
	/*
	 * The profile's eager size, or 8 KiB; untagged eager messages must
	 * fit one provider message.
	 */
	ep->first_eager = c->sw_eager ? c->sw_eager : PSC_FIRST_EAGER;
	if (c->max_msg_size < PSC_EP_FIRST_HDR + ep->first_eager)
		ep->first_eager = c->max_msg_size > 2 * (size_t)PSC_EP_FIRST_HDR
					  ? c->max_msg_size - PSC_EP_FIRST_HDR
					  : PSC_EP_FIRST_HDR;
}

/* Free every request left; no completion can arrive any more. */
static void free_requests(struct psc_ep *ep)
{
	pthread_mutex_lock(ep->lock);
	psc_first_detach(ep);
	pthread_mutex_unlock(ep->lock);
	/* A child goes with its parent, which would keep a dangling link. */
	while (ep->live) {
		struct ps_comm_request *r = ep->live;

		while (r->parent)
			r = r->parent;
		psc_req_free(r);
	}
}

/* A new endpoint's own lock and first-message hook. */
static struct psc_ep_shared *shared_new(void)
{
	struct psc_ep_shared *sh = calloc(1, sizeof(*sh));

	if (!sh)
		return NULL;
	pthread_mutex_init(&sh->lock, NULL);
	sh->refs = 1;
	return sh;
}

/*
 * ep's partner (if any) forgets it, under the pair's lock, before
 * anything of ep closes: progress of the partner, which any thread's
 * wait may drive while the partner is registered, would otherwise
 * progress ep as it closes.
 */
static void pair_detach(struct psc_ep *ep)
{
	pthread_mutex_lock(ep->lock);
	if (ep->pair)
		__atomic_store_n(&ep->pair->pair, NULL, __ATOMIC_RELEASE);
	__atomic_store_n(&ep->pair, NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(ep->lock);
}

/*
 * ep leaves what it shares: the last endpoint frees the rest (the hook
 * forgot ep's arrivals when its requests went, free_requests).
 */
static void shared_drop(struct psc_ep *ep)
{
	struct psc_ep_shared *sh = ep->sh;
	bool last;

	pthread_mutex_lock(&eps_lock);
	last = --sh->refs == 0;
	pthread_mutex_unlock(&eps_lock);
	if (!last)
		return;
	psc_first_destroy(sh);
	pthread_mutex_destroy(&sh->lock);
	free(sh);
}

/* Close everything in libfabric's order and free ep. */
/*
 * Endpoints kept until the process exits: poisoned ones, whose closing
 * could spin, and those of providers whose closing can crash
 * (caps.stop_unclosed). Keeping them reachable says they are kept on
 * purpose (leak checkers agree). Under graveyard_lock.
 */
static struct psc_ep *graveyard;
static pthread_mutex_t graveyard_lock = PTHREAD_MUTEX_INITIALIZER;

static void ep_close(struct psc_ep *ep)
{
	pair_detach(ep);
	/*
	 * Closing a poisoned endpoint could spin on a dead peer's lock, and
	 * closing one on verbs;ofi_rxm can crash: leave it, and what
	 * libfabric holds, to the process's exit.
	 */
	if (psc_ep_poisoned(ep) || ep->fab.caps.stop_unclosed) {
		psc_log(PSC_LOG_INFO, ep->fab.rank, "endpoint on %s left "
			"unclosed: %s", psc_fab_provider(&ep->fab),
			psc_ep_poisoned(ep)
				? "a node-local peer died and may hold its "
				  "locks"
				: "closing it can crash inside the provider");
		if (ep->fab.prov->remove_regions)
			ep->fab.prov->remove_regions(ep->fab.name,
						     ep->fab.namelen, 0);
		/* The rings are plain memory: nothing there can hang. */
		psc_shmring_close(ep);
		pthread_mutex_lock(&graveyard_lock);
		ep->next_ep = graveyard;
		graveyard = ep;
		pthread_mutex_unlock(&graveyard_lock);
		return;
	}
	psc_fab_close_ep(&ep->fab);
	/*
	 * Free what libfabric held, then the registrations they held, before
	 * the domain closes.
	 */
	free_requests(ep);
	psc_fab_close(&ep->fab);
	psc_first_close(ep);
	psc_shmring_close(ep);
	psc_fail_close(ep);
	pthread_mutex_destroy(&ep->fail_lock);
	pthread_mutex_destroy(&ep->src_lock);
	shared_drop(ep);
	free(ep);
}

static int ep_open(struct psc_ep **out, const struct psc_fab_config *cfg,
		   char *err, size_t len)
{
	struct psc_ep *ep = calloc(1, sizeof(*ep));
	int rc;

	if (ep)
		ep->sh = shared_new();
	if (!ep || !ep->sh) {
		free(ep);
		return -ENOMEM;
	}
	ep->lock = &ep->sh->lock;
	pthread_mutex_init(&ep->src_lock, NULL);
	pthread_mutex_init(&ep->fail_lock, NULL);
	ep->spin_us = cfg->params->spin_us;
	psc_first_init(ep);
	rc = psc_fab_open(&ep->fab, cfg, err, len);
	if (rc) {
		pthread_mutex_destroy(&ep->fail_lock);
		pthread_mutex_destroy(&ep->src_lock);
		shared_drop(ep);
		free(ep);
		return rc;
	}
	/* Providers with too few tag bits are refused when selected. */
	ep->tag_format = ep->fab.caps.mem_tag_format;
	ep_limits(ep);
	if (ep->fab.caps.sw_match && (rc = psc_first_open(ep)) != 0) {
		snprintf(err, len, "posting receive buffers on provider %s "
			 "failed: %s", psc_fab_provider(&ep->fab),
			 psc_fab_strerror(-rc));
		ep_close(ep);
		return rc;
	}
	if (ep->fab.caps.link == PSC_LINK_SHM && ep->fab.caps.sw_match &&
	    ep->first_imm && cfg->params->shm_ring &&
	    (rc = psc_shmring_open(ep)) != 0) {
		snprintf(err, len, "out of memory");
		ep_close(ep);
		return rc;
	}
	psc_log(PSC_LOG_INFO, ep->fab.rank, "%u tag bits%s%s",
		ep->fab.caps.tag_bits,
		ep->fab.caps.sw_match ? ", software matching" : "",
		ep->shmring ? ", first messages by shared-memory rings" : "");
	*out = ep;
	return 0;
}

int psc_ep_acquire(struct psc_ep **out, const struct psc_fab_config *cfg,
		   uint32_t *ctx, char *err, size_t len)
{
	char key[PSC_EP_KEY_LEN];
	struct psc_ep *ep;
	int rc;

	ep_key(cfg, key, sizeof(key));
	ep = find_shared(key);
	if (!ep) {
		rc = ep_open(&ep, cfg, err, len);
		if (rc)
			return rc;
		snprintf(ep->key, sizeof(ep->key), "%s", key);
		ep_register(ep);
	}
	if (ctx)
		*ctx = ctx_take();
	*out = ep;
	return 0;
}

/*
 * Make a and b (just opened, unshared, no traffic yet) one pair: b takes
 * a's lock and first-message hook, both take the narrower tag layout, and
 * each progresses the other. False when they cannot pair: both must
 * match first messages in software, so that one queue of receives
 * serves both fabrics.
 */
static bool ep_pair(struct psc_ep *a, struct psc_ep *b)
{
	struct psc_ep_shared *old = b->sh;

	if (!a->fab.caps.sw_match || !b->fab.caps.sw_match)
		return false;
	if (psc_tag_bits_from_format(b->tag_format) <
	    psc_tag_bits_from_format(a->tag_format))
		a->tag_format = b->tag_format;
	else
		b->tag_format = a->tag_format;
	pthread_mutex_lock(&eps_lock);
	a->sh->refs++;
	old->refs--;
	pthread_mutex_unlock(&eps_lock);
	/*
	 * Nothing can have arrived: no peer knows b's address yet, and no
	 * hook is registered on a new endpoint.
	 */
	psc_first_destroy(old);
	pthread_mutex_destroy(&old->lock);
	free(old);
	b->sh = a->sh;
	b->lock = a->lock;
	psc_first_pair(b);
	a->pair = b;
	b->pair = a;
	return true;
}

/* The registry key of a pair's endpoint of role. */
static void pair_key(const struct psc_fab_config *cfg, enum psc_fab_role role,
		     char *key, size_t len)
{
	struct psc_fab_config c = *cfg;
	char k[PSC_EP_KEY_LEN];

	c.role = role;
	c.sw_match = true;
	ep_key(&c, k, sizeof(k));
	snprintf(key, len, "pair:%s", k);
}

/* A key that no ep_key() text can equal: never found for sharing. */
static void exclusive_key(struct psc_ep *ep)
{
	snprintf(ep->key, sizeof(ep->key), "exclusive:%p", (void *)ep);
}

/*
 * Open an endpoint of role for a pair and register it under the pair's
 * key, or under a key of its own when exclusive.
 */
static int pair_open(struct psc_ep **out, const struct psc_fab_config *cfg,
		     enum psc_fab_role role, bool exclusive, char *err,
		     size_t len)
{
	struct psc_fab_config c = *cfg;
	int rc;

	c.role = role;
	c.sw_match = true;
	rc = ep_open(out, &c, err, len);
	if (rc)
		return rc;
	if (exclusive)
		exclusive_key(*out);
	else
		pair_key(cfg, role, (*out)->key, sizeof((*out)->key));
	ep_register(*out);
	return 0;
}

/*
 * A pair opened before with these settings, both refs raised; false
 * when there is none whole. Under eps_lock, so neither half can be
 * closing: an endpoint leaves the registry before it closes.
 */
static bool find_pair(const struct psc_fab_config *cfg, struct psc_ep **net,
		      struct psc_ep **shm)
{
	char kn[PSC_EP_KEY_LEN], ks[PSC_EP_KEY_LEN];
	struct psc_ep *e;

	pair_key(cfg, PSC_ROLE_NET, kn, sizeof(kn));
	pair_key(cfg, PSC_ROLE_SHM, ks, sizeof(ks));
	pthread_mutex_lock(&eps_lock);
	for (e = eps_head; e; e = e->next_ep)
		if (strcmp(e->key, kn) == 0 && e->pair &&
		    strcmp(e->pair->key, ks) == 0 && !unusable(e))
			break;
	if (e) {
		e->refs++;
		e->pair->refs++;
		*net = e;
		*shm = e->pair;
	}
	pthread_mutex_unlock(&eps_lock);
	return e != NULL;
}

/*
 * Open a new pair for cfg (registered under the pair's keys, or under
 * keys of their own when exclusive); see psc_ep_acquire_pair.
 */
static int pair_make(struct psc_ep **net, struct psc_ep **shm,
		     const struct psc_fab_config *cfg, bool exclusive,
		     char *err, size_t len)
{
	char why[512];
	int rn = pair_open(net, cfg, PSC_ROLE_NET, exclusive, err, len);
	int rs = pair_open(shm, cfg, PSC_ROLE_SHM, exclusive, why,
			   sizeof(why));

	if (rn && rs)
		return rn;
	if (rs) {
		*shm = NULL;
		psc_log(PSC_LOG_INFO, cfg->rank, "no shared memory endpoint "
			"(%s): node-local peers use %s", why,
			psc_ep_provider(*net));
	} else if (rn) {
		*net = NULL;
		psc_log(PSC_LOG_INFO, cfg->rank, "no network endpoint (%s): "
			"this rank reaches only its own node", err);
	} else if (!ep_pair(*net, *shm)) {
		psc_log(PSC_LOG_INFO, cfg->rank, "%s cannot match messages in "
			"software, so it cannot share one receive queue with "
			"shm: node-local peers use it too",
			psc_ep_provider(*net));
		psc_ep_release(*shm);
		*shm = NULL;
	}
	return 0;
}

int psc_ep_acquire_pair(struct psc_ep **net, struct psc_ep **shm,
			const struct psc_fab_config *cfg, uint32_t *ctx,
			char *err, size_t len)
{
	if (!find_pair(cfg, net, shm)) {
		int rc = pair_make(net, shm, cfg, false, err, len);

		if (rc)
			return rc;
	}
	if (ctx)
		*ctx = ctx_take();
	return 0;
}

int psc_ep_acquire_pair_exclusive(struct psc_ep **net, struct psc_ep **shm,
				  const struct psc_fab_config *cfg, char *err,
				  size_t len)
{
	return pair_make(net, shm, cfg, true, err, len);
}

int psc_ep_acquire_exclusive(struct psc_ep **out,
			     const struct psc_fab_config *cfg, char *err,
			     size_t len)
{
	struct psc_ep *ep;
	int rc = ep_open(&ep, cfg, err, len);

	if (rc)
		return rc;
	exclusive_key(ep);
	ep_register(ep);
	*out = ep;
	return 0;
}

void psc_ep_release(struct psc_ep *ep)
{
	if (ep && ep_unregister(ep))
		ep_close(ep);
}

uint32_t psc_ctx_next(void)
{
	uint32_t ctx;

	pthread_mutex_lock(&eps_lock);
	ctx = next_ctx;
	pthread_mutex_unlock(&eps_lock);
	return ctx;
}

void psc_ctx_reserve(uint32_t ctx)
{
	pthread_mutex_lock(&eps_lock);
	if (ctx + 1 > next_ctx)
		next_ctx = ctx + 1;
	pthread_mutex_unlock(&eps_lock);
}

int psc_ep_av_insert(struct psc_ep *ep, const void *addr, fi_addr_t *out)
{
	int rc;

	pthread_mutex_lock(ep->lock);
	rc = psc_fab_av_insert(&ep->fab, addr, out);
	if (rc == 0)
		__atomic_add_fetch(&ep->av_count, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(ep->lock);
	return rc;
}

void psc_ep_lock(struct psc_ep *ep)
{
	pthread_mutex_lock(ep->lock);
}

void psc_ep_unlock(struct psc_ep *ep)
{
	pthread_mutex_unlock(ep->lock);
}

pthread_mutex_t *psc_ep_mutex(struct psc_ep *ep)
{
	return ep->lock;
}

const struct psc_caps *psc_ep_caps(const struct psc_ep *ep)
{
	return &ep->fab.caps;
}

uint64_t psc_ep_tag_format(const struct psc_ep *ep)
{
	return ep->tag_format;
}

size_t psc_ep_single_limit(const struct psc_ep *ep)
{
	return ep->fab.caps.sw_match ? ep->first_eager
				     : ep->fab.caps.max_msg_size;
}

bool psc_ep_ahead_take(struct psc_ep *ep, struct ps_comm_request *r,
		       size_t len)
{
	const struct psc_caps *c = &ep->fab.caps;
	size_t peers = PSC_MAX(__atomic_load_n(&ep->av_count,
					       __ATOMIC_RELAXED),
			       (size_t)1);

	if (r->ahead || ep->ahead >= PSC_EP_AHEAD_MAX ||
	    ((size_t)ep->ahead + 1) * 2 * peers > c->rx_size ||
	    len > PSC_EP_AHEAD_BYTES / PSC_EP_AHEAD_MAX / peers)
		return false;
	ep->ahead++;
	r->ahead = true;
	return true;
}

const char *psc_ep_provider(const struct psc_ep *ep)
{
	return psc_fab_provider(&ep->fab);
}

int psc_ep_rank(const struct psc_ep *ep)
{
	return ep->fab.rank;
}

const char *psc_ep_fell_back(const struct psc_ep *ep)
{
	return ep->fab.fell_back;
}

uint32_t psc_ep_addr_format(const struct psc_ep *ep)
{
	return psc_fab_addr_format(&ep->fab);
}

const void *psc_ep_name(const struct psc_ep *ep, size_t *len)
{
	*len = ep->fab.namelen;
	return ep->fab.name;
}

double psc_ep_spin(const struct psc_ep *ep)
{
	return ep->spin_us;
}

void psc_ep_set_spin(struct psc_ep *ep, double us)
{
	ep->spin_us = us;
}

void psc_ep_set_lean_wait(struct psc_ep *ep, bool lean)
{
	ep->lean_wait = lean;
}

/* psc_ep_cancel_owner's work on one endpoint. Lock held. */
static void cancel_owner(struct psc_ep *ep, const void *owner, int err)
{
	for (struct ps_comm_request *r = ep->live; r; r = r->live_next) {
		/* A generic request fails through its cancelled pieces. */
		if (r->owner != owner || r->parent || psc_req_done(r) ||
		    r->kind == PSC_REQ_GENERIC)
			continue;
		if (!r->status.error)
			r->status.error = err;
		psc_req_cancel_tree(r);
	}
	psc_progress(ep);
}

/* psc_ep_disown's work on one endpoint. Lock held. */
static void disown(struct psc_ep *ep, const void *owner)
{
	for (struct ps_comm_request *r = ep->live; r; r = r->live_next)
		if (r->owner == owner)
			r->magic = 0;
}

void psc_ep_disown(struct psc_ep *ep, const void *owner)
{
	pthread_mutex_lock(ep->lock);
	disown(ep, owner);
	if (ep->pair)
		disown(ep->pair, owner);
	pthread_mutex_unlock(ep->lock);
}

void psc_ep_cancel_owner(struct psc_ep *ep, const void *owner, int err)
{
	pthread_mutex_lock(ep->lock);
	cancel_owner(ep, owner, err);
	if (ep->pair)
		cancel_owner(ep->pair, owner, err);
	pthread_mutex_unlock(ep->lock);
}
