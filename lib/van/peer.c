/*
 * The nodes a van knows: its peer table (created as connect or a send
 * first names a node), connect, which fetches a node's fabric address
 * from its address server and inserts it, each node's failure and
 * goodbye, and the probes a waiting receiver sends to nodes that have
 * gone silent, so that a dead node fails within bounded time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "state_int.h"

struct van_peer *psc_van_peer_find(struct ps_comm_van *v, int id)
{
	for (size_t i = 0; i < v->npeers; i++)
		if (v->peers[i]->id == id)
			return v->peers[i];
	return NULL;
}

bool psc_van_room_for_one(void **arr, size_t *cap, size_t n, size_t elem)
{
	size_t want = *cap ? 2 * *cap : 16;
	void *grown;

	if (n < *cap)
		return true;
	grown = realloc(*arr, want * elem);
	if (!grown)
		return false;
	*arr = grown;
	*cap = want;
	return true;
}

/* The peer with this id, created when new. v->lock held. */
static struct van_peer *peer_get(struct ps_comm_van *v, int id)
{
	struct van_peer *p = psc_van_peer_find(v, id);

	if (p)
		return p;
	if (!psc_van_room_for_one((void **)&v->peers, &v->cap, v->npeers,
				  sizeof(struct van_peer *)))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->id = id;
	p->at.addr = PSC_NODE_NO_ADDR;
	pthread_mutex_init(&p->send_lock, NULL);
	v->peers[v->npeers++] = p;
	return p;
}

int psc_van_peer_failed(const struct van_peer *p)
{
	return __atomic_load_n(&p->failed, __ATOMIC_ACQUIRE);
}

void psc_van_peer_fail(struct ps_comm_van *v, struct van_peer *p, int err,
		       const char *why)
{
	bool first;

	pthread_mutex_lock(&v->lock);
	first = !p->failed;
	if (first) {
		snprintf(p->why, sizeof(p->why), "%s", why);
		p->reported = false;
		__atomic_store_n(&p->failed, err, __ATOMIC_RELEASE);
		__atomic_add_fetch(&v->fail_gen, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&v->lock);
	if (first)
		psc_log(PSC_LOG_ERROR, -1, "van: node %d at %s:%d failed: %s",
			p->id, p->host, p->port, why);
}

bool psc_van_peer_left(const struct van_peer *p)
{
	return __atomic_load_n(&p->left, __ATOMIC_ACQUIRE);
}

static double peer_last_send(const struct van_peer *p)
{
	double t;

	__atomic_load(&p->last_send, &t, __ATOMIC_RELAXED);
	return t;
}

/* When node p last showed it lives, besides its frames (see probe). */
static double peer_alive(const struct van_peer *p)
{
	double t;

	__atomic_load(&p->alive, &t, __ATOMIC_RELAXED);
	return t;
}

static void peer_set_alive(struct van_peer *p)
{
	double t = psc_now();

	__atomic_store(&p->alive, &t, __ATOMIC_RELAXED);
}

int ps_comm_van_connect(ps_comm_van_t v, int node_id, const char *host,
			int port)
{
	struct psc_node_names names;
	struct psc_node_addr at;
	struct psc_van_addr a;
	struct van_peer *p;
	const char *over = "";
	char err[512];
	int rc;

	if (!psc_van_ok(v) || node_id < 0 || !host || port <= 0 ||
	    port > 65535 || !v->bound)
		return PS_COMM_ERR_ARG;
	psc_node_chan_names(v->chan, &names);
	rc = psc_van_fetch(host, port, &v->key, &names, v->provider,
			   psc_now() + v->params.timeout, &a, err, sizeof(err));
	if (rc) {
		psc_log(PSC_LOG_ERROR, -1, "van: connecting node %d at %s:%d: "
			"%s", node_id, host, port, err);
		return psc_err_public(rc, PSC_ERR_CONNECT);
	}
	pthread_mutex_lock(&v->lock);
	p = peer_get(v, node_id);
	if (!p) {
		pthread_mutex_unlock(&v->lock);
		return PS_COMM_ERR_NOMEM;
	}
	pthread_mutex_lock(&p->send_lock);
	psc_van_addr_names(&a, v->provider, &names);
	/* The same van again keeps its AV entry; a new one replaces. */
	if (p->namelen != a.namelen || memcmp(p->name, a.name, a.namelen) != 0) {
		rc = psc_node_chan_join(v->chan, &names, &at);
		if (!rc) {
			p->at = at;
			memcpy(p->name, a.name, a.namelen);
			p->namelen = a.namelen;
		}
	}
	if (!rc) {
		p->slot = a.slot;
		p->tx.id = 0;
		snprintf(p->host, sizeof(p->host), "%s", host);
		p->port = port;
		p->self = psc_node_chan_is_self(v->chan, &names);
		over = psc_node_chan_path_provider(v->chan, &p->at);
		/* A node connected again is given another chance. */
		peer_set_alive(p);
		__atomic_store_n(&p->failed, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&p->left, false, __ATOMIC_RELEASE);
		p->reported = false;
	}
	pthread_mutex_unlock(&p->send_lock);
	pthread_mutex_unlock(&v->lock);
	if (rc) {
		psc_log(PSC_LOG_ERROR, -1, "van: fi_av_insert for node %d: %s",
			node_id, psc_fab_strerror(-rc));
		return psc_err_from_fi(rc);
	}
	psc_log(PSC_LOG_INFO, -1, "van: node %d at %s:%d over %s, slot %u",
		node_id, host, port, over, a.slot);
	return 0;
}

struct psc_ep *psc_van_peer_ep(ps_comm_van_t v, int id)
{
	struct psc_ep *ep = NULL;
	struct van_peer *p;

	pthread_mutex_lock(&v->lock);
	p = psc_van_peer_find(v, id);
	if (p) {
		pthread_mutex_lock(&p->send_lock);
		if (p->at.addr != PSC_NODE_NO_ADDR)
			ep = psc_node_chan_ep(v->chan, p->at.path);
		pthread_mutex_unlock(&p->send_lock);
	}
	pthread_mutex_unlock(&v->lock);
	return ep;
}

/* Whether nothing listens at p's address any more (connection refused). */
static bool nobody_listens(const struct van_peer *p)
{
	struct sockaddr_storage ss;
	struct psc_hostport hp;
	socklen_t sl;
	char err[256];
	int fd, last = 0;

	memset(&hp, 0, sizeof(hp));
	snprintf(hp.host, sizeof(hp.host), "%s", p->host);
	hp.port = (uint16_t)p->port;
	if (psc_resolve(&hp, &ss, &sl, err, sizeof(err)) != 0)
		return false;
	fd = psc_connect_retry((struct sockaddr *)&ss, sl, psc_now() + 0.05,
			       &last);
	if (fd >= 0) {
		close(fd);
		return false;
	}
	return last == ECONNREFUSED;
}

/*
 * Whether p said goodbye, once the frames that have arrived are taken: a
 * node that stops sends its goodbye before it closes its address server,
 * but this van may not have read it yet. Receiving thread.
 */
static bool bye_arrived(struct ps_comm_van *v, struct van_peer *p)
{
	if (psc_van_peer_left(p))
		return true;
	psc_node_chan_progress(v->chan);
	psc_van_take_frames(v);
	return psc_van_peer_left(p);
}

/*
 * A probe of p got no answer (err says why). p is dead once its probes
 * have gone unanswered for PS_COMM_PEER_TIMEOUT (or, when set, for
 * PS_COMM_OP_TIMEOUT) since its last sign of life: connect, a frame, an
 * answered probe. Only silence counts: a node that answers lives,
 * however long its messages take.
 */
static void silent(struct ps_comm_van *v, struct van_peer *p, const char *err)
{
	double heard = PSC_MAX(peer_alive(p), psc_van_sender_seen(v, p->id));
	double quiet;
	char why[700];

	if (p->unanswered <= heard)
		p->unanswered = p->probed;
	quiet = psc_now() - p->unanswered;
	if (quiet >= v->params.peer_timeout) {
		snprintf(why, sizeof(why), "no answer to its probes for %.1f s "
			 "(PS_COMM_PEER_TIMEOUT): %s", quiet, err);
		psc_van_peer_fail(v, p, PS_COMM_ERR_PEER, why);
	} else if (v->params.op_timeout > 0 && quiet >= v->params.op_timeout) {
		snprintf(why, sizeof(why), "no answer to its probes for %.1f s "
			 "(PS_COMM_OP_TIMEOUT): %s", quiet, err);
		psc_van_peer_fail(v, p, PS_COMM_ERR_TIMEOUT, why);
	}
}

void psc_van_probe(struct ps_comm_van *v, struct van_peer *p)
{
	struct psc_van_addr a;
	char err[512], why[700];
	int rc;

	p->probed = psc_now();
	rc = psc_van_fetch(p->host, p->port, &v->key, NULL, v->provider,
			   psc_now() + PROBE_IO_SEC, &a, err, sizeof(err));
	if (!rc) {
		if (a.namelen == p->namelen &&
		    memcmp(a.name, p->name, a.namelen) == 0) {
			peer_set_alive(p);
			return;
		}
		snprintf(why, sizeof(why), "another endpoint is served at its "
			 "address now (the node restarted)");
		psc_van_peer_fail(v, p, PS_COMM_ERR_PEER, why);
	} else if (rc == -EBADE || rc == -EPROTO || nobody_listens(p)) {
		/* While stopping, sends to it hold stop up: fail it. */
		if (!psc_van_stopping(v) && bye_arrived(v, p))
			return;
		snprintf(why, sizeof(why), "its address server is gone (%s)",
			 err);
		psc_van_peer_fail(v, p, PS_COMM_ERR_PEER, why);
	} else {
		silent(v, p, err);
	}
}

/* Whether a message from node id is being received (receiving thread). */
static bool receiving_from(const struct ps_comm_van *v, int id)
{
	for (const struct van_inflight *in = v->in_head; in; in = in->next)
		if (in->msg.sender == id && !psc_van_inflight_done(in))
			return true;
	return false;
}

void psc_van_probe_silent(struct ps_comm_van *v, bool pending)
{
	struct van_peer *due[PROBE_MAX];
	double now = psc_now();
	size_t n = 0;

	pthread_mutex_lock(&v->lock);
	for (size_t k = 0; k < v->npeers && n < PROBE_MAX; k++) {
		struct van_peer *p = v->peers[(v->probe_next + k) % v->npeers];
		double sent = peer_last_send(p);
		bool want = false;

		if (p->self || p->failed || !p->port ||
		    (psc_van_peer_left(p) && !pending) ||
		    now - p->probed < PROBE_SEC)
			continue;
		if (pending) {
			for (struct van_batch *b = v->pending; b && !want;
			     b = b->next)
				want = b->peer == p && !psc_van_batch_done(b);
		} else {
			want = (sent > 0 || receiving_from(v, p->id)) &&
			       now - PSC_MAX(sent,
					     psc_van_sender_seen(v, p->id)) >=
				       PROBE_SEC;
		}
		if (want)
			due[n++] = p;
	}
	if (v->npeers)
		v->probe_next = (v->probe_next + 1) % v->npeers;
	pthread_mutex_unlock(&v->lock);
	for (size_t i = 0; i < n; i++)
		psc_van_probe(v, due[i]);
	__atomic_store(&v->probe_round, &now, __ATOMIC_RELAXED);
}

