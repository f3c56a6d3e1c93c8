/*
 * The node-addressed channel (p2p/node.h): a channel of its own
 * endpoints, with no ranks, whose peers are addressed by path and
 * address.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p2p/chan.h"
#include "p2p/node.h"
#include "provider.h"
#include "util/log.h"
#include "util/param.h"
#include "util/util.h"

_Static_assert(PSC_NODE_NO_ADDR == FI_ADDR_NOTAVAIL,
	       "node.h's no-address is libfabric's");

/* A node joined: the address its name got on a path. */
struct node_known {
	struct psc_node_addr at;
	uint16_t len;
	uint8_t name[PSC_NODE_NAME_MAX];
};

/* A slot handed to a node: where its go-ahead goes (n->known[idx]). */
struct node_reply {
	uint32_t slot;
	uint32_t idx;
};

struct psc_node_chan {
	struct psc_chan ch;		/* path 0 network (or only), 1 shm */
	char provider[64];		/* path 0's */
	char node[PSC_NODE_ID_MAX];	/* this node's identity */
	size_t single;
	/*
	 * The nodes joined, each once, and the slots bound to them (a ring
	 * of PSC_NODE_REPLY_MAX once full). Written under join_lock and the
	 * endpoint lock, read under either.
	 */
	pthread_mutex_t join_lock;
	struct node_known *known;
	size_t nknown, known_cap;
	struct node_reply *replies;
	size_t nreplies, replies_cap, reply_next;
};

/* The address a node serves on path (0 network, 1 shm). */
static const uint8_t *peer_name(const struct psc_node_names *peer, int path,
				size_t *len)
{
	*len = path ? peer->shmlen : peer->namelen;
	return path ? peer->shm : peer->name;
}

/*
 * The address the node-addressed channel answers a go-ahead for slot
 * src at (ch->reply). Lock held.
 */
static int reply_addr(const struct psc_chan *ch, uint32_t src,
		      const struct psc_ep *ep, fi_addr_t *addr)
{
	const struct psc_node_chan *n = (const struct psc_node_chan *)ch;

	for (size_t i = n->nreplies; i-- > 0;) {
		const struct node_reply *r = &n->replies[i];
		const struct node_known *k = &n->known[r->idx];

		if (r->slot != src)
			continue;
		if (n->ch.path[k->at.path].ep != ep)
			return -ENOENT;
		*addr = k->at.addr;
		return 0;
	}
	return -ENOENT;
}

/*
 * Open the endpoints as communicators reach their peers
 * (psc_provider_fabrics). Binds n's channel.
 */
static int open_paths(struct psc_node_chan *n, struct psc_fab_config *cfg,
		      char *err, size_t len)
{
	struct psc_ep *net = NULL, *shm = NULL;
	enum psc_fabrics f;
	bool ignored;
	int rc;

	rc = psc_provider_fabrics(getenv("FI_PROVIDER"), cfg->params->intra,
				  &f, &ignored, err, len);
	if (rc)
		return rc;
	if (f == PSC_FABRICS_ONE) {
		rc = psc_ep_acquire_exclusive(&net, cfg, err, len);
	} else if (f == PSC_FABRICS_NET) {
		cfg->role = PSC_ROLE_NET;
		rc = psc_ep_acquire_exclusive(&net, cfg, err, len);
	} else {
		rc = psc_ep_acquire_pair_exclusive(&net, &shm, cfg, err, len);
		if (!net) {
			net = shm;
			shm = NULL;
		}
	}
	if (rc)
		return rc;
	psc_chan_bind(&n->ch, net, shm);
	n->ch.rank = -1;
	n->ch.ctx = 0;
	n->ch.reply = reply_addr;
	return 0;
}

int psc_node_chan_open(struct psc_node_chan **out,
		       const struct psc_node_chan_config *cfg, char *err,
		       size_t len)
{
	struct psc_fab_config fc = {
		.params = cfg->params,
		.iface = cfg->iface,
		.rank = -1,
		.role = PSC_ROLE_ANY,
		.poll_wait = cfg->poll_wait,
		.universe = cfg->universe,
	};
	struct psc_node_chan *n = calloc(1, sizeof(*n));
	int rc;

	*out = NULL;
	if (!n)
		return -ENOMEM;
	rc = open_paths(n, &fc, err, len);
	if (rc) {
		free(n);
		return rc;
	}
	pthread_mutex_init(&n->join_lock, NULL);
	n->single = n->ch.path[0].single;
	for (int i = 0; i < n->ch.npaths; i++) {
		struct psc_ep *ep = n->ch.path[i].ep;

		/*
		 * PS_COMM_SPIN_US's automatic value (-1) counts a job's
		 * ranks, which a van does not know: ps-lite jobs often put
		 * every node on one host, so do not spin unless asked. Sends
		 * in flight do not keep a wait yielding (a lean wait).
		 */
		if (psc_ep_spin(ep) < 0)
			psc_ep_set_spin(ep, 0);
		psc_ep_set_lean_wait(ep, true);
		n->single = PSC_MIN(n->single, n->ch.path[i].single);
	}
	snprintf(n->provider, sizeof(n->provider), "%s",
		 psc_ep_provider(n->ch.ep));
	psc_node_id(cfg->params->node_id, "net", n->node, sizeof(n->node));
	*out = n;
	return 0;
}

void psc_node_chan_close(struct psc_node_chan *n)
{
	if (!n)
		return;
	/* Where closing can crash, core leaves the endpoints to the exit. */
	psc_chan_release(&n->ch);
	pthread_mutex_destroy(&n->join_lock);
	free(n->known);
	free(n->replies);
	free(n);
}

void psc_node_chan_names(const struct psc_node_chan *n,
			 struct psc_node_names *out)
{
	memset(out, 0, sizeof(*out));
	out->provider = n->provider;
	out->name = psc_ep_name(n->ch.ep, &out->namelen);
	out->node = "";
	if (n->ch.npaths == 2) {
		out->node = n->node;
		out->shm = psc_ep_name(n->ch.path[1].ep, &out->shmlen);
	}
}

const char *psc_node_chan_provider(const struct psc_node_chan *n)
{
	return n->provider;
}

void psc_node_chan_describe(const struct psc_node_chan *n, char *buf,
			    size_t len)
{
	if (n->ch.npaths == 2)
		snprintf(buf, len, "%s, and %s to the nodes of this node",
			 n->provider, psc_ep_provider(n->ch.path[1].ep));
	else
		snprintf(buf, len, "%s", n->provider);
}

size_t psc_node_chan_single(const struct psc_node_chan *n)
{
	return n->single;
}

/*
 * Double *arr (*cap elements of elem bytes; 16 to start) under the
 * endpoint lock, which reply_addr reads it under. false when out of
 * memory. join_lock held.
 */
static bool grow(struct psc_node_chan *n, void **arr, size_t *cap,
		 size_t elem)
{
	size_t want = *cap ? 2 * *cap : 16;
	void *grown;

	psc_ep_lock(n->ch.ep);
	grown = realloc(*arr, want * elem);
	if (grown) {
		*arr = grown;
		*cap = want;
	}
	psc_ep_unlock(n->ch.ep);
	return grown != NULL;
}

/*
 * The entry of peer in n->known, joined now when new: its index in *idx.
 * Returns 0, -ENOSPC (PSC_NODE_KNOWN_MAX nodes joined), -ENOMEM or the AV
 * insert's error. join_lock held.
 */
static int known_get(struct psc_node_chan *n,
		     const struct psc_node_names *peer, size_t *idx)
{
	int path = n->ch.npaths == 2 && peer->shmlen && peer->node &&
		   strcmp(peer->node, n->node) == 0;
	size_t len;
	const uint8_t *name = peer_name(peer, path, &len);
	struct node_known *k;
	fi_addr_t addr;
	int rc;

	if (len == 0 || len > PSC_NODE_NAME_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n->nknown; i++) {
		k = &n->known[i];
		if (k->at.path == path && k->len == len &&
		    memcmp(k->name, name, len) == 0) {
			*idx = i;
			return 0;
		}
	}
	if (n->nknown == PSC_NODE_KNOWN_MAX)
		return -ENOSPC;
	if (n->nknown == n->known_cap &&
	    !grow(n, (void **)&n->known, &n->known_cap, sizeof(*n->known)))
		return -ENOMEM;
	rc = psc_ep_av_insert(n->ch.path[path].ep, name, &addr);
	if (rc)
		return rc;
	k = &n->known[n->nknown];
	k->at.addr = addr;
	k->at.path = (uint8_t)path;
	k->len = (uint16_t)len;
	memcpy(k->name, name, len);
	psc_ep_lock(n->ch.ep);
	*idx = n->nknown++;
	psc_ep_unlock(n->ch.ep);
	return 0;
}

int psc_node_chan_join(struct psc_node_chan *n,
		       const struct psc_node_names *peer,
		       struct psc_node_addr *at)
{
	size_t idx;
	int rc;

	pthread_mutex_lock(&n->join_lock);
	rc = known_get(n, peer, &idx);
	if (!rc)
		*at = n->known[idx].at;
	pthread_mutex_unlock(&n->join_lock);
	return rc;
}

int psc_node_chan_reply_bind(struct psc_node_chan *n, uint32_t slot,
			     const struct psc_node_names *peer)
{
	struct node_reply *r;
	size_t idx;
	int rc;

	pthread_mutex_lock(&n->join_lock);
	rc = known_get(n, peer, &idx);
	if (!rc && n->nreplies == n->replies_cap &&
	    n->replies_cap < PSC_NODE_REPLY_MAX &&
	    !grow(n, (void **)&n->replies, &n->replies_cap,
		  sizeof(*n->replies)))
		rc = -ENOMEM;
	if (!rc) {
		psc_ep_lock(n->ch.ep);
		/* Full: the oldest binding makes room (a ring). */
		if (n->nreplies == n->replies_cap) {
			r = &n->replies[n->reply_next];
			n->reply_next = (n->reply_next + 1) % n->replies_cap;
		} else {
			r = &n->replies[n->nreplies++];
		}
		r->slot = slot;
		r->idx = (uint32_t)idx;
		psc_ep_unlock(n->ch.ep);
	}
	pthread_mutex_unlock(&n->join_lock);
	return rc;
}

bool psc_node_chan_is_self(const struct psc_node_chan *n,
			   const struct psc_node_names *peer)
{
	size_t len;
	const void *own = psc_ep_name(n->ch.ep, &len);

	return len == peer->namelen && memcmp(own, peer->name, len) == 0;
}

const char *psc_node_chan_path_provider(const struct psc_node_chan *n,
					const struct psc_node_addr *at)
{
	return psc_ep_provider(n->ch.path[at->path].ep);
}

int psc_node_chan_send(struct psc_node_chan *n, const struct psc_node_addr *at,
		       uint32_t slot, uint32_t tag, const void *buf,
		       size_t len, ps_comm_request_t *req, char *err,
		       size_t elen)
{
	return psc_isend_path(&n->ch, &n->ch.path[at->path], PSC_PROTO_VAN,
			      buf, len, at->addr, slot, tag, req, err, elen);
}

int psc_node_chan_recv(struct psc_node_chan *n, int slot, int64_t tag,
		       void *buf, size_t len, ps_comm_request_t *req,
		       char *err, size_t elen)
{
	/* Path 0: a pair's one receive queue takes both paths' messages. */
	return psc_irecv(&n->ch, PSC_PROTO_VAN, buf, len, slot, tag, req, err,
			 elen);
}

size_t psc_node_chan_bulk_max(const struct psc_node_chan *n, size_t *chunk)
{
	return psc_bulk_max(&n->ch.path[0], chunk);
}

bool psc_node_chan_bulk_fits(const struct psc_node_chan *n,
			     const struct psc_node_addr *at, size_t len,
			     size_t chunk)
{
	return at->path == 0 && psc_bulk_fits(&n->ch.path[0], len, chunk);
}

/* Whether slot is bound to a node that the network path reaches. */
static bool slot_on_network(struct psc_node_chan *n, uint32_t slot)
{
	fi_addr_t addr;
	int rc;

	psc_ep_lock(n->ch.ep);
	rc = reply_addr(&n->ch, slot, n->ch.path[0].ep, &addr);
	psc_ep_unlock(n->ch.ep);
	return rc == 0;
}

int psc_node_chan_bulk_recv(struct psc_node_chan *n, uint32_t slot,
			    uint32_t id, void *buf, size_t len, size_t chunk,
			    ps_comm_request_t *req, char *err, size_t elen)
{
	if (!slot_on_network(n, slot)) {
		snprintf(err, elen, "slot %u is not bound to a node on the "
			 "network path", slot);
		return -EINVAL;
	}
	return psc_irecv_bulk(&n->ch, slot, id, buf, len, chunk, req, err,
			      elen);
}

int psc_node_chan_bulk_send(struct psc_node_chan *n,
			    const struct psc_node_addr *at, uint32_t slot,
			    uint32_t id, const void *buf, size_t len,
			    size_t chunk, ps_comm_request_t *req, char *err,
			    size_t elen)
{
	if (at->path != 0) {
		snprintf(err, elen, "pre-arranged sends go on the network "
			 "path only");
		return -EINVAL;
	}
	return psc_isend_bulk(&n->ch, &n->ch.path[0], buf, len, at->addr,
			      slot, id, chunk, req, err, elen);
}

void psc_node_chan_progress(struct psc_node_chan *n)
{
	psc_ep_try_progress(n->ch.ep);
}

bool psc_node_chan_wait(struct psc_node_chan *n, bool (*ready)(void *arg),
			void *arg, double deadline)
{
	return psc_ep_wait(n->ch.ep, ready, arg, deadline) == 0;
}

int psc_node_chan_failed(struct psc_node_chan *n, char *err, size_t len)
{
	return psc_ep_owner_failed(n->ch.ep, &n->ch, err, len);
}

double psc_node_chan_stuck(struct psc_node_chan *n, struct psc_node_stuck *s,
			   double now, const char **call,
			   struct psc_node_addr *at)
{
	double worst = 0;

	*call = NULL;
	at->addr = PSC_NODE_NO_ADDR;
	at->path = 0;
	for (int i = 0; i < n->ch.npaths; i++) {
		struct psc_ep_probe p;
		double secs = psc_ep_stuck_for(n->ch.path[i].ep, &s->path[i],
					       now, &p);

		if (secs > worst) {
			worst = secs;
			*call = p.call;
			at->addr = p.addr == FI_ADDR_UNSPEC ? PSC_NODE_NO_ADDR
							    : p.addr;
			at->path = (uint8_t)i;
		}
	}
	return worst;
}

void psc_node_chan_abandon(struct psc_node_chan *n, int status)
{
	/* Every file of the process goes, the pair's included. */
	psc_ep_abandon(n->ch.ep, status);
}

struct psc_ep *psc_node_chan_ep(const struct psc_node_chan *n, int path)
{
	return path < n->ch.npaths ? n->ch.path[path].ep : NULL;
}
