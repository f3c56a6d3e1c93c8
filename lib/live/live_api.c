/*
 * The liveness monitor's calls (contract in live.h) that open it, join
 * the star, watch communicators and leave, and the watchdog over
 * libfabric calls. The monitor itself (deaths, frames, its thread) is in
 * live.c; the lock rules are written there.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "live/live_int.h"
#include "net/auth.h"
#include "util/log.h"
#include "util/param.h"
#include "util/util.h"

static int pidfd_open(int pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

/* ---------------------------------------------------------- watchdog */

/* The world rank that fabric address a of watch w stands for, or -1. */
static int rank_of_addr(const struct watch *w, fi_addr_t a)
{
	for (int i = 0; a != FI_ADDR_UNSPEC && i < w->n; i++)
		if (w->addrs[i] == a)
			return w->world[i];
	return -1;
}

/* Whether a peer in this kernel died or is suspected to have. */
static bool local_death(const struct psc_live *l)
{
	for (int r = 0; r < l->cfg.size; r++)
		if ((l->peers[r].state == P_DEAD || l->peers[r].suspect) &&
		    psc_live_is_local(l, r))
			return true;
	return false;
}

/* Words of the death to blame: the first one, else a suspected one. */
static const char *death_words(const struct psc_live *l, int r)
{
	if (r >= 0 && l->peers[r].state == P_DEAD)
		return l->peers[r].dead;
	if (r >= 0 && l->peers[r].suspect)
		return l->peers[r].suspect;
	if (l->first >= 0)
		return l->peers[l->first].dead;
	for (r = 0; r < l->cfg.size; r++)
		if (l->peers[r].suspect)
			return l->peers[r].suspect;
	return "no peer is known dead";
}

/* A thread will never come back from the provider: say why, and exit. */
static void fatal(struct psc_live *l, const struct watch *w,
		  const struct psc_ep_probe *p, double secs)
{
	int r = rank_of_addr(w, p->addr);
	char peer[64] = "";

	if (r >= 0)
		snprintf(peer, sizeof(peer), " for rank %d", r);
	psc_log(PSC_LOG_ERROR, l->cfg.rank, "fatal: a thread has been inside "
		"%s%s on provider %s for %.1f s and will not come back: %s: "
		"%s; exiting with status %d (PS_COMM_WATCHDOG=0 disables "
		"this)", p->call ? p->call : "libfabric", peer,
		psc_ep_provider(w->ep), secs, ps_comm_strerror(PS_COMM_ERR_PEER),
		death_words(l, r),
		PSC_LIVE_EXIT);
	psc_ep_abandon(w->ep, PSC_LIVE_EXIT);
}

/* Sample every watched endpoint's libfabric call. Lock held. */
void psc_live_watchdog(struct psc_live *l, double now)
{
	double limit = local_death(l)
			       ? PSC_MIN(STUCK_DEAD_S, l->cfg.timeout)
			       : l->cfg.timeout;

	for (struct watch *w = l->watches; w; w = w->next) {
		struct psc_ep_probe p;
		double secs = psc_ep_stuck_for(w->ep, &w->stuck, now, &p);

		if (secs >= limit)
			fatal(l, w, &p, secs);
	}
}

/* ------------------------------------------------------------ the API */

int psc_live_open(struct psc_live **out, const struct psc_live_config *cfg,
		  char *err, size_t len)
{
	struct psc_live *l = calloc(1, sizeof(*l));
	char addr[80];

	*out = NULL;
	if (!l || !(l->peers = calloc((size_t)cfg->size, sizeof(*l->peers)))) {
		free(l);
		return -ENOMEM;
	}
	l->cfg = *cfg;
	l->iface = *cfg->iface;
	l->cfg.iface = &l->iface;
	l->beat = PSC_MAX(0.05, PSC_MIN(2.0, cfg->timeout / 5));
	l->listen_fd = l->wake[0] = l->wake[1] = -1;
	l->refs = 1;
	l->first = -1;
	if (l->cfg.unauth_max < 1)
		l->cfg.unauth_max = 1;
	/* Any rank may become the root, with a link to every other. */
	l->maxlinks = cfg->size;
	l->rejoin = l->bye_to = -1;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	for (int r = 0; r < cfg->size; r++)
		l->peers[r].pidfd = -1;
	/* Processes that can watch each other: one kernel, one pid space. */
	psc_node_id(NULL, "pid", l->proc, sizeof(l->proc));
	l->links = calloc((size_t)l->maxlinks, sizeof(*l->links));
	if (!l->links || pipe2(l->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
		snprintf(err, len, "liveness monitor: %s", strerror(errno));
		psc_live_release(l);
		return -ENOMEM;
	}
	snprintf(l->addr, sizeof(l->addr), "-");
	if (psc_auth_key_load(&l->key, "", err, len) != 0) {
		psc_live_release(l);
		return -ENOMEM;
	}
	/* Every rank listens: it takes over as the root if the root dies. */
	{
		struct sockaddr_storage ss = l->iface.addr;
		int fd = psc_listen(&ss, l->iface.addrlen, cfg->port_range);

		/*
		 * Rank 0 must listen. Another rank that cannot (every port of
		 * PS_COMM_PORT_RANGE taken) runs on, but cannot take over the
		 * star: its record says "-", and the next rank would.
		 */
		if (fd < 0 && cfg->rank == 0) {
			snprintf(err, len, "liveness monitor: listening on %s "
				 "failed: %s", l->iface.addrstr,
				 strerror(-fd));
			psc_live_release(l);
			return fd;
		}
		if (fd < 0) {
			psc_log(PSC_LOG_WARN, cfg->rank, "liveness monitor: "
				"listening on %s failed (%s): this rank cannot "
				"take over the liveness star if rank 0 dies",
				l->iface.addrstr, strerror(-fd));
			*out = l;
			return 0;
		}
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		l->listen_fd = fd;
		psc_sockaddr_str((struct sockaddr *)&ss, addr, sizeof(addr));
		snprintf(l->addr, sizeof(l->addr), "%s", addr);
	}
	*out = l;
	return 0;
}

void psc_live_self(const struct psc_live *l, char *buf, size_t len)
{
	snprintf(buf, len, "%s,%s,%d", l->addr, l->proc, (int)getpid());
}

int psc_live_peer(struct psc_live *l, int r, const char *host,
		  const char *text, char *err, size_t len)
{
	struct peer *p = &l->peers[r];
	int at = 0;

	/* Widths bound the strings; the pid is checked whole. */
	/* NOLINTNEXTLINE(cert-err34-c) */
	if (sscanf(text, "%79[^,],%95[^,],%n", p->addr, p->proc, &at) != 2 ||
	    at == 0 || psc_param_parse_int(text + at, &p->pid) != 0 ||
	    p->pid <= 0 ||
	    (r == 0 && strcmp(p->addr, "-") == 0)) {
		snprintf(err, len, "rank %d (%s) sent a malformed liveness "
			 "record", r, host);
		return -EPROTO;
	}
	snprintf(p->host, sizeof(p->host), "%s", host);
	return 0;
}

/*
 * After the proof: the root's first frame on fd, a BEAT, says it
 * admitted this rank (lv_admit). 0 once it is read, and also when none
 * came by deadline: the root may have admitted this rank all the same,
 * and a link it admitted that closes is a death to it, so the link is
 * kept and the BEAT read with what follows. -ECONNRESET when fd closed
 * first (dropped as a stranger too many, or refused), -EPROTO when the
 * first frame is another.
 */
static int await_admission(int fd, double deadline)
{
	uint8_t f[HDR];

	for (;;) {
		double left = deadline - psc_now();
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (left <= 0)
			return 0;
		if (poll(&p, 1, (int)ceil(left * 1e3)) < 0 && errno != EINTR)
			return -ECONNRESET;
		n = recv(fd, f, sizeof(f), MSG_PEEK | MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return -ECONNRESET;
		if (n == (ssize_t)sizeof(f))
			break;
		/* Part of the header: the rest is a moment away. */
		if (n > 0)
			psc_backoff_sleep(1e-4, 1e-3, 0, false, deadline);
	}
	if (f[0] != F_BEAT || psc_be_get(f + 2, 2) != 0)
		return -EPROTO;
	return recv(fd, f, sizeof(f), MSG_DONTWAIT) == (ssize_t)sizeof(f)
		       ? 0
		       : -ECONNRESET;
}

int psc_live_handshake(struct psc_live *l, int target, double deadline,
		       int *fdp, char *err, size_t len)
{
	const struct peer *root = &l->peers[target];
	struct sockaddr_storage ss;
	struct psc_hostport hp;
	struct psc_auth_hs hs;
	struct link k;
	socklen_t sl;
	uint8_t bind[8], hello_pl[PSC_AUTH_HELLO_LEN], f[HDR + FRAME_MAX];
	uint8_t pf[PSC_AUTH_PROOF_LEN];
	int fd, last = 0, rc;

	*fdp = -1;
	if (psc_hostport_parse(root->addr, &hp) != 0 ||
	    psc_resolve(&hp, &ss, &sl, err, len) != 0) {
		snprintf(err, len, "rank %d (host %s) published a bad liveness "
			 "address \"%s\"", target, root->host, root->addr);
		return -EPROTO;
	}
	fd = psc_connect_retry((struct sockaddr *)&ss, sl, deadline, &last);
	if (fd < 0) {
		snprintf(err, len, "rank %d (host %s, pid %d) died or is "
			 "unreachable: connecting to its liveness monitor at "
			 "%s failed: %s", target, root->host, root->pid,
			 root->addr, strerror(last));
		return last == ECONNREFUSED ? -ECONNREFUSED : -ECONNRESET;
	}
	psc_live_link_setup(fd);
	k = (struct link){.fd = fd, .rank = target};
	/* Blocking with a deadline: nothing else reads this socket yet. */
	psc_live_bind(bind, l->cfg.rank, l->cfg.size);
	psc_auth_client_hello(&hs, &l->key, PSC_AUTH_LIVE, bind, sizeof(bind),
			      hello_pl);
	/* A fresh socket takes these few bytes whole, or it is broken. */
	rc = psc_live_send(&k, F_HELLO, l->cfg.rank, hello_pl,
			   sizeof(hello_pl)) && !psc_outq_pending(&k.out)
		     ? psc_read_full(fd, f, HDR, deadline)
		     : -ECONNRESET;
	if (rc == 0 && (f[0] != F_CHAL ||
			psc_be_get(f + 2, 2) != PSC_AUTH_CHAL_LEN))
		rc = -EPROTO;
	if (rc == 0)
		rc = psc_read_full(fd, f + HDR, PSC_AUTH_CHAL_LEN, deadline);
	if (rc == 0 && psc_auth_client_proof(&hs, f + HDR, PSC_AUTH_CHAL_LEN,
					     pf, NULL) != 0) {
		snprintf(err, len, "rank %d's liveness monitor at %s did not "
			 "prove that it knows this job's PS_COMM_JOB_KEY",
			 target, root->addr);
		psc_outq_free(&k.out);
		close(fd);
		return -EACCES;
	}
	if (rc == 0 && (!psc_live_send(&k, F_PROOF, l->cfg.rank, pf,
				       sizeof(pf)) ||
			psc_outq_pending(&k.out)))
		rc = -ECONNRESET;
	psc_outq_free(&k.out);
	/* Until the root admits it, its listener may still drop it. */
	if (rc == 0)
		rc = await_admission(fd, deadline);
	if (rc) {
		snprintf(err, len, "rank %d (host %s, pid %d) died: its "
			 "liveness connection closed during the handshake "
			 "(%s)", target, root->host, root->pid, strerror(-rc));
		close(fd);
		return -ECONNRESET;
	}
	*fdp = fd;
	return 0;
}

void psc_live_set_key(struct psc_live *l, const struct psc_auth_key *key)
{
	pthread_mutex_lock(&l->lock);
	l->key = *key;
	pthread_mutex_unlock(&l->lock);
}

int psc_live_start(struct psc_live *l, char *err, size_t len)
{
	int rc = 0, lost = -1;

	/* The listener starts with the key that is set by now. */
	if (l->cfg.rank != 0) {
		double end = psc_now() + l->cfg.timeout;
		unsigned step = 0;
		int fd;

		/*
		 * A connection closed before rank 0 admitted it says nothing
		 * of rank 0's life: its listener drops the oldest stranger
		 * past PS_COMM_UNAUTH_MAX, when many ranks (or a stranger's
		 * flood) arrive at once. Try again up to PS_COMM_PEER_TIMEOUT,
		 * within which a dead rank 0 is an error as before.
		 */
		while ((rc = psc_live_handshake(l, 0, end, &fd, err, len)) ==
			       -ECONNRESET &&
		       psc_now() < end)
			psc_backoff_sleep(0.01, 0.2, step++, true, end);
		if (rc)
			return rc;
		pthread_mutex_lock(&l->lock);
		psc_live_link_root(l, 0, fd);
		pthread_mutex_unlock(&l->lock);
	}
	rc = l->listen_fd >= 0 ? psc_live_listen(l, err, len) : 0;
	if (rc)
		return rc;
	/* Peers this kernel can watch die. */
	for (int r = 0; r < l->cfg.size; r++) {
		struct peer *p = &l->peers[r];

		if (r == l->cfg.rank || strcmp(p->proc, l->proc) != 0)
			continue;
		p->pidfd = pidfd_open(p->pid);
		if (p->pidfd < 0 && errno == ESRCH && lost < 0)
			lost = r;
	}
	pthread_mutex_lock(&l->lock);
	/* Ranks may still be on their way: psc_live_arm starts the clock. */
	l->started = HUGE_VAL;
	if (lost >= 0)
		psc_live_peer_died(l, lost, "died: its process is gone");
	rc = pthread_create(&l->thread, NULL, psc_live_run, l);
	l->running = rc == 0;
	pthread_mutex_unlock(&l->lock);
	if (rc) {
		snprintf(err, len, "liveness monitor: pthread_create: %s",
			 strerror(rc));
		return -rc;
	}
	return 0;
}

void psc_live_arm(struct psc_live *l)
{
	pthread_mutex_lock(&l->lock);
	l->started = psc_now();
	pthread_mutex_unlock(&l->lock);
}

int psc_live_watch(struct psc_live *l, struct psc_ep *ep, const void *owner,
		   uint32_t ctx, const int *world, const fi_addr_t *addrs,
		   int n)
{
	struct watch *w = calloc(1, sizeof(*w));

	if (w) {
		w->world = malloc((size_t)n * sizeof(*w->world));
		w->addrs = malloc((size_t)n * sizeof(*w->addrs));
	}
	if (!w || !w->world || !w->addrs) {
		if (w) {
			free(w->world);
			free(w->addrs);
		}
		free(w);
		return -ENOMEM;
	}
	memcpy(w->world, world, (size_t)n * sizeof(*w->world));
	memcpy(w->addrs, addrs, (size_t)n * sizeof(*w->addrs));
	w->ep = ep;
	w->owner = owner;
	w->ctx = ctx;
	w->n = n;
	pthread_mutex_lock(&l->lock);
	w->next = l->watches;
	l->watches = w;
	l->refs++;
	/* A rank that died already fails the newcomer at once. */
	for (int i = 0; i < n && !w->failed; i++)
		if (l->peers[world[i]].state == P_DEAD) {
			w->failed = true;
			psc_ep_fail_owner(ep, owner, -ECONNRESET,
					  l->peers[world[i]].dead);
		}
	pthread_mutex_unlock(&l->lock);
	return 0;
}

void psc_live_unwatch(struct psc_live *l, const void *owner)
{
	struct watch **pp, *w, *dropped = NULL;
	int n = 0;

	/* An owner on a pair has a watch per endpoint. */
	pthread_mutex_lock(&l->lock);
	psc_live_reap(l, owner);
	for (pp = &l->watches; *pp;)
		if ((*pp)->owner == owner) {
			w = *pp;
			*pp = w->next;
			w->next = dropped;
			dropped = w;
			n++;
		} else {
			pp = &(*pp)->next;
		}
	/* Each watch held l: all but one hold go here, none of them the
	 * last; the release below drops the one left. */
	if (n > 1)
		l->refs -= n - 1;
	pthread_mutex_unlock(&l->lock);
	while (dropped) {
		w = dropped;
		dropped = w->next;
		free(w->world);
		free(w->addrs);
		free(w);
	}
	if (n > 0)
		psc_live_release(l);
}

/* Whether a rank of owner's watch is known dead. Lock held. */
static bool owner_has_dead(struct psc_live *l, const void *owner)
{
	for (struct watch *w = l->watches; w; w = w->next)
		if (w->owner == owner)
			for (int i = 0; i < w->n; i++)
				if (l->peers[w->world[i]].state == P_DEAD)
					return true;
	return false;
}

void psc_live_wait_for(struct psc_live *l, double secs)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)(secs * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&l->cond, &l->lock, &ts);
}

bool psc_live_report(struct psc_live *l, const void *owner, bool fail,
		     const char *evidence)
{
	double until = psc_now() + PSC_MIN(1.0, l->cfg.timeout);
	bool known;

	pthread_mutex_lock(&l->lock);
	while (!(known = owner_has_dead(l, owner)) && psc_now() < until)
		psc_live_wait_for(l, 0.02);
	/* Nobody knows of a death: fail it with what this rank saw. */
	for (struct watch *w = l->watches; w && fail && !known; w = w->next)
		if (w->owner == owner && !w->failed) {
			w->failed = true;
			psc_ep_fail_owner(w->ep, owner, -ECONNRESET, evidence);
		}
	pthread_mutex_unlock(&l->lock);
	return known;
}

/* Tell every rank, through the root, of an abort or revoke of ctx. */
static void announce(struct psc_live *l, int type, uint32_t ctx,
		     const char *words)
{
	uint8_t pl[FRAME_MAX];
	size_t wl = PSC_MIN(strlen(words), sizeof(pl) - 4);

	psc_be_put(pl, ctx, 4);
	/* The frame carries its length: no terminator on the wire. */
	/* NOLINTNEXTLINE(bugprone-not-null-terminated-result) */
	memcpy(pl + 4, words, wl);
	pthread_mutex_lock(&l->lock);
	psc_live_abort_log(l, type, l->cfg.rank, pl, 4 + wl);
	for (int i = 0; i < l->nlinks; i++)
		if (l->links[i].rank >= 0)
			psc_live_send(&l->links[i], type, l->cfg.rank, pl,
				      4 + wl);
	pthread_mutex_unlock(&l->lock);
}

void psc_live_abort(struct psc_live *l, uint32_t ctx, const char *words)
{
	announce(l, F_ABORT, ctx, words);
}

void psc_live_revoke(struct psc_live *l, uint32_t ctx)
{
	announce(l, F_REVOKE, ctx, "ps_comm_revoke");
}

int psc_live_host_of(struct psc_live *l, int r, char *host, size_t len)
{
	struct psc_hostport hp;
	int rc = -ENOENT;

	pthread_mutex_lock(&l->lock);
	if (r >= 0 && r < l->cfg.size &&
	    psc_hostport_parse(l->peers[r].addr, &hp) == 0) {
		snprintf(host, len, strchr(hp.host, ':') ? "[%s]" : "%s",
			 hp.host);
		rc = 0;
	}
	pthread_mutex_unlock(&l->lock);
	return rc;
}

bool psc_live_dead(struct psc_live *l, int r, char *words, size_t len)
{
	bool dead;

	pthread_mutex_lock(&l->lock);
	dead = r >= 0 && r < l->cfg.size && l->peers[r].state == P_DEAD;
	if (dead && len)
		snprintf(words, len, "%s", l->peers[r].dead ? l->peers[r].dead
							    : "dead");
	pthread_mutex_unlock(&l->lock);
	return dead;
}

/* Whether every rank of [lo, hi) left or died. Lock held. */
static bool all_gone(const struct psc_live *l, int lo, int hi)
{
	for (int r = lo; r < hi; r++)
		if (r != l->cfg.rank && (l->peers[r].state == P_UP ||
					 l->peers[r].state == P_PENDING))
			return false;
	return true;
}

/*
 * Whether this rank's goodbye is settled: as the root, every other rank
 * left or died; otherwise the root answered it. Lock held.
 */
static bool leave_done(const struct psc_live *l)
{
	if (l->root == l->cfg.rank)
		return all_gone(l, 0, l->cfg.size);
	return l->peers[l->root].state == P_LEFT;
}

void psc_live_leave(struct psc_live *l)
{
	double deadline = psc_now() + l->cfg.timeout + 1;
	struct link *k;

	pthread_mutex_lock(&l->lock);
	/*
	 * The root relays deaths until all left; the others wait for its
	 * answer, which comes once every rank knows they are leaving. A
	 * root that dies meanwhile hands over: the goodbye goes to the new
	 * one once this rank is linked to it, with time to get there.
	 */
	while (!leave_done(l)) {
		if (l->root != l->cfg.rank && l->bye_to != l->root &&
		    (k = psc_live_link_of(l, l->root)) != NULL) {
			psc_live_send(k, F_BYE, l->cfg.rank, NULL, 0);
			if (l->bye_to >= 0)
				deadline = psc_now() + l->cfg.timeout + 1;
			l->bye_to = l->root;
		}
		if (psc_now() >= deadline)
			break;
		psc_live_wait_for(l, PSC_MIN(0.1, deadline - psc_now()));
	}
	if (!leave_done(l))
		psc_log(PSC_LOG_WARN, l->cfg.rank, "finalize: %s within "
			"PS_COMM_PEER_TIMEOUT=%g s", l->root == l->cfg.rank
			? "some ranks did not say goodbye"
			: "the liveness root did not answer the goodbye",
			l->cfg.timeout);
	if (l->root == l->cfg.rank)
		for (int i = 0; i < l->nlinks; i++)
			if (psc_live_link_up(&l->links[i]) &&
			    l->links[i].rank != l->cfg.rank)
				psc_live_send(&l->links[i], F_BYE, l->cfg.rank,
					      NULL, 0);
	l->left = true;
	pthread_mutex_unlock(&l->lock);
}

void psc_live_release(struct psc_live *l)
{
	bool last;

	pthread_mutex_lock(&l->lock);
	last = --l->refs == 0;
	__atomic_store_n(&l->stop, last, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&l->lock);
	if (!last)
		return;
	if (l->running) {
		psc_live_wake(l);
		pthread_join(l->thread, NULL);
	}
	for (int i = 0; i < l->nlinks; i++)
		if (!l->links[i].lc && l->links[i].fd >= 0) {
			close(l->links[i].fd);
			psc_outq_free(&l->links[i].out);
		}
	psc_lsn_free(l->lsn);
	for (int r = 0; r < l->cfg.size; r++) {
		if (l->peers[r].pidfd >= 0)
			close(l->peers[r].pidfd);
		free(l->peers[r].dead);
		free(l->peers[r].suspect);
	}
	if (l->listen_fd >= 0)
		close(l->listen_fd);
	if (l->wake[0] >= 0) {
		close(l->wake[0]);
		close(l->wake[1]);
	}
	psc_live_agree_free(l);
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->lock);
	free(l->links);
	free(l->peers);
	free(l);
}
