/*
 * The liveness monitor of a world communicator (contract in live.h).
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

#include "live/live.h"
#include "net/auth.h"
#include "provider.h"
#include "util/log.h"
#include "util/param.h"
#include "util/util.h"

enum { F_HELLO = 1, F_BEAT, F_DEAD, F_BYE, F_ABORT, F_LEFT, F_CHAL, F_PROOF };

#define HDR 8
#define FRAME_MAX 480
#define UNBOUND_S 5.0	      /* how long a link may take to authenticate */
#define STUCK_DEAD_S 1.0      /* watchdog limit once a local peer died */
#define TICK_MS 100	      /* the thread's period: checks, watchdog */
#define SUSPECT_S 5.0	      /* rank 0's verdict on a reported death */

enum peer_state { P_PENDING, P_UP, P_LEFT, P_DEAD };

struct peer {
	char host[64];
	char addr[80];	      /* rank 0: its listener, "ip:port" */
	char proc[96];	      /* kernel and pid namespace */
	int pid;
	int pidfd;	      /* same kernel and pid namespace, else -1 */
	enum peer_state state;
	char *dead;	      /* words of its death */
	char *suspect;	      /* seen dead here, reported to rank 0 */
	double suspect_at;
	double left_at;	      /* when it left (P_LEFT) */
	bool left_failed;     /* what still waits for it was failed */
};

struct link {
	int fd;
	int rank;	      /* -1 until its PROOF checks out */
	int claim;	      /* the rank its HELLO claims, or -1 */
	struct psc_auth_hs hs;
	double since, last_rx, last_tx;
	size_t inlen;
	bool reading;	      /* link_read is handling its frames */
	uint8_t in[HDR + FRAME_MAX];
};

struct watch {
	struct psc_ep *ep;
	const void *owner;
	uint32_t ctx;
	int n;
	int *world;
	fi_addr_t *addrs;
	bool failed;
	struct psc_ep_probe last; /* watchdog: the call seen last */
	double since;		  /* ... first seen at */
	struct watch *next;
};

struct psc_live {
	struct psc_live_config cfg;
	struct psc_iface iface;
	double beat;
	int listen_fd;
	char addr[80];
	struct psc_auth_key key;
	char proc[96];
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool running, stop, left;
	int wake[2];
	int refs;
	double started;
	int first;		/* the first rank that died, or -1 */
	struct peer *peers;
	struct link *links;
	int nlinks, maxlinks;
	struct watch *watches;
};

/* ---------------------------------------------------------- helpers */

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

/*
 * A link's socket: non-blocking, and without Nagle's delay. A frame held
 * back behind an unacknowledged heartbeat would die with a process that
 * exits right after (closing with unread data resets the connection and
 * drops what was queued), and a death it relays would never arrive.
 */
static void link_setup(int fd)
{
	int one = 1;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Send one frame without blocking; false when the link is broken. */
static bool send_frame(struct link *k, int type, int rank, const void *pl,
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

static struct link *link_of(struct psc_live *l, int rank)
{
	for (int i = 0; i < l->nlinks; i++)
		if (l->links[i].fd >= 0 && l->links[i].rank == rank)
			return &l->links[i];
	return NULL;
}

static void wake_thread(struct psc_live *l)
{
	char c = 0;

	if (write(l->wake[1], &c, 1) < 0) {
		/* Full pipe: the thread wakes anyway. */
	}
}

/* ----------------------------------------------------------- deaths */


static bool is_local(const struct psc_live *l, int r)
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
	if (!is_local(l, r))
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
				send_frame(&l->links[i], F_DEAD, r, words,
					   strlen(words));
	poison(l, r);
	fail_watches(l, r, -ECONNRESET, words);
	if (exited(p->pidfd))
		gone(l, r);
	if ((k = link_of(l, r)) != NULL)
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
	struct link *k = link_of(l, rank);

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
	k = l->cfg.rank ? link_of(l, 0) : NULL;
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
	} else if (!send_frame(k, F_DEAD, r, words, strlen(words))) {
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
static void peer_died(struct psc_live *l, int r, const char *evidence)
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
		peer_died(l, r, why);
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
				send_frame(&l->links[i], F_ABORT, from, pl,
					   plen);
}

/* -------------------------------------------------------- receiving */

/* What a liveness handshake binds: the claimed rank and the size. */
static void live_bind(uint8_t *b, int r, int size)
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
	live_bind(bind, r, l->cfg.size);
	if (psc_auth_server_chal(&k->hs, &l->key, PSC_AUTH_LIVE, bind,
				 sizeof(bind), pl, plen, NULL, chal) != 0)
		return false;
	k->claim = r;
	return send_frame(k, F_CHAL, 0, chal, sizeof(chal));
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
			send_frame(k, F_LEFT, r, NULL, 0);
		else
			mark_dead(l, r, w);
		return true;
	case F_BYE:
		left(l, k->rank);
		if (l->cfg.rank == 0) {
			for (int i = 0; i < l->nlinks; i++)
				if (l->links[i].fd >= 0 &&
				    l->links[i].rank > 0 && &l->links[i] != k)
					send_frame(&l->links[i], F_LEFT,
						   k->rank, NULL, 0);
			send_frame(k, F_BYE, 0, NULL, 0);
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
	link_setup(fd);
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
		    is_local(l, r))
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
	const struct psc_provider_ops *prov;
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
	/* The endpoint will never be closed: its files go now. */
	prov = psc_provider_lookup(psc_ep_provider(w->ep));
	if (prov->remove_regions) {
		size_t len;
		const void *name = psc_ep_name(w->ep, &len);

		prov->remove_regions(name, len, 0);
	}
	_exit(PSC_LIVE_EXIT);
}

/* Sample every watched endpoint's libfabric call. Lock held. */
static void watchdog(struct psc_live *l, double now)
{
	double limit = local_death(l)
			       ? PSC_MIN(STUCK_DEAD_S, l->cfg.timeout)
			       : l->cfg.timeout;

	for (struct watch *w = l->watches; w; w = w->next) {
		struct psc_ep_probe p;

		psc_ep_probe(w->ep, &p);
		if (!(p.seq & 1) || p.seq != w->last.seq) {
			w->last = p;
			w->since = now;
		} else if (now - w->since >= limit) {
			fatal(l, w, &p, now - w->since);
		}
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
			   !send_frame(k, F_BEAT, l->cfg.rank, NULL, 0)) {
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
				peer_died(l, r, "never connected to rank 0's "
					  "liveness monitor");
	if (l->cfg.watchdog)
		watchdog(l, now);
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

static void *run(void *arg)
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
					peer_died(l, r,
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
	l->maxlinks = cfg->rank == 0 ? cfg->size + l->cfg.unauth_max : 1;
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
	if (cfg->rank == 0) {
		struct sockaddr_storage ss = l->iface.addr;
		int fd = psc_listen(&ss, l->iface.addrlen, cfg->port_range);

		if (fd < 0) {
			snprintf(err, len, "liveness monitor: listening on %s "
				 "failed: %s", l->iface.addrstr,
				 strerror(-fd));
			psc_live_release(l);
			return fd;
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

/* Rank other than 0: connect and say HELLO. */
static int join(struct psc_live *l, char *err, size_t len)
{
	struct peer *root = &l->peers[0];
	struct sockaddr_storage ss;
	struct psc_hostport hp;
	struct psc_auth_hs hs;
	socklen_t sl;
	uint8_t bind[8], hello_pl[PSC_AUTH_HELLO_LEN], f[HDR + FRAME_MAX];
	uint8_t pf[PSC_AUTH_PROOF_LEN];
	double deadline = psc_now() + l->cfg.timeout;
	int fd, last = 0, rc;

	if (psc_hostport_parse(root->addr, &hp) != 0 ||
	    psc_resolve(&hp, &ss, &sl, err, len) != 0) {
		snprintf(err, len, "rank 0 (host %s) published a bad liveness "
			 "address \"%s\"", root->host, root->addr);
		return -EPROTO;
	}
	fd = psc_connect_retry((struct sockaddr *)&ss, sl, deadline, &last);
	if (fd < 0) {
		snprintf(err, len, "rank 0 (host %s, pid %d) died or is "
			 "unreachable: connecting to its liveness monitor at "
			 "%s failed: %s", root->host, root->pid, root->addr,
			 strerror(last));
		return -ECONNRESET;
	}
	link_setup(fd);
	l->links[0] = (struct link){.fd = fd, .rank = 0, .claim = 0,
				    .since = psc_now(), .last_rx = psc_now()};
	l->nlinks = 1;
	/* The handshake, before the thread runs: blocking with a deadline. */
	live_bind(bind, l->cfg.rank, l->cfg.size);
	psc_auth_client_hello(&hs, &l->key, PSC_AUTH_LIVE, bind, sizeof(bind),
			      hello_pl);
	rc = send_frame(&l->links[0], F_HELLO, l->cfg.rank, hello_pl,
			sizeof(hello_pl))
		     ? psc_read_full(fd, f, HDR, deadline)
		     : -ECONNRESET;
	if (rc == 0 && (f[0] != F_CHAL ||
			psc_be_get(f + 2, 2) != PSC_AUTH_CHAL_LEN))
		rc = -EPROTO;
	if (rc == 0)
		rc = psc_read_full(fd, f + HDR, PSC_AUTH_CHAL_LEN, deadline);
	if (rc == 0 && psc_auth_client_proof(&hs, f + HDR, PSC_AUTH_CHAL_LEN,
					     pf, NULL) != 0) {
		snprintf(err, len, "rank 0's liveness monitor at %s did not "
			 "prove that it knows this job's PS_COMM_JOB_KEY",
			 root->addr);
		return -EACCES;
	}
	if (rc == 0 && !send_frame(&l->links[0], F_PROOF, l->cfg.rank, pf,
				   sizeof(pf)))
		rc = -ECONNRESET;
	if (rc) {
		snprintf(err, len, "rank 0 (host %s, pid %d) died: its "
			 "liveness connection closed during the handshake "
			 "(%s)", root->host, root->pid, strerror(-rc));
		return -ECONNRESET;
	}
	l->peers[0].state = P_UP;
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

	if (l->cfg.rank != 0) {
		rc = join(l, err, len);
		if (rc)
			return rc;
	}
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
	l->started = psc_now();
	if (lost >= 0)
		peer_died(l, lost, "died: its process is gone");
	rc = pthread_create(&l->thread, NULL, run, l);
	l->running = rc == 0;
	pthread_mutex_unlock(&l->lock);
	if (rc) {
		snprintf(err, len, "liveness monitor: pthread_create: %s",
			 strerror(rc));
		return -rc;
	}
	return 0;
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

	/* An owner on a pair has a watch per endpoint. */
	pthread_mutex_lock(&l->lock);
	for (pp = &l->watches; *pp;)
		if ((*pp)->owner == owner) {
			w = *pp;
			*pp = w->next;
			w->next = dropped;
			dropped = w;
		} else {
			pp = &(*pp)->next;
		}
	pthread_mutex_unlock(&l->lock);
	while (dropped) {
		w = dropped;
		dropped = w->next;
		free(w->world);
		free(w->addrs);
		free(w);
		psc_live_release(l);
	}
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

bool psc_live_report(struct psc_live *l, const void *owner, bool fail,
		     const char *evidence)
{
	double until = psc_now() + PSC_MIN(1.0, l->cfg.timeout);
	bool known;

	pthread_mutex_lock(&l->lock);
	while (!(known = owner_has_dead(l, owner)) && psc_now() < until) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20000000L; /* 20 ms */
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&l->cond, &l->lock, &ts);
	}
	/* Nobody knows of a death: fail it with what this rank saw. */
	for (struct watch *w = l->watches; w && fail && !known; w = w->next)
		if (w->owner == owner && !w->failed) {
			w->failed = true;
			psc_ep_fail_owner(w->ep, owner, -ECONNRESET, evidence);
		}
	pthread_mutex_unlock(&l->lock);
	return known;
}

void psc_live_abort(struct psc_live *l, uint32_t ctx, const char *words)
{
	uint8_t pl[FRAME_MAX];
	size_t wl = PSC_MIN(strlen(words), sizeof(pl) - 4);

	psc_be_put(pl, ctx, 4);
	/* The frame carries its length: no terminator on the wire. */
	/* NOLINTNEXTLINE(bugprone-not-null-terminated-result) */
	memcpy(pl + 4, words, wl);
	pthread_mutex_lock(&l->lock);
	for (int i = 0; i < l->nlinks; i++)
		if (l->links[i].rank >= 0)
			send_frame(&l->links[i], F_ABORT, l->cfg.rank, pl,
				   4 + wl);
	pthread_mutex_unlock(&l->lock);
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

void psc_live_leave(struct psc_live *l)
{
	bool root = l->cfg.rank == 0;
	int lo = root ? 1 : 0, hi = root ? l->cfg.size : 1;
	struct timespec ts;
	struct link *k;

	pthread_mutex_lock(&l->lock);
	/* Rank 0 relays deaths until all left; the others wait for its
	 * answer, which comes once every rank knows they are leaving. */
	if (!root && (k = link_of(l, 0)) != NULL)
		send_frame(k, F_BYE, l->cfg.rank, NULL, 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)l->cfg.timeout + 1;
	while (!all_gone(l, lo, hi) &&
	       pthread_cond_timedwait(&l->cond, &l->lock, &ts) == 0)
		;
	if (!all_gone(l, lo, hi))
		psc_log(PSC_LOG_WARN, l->cfg.rank, "finalize: %s within "
			"PS_COMM_PEER_TIMEOUT=%g s", root ? "some ranks did "
			"not say goodbye" : "rank 0 did not answer the goodbye",
			l->cfg.timeout);
	if (root)
		for (int i = 0; i < l->nlinks; i++)
			if (l->links[i].fd >= 0 && l->links[i].rank > 0)
				send_frame(&l->links[i], F_BYE, 0, NULL, 0);
	l->left = true;
	pthread_mutex_unlock(&l->lock);
}

void psc_live_release(struct psc_live *l)
{
	bool last;

	pthread_mutex_lock(&l->lock);
	last = --l->refs == 0;
	l->stop = last;
	pthread_mutex_unlock(&l->lock);
	if (!last)
		return;
	if (l->running) {
		wake_thread(l);
		pthread_join(l->thread, NULL);
	}
	for (int i = 0; i < l->nlinks; i++)
		close(l->links[i].fd);
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
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->lock);
	free(l->links);
	free(l->peers);
	free(l);
}
