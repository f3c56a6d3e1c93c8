/*
 * The liveness monitor of a world communicator (contract in live.h):
 * deaths, frames and the monitor thread. The calls that open, join,
 * watch and leave, and the watchdog, are in live_api.c.
 *
 * Wire format on a star link, both ways: frames of an 8-byte header
 * (type, 0, payload length as 16 bits, rank as 32 bits, big-endian) and
 * at most FRAME_MAX bytes of payload. A link opens with the job key's
 * handshake (net/auth.h): HELLO (rank: the sender; payload: its nonce),
 * CHAL from the root (its nonce and MAC), PROOF (the sender's MAC). The
 * root (rank 0, then the lowest live rank once it died: reroot) serves
 * the star on its listener (net/listener.h; every rank has one, only
 * the root admits ranks): until the proof
 * checks out, a connection is a stranger's, which gets a short deadline
 * and one of at most PS_COMM_UNAUTH_MAX places (the oldest goes first),
 * and whose loss is no death; the monitor never sees it. BEAT says "alive"; DEAD
 * (rank: the dead one; payload: the words) reports or relays a death;
 * BYE says the sender leaves in good order, and the root answers it with
 * its own BYE once it told the others with LEFT (rank: the one leaving),
 * so that no rank mistakes the exit of a rank that finalized for a
 * death; ABORT (rank: the sender; payload: context id, 32 bits, then
 * words) relays ps_comm_abort.
 *
 * l->lock guards all the state. The monitor thread holds it except in
 * poll(); other threads take it for short calls. Socket writes never
 * block (a peer that reads nothing for long is dead by its silence), so
 * holding the lock across them is fine. Only the monitor thread, or a
 * caller once it stopped, closes descriptors.
 */
#include <errno.h>
#include <fcntl.h>
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
#include "provider.h"
#include "util/log.h"
#include "util/param.h"
#include "util/util.h"

/* ---------------------------------------------------------- helpers */

/*
 * A link's socket: non-blocking, and without Nagle's delay. A frame held
 * back behind an unacknowledged heartbeat would die with a process that
 * exits right after (closing with unread data resets the connection and
 * drops what was queued), and a death it relays would never arrive.
 */
void psc_live_link_setup(int fd)
{
	int one = 1;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Send one frame without blocking; false when the link is broken. */
bool psc_live_send(struct link *k, int type, int rank, const void *pl,
		       size_t plen)
{
	uint8_t f[HDR + FRAME_MAX];
	int rc;

	plen = PSC_MIN(plen, (size_t)FRAME_MAX);
	f[0] = (uint8_t)type;
	f[1] = 0;
	psc_be_put(f + 2, plen, 2);
	psc_be_put(f + 4, (uint32_t)rank, 4);
	/* pl may be NULL only with plen 0. */
	if (plen)
		/* cppcheck-suppress nullPointer */
		memcpy(f + HDR, pl, plen);
	if (k->lc) {
		rc = psc_lsn_send(k->lc, f, HDR + plen);
		if (rc == 0 || rc == -EAGAIN)
			k->last_tx = psc_now();
		return rc == 0 || rc == -EAGAIN;
	}
	rc = psc_outq_send(&k->out, k->fd, f, HDR + plen);
	if (rc == 0 || rc == -ENOBUFS)
		k->last_tx = psc_now();
	return rc == 0 || rc == -ENOBUFS;
}

struct link *psc_live_link_of(struct psc_live *l, int rank)
{
	for (int i = 0; i < l->nlinks; i++)
		if (psc_live_link_up(&l->links[i]) && l->links[i].rank == rank)
			return &l->links[i];
	return NULL;
}

void psc_live_wake(struct psc_live *l)
{
	char c = 0;

	if (write(l->wake[1], &c, 1) < 0) {
		/* Full pipe: the thread wakes anyway. */
	}
}

/* ----------------------------------------------------------- deaths */


bool psc_live_is_local(const struct psc_live *l, int r)
{
	return strcmp(l->peers[r].proc, l->proc) == 0;
}

/*
 * Stop every call into the provider on the endpoints r shares with this
 * rank, when r shares this kernel and the provider keeps queues under
 * locks shared with peers: r may have died holding one. An endpoint
 * where r has no address (another path serves it) shares nothing with
 * it. Lock held.
 */
static void poison(struct psc_live *l, int r)
{
	if (!psc_live_is_local(l, r))
		return;
	for (struct watch *w = l->watches; w; w = w->next)
		for (int i = 0; i < w->n; i++)
			if (w->world[i] == r && w->addrs[i] != FI_ADDR_UNSPEC &&
			    psc_ep_caps(w->ep)->peer_locks) {
				psc_ep_poison(w->ep);
				break;
			}
}

/* Whether the process behind pidfd fd (-1: none) has exited. */
static bool exited(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return fd >= 0 && poll(&p, 1, 0) == 1;
}

/*
 * Remove the shared-memory files dead rank r's exited process left (a
 * stopped one keeps them): the provider's, found through a watch, and
 * pscomm's message rings nobody mapped. Idempotent. Lock held.
 */
static void remove_files_of(struct psc_live *l, int r)
{
	const struct psc_provider_ops *prov;

	psc_shmring_remove_pid(l->peers[r].pid);
	for (struct watch *w = l->watches; w; w = w->next) {
		prov = psc_provider_lookup(psc_ep_provider(w->ep));
		if (prov->remove_regions) {
			prov->remove_regions(NULL, 0, l->peers[r].pid);
			break;
		}
	}
}

/*
 * Dead rank r's process is gone: remove its files, then stop watching
 * it. Monitor thread (or a caller once it stopped). Lock held.
 */
static void gone(struct psc_live *l, int r)
{
	remove_files_of(l, r);
	close(l->peers[r].pidfd);
	l->peers[r].pidfd = -1;
}

/* Whether the process behind pid (its pidfd still open) is stopped. */
static bool stopped(int pid)
{
	char path[32], buf[128], *p;
	ssize_t got;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	got = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (got <= 0)
		return false;
	buf[got] = '\0';
	/* "pid (comm) S ...": the state follows the last ')'. */
	p = strrchr(buf, ')');
	return p && (p[1] == ' ') && (p[2] == 'T' || p[2] == 't');
}

void psc_live_reap(struct psc_live *l, const void *owner)
{
	int fds[REAP_MAX], who[REAP_MAX], n = 0;
	double end = psc_now() + REAP_S;

	for (struct watch *w = l->watches; w; w = w->next) {
		if (w->owner != owner)
			continue;
		for (int i = 0; i < w->n && n < REAP_MAX; i++) {
			int r = w->world[i], fd;
			bool seen = false;

			if (r < 0 || r >= l->cfg.size ||
			    l->peers[r].state != P_DEAD ||
			    l->peers[r].pidfd < 0 || stopped(l->peers[r].pid))
				continue;
			for (int j = 0; j < n && !seen; j++)
				seen = who[j] == r;
			/* A copy: the monitor thread may close its own. */
			if (seen || (fd = fcntl(l->peers[r].pidfd,
						F_DUPFD_CLOEXEC, 0)) < 0)
				continue;
			fds[n] = fd;
			who[n++] = r;
		}
	}
	for (int i = 0; i < n; i++) {
		struct pollfd p = {.fd = fds[i], .events = POLLIN};
		double rest;
		int ms;

		pthread_mutex_unlock(&l->lock);
		do {
			rest = end - psc_now();
			ms = rest > 0 ? (int)(rest * 1000) + 1 : 0;
		} while (poll(&p, 1, ms) < 0 && errno == EINTR);
		pthread_mutex_lock(&l->lock);
		if (p.revents & POLLIN)
			remove_files_of(l, who[i]);
		close(fds[i]);
	}
}

/*
 * Fail every watched communicator with world rank r (-1: all), and every
 * one on a poisoned endpoint, which can make no progress. Lock held.
 */
static void fail_watches(struct psc_live *l, int r, int err,
			 const char *words)
{
	for (struct watch *w = l->watches; w; w = w->next) {
		bool member = r < 0 || psc_ep_poisoned(w->ep);

		for (int i = 0; i < w->n && !member; i++)
			member = w->world[i] == r;
		if (!member || w->failed)
			continue;
		w->failed = true;
		psc_ep_fail_owner(w->ep, w->owner, err, words);
	}
}

/*
 * Close k; its slot stays (fd -1) until compact() runs, so indices and
 * pointers stay valid while frames and events are being handled.
 */
static void close_link(struct link *k)
{
	if (k->lc)
		psc_lsn_close(k->lc);
	else if (k->fd >= 0)
		close(k->fd);
	psc_outq_free(&k->out);
	k->lc = NULL;
	k->fd = -1;
	k->rank = -1;
}

static void compact(struct psc_live *l)
{
	int n = 0;

	for (int i = 0; i < l->nlinks; i++)
		if (psc_live_link_up(&l->links[i]))
			l->links[n++] = l->links[i];
	l->nlinks = n;
}

/*
 * The root died: the lowest rank that is neither dead nor gone, and
 * listens, takes over. Every rank computes the same one from the same
 * deaths; this rank becomes it (the others have PS_COMM_PEER_TIMEOUT
 * from now to join it, or count as dead), or the thread joins it next
 * round (l->rejoin). Lock held.
 */
static void reroot(struct psc_live *l)
{
	int old = l->root, r = 0;

	/* Its own record holds this rank's address too ("-": none). */
	while (r < l->cfg.size &&
	       (l->peers[r].state == P_DEAD || l->peers[r].state == P_LEFT ||
		strcmp(l->peers[r].addr, "-") == 0))
		r++;
	/* Nobody else can: this rank, alone or without a listener. */
	if (r == l->cfg.size)
		r = l->cfg.rank;
	l->root = r;
	l->rejoin = r == l->cfg.rank ? -1 : r;
	l->started = psc_now();
	psc_log(PSC_LOG_INFO, l->cfg.rank, "liveness: rank %d, the root, is "
		"gone; rank %d takes over%s", old, r,
		r == l->cfg.rank ? " (this rank)" : "");
	psc_live_wake(l);
}

/*
 * Rank r is dead, with words naming it: record it, fail what depends on
 * it and, at the root, relay it to every rank; a dead root hands over.
 * Lock held.
 */
static void mark_dead(struct psc_live *l, int r, const char *words)
{
	struct peer *p;
	struct link *k;

	if (r < 0 || r >= l->cfg.size || l->left)
		return;
	if (r == l->cfg.rank) {
		/* The root gave this rank up (it was silent too long). */
		char w[FRAME_MAX + 64];

		snprintf(w, sizeof(w), "rank %d gave this rank up: %s",
			 l->root, words);
		fail_watches(l, -1, -ECONNRESET, w);
		l->cut_off = true;
		pthread_cond_broadcast(&l->cond);
		return;
	}
	p = &l->peers[r];
	if (p->state == P_DEAD || p->state == P_LEFT)
		return;
	p->state = P_DEAD;
	p->dead = strdup(words);
	/* The first death matters; the rest mostly follow from it. */
	psc_log(l->first < 0 ? PSC_LOG_WARN : PSC_LOG_INFO, l->cfg.rank, "%s",
		words);
	if (l->first < 0)
		l->first = r;
	/* Relay first: this process may exit as soon as it fails. */
	if (l->cfg.rank == l->root)
		for (int i = 0; i < l->nlinks; i++)
			if (psc_live_link_up(&l->links[i]) &&
			    l->links[i].rank >= 0 && l->links[i].rank != r)
				psc_live_send(&l->links[i], F_DEAD, r, words,
					   strlen(words));
	poison(l, r);
	fail_watches(l, r, -ECONNRESET, words);
	if (exited(p->pidfd))
		gone(l, r);
	if ((k = psc_live_link_of(l, r)) != NULL)
		close_link(k);
	if (r == l->root)
		reroot(l);
	/* A root does not wait for the dead in an agreement. */
	psc_live_agree_check(l);
	/* Its pidfd stays until the process is gone (a link closes first). */
	pthread_cond_broadcast(&l->cond);
}

static void link_lost(struct psc_live *l, struct link *k, const char *why);
static void link_read(struct psc_live *l, struct link *k);

/*
 * Handle what the link to `rank` holds (if there is one and no caller
 * up the stack is reading it), so that what that rank sent before comes
 * first. Lock held.
 */
static void read_link_of(struct psc_live *l, int rank)
{
	struct link *k = psc_live_link_of(l, rank);

	if (k && k->lc)
		psc_lsn_read(k->lc);
	else if (k && !k->reading)
		link_read(l, k);
}

/*
 * This rank saw rank r die (words name it). Rank 0 orders deaths: the
 * others report theirs to it and take its answer as the verdict (DEAD,
 * or LEFT when r finalized and its goodbye is still on the way), so that
 * every rank blames the same first death, never a rank that exited
 * after it or in good order. What rank 0 sent since poll() looked at its
 * link comes first: a LEFT notice or a relayed death that explains r's
 * end, or rank 0's own end (a rank that fails on rank 0's death exits at
 * once, and its exit may be seen before rank 0's reset). Rank 0's own
 * death, or no answer within SUSPECT_S, is decided here. Lock held.
 */
static void suspect(struct psc_live *l, int r, const char *words)
{
	struct peer *p = &l->peers[r];
	bool root = l->cfg.rank == l->root;
	struct link *k;

	if (!root && r != l->root)
		read_link_of(l, l->root);
	k = root ? NULL : psc_live_link_of(l, l->root);
	if (p->state == P_DEAD || p->state == P_LEFT)
		return;
	if (!k || r == l->root) {
		mark_dead(l, r, words);
		return;
	}
	psc_log(PSC_LOG_DEBUG, l->cfg.rank, "liveness: suspect %s", words);
	if (p->suspect)
		return;
	p->suspect = strdup(words);
	p->suspect_at = psc_now();
	if (!p->suspect) {
		mark_dead(l, r, words);
	} else if (!psc_live_send(k, F_DEAD, r, words, strlen(words))) {
		/*
		 * Rank 0 cannot be told: its link broke (reset by its
		 * exit while this thread was between poll and here). Its
		 * death came first, and r's most likely followed from it.
		 */
		link_lost(l, k, "died or is unreachable: its liveness "
			  "connection broke");
		mark_dead(l, r, words);
	}
}

/* suspect() with words built from r's identity and the evidence. */
void psc_live_peer_died(struct psc_live *l, int r, const char *evidence)
{
	char w[FRAME_MAX];
	const struct peer *p = &l->peers[r];

	snprintf(w, sizeof(w), "rank %d (host %s, pid %d) %s, seen by rank %d",
		 r, p->host, p->pid, evidence, l->cfg.rank);
	suspect(l, r, w);
}

/* A link broke: its peer is dead unless it said goodbye. Lock held. */
static void link_lost(struct psc_live *l, struct link *k, const char *why)
{
	int r = k->rank;

	close_link(k);
	if (r >= 0 && l->peers[r].state != P_LEFT)
		psc_live_peer_died(l, r, why);
}

/*
 * Fail the watched communicator ctx: rank `from` aborted it (F_ABORT)
 * or revoked it (F_REVOKE, which outranks an earlier failure). Lock
 * held.
 */
static void aborted(struct psc_live *l, int type, int from,
		    const uint8_t *pl, size_t plen)
{
	bool revoke = type == F_REVOKE;
	char w[FRAME_MAX + 64];
	uint32_t ctx;

	if (plen < 4)
		return;
	ctx = (uint32_t)psc_be_get(pl, 4);
	snprintf(w, sizeof(w), "rank %d %s the communicator: %.*s", from,
		 revoke ? "revoked" : "aborted", (int)(plen - 4),
		 (const char *)pl + 4);
	for (struct watch *w2 = l->watches; w2; w2 = w2->next)
		if (w2->ctx == ctx && (!w2->failed || revoke)) {
			w2->failed = true;
			psc_ep_fail_owner(w2->ep, w2->owner,
					  revoke ? -EKEYREVOKED : -ESHUTDOWN,
					  w);
		}
	/* Relayed once: a root taking over hears it again from each rank. */
	if (psc_live_abort_log(l, type, from, pl, plen) &&
	    l->cfg.rank == l->root)
		for (int i = 0; i < l->nlinks; i++)
			if (l->links[i].rank >= 0 && l->links[i].rank != from)
				psc_live_send(&l->links[i], type, from, pl,
					      plen);
}

bool psc_live_abort_log(struct psc_live *l, int type, int from,
			const uint8_t *pl, size_t plen)
{
	uint32_t ctx = (uint32_t)psc_be_get(pl, 4);
	struct abort_rec *a;

	for (int i = 0; i < l->naborts; i++)
		if (l->aborts[i].type == type &&
		    (uint32_t)psc_be_get(l->aborts[i].pl, 4) == ctx)
			return false;
	if (l->naborts < ABORT_LOG) {
		a = &l->aborts[l->naborts++];
		a->type = type;
		a->from = from;
		a->plen = PSC_MIN(plen, sizeof(a->pl));
		memcpy(a->pl, pl, a->plen);
	}
	return true;
}

/*
 * Send over k what this rank knows that the other end may not: each
 * death (to a root: also the ones only suspected here, as reports),
 * each goodbye (from a root), each abort, its agreements. Lock held.
 */
static void tell_known(struct psc_live *l, struct link *k, bool to_root)
{
	for (int r = 0; r < l->cfg.size; r++) {
		const struct peer *p = &l->peers[r];
		const char *w = p->state == P_DEAD ? p->dead : p->suspect;

		if (r == k->rank || r == l->cfg.rank)
			continue;
		if (w && (p->state == P_DEAD || to_root))
			psc_live_send(k, F_DEAD, r, w, strlen(w));
		else if (!to_root && p->state == P_LEFT)
			psc_live_send(k, F_LEFT, r, NULL, 0);
	}
	for (int i = 0; i < l->naborts; i++)
		psc_live_send(k, l->aborts[i].type, l->aborts[i].from,
			      l->aborts[i].pl, l->aborts[i].plen);
	psc_live_agree_tell(l, k, to_root);
}

bool psc_live_link_root(struct psc_live *l, int root, int fd)
{
	double now = psc_now();
	struct link *k;

	if (l->nlinks >= l->maxlinks) {
		close(fd);
		return false;
	}
	k = &l->links[l->nlinks++];
	*k = (struct link){.fd = fd, .rank = root, .since = now,
			   .last_rx = now, .last_tx = now};
	l->peers[root].state = P_UP;
	tell_known(l, k, true);
	pthread_cond_broadcast(&l->cond);
	return true;
}

/*
 * Join l->rejoin, the new root, from the thread: the handshake runs
 * without the lock, retried while the new root has not yet taken over
 * (it refuses until it saw the old root die), up to PS_COMM_PEER_TIMEOUT;
 * after that it counts as dead too, and the next one takes over. Lock
 * held on entry and return.
 */
static void rejoin(struct psc_live *l)
{
	int target = l->rejoin, fd = -1, rc;
	double end = psc_now() + l->cfg.timeout;
	unsigned step = 0;
	char err[FRAME_MAX - 32], w[FRAME_MAX];
	bool exit_seen, again;

	l->rejoin = -1;
	pthread_mutex_unlock(&l->lock);
	/*
	 * Short attempts: a release (stop) ends the wait within one. A
	 * refused connection (nothing listens at its address any more) or
	 * its exit seen through its pidfd is the new root's death: ranks
	 * often die together, the next root among them.
	 */
	do {
		rc = psc_live_handshake(l, target,
					PSC_MIN(end, psc_now() + REJOIN_TRY_S),
					&fd, err, sizeof(err));
		exit_seen = rc && exited(l->peers[target].pidfd);
		again = rc && !exit_seen && rc != -EACCES &&
			rc != -ECONNREFUSED && psc_now() < end &&
			!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE);
		if (again)
			psc_backoff_sleep(0.02, 0.2, step++, false, end);
	} while (again);
	pthread_mutex_lock(&l->lock);
	if (l->stop || l->left || l->root != target) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if (rc == 0 && psc_live_link_root(l, target, fd)) {
		psc_log(PSC_LOG_INFO, l->cfg.rank, "liveness: joined rank %d, "
			"the new root", target);
		return;
	}
	if (exit_seen) {
		psc_live_peer_died(l, target, "died: its process exited");
		return;
	}
	snprintf(w, sizeof(w), "%s, seen by rank %d", err, l->cfg.rank);
	mark_dead(l, target, w);
}

/* -------------------------------------------------------- receiving */

/* What a liveness handshake binds: the claimed rank and the size. */
void psc_live_bind(uint8_t *b, int r, int size)
{
	psc_be_put(b, (uint32_t)r, 4);
	psc_be_put(b + 4, (uint32_t)size, 4);
}

/* Rank r left in good order: its exit is no death. Lock held. */
static void left(struct psc_live *l, int r)
{
	struct peer *p = &l->peers[r];

	if (p->state == P_DEAD || p->state == P_LEFT)
		return;
	psc_log(PSC_LOG_DEBUG, l->cfg.rank, "liveness: rank %d left", r);
	p->state = P_LEFT;
	p->left_at = psc_now();
	if (p->pidfd >= 0) {
		close(p->pidfd);
		p->pidfd = -1;
	}
	psc_live_agree_check(l);
	pthread_cond_broadcast(&l->cond);
}

/* Handle one frame; false when the link must go. Lock held. */
static bool frame(struct psc_live *l, struct link *k, int type, int r,
		  const uint8_t *pl, size_t plen)
{
	char w[FRAME_MAX + 1];
	bool root = l->cfg.rank == l->root;

	switch (type) {
	case F_BEAT:
		return true;
	case F_DEAD:
		snprintf(w, sizeof(w), "%.*s", (int)plen, (const char *)pl);
		/*
		 * Before judging a report about r, take what r itself sent
		 * before it went (an abort, its goodbye): a rank that aborts
		 * and exits at once must be seen to abort, not to die.
		 */
		if (root && r == l->cfg.rank)
			return true; /* a report about the root, to the root */
		if (root && r >= 0 && r < l->cfg.size)
			read_link_of(l, r);
		/* From the root, a verdict; at the root, a report to judge. */
		if (root && r >= 0 && r < l->cfg.size &&
		    l->peers[r].state == P_LEFT)
			psc_live_send(k, F_LEFT, r, NULL, 0);
		else
			mark_dead(l, r, w);
		return true;
	case F_BYE:
		left(l, k->rank);
		if (root) {
			for (int i = 0; i < l->nlinks; i++)
				if (psc_live_link_up(&l->links[i]) &&
				    l->links[i].rank >= 0 &&
				    &l->links[i] != k)
					psc_live_send(&l->links[i], F_LEFT,
						   k->rank, NULL, 0);
			psc_live_send(k, F_BYE, l->cfg.rank, NULL, 0);
		}
		return true;
	case F_LEFT:
		if (r >= 0 && r < l->cfg.size && r != l->cfg.rank)
			left(l, r);
		return true;
	case F_ABORT:
	case F_REVOKE:
		/* r is the rank that called ps_comm_abort or _revoke. */
		aborted(l, type, r, pl, plen);
		return true;
	case F_AGREE:
	case F_DECIDE:
	case F_QUERY:
		psc_live_agree_frame(l, k, type, pl, plen);
		return true;
	default:
		return false;
	}
}

int psc_live_frame_next(const uint8_t *buf, size_t len,
			struct psc_live_frame *f)
{
	size_t plen;

	if (len < HDR)
		return 0;
	plen = psc_be_get(buf + 2, 2);
	if (plen > FRAME_MAX)
		return -EPROTO;
	if (len < HDR + plen)
		return 0;
	f->type = buf[0];
	f->rank = (int)(uint32_t)psc_be_get(buf + 4, 4);
	f->pl = buf + HDR;
	f->plen = plen;
	return (int)(HDR + plen);
}

static void link_read_frames(struct psc_live *l, struct link *k);

/*
 * Read what k has and handle whole frames. Lock held. A frame may read
 * another link first (a report about its rank); never the one being read.
 */
static void link_read(struct psc_live *l, struct link *k)
{
	k->reading = true;
	link_read_frames(l, k);
	k->reading = false;
}

static void link_read_frames(struct psc_live *l, struct link *k)
{
	for (;;) {
		ssize_t n = recv(k->fd, k->in + k->inlen,
				 sizeof(k->in) - k->inlen, MSG_DONTWAIT);
		size_t off = 0;

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			link_lost(l, k, "died or is unreachable: its liveness "
				  "connection closed without a goodbye");
			return;
		}
		if (n < 0)
			return;
		k->inlen += (size_t)n;
		k->last_rx = psc_now();
		for (;;) {
			struct psc_live_frame f;
			int fl = psc_live_frame_next(k->in + off,
						     k->inlen - off, &f);

			if (fl < 0) {
				link_lost(l, k, "sent a malformed liveness "
					  "frame");
				return;
			}
			if (fl == 0)
				break;
			if (!frame(l, k, f.type, f.rank, f.pl, f.plen)) {
				link_lost(l, k, "sent an unexpected liveness "
					  "frame");
				return;
			}
			/* A DEAD frame may have closed this very link. */
			if (k->fd < 0)
				return;
			off += (size_t)fl;
		}
		memmove(k->in, k->in + off, k->inlen - off);
		k->inlen -= off;
	}
}

/* ------------------------------------------------------- the thread */

/*
 * A rank that left sends nothing more once what it sent before has
 * landed, which PS_COMM_PEER_TIMEOUT bounds as it bounds a death. After
 * that, whatever still waits for it (a lost message's receive, a
 * communicator used past its world's finalize) would wait forever: fail
 * the communicators that hold it. Lock held.
 */
static void left_long_ago(struct psc_live *l, double now)
{
	char w[FRAME_MAX];

	for (int r = 0; r < l->cfg.size; r++) {
		struct peer *p = &l->peers[r];

		if (p->state != P_LEFT || p->left_failed ||
		    now - p->left_at < l->cfg.timeout)
			continue;
		p->left_failed = true;
		snprintf(w, sizeof(w), "rank %d (host %s, pid %d) finalized "
			 "%.1f s ago: nothing more can come from it "
			 "(PS_COMM_PEER_TIMEOUT=%g)", r, p->host, p->pid,
			 now - p->left_at, l->cfg.timeout);
		psc_log(PSC_LOG_INFO, l->cfg.rank, "liveness: %s", w);
		fail_watches(l, r, -ECONNRESET, w);
	}
}

/*
 * Heartbeats, silences, late joiners, ranks that left long ago, the
 * watchdog. Lock held.
 */
static void tick(struct psc_live *l, double now)
{
	char why[128];

	for (int i = 0; i < l->nlinks; i++) {
		struct link *k = &l->links[i];

		if (!psc_live_link_up(k) || k->rank < 0)
			continue;
		if (k->lc)
			k->last_rx = PSC_MAX(k->last_rx, psc_lsn_last_rx(k->lc));
		if (!l->left && l->peers[k->rank].state == P_UP &&
		    now - k->last_rx > l->cfg.timeout) {
			snprintf(why, sizeof(why), "is unresponsive: no "
				 "heartbeat for %.1f s (PS_COMM_PEER_TIMEOUT"
				 "=%g)", now - k->last_rx, l->cfg.timeout);
			link_lost(l, k, why);
		} else if (now - k->last_tx >= l->beat &&
			   !psc_live_send(k, F_BEAT, l->cfg.rank, NULL, 0)) {
			link_lost(l, k, "died or is unreachable: its liveness "
				  "connection broke");
		}
	}
	for (int r = 0; r < l->cfg.size; r++)
		if (l->peers[r].suspect && l->peers[r].state != P_DEAD &&
		    l->peers[r].state != P_LEFT &&
		    now - l->peers[r].suspect_at >=
			    PSC_MIN(SUSPECT_S, l->cfg.timeout))
			mark_dead(l, r, l->peers[r].suspect);
	left_long_ago(l, now);
	if (l->cfg.rank == l->root && now - l->started > l->cfg.timeout) {
		snprintf(why, sizeof(why), "never connected to rank %d's "
			 "liveness monitor", l->root);
		for (int r = 0; r < l->cfg.size; r++)
			if (r != l->cfg.rank && l->peers[r].state == P_PENDING)
				psc_live_peer_died(l, r, why);
	}
	if (l->cfg.watchdog)
		psc_live_watchdog(l, now);
}

/*
 * Poll set slots: 0 wake pipe, then the listener's (rank 0: *nl of
 * them), then this rank's own link, then pidfds. Returns the count, or
 * -ENOMEM.
 */
static int pollset(struct psc_live *l, struct pollfd **pf, int **who,
		   size_t *cap, int *nl)
{
	size_t want = 1 + (l->lsn ? psc_lsn_npoll(l->lsn) : 0) +
		      (size_t)l->maxlinks + (size_t)l->cfg.size;
	int n = 0;

	compact(l);
	if (want > *cap) {
		struct pollfd *p2 = realloc(*pf, 2 * want * sizeof(**pf));
		int *w2 = p2 ? realloc(*who, 2 * want * sizeof(**who)) : NULL;

		if (p2)
			*pf = p2;
		if (!w2)
			return -ENOMEM;
		*who = w2;
		*cap = 2 * want;
	}
	if (!*pf || !*who)
		return -ENOMEM;
	(*pf)[n] = (struct pollfd){.fd = l->wake[0], .events = POLLIN};
	(*who)[n++] = -1;
	/* Links first: a LEFT notice must beat the exit it explains. */
	*nl = l->lsn ? psc_lsn_pollfds(l->lsn, *pf + n, *cap - 1) : 0;
	for (int i = 0; i < *nl; i++)
		(*who)[n++] = -2;
	for (int i = 0; i < l->nlinks; i++)
		if (!l->links[i].lc) {
			bool out = psc_outq_pending(&l->links[i].out);

			(*pf)[n] = (struct pollfd){
				.fd = l->links[i].fd,
				.events = (short)(POLLIN | (out ? POLLOUT : 0))};
			(*who)[n++] = i;
		}
	/* A suspect's pidfd fired already: rank 0's verdict decides. */
	for (int r = 0; r < l->cfg.size; r++)
		if (l->peers[r].pidfd >= 0 && !(l->peers[r].suspect &&
						 l->peers[r].state != P_DEAD)) {
			(*pf)[n] = (struct pollfd){.fd = l->peers[r].pidfd,
						   .events = POLLIN};
			(*who)[n++] = l->maxlinks + r;
		}
	return n;
}

/* Handle slot i of a round's poll set. Lock held. */
static void pollin(struct psc_live *l, const struct pollfd *p, int who)
{
	char buf[64];
	int r = who - l->maxlinks;

	if (who == -1) {
		while (read(l->wake[0], buf, sizeof(buf)) > 0)
			;
	} else if (who >= 0 && who < l->maxlinks) {
		struct link *k = &l->links[who];

		/* Closed meanwhile: its slot says fd -1. */
		if (k->fd != p->fd)
			return;
		if ((p->revents & POLLOUT) &&
		    psc_outq_flush(&k->out, k->fd) != 0)
			link_lost(l, k, "died or is unreachable: its liveness "
				  "connection broke");
		else if (p->revents & ~POLLOUT)
			link_read(l, k);
	} else if (who >= l->maxlinks && l->peers[r].pidfd == p->fd) {
		if (l->peers[r].state == P_DEAD)
			gone(l, r);
		else
			psc_live_peer_died(l, r, "died: its process exited");
	}
}

void *psc_live_run(void *arg)
{
	struct psc_live *l = arg;
	struct pollfd *pf = NULL;
	int *who = NULL, nl = 0;
	size_t cap = 0;

	pthread_mutex_lock(&l->lock);
	while (!l->stop) {
		int n = pollset(l, &pf, &who, &cap, &nl);

		if (n < 0)
			break;
		pthread_mutex_unlock(&l->lock);
		n = poll(pf, (nfds_t)n, TICK_MS) > 0 ? n : 0;
		pthread_mutex_lock(&l->lock);
		if (pf[0].revents && n)
			pollin(l, &pf[0], -1);
		/* The listener's slots, every round: it expires strangers. */
		if (l->lsn)
			psc_lsn_service(l->lsn, pf + 1, n ? nl : 0);
		for (int i = 1 + nl; i < n; i++)
			if (pf[i].revents)
				pollin(l, &pf[i], who[i]);
		tick(l, psc_now());
		if (l->rejoin >= 0 && !l->stop && !l->left)
			rejoin(l);
	}
	pthread_mutex_unlock(&l->lock);
	free(pf);
	free(who);
	return NULL;
}

/* ------------------------------------------------------ the listener */

/* ops.decode: a liveness frame (its header announces the length). */
static long lv_decode(const uint8_t *buf, size_t len, struct psc_lsn_frame *f,
		      char *why, size_t wlen)
{
	size_t plen;

	if (len < HDR)
		return 0;
	plen = psc_be_get(buf + 2, 2);
	if (plen > FRAME_MAX) {
		snprintf(why, wlen, "a liveness frame of %zu bytes", plen);
		return -EPROTO;
	}
	f->type = buf[0];
	f->kind = buf[0] == F_HELLO   ? PSC_LSN_HELLO
		  : buf[0] == F_PROOF ? PSC_LSN_PROOF
				      : PSC_LSN_OTHER;
	f->rank = (int32_t)(uint32_t)psc_be_get(buf + 4, 4);
	f->pl = buf + HDR;
	f->plen = plen;
	return (long)(HDR + plen);
}

/* ops.encode_chal: rank 0's CHAL frame. */
static size_t lv_chal(const struct psc_lsn_frame *hello, const uint8_t *chal,
		      size_t clen, uint8_t *out, size_t room)
{
	if (HDR + clen > room)
		return 0;
	out[0] = F_CHAL;
	out[1] = 0;
	psc_be_put(out + 2, clen, 2);
	psc_be_put(out + 4, 0, 4);
	memcpy(out + HDR, chal, clen);
	return HDR + clen;
}

/* ops.on_hello: a rank still expected, claiming a nonce alone. */
static int lv_hello(void *arg, struct psc_lsn_conn *c,
		    const struct psc_lsn_frame *f, uint8_t *bind,
		    size_t *bindlen, uint8_t *session)
{
	struct psc_live *l = arg;
	int r = f->rank;

	/* Only the root takes ranks; one not there yet is refused. */
	if (f->plen != PSC_AUTH_HELLO_LEN || r < 0 || r >= l->cfg.size ||
	    r == l->cfg.rank || l->root != l->cfg.rank ||
	    l->peers[r].state != P_PENDING)
		return -EPERM;
	psc_live_bind(bind, r, l->cfg.size);
	*bindlen = 8;
	return 0;
}

/* ops.on_authenticated: it knows the key, so bind a link to its rank. */
static int lv_admit(void *arg, struct psc_lsn_conn *c,
		    const struct psc_lsn_frame *proof)
{
	struct psc_live *l = arg;
	int r = proof->rank;

	struct link *k;

	if (l->peers[r].state != P_PENDING || l->root != l->cfg.rank ||
	    l->nlinks >= l->maxlinks)
		return -EALREADY;
	k = &l->links[l->nlinks++];
	*k = (struct link){.fd = -1, .lc = c, .rank = r, .since = psc_now(),
			   .last_rx = psc_now()};
	l->peers[r].state = P_UP;
	psc_log(PSC_LOG_DEBUG, l->cfg.rank, "liveness: rank %d joined", r);
	/* First, that it is admitted: psc_live_handshake waits for this. */
	psc_live_send(k, F_BEAT, l->cfg.rank, NULL, 0);
	/* What it may have missed: deaths, goodbyes, aborts. */
	tell_known(l, k, false);
	return 0;
}

static struct link *link_by_lc(struct psc_live *l,
				const struct psc_lsn_conn *c)
{
	for (int i = 0; i < l->nlinks; i++)
		if (l->links[i].lc == c)
			return &l->links[i];
	return NULL;
}

/* ops.on_frame: a rank's frame; a bad one loses the link here. */
static int lv_frame(void *arg, struct psc_lsn_conn *c,
		    const struct psc_lsn_frame *f)
{
	struct psc_live *l = arg;
	struct link *k = link_by_lc(l, c);

	if (!k)
		return -ENOTCONN;
	k->last_rx = psc_now();
	if (!frame(l, k, f->type, f->rank, f->pl, f->plen) && k->lc == c)
		link_lost(l, k, "sent an unexpected liveness frame");
	return 0;
}

/* ops.on_close: the listener lost a rank's link. */
static void lv_close(void *arg, struct psc_lsn_conn *c, int err)
{
	struct psc_live *l = arg;
	struct link *k = link_by_lc(l, c);

	if (k)
		link_lost(l, k, err == -EPROTO
					? "sent a malformed liveness frame"
					: "died or is unreachable: its liveness "
					  "connection closed without a goodbye");
}

static const struct psc_lsn_ops live_lsn_ops = {
	.size = sizeof(struct psc_lsn_ops),
	.name = "liveness",
	.purpose = PSC_AUTH_LIVE,
	.pre_max = HDR + PSC_AUTH_HELLO_LEN,
	.frame_max = HDR + FRAME_MAX,
	.decode = lv_decode,
	.encode_chal = lv_chal,
	.on_hello = lv_hello,
	.on_authenticated = lv_admit,
	.on_frame = lv_frame,
	.on_close = lv_close,
};

int psc_live_listen(struct psc_live *l, char *err, size_t len)
{
	struct psc_lsn_config cfg = {.fd = l->listen_fd,
				     .key = l->key,
				     .unauth_max = l->cfg.unauth_max,
				     .pre_deadline = UNBOUND_S,
				     .log_rank = l->cfg.rank};
	int rc;

	l->listen_fd = -1;
	rc = psc_lsn_open(&l->lsn, &cfg, &live_lsn_ops, l, err, len);
	memset(&cfg.key, 0, sizeof(cfg.key));
	return rc;
}
