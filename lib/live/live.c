/*
 * The liveness monitor of a world communicator (contract in live.h):
 * deaths, frames and the monitor thread. The calls that open, join,
 * watch and leave, and the watchdog, are in live_api.c.
 *
 * Wire format on a star link, both ways: frames of an 8-byte header
 * (type, 0, payload length as 16 bits, rank as 32 bits, big-endian) and
 * at most FRAME_MAX bytes of payload. A link opens with the job key's
 * handshake (net/auth.h): HELLO (rank: the sender; payload: its nonce),
 * CHAL from rank 0 (its nonce and MAC), PROOF (the sender's MAC); until
 * the proof checks out, the link is a stranger's, which gets a short
 * deadline and one of at most PS_COMM_UNAUTH_MAX places (the oldest goes
 * first) and whose loss is no death. BEAT says "alive"; DEAD
 * (rank: the dead one; payload: the words) reports or relays a death;
 * BYE says the sender leaves in good order, and rank 0 answers it with
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
	ssize_t n;

	plen = PSC_MIN(plen, (size_t)FRAME_MAX);
	f[0] = (uint8_t)type;
	f[1] = 0;
	psc_be_put(f + 2, plen, 2);
	psc_be_put(f + 4, (uint32_t)rank, 4);
	/* pl may be NULL only with plen 0. */
	if (plen)
		/* cppcheck-suppress nullPointer */
		memcpy(f + HDR, pl, plen);
	n = send(k->fd, f, HDR + plen, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n >= 0 || errno == EAGAIN || errno == EWOULDBLOCK) {
		/* A partial frame would garble the stream: a full buffer
		 * this far means the peer reads nothing, so it is lost. */
		if (n >= 0 && (size_t)n != HDR + plen)
			return false;
		k->last_tx = psc_now();
		return true;
	}
	return false;
}

struct link *psc_live_link_of(struct psc_live *l, int rank)
{
	for (int i = 0; i < l->nlinks; i++)
		if (l->links[i].fd >= 0 && l->links[i].rank == rank)
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
 * locks shared with peers: r may have died holding one. Lock held.
 */
static void poison(struct psc_live *l, int r)
{
	if (!psc_live_is_local(l, r))
		return;
	for (struct watch *w = l->watches; w; w = w->next)
		for (int i = 0; i < w->n; i++)
			if (w->world[i] == r && psc_ep_caps(w->ep)->peer_locks) {
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
 * Dead rank r's process is gone: remove the shared-memory files it left
 * (a stopped one keeps them): the provider's, and pscomm's message rings
 * nobody mapped. Then stop watching it. Lock held.
 */
static void gone(struct psc_live *l, int r)
{
	const struct psc_provider_ops *prov;

	psc_ring_remove_pid(l->peers[r].pid);

	for (struct watch *w = l->watches; w; w = w->next) {
		prov = psc_provider_lookup(psc_ep_provider(w->ep));
		if (prov->remove_regions) {
			prov->remove_regions(NULL, 0, l->peers[r].pid);
			break;
		}
	}
	close(l->peers[r].pidfd);
	l->peers[r].pidfd = -1;
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
	close(k->fd);
	k->fd = -1;
	k->rank = -1;
}

static void compact(struct psc_live *l)
{
	int n = 0;

	for (int i = 0; i < l->nlinks; i++)
		if (l->links[i].fd >= 0)
			l->links[n++] = l->links[i];
	l->nlinks = n;
}

/*
 * Rank r is dead, with words naming it: record it, fail what depends on
 * it and, at rank 0, relay it to every rank. Lock held.
 */
static void mark_dead(struct psc_live *l, int r, const char *words)
{
	struct peer *p;
	struct link *k;

	if (r < 0 || r >= l->cfg.size || l->left)
		return;
	if (r == l->cfg.rank) {
		/* Rank 0 gave this rank up (it was silent too long). */
		char w[FRAME_MAX + 64];

		snprintf(w, sizeof(w), "rank 0 gave this rank up: %s", words);
		fail_watches(l, -1, -ECONNRESET, w);
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
	if (l->cfg.rank == 0)
		for (int i = 0; i < l->nlinks; i++)
			if (l->links[i].fd >= 0 && l->links[i].rank > 0 &&
			    l->links[i].rank != r)
				psc_live_send(&l->links[i], F_DEAD, r, words,
					   strlen(words));
	poison(l, r);
	fail_watches(l, r, -ECONNRESET, words);
	if (exited(p->pidfd))
		gone(l, r);
	if ((k = psc_live_link_of(l, r)) != NULL)
		close_link(k);
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

	if (k && !k->reading)
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
	struct link *k;

	if (l->cfg.rank && r != 0)
		read_link_of(l, 0);
	k = l->cfg.rank ? psc_live_link_of(l, 0) : NULL;
	if (p->state == P_DEAD || p->state == P_LEFT)
		return;
	if (!k || r == 0) {
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

/* Fail the watched communicator ctx: rank `from` aborted it. */
static void aborted(struct psc_live *l, int from, const uint8_t *pl,
		    size_t plen)
{
	char w[FRAME_MAX + 64];
	uint32_t ctx;

	if (plen < 4)
		return;
	ctx = (uint32_t)psc_be_get(pl, 4);
	snprintf(w, sizeof(w), "rank %d aborted the communicator: %.*s", from,
		 (int)(plen - 4), (const char *)pl + 4);
	for (struct watch *w2 = l->watches; w2; w2 = w2->next)
		if (w2->ctx == ctx && !w2->failed) {
			w2->failed = true;
			psc_ep_fail_owner(w2->ep, w2->owner, -ESHUTDOWN, w);
		}
	if (l->cfg.rank == 0)
		for (int i = 0; i < l->nlinks; i++)
			if (l->links[i].rank > 0 && l->links[i].rank != from)
				psc_live_send(&l->links[i], F_ABORT, from, pl,
					   plen);
}

/* -------------------------------------------------------- receiving */

/* What a liveness handshake binds: the claimed rank and the size. */
void psc_live_bind(uint8_t *b, int r, int size)
{
	psc_be_put(b, (uint32_t)r, 4);
	psc_be_put(b + 4, (uint32_t)size, 4);
}

/* A HELLO on a stranger's link (rank 0): challenge it, or false. */
static bool hello(struct psc_live *l, struct link *k, int r,
		  const uint8_t *pl, size_t plen)
{
	uint8_t bind[8], chal[PSC_AUTH_CHAL_LEN];

	if (k->claim >= 0 || r <= 0 || r >= l->cfg.size ||
	    l->peers[r].state != P_PENDING)
		return false;
	psc_live_bind(bind, r, l->cfg.size);
	if (psc_auth_server_chal(&k->hs, &l->key, PSC_AUTH_LIVE, bind,
				 sizeof(bind), pl, plen, NULL, chal) != 0)
		return false;
	k->claim = r;
	return psc_live_send(k, F_CHAL, 0, chal, sizeof(chal));
}

/* Its PROOF: it knows the key, so bind the link to its rank. */
static bool proof(struct psc_live *l, struct link *k, int r,
		  const uint8_t *pl, size_t plen)
{
	if (k->claim < 0 || r != k->claim ||
	    psc_auth_server_check(&k->hs, pl, plen) != 0) {
		psc_log(PSC_LOG_WARN, 0, "liveness: dropped a connection that "
			"does not know this job's PS_COMM_JOB_KEY");
		return false;
	}
	if (l->peers[r].state != P_PENDING)
		return false;
	k->rank = r;
	l->peers[r].state = P_UP;
	psc_log(PSC_LOG_DEBUG, 0, "liveness: rank %d joined", r);
	return true;
}

/* Rank r left in good order: its exit is no death. Lock held. */
static void left(struct psc_live *l, int r)
{
	struct peer *p = &l->peers[r];

	if (p->state == P_DEAD)
		return;
	psc_log(PSC_LOG_DEBUG, l->cfg.rank, "liveness: rank %d left", r);
	p->state = P_LEFT;
	p->left_at = psc_now();
	if (p->pidfd >= 0) {
		close(p->pidfd);
		p->pidfd = -1;
	}
	pthread_cond_broadcast(&l->cond);
}

/* Handle one frame; false when the link must go. Lock held. */
static bool frame(struct psc_live *l, struct link *k, int type, int r,
		  const uint8_t *pl, size_t plen)
{
	char w[FRAME_MAX + 1];

	if (k->rank < 0)
		return (type == F_HELLO && hello(l, k, r, pl, plen)) ||
		       (type == F_PROOF && proof(l, k, r, pl, plen));
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
		if (l->cfg.rank == 0 && r > 0 && r < l->cfg.size)
			read_link_of(l, r);
		/* From rank 0, a verdict; at rank 0, a report to judge. */
		if (l->cfg.rank == 0 && r > 0 && r < l->cfg.size &&
		    l->peers[r].state == P_LEFT)
			psc_live_send(k, F_LEFT, r, NULL, 0);
		else
			mark_dead(l, r, w);
		return true;
	case F_BYE:
		left(l, k->rank);
		if (l->cfg.rank == 0) {
			for (int i = 0; i < l->nlinks; i++)
				if (l->links[i].fd >= 0 &&
				    l->links[i].rank > 0 && &l->links[i] != k)
					psc_live_send(&l->links[i], F_LEFT,
						   k->rank, NULL, 0);
			psc_live_send(k, F_BYE, 0, NULL, 0);
		}
		return true;
	case F_LEFT:
		if (r > 0 && r < l->cfg.size && r != l->cfg.rank)
			left(l, r);
		return true;
	case F_ABORT:
		/* r is the rank that called ps_comm_abort. */
		aborted(l, r, pl, plen);
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

/* Rank 0: take a new connection; it must say HELLO soon. Lock held. */
static void accept_link(struct psc_live *l)
{
	int fd = accept4(l->listen_fd, NULL, NULL,
			 SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct link *oldest = NULL, *spare = NULL, *k;
	int unbound = 0;

	if (fd < 0)
		return;
	psc_live_link_setup(fd);
	for (int i = 0; i < l->nlinks; i++) {
		k = &l->links[i];
		if (k->fd < 0 && !spare)
			spare = k;
		if (k->fd < 0 || k->rank >= 0)
			continue;
		unbound++;
		if (!oldest || k->since < oldest->since)
			oldest = k;
	}
	/*
	 * The oldest stranger makes room, and the newcomer takes its slot
	 * (no compaction here: the thread's poll set still indexes links).
	 */
	if (oldest && (unbound >= l->cfg.unauth_max ||
		       l->nlinks >= l->maxlinks)) {
		close_link(oldest);
		k = oldest;
	} else if (l->nlinks < l->maxlinks) {
		k = &l->links[l->nlinks++];
	} else if (spare) {
		k = spare;
	} else {
		close(fd);
		return;
	}
	memset(k, 0, sizeof(*k));
	k->fd = fd;
	k->rank = -1;
	k->claim = -1;
	k->since = psc_now();
	k->last_rx = psc_now();
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

		if (k->fd < 0)
			continue;
		if (k->rank < 0) {
			if (now - k->since > UNBOUND_S)
				close_link(k);
			continue;
		}
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
	if (l->cfg.rank == 0 && now - l->started > l->cfg.timeout)
		for (int r = 1; r < l->cfg.size; r++)
			if (l->peers[r].state == P_PENDING)
				psc_live_peer_died(l, r, "never connected to rank 0's "
					  "liveness monitor");
	if (l->cfg.watchdog)
		psc_live_watchdog(l, now);
}

/* Poll set slots: 0 wake pipe, 1 listener, then links, then pidfds. */
static int pollset(struct psc_live *l, struct pollfd *pf, int *who)
{
	int n = 0;

	compact(l);
	pf[n] = (struct pollfd){.fd = l->wake[0], .events = POLLIN};
	who[n++] = -1;
	pf[n] = (struct pollfd){.fd = l->listen_fd, .events = POLLIN};
	who[n++] = -2;
	/* Links first: a LEFT notice must beat the exit it explains. */
	for (int i = 0; i < l->nlinks; i++) {
		pf[n] = (struct pollfd){.fd = l->links[i].fd, .events = POLLIN};
		who[n++] = i;
	}
	/* A suspect's pidfd fired already: rank 0's verdict decides. */
	for (int r = 0; r < l->cfg.size; r++)
		if (l->peers[r].pidfd >= 0 && !(l->peers[r].suspect &&
						 l->peers[r].state != P_DEAD)) {
			pf[n] = (struct pollfd){.fd = l->peers[r].pidfd,
						.events = POLLIN};
			who[n++] = l->maxlinks + r;
		}
	return n;
}

void *psc_live_run(void *arg)
{
	struct psc_live *l = arg;
	size_t cap = 2 + (size_t)l->maxlinks + (size_t)l->cfg.size;
	struct pollfd *pf = calloc(cap, sizeof(*pf));
	int *who = calloc(cap, sizeof(*who));

	pthread_mutex_lock(&l->lock);
	while (!l->stop && pf && who) {
		int n = pollset(l, pf, who);

		pthread_mutex_unlock(&l->lock);
		n = poll(pf, (nfds_t)n, TICK_MS) > 0 ? n : 0;
		pthread_mutex_lock(&l->lock);
		for (int i = 0; i < n; i++) {
			if (!pf[i].revents)
				continue;
			if (who[i] == -1) {
				char buf[64];

				while (read(l->wake[0], buf, sizeof(buf)) > 0)
					;
			} else if (who[i] == -2) {
				accept_link(l);
			} else if (who[i] < l->maxlinks) {
				/* Closed meanwhile: its slot says fd -1. */
				if (l->links[who[i]].fd == pf[i].fd)
					link_read(l, &l->links[who[i]]);
			} else if (l->peers[who[i] - l->maxlinks].pidfd ==
				   pf[i].fd) {
				int r = who[i] - l->maxlinks;

				if (l->peers[r].state == P_DEAD)
					gone(l, r);
				else
					psc_live_peer_died(l, r,
						  "died: its process exited");
			}
		}
		tick(l, psc_now());
	}
	pthread_mutex_unlock(&l->lock);
	free(pf);
	free(who);
	return NULL;
}
