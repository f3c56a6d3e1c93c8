/*
 * The van's watchdog. Communicators have the liveness monitor's; a van
 * has no monitor (its receiving thread judges nodes by probes), so it
 * runs a thread of its own over its endpoint. A thread that stays inside
 * one libfabric call for PS_COMM_PEER_TIMEOUT (1 s once the node the
 * call is for is known failed) can never come back: on shm a sender
 * spins for ever on the lock of a node that was stopped or killed while
 * it held it, and the node's other threads then wait for the endpoint
 * behind it. The watchdog says which call, for which node, and ends the
 * process with PSC_EP_STUCK_EXIT, as a ps-lite node that lost a peer
 * would end anyway; PS_COMM_WATCHDOG=0 trades that for the hang.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "state_int.h"
#include "util/log.h"
#include "util/util.h"

/* The limit once the node the call is for is known failed. */
#define STUCK_FAILED_SEC 1.0

struct psc_van_watch {
	struct ps_comm_van *v;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC: quit */
	bool quit;
};

/*
 * The node whose address on path is a, or NULL (none, or v->lock is held
 * by another thread: the watchdog never waits for a lock).
 */
static struct van_peer *node_of(struct ps_comm_van *v,
				 const struct psc_node_addr *at)
{
	struct van_peer *found = NULL;

	if (at->addr == PSC_NODE_NO_ADDR ||
	    pthread_mutex_trylock(&v->lock) != 0)
		return NULL;
	for (size_t i = 0; i < v->npeers && !found; i++)
		if (!v->peers[i]->self && v->peers[i]->at.addr == at->addr &&
		    v->peers[i]->at.path == at->path)
			found = v->peers[i];
	pthread_mutex_unlock(&v->lock);
	return found;
}

static void fatal(struct ps_comm_van *v, const char *call,
		  const struct psc_node_addr *at,
		  const struct van_peer *node, double secs)
{
	char who[320] = "";

	if (node)
		snprintf(who, sizeof(who), " for node %d at %s:%d", node->id,
			 node->host, node->port);
	psc_log(PSC_LOG_ERROR, -1, "van: fatal: a thread has been inside "
		"%s%s on provider %s for %.1f s and will not come back (the "
		"node stopped or died while holding what the call needs); "
		"exiting with status %d (PS_COMM_WATCHDOG=0 disables this)",
		call ? call : "libfabric", who,
		psc_node_chan_path_provider(v->chan, at), secs,
		PSC_EP_STUCK_EXIT);
	psc_node_chan_abandon(v->chan, PSC_EP_STUCK_EXIT);
}

static void *watch_main(void *arg)
{
	struct psc_van_watch *w = arg;
	struct ps_comm_van *v = w->v;
	double timeout = v->params.peer_timeout;
	double beat = PSC_MAX(0.05, PSC_MIN(1.0, timeout / 5));
	struct psc_node_stuck s;

	memset(&s, 0, sizeof(s));
	pthread_mutex_lock(&w->lock);
	while (!w->quit) {
		struct timespec ts = psc_timespec(psc_now() + beat);
		struct psc_node_addr at;
		const char *call;
		double secs;

		secs = psc_node_chan_stuck(v->chan, &s, psc_now(), &call, &at);
		if (secs >= PSC_MIN(STUCK_FAILED_SEC, timeout)) {
			struct van_peer *node = node_of(v, &at);

			if (secs >= timeout ||
			    (node && psc_van_peer_failed(node)))
				fatal(v, call, &at, node, secs);
		}
		pthread_cond_timedwait(&w->cond, &w->lock, &ts);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int psc_van_watch_start(struct ps_comm_van *v)
{
	struct psc_van_watch *w;
	pthread_condattr_t ca;
	int rc;

	if (!v->params.watchdog)
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return PS_COMM_ERR_NOMEM;
	w->v = v;
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &ca);
	pthread_condattr_destroy(&ca);
	rc = pthread_create(&w->thread, NULL, watch_main, w);
	if (rc) {
		psc_log(PSC_LOG_ERROR, -1, "van: watchdog: pthread_create: %s",
			strerror(rc));
		pthread_cond_destroy(&w->cond);
		pthread_mutex_destroy(&w->lock);
		free(w);
		return PS_COMM_ERR_SYSTEM;
	}
	v->watch = w;
	return 0;
}

void psc_van_watch_stop(struct ps_comm_van *v)
{
	struct psc_van_watch *w = v->watch;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->quit = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
	v->watch = NULL;
}
