/*
 * Rings in shared memory for the first messages between node-local ranks
 * on shm (ep->shmring, PS_COMM_SHM_RING).
 *
 * libfabric's shm sends a message by taking the receiver's region lock
 * and queueing a command, which the receiver's progress turns into a CQ
 * entry for a bounce buffer that pscomm then matches and reposts: about
 * 0.4 us one way at 8 B here, against Open MPI vader's 0.2 us. A ring
 * takes the software-matched first messages (the user's eager sends,
 * large-message headers, collective and control messages) instead: the
 * sender copies the message into the next slot and publishes it with one
 * release store of the slot's sequence number; the receiver's progress
 * sees that number, hands the message to the first-message hook like
 * any other arrival (psc_first_deliver) and frees the slot by advancing
 * head. A large message's chunks still go through libfabric, straight
 * into the user's buffer.
 *
 * One ring per sender endpoint and destination address, created by the
 * sender in /dev/shm when it first sends there. Its name travels as the
 * last first message that pair sends through libfabric, with the core's
 * own immediate (PSC_FIRST_CORE_IMM);
 * every later first message goes through the ring, so the receiver, which
 * reads a ring only after its announcement, sees them in sending order.
 * The receiver maps the ring and unlinks its name. Both sides only read
 * and write plain memory: a dead peer leaves a ring that nobody reads or
 * fills, and the liveness monitor ends what waits on it.
 *
 * Doorbell. shm has no wait object, so an idle receiver sleeps in
 * growing steps (up to 1 ms), and a message could wait that long for
 * it. Instead a receiver with rings sleeps on their bells (futex words
 * in each ring's header, all at once with futex_waitv) after counting
 * itself in the ring's sleepers; a sender that finds sleepers after
 * publishing a slot rings the bell (FUTEX_WAKE). The sleeper counts
 * itself before it looks at the slots and the sender publishes before it
 * looks at the count, both with full barriers between, so one of them
 * always sees the other. The sleep still ends within its bound, for
 * what comes through libfabric; where the bells of some rings cannot be
 * watched (more than RING_WATCH_MAX, or no futex_waitv and more than
 * one ring) it ends within UNWATCHED_SLEEP.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "core/ep_int.h"
#include "fabric/sig.h"
#include "util/copy.h"
#include "util/log.h"
#include "util/util.h"

/* Slots of a ring, at most. */
#define RING_SLOTS 64
/*
 * What one endpoint's rings may take in /dev/shm together, shared
 * among the other addresses in its AV: a ring holds RING_SLOTS slots up
 * to 4 ranks, fewer (a power of two) as they grow, and one at 128 (a
 * page-rounded 12 KiB), so that 128 ranks that all talk to each other
 * take 190 MiB, not 8 GiB.
 */
#define RING_BUDGET ((size_t)2 << 20)
/* Bells one sleep watches at most (futex_waitv's own limit). */
#define RING_WATCH_MAX 128
/* futex_waitv came with Linux 5.16 and its headers. */
#if defined(SYS_futex_waitv) && defined(FUTEX_WAITV_MAX)
#define HAVE_FUTEX_WAITV 1
#endif
/* The longest sleep while some rings are not watched (over RING_WATCH_MAX). */
#define UNWATCHED_SLEEP 50e-6
#define RING_MAGIC 0x707363726e673033ULL /* "pscrng03" */
#define RING_PREFIX "/psc-ring-"
#define RING_NAME_MAX 64
#define LINE 64

/*
 * The shared header: geometry, the receiver's count of slots read, and
 * the CPU each side's waiting thread last ran on (psc_shmring_cpu_shared;
 * -1 before it waited). The first line is written only rarely.
 */
struct ring_hdr {
	uint64_t magic;
	uint32_t nslots;
	uint32_t slot_size; /* bytes, a multiple of LINE */
	uint32_t mapped;    /* the receiver has mapped it */
	int32_t cpu_tx;	    /* written by the sender only */
	int32_t cpu_rx;	    /* written by the receiver only */
	uint8_t pad0[LINE - 28];
	uint64_t head; /* written by the receiver only */
	uint8_t pad1[LINE - 8];
	uint32_t bell;	   /* futex word: the sender adds 1 to wake */
	uint32_t sleepers; /* receiving threads asleep on bell */
	uint8_t pad2[LINE - 8];
};

/* A slot: the sequence number goes last, and publishes the rest. */
struct ring_slot {
	uint64_t seq; /* k + 1 once message k is in the slot */
	uint64_t imm; /* the message's immediate (core/ep.h) */
	uint64_t len;
	uint8_t data[];
};

#define SLOT_DATA offsetof(struct ring_slot, data)

/* The sender's side of one ring (per destination address). */
struct ring_tx {
	struct ring_hdr *h;
	size_t maplen;
	uint64_t tail;	     /* messages written */
	uint64_t head_seen;  /* the receiver's head when last read */
	uint32_t nslots;     /* the ring's slots */
	int state;	     /* TX_NONE, TX_READY (announce pending), TX_ON, TX_OFF */
	char name[RING_NAME_MAX];
};

enum { TX_NONE, TX_READY, TX_ON, TX_OFF };

/*
 * The receiver's side of one ring, with the geometry it checked when it
 * mapped the ring: the sender's process can still write the header.
 */
struct ring_rx {
	struct ring_hdr *h;
	size_t maplen;
	uint64_t head;
	uint32_t nslots, slot_size;
};

struct psc_shmring {
	struct ring_tx *tx; /* indexed by fi_addr_t (an AV table) */
	size_t ntx;
	struct ring_rx *rx;
	size_t nrx, rxcap;
	size_t cap;	    /* payload bytes a slot holds (ep->first_eager) */
	int cpu;	    /* last CPU published in the rings, or -1 */
	bool on_term;	    /* a termination signal removes the rings */
	bool warned;
	bool bell_heard;    /* atomic: a bell woke a sleeper (logged once) */
};

static unsigned ring_counter;

static size_t slot_size(size_t cap)
{
	return (SLOT_DATA + cap + LINE - 1) / LINE * LINE;
}

/* Slot k of a ring of nslots slots (a power of two) of ss bytes at h. */
static struct ring_slot *slot_at(struct ring_hdr *h, uint32_t nslots,
				 uint32_t ss, uint64_t k)
{
	return (struct ring_slot *)(void *)((uint8_t *)h + sizeof(*h) +
					    (size_t)(k & (nslots - 1)) * ss);
}

int psc_shmring_open(struct psc_ep *ep)
{
	struct psc_shmring *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	g->cap = ep->first_eager;
	g->cpu = -1;
	ep->shmring = g;
	return 0;
}

void psc_shmring_close(struct psc_ep *ep)
{
	struct psc_shmring *g = ep->shmring;

	if (!g)
		return;
	for (size_t i = 0; i < g->ntx; i++) {
		struct ring_tx *t = &g->tx[i];

		if (!t->h)
			continue;
		/*
		 * Not mapped yet: the receiver may still come for what was
		 * written (its announcement is on the way), so the name
		 * stays unless nothing was, or a node-local peer died on
		 * this endpoint (poisoned): nothing more goes through it,
		 * and a receiver that died never comes.
		 */
		if (!__atomic_load_n(&t->h->mapped, __ATOMIC_ACQUIRE) &&
		    (t->tail == 0 || psc_ep_poisoned(ep)))
			shm_unlink(t->name);
		munmap(t->h, t->maplen);
	}
	for (size_t i = 0; i < g->nrx; i++)
		munmap(g->rx[i].h, g->rx[i].maplen);
	free(g->tx);
	free(g->rx);
	free(g);
	ep->shmring = NULL;
}

/* The sender's record for addr, grown on demand; NULL if out of memory. */
static struct ring_tx *tx_of(struct psc_shmring *g, fi_addr_t addr)
{
	if (addr == FI_ADDR_UNSPEC || addr > (fi_addr_t)1 << 24)
		return NULL;
	if (addr >= g->ntx) {
		size_t n = PSC_MAX((size_t)addr + 1, 2 * g->ntx);
		struct ring_tx *t = realloc(g->tx, n * sizeof(*t));

		if (!t)
			return NULL;
		memset(t + g->ntx, 0, (n - g->ntx) * sizeof(*t));
		g->tx = t;
		g->ntx = n;
	}
	return &g->tx[addr];
}

/*
 * The slots of a new ring of slots of ss bytes on an endpoint with av
 * addresses (its own among them): the largest power of two that fits
 * its share of RING_BUDGET, at least one and at most RING_SLOTS.
 */
static uint32_t ring_slots(size_t ss, size_t av)
{
	size_t share = RING_BUDGET / (PSC_MAX(av, (size_t)2) - 1);
	uint32_t n = RING_SLOTS;

	while (n > 1 && sizeof(struct ring_hdr) + n * ss > share)
		n /= 2;
	return n;
}

/*
 * Create the shared ring of t, sized for an endpoint with peers
 * addresses. Returns 0 or -errno.
 */
static int tx_create(struct psc_shmring *g, struct ring_tx *t, size_t peers)
{
	size_t ss = slot_size(g->cap);
	uint32_t ns = ring_slots(ss, peers);
	size_t len = sizeof(struct ring_hdr) + ns * ss;
	unsigned k = __atomic_fetch_add(&ring_counter, 1, __ATOMIC_RELAXED);
	void *m;
	int fd;

	snprintf(t->name, sizeof(t->name), RING_PREFIX "%ld-%u",
		 (long)getpid(), k);
	/* A termination signal removes the rings nobody mapped yet. */
	if (!g->on_term) {
		char prefix[RING_NAME_MAX];

		snprintf(prefix, sizeof(prefix), "%s%ld-", &RING_PREFIX[1],
			 (long)getpid());
		g->on_term = psc_sig_remove_on_term(prefix) == 0;
	}
	fd = shm_open(t->name, O_CREAT | O_EXCL | O_RDWR, 0600);
	if (fd < 0)
		return -errno;
	/* Reserved now: a page tmpfs cannot back later would be SIGBUS. */
	if (ftruncate(fd, (off_t)len) != 0 ||
	    (errno = posix_fallocate(fd, 0, (off_t)len)) != 0) {
		int e = errno;

		close(fd);
		shm_unlink(t->name);
		return -e;
	}
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		int e = errno;

		shm_unlink(t->name);
		return -e;
	}
	t->h = m;
	t->maplen = len;
	t->nslots = ns;
	t->h->nslots = ns;
	t->h->slot_size = (uint32_t)ss;
	t->h->cpu_tx = g->cpu;
	t->h->cpu_rx = -1;
	__atomic_store_n(&t->h->magic, RING_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

/* After publishing a slot: wake the receiver if it sleeps on h's bell. */
static void ring_bell(struct ring_hdr *h)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&h->sleepers, __ATOMIC_RELAXED))
		return;
	__atomic_fetch_add(&h->bell, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &h->bell, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

int psc_shmring_send(struct psc_ep *ep, struct ps_comm_request *r)
{
	struct psc_shmring *g = ep->shmring;
	struct ring_tx *t;
	struct ring_slot *s;

	if (r->addr == FI_ADDR_UNSPEC || r->addr >= g->ntx ||
	    g->tx[r->addr].state != TX_ON)
		return 1;
	t = &g->tx[r->addr];
	if (r->len > g->cap)
		return -EMSGSIZE;
	if (t->tail - t->head_seen >= t->nslots) {
		t->head_seen = __atomic_load_n(&t->h->head, __ATOMIC_ACQUIRE);
		if (t->tail - t->head_seen >= t->nslots)
			return -FI_EAGAIN;
	}
	s = slot_at(t->h, t->nslots, (uint32_t)slot_size(g->cap), t->tail);
	s->imm = r->tag;
	s->len = r->len;
	if (r->len)
		psc_copy(s->data, r->buf, r->len);
	__atomic_store_n(&s->seq, t->tail + 1, __ATOMIC_RELEASE);
	t->tail++;
	ring_bell(t->h);
	return 0;
}

void psc_shmring_offer(struct psc_ep *ep, fi_addr_t addr)
{
	struct psc_shmring *g = ep->shmring;
	struct ring_tx *t = tx_of(g, addr);
	ssize_t rc;

	if (!t || t->state == TX_ON || t->state == TX_OFF)
		return;
	if (t->state == TX_NONE) {
		int e = tx_create(g, t, __atomic_load_n(&ep->av_count,
							 __ATOMIC_RELAXED));

		if (e) {
			t->state = TX_OFF;
			if (!g->warned)
				psc_log(PSC_LOG_WARN, ep->fab.rank, "shm: no "
					"message ring in /dev/shm (%s); "
					"libfabric's queues carry every "
					"message", strerror(-e));
			g->warned = true;
			return;
		}
		t->state = TX_READY;
	}
	psc_prov_enter(ep, "fi_injectdata", addr);
	rc = fi_injectdata(ep->fab.ep, t->name, strlen(t->name) + 1,
			   PSC_FIRST_CORE_IMM, addr);
	psc_prov_exit(ep);
	/* Not sent (a full queue): the next send to addr offers again. */
	if (rc == 0)
		t->state = TX_ON;
}

void psc_shmring_remove_pid(int pid)
{
	char prefix[32];
	struct dirent *d;
	DIR *dir;
	int n;

	if (pid <= 0 || !(dir = opendir("/dev/shm")))
		return;
	/* The names tx_create makes, less the leading '/'. */
	n = snprintf(prefix, sizeof(prefix), "%s%d-", &RING_PREFIX[1], pid);
	while ((d = readdir(dir)) != NULL)
		if (strncmp(d->d_name, prefix, (size_t)n) == 0) {
			char name[RING_NAME_MAX];

			snprintf(name, sizeof(name), "/%s", d->d_name);
			shm_unlink(name);
		}
	closedir(dir);
}

/* Whether name is one tx_create makes: the prefix, then digits and '-'. */
static bool valid_name(const uint8_t *data, size_t len)
{
	size_t n = strlen(RING_PREFIX);

	if (len < n + 2 || len > RING_NAME_MAX || data[len - 1] != '\0' ||
	    memcmp(data, RING_PREFIX, n) != 0)
		return false;
	for (size_t i = n; i < len - 1; i++)
		if ((data[i] < '0' || data[i] > '9') && data[i] != '-')
			return false;
	return true;
}

/* Map the ring an announcement names. Returns 0 or -errno. */
static int rx_map(struct psc_shmring *g, const char *name)
{
	struct ring_hdr *h;
	uint64_t magic;
	uint32_t ns, ss;
	struct stat st;
	size_t len;
	void *m;
	int fd = shm_open(name, O_RDWR, 0);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0 || st.st_uid != geteuid() ||
	    (size_t)st.st_size < sizeof(*h)) {
		close(fd);
		return -EPERM;
	}
	len = (size_t)st.st_size;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -errno;
	h = m;
	/* Read once: what is checked is what is used. */
	magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
	ns = __atomic_load_n(&h->nslots, __ATOMIC_RELAXED);
	ss = __atomic_load_n(&h->slot_size, __ATOMIC_RELAXED);
	if (magic != RING_MAGIC || !ns || (ns & (ns - 1)) ||
	    ss < slot_size(0) || ss % LINE ||
	    sizeof(*h) + (size_t)ns * ss > len) {
		munmap(m, len);
		return -EPROTO;
	}
	if (g->nrx == g->rxcap) {
		size_t n = g->rxcap ? 2 * g->rxcap : 8;
		struct ring_rx *x = realloc(g->rx, n * sizeof(*x));

		if (!x) {
			munmap(m, len);
			return -ENOMEM;
		}
		g->rx = x;
		g->rxcap = n;
	}
	g->rx[g->nrx++] = (struct ring_rx){.h = h, .maplen = len, .head = 0,
					   .nslots = ns, .slot_size = ss};
	__atomic_store_n(&h->cpu_rx, g->cpu, __ATOMIC_RELAXED);
	__atomic_store_n(&h->mapped, 1, __ATOMIC_RELEASE);
	shm_unlink(name);
	return 0;
}

void psc_shmring_accept(struct psc_ep *ep, const uint8_t *data, size_t len)
{
	int rc;

	if (!ep->shmring || !valid_name(data, len)) {
		psc_log(PSC_LOG_WARN, ep->fab.rank, "shm: dropping a malformed "
			"ring announcement of %zu bytes", len);
		return;
	}
	rc = rx_map(ep->shmring, (const char *)data);
	if (!rc)
		psc_log(PSC_LOG_DEBUG, ep->fab.rank, "mapped the message ring "
			"%s of a node-local peer", (const char *)data);
	else if (rc == -ENOENT)
		/*
		 * Gone: its sender closed before it wrote anything there
		 * (psc_shmring_close), or died, which the liveness monitor
		 * reports. Either way there is nothing to read.
		 */
		psc_log(PSC_LOG_DEBUG, ep->fab.rank, "the message ring %s of "
			"a node-local peer is gone: it closed with the ring "
			"empty, or died", (const char *)data);
	else
		psc_log(PSC_LOG_ERROR, ep->fab.rank, "shm: cannot map the "
			"message ring %s of a node-local peer: %s; its "
			"messages are lost", (const char *)data,
			strerror(-rc));
}

/* The slot ring x delivers next. */
static struct ring_slot *rx_next(const struct ring_rx *x)
{
	return slot_at(x->h, x->nslots, x->slot_size, x->head);
}

/* Whether ring x holds a message not yet delivered. */
static bool rx_ready(const struct ring_rx *x)
{
	return __atomic_load_n(&rx_next(x)->seq, __ATOMIC_ACQUIRE) ==
	       x->head + 1;
}

/* One bell a sleeper watches: its ring's header and the value it saw. */
struct bell {
	struct ring_hdr *h;
	uint32_t seen;
};

/*
 * Sleep on bells b[0..n) until one rings or secs pass: all at once where
 * the kernel has futex_waitv (Linux 5.16), else on the first. Returns
 * whether a bell rang.
 */
static bool bells_wait(const struct bell *b, size_t n, double secs)
{
	struct timespec ts;
#ifdef HAVE_FUTEX_WAITV
	static bool no_waitv;
	struct futex_waitv w[RING_WATCH_MAX];

	if (!__atomic_load_n(&no_waitv, __ATOMIC_RELAXED)) {
		long rc;

		for (size_t i = 0; i < n; i++)
			w[i] = (struct futex_waitv){
				.val = b[i].seen,
				.uaddr = (uintptr_t)&b[i].h->bell,
				.flags = FUTEX_32,
			};
		ts = psc_timespec(psc_now() + secs);
		rc = syscall(SYS_futex_waitv, w, (unsigned)n, 0u, &ts,
			     CLOCK_MONOTONIC);
		if (rc >= 0 || errno == EAGAIN)
			return true;
		if (errno == ETIMEDOUT || errno == EINTR)
			return false;
		__atomic_store_n(&no_waitv, true, __ATOMIC_RELAXED);
	}
#endif
	ts = psc_timespec(n > 1 ? PSC_MIN(secs, UNWATCHED_SLEEP) : secs);
	return syscall(SYS_futex, &b[0].h->bell, FUTEX_WAIT, b[0].seen, &ts,
		       NULL, 0) == 0 ||
	       errno == EAGAIN;
}

bool psc_shmring_sleep(struct psc_ep *ep, double secs)
{
	struct bell b[RING_WATCH_MAX];
	struct psc_shmring *g;
	bool ready = false;
	size_t n;

	pthread_mutex_lock(ep->lock);
	g = ep->shmring;
	n = g ? PSC_MIN(g->nrx, (size_t)RING_WATCH_MAX) : 0;
	for (size_t i = 0; i < n; i++) {
		b[i].h = g->rx[i].h;
		b[i].seen = __atomic_load_n(&b[i].h->bell, __ATOMIC_SEQ_CST);
		__atomic_fetch_add(&b[i].h->sleepers, 1, __ATOMIC_SEQ_CST);
	}
	/* Count first, then look: pairs with the sender's fence. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (size_t i = 0; g && i < g->nrx && !ready; i++)
		ready = rx_ready(&g->rx[i]);
	/* Rings past RING_WATCH_MAX ring no bell here: sleep briefly. */
	if (g && g->nrx > n && secs > UNWATCHED_SLEEP)
		secs = UNWATCHED_SLEEP;
	pthread_mutex_unlock(ep->lock);
	/* The first ring that wakes this endpoint says so (check_shmring). */
	if (n && !ready && bells_wait(b, n, secs) &&
	    !__atomic_exchange_n(&g->bell_heard, true, __ATOMIC_RELAXED))
		psc_log(PSC_LOG_DEBUG, ep->fab.rank, "shm: a message ring's "
			"bell woke this endpoint");
	for (size_t i = 0; i < n; i++)
		__atomic_fetch_sub(&b[i].h->sleepers, 1, __ATOMIC_SEQ_CST);
	return n > 0;
}

int psc_shmring_poll(struct psc_ep *ep)
{
	struct psc_shmring *g = ep->shmring;
	int n = 0;

	for (size_t i = 0; i < g->nrx; i++) {
		struct ring_rx *x = &g->rx[i];
		uint32_t cap = x->slot_size - (uint32_t)SLOT_DATA;

		while (rx_ready(x)) {
			struct ring_slot *s = rx_next(x);
			uint64_t len = s->len;

			if (len <= cap)
				psc_first_deliver(ep, s->imm, s->data, len);
			else
				psc_log(PSC_LOG_WARN, ep->fab.rank, "shm: "
					"dropping a ring message of %llu "
					"bytes", (unsigned long long)len);
			x->head++;
			__atomic_store_n(&x->h->head, x->head,
					 __ATOMIC_RELEASE);
			n++;
		}
	}
	return n;
}

/*
 * One ring's side of psc_shmring_cpu_shared: publish cpu in *mine when
 * asked, and fold whether *theirs is cpu into *shared (-1, 0 or 1).
 */
static void cpu_look(int32_t *mine, const int32_t *theirs, int cpu,
		     bool publish, int *shared)
{
	if (publish)
		__atomic_store_n(mine, cpu, __ATOMIC_RELAXED);
	if (__atomic_load_n(theirs, __ATOMIC_RELAXED) == cpu)
		*shared = 1;
	else if (*shared < 0)
		*shared = 0;
}

int psc_shmring_cpu_shared(struct psc_ep *ep, int cpu)
{
	struct psc_shmring *g = ep->shmring;
	bool publish = cpu != g->cpu;
	int shared = -1;

	g->cpu = cpu;
	for (size_t i = 0; i < g->ntx && (publish || shared < 1); i++)
		if (g->tx[i].h)
			cpu_look(&g->tx[i].h->cpu_tx, &g->tx[i].h->cpu_rx, cpu,
				 publish, &shared);
	for (size_t i = 0; i < g->nrx && (publish || shared < 1); i++)
		cpu_look(&g->rx[i].h->cpu_rx, &g->rx[i].h->cpu_tx, cpu,
			 publish, &shared);
	return shared;
}

void psc_shmring_stats(struct psc_ep *ep, struct psc_shmring_stats *st)
{
	struct psc_shmring *g;

	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(ep->lock);
	g = ep->shmring;
	for (size_t i = 0; g && i < g->ntx; i++)
		if (g->tx[i].state == TX_ON) {
			st->tx_on++;
			st->tx_bytes += g->tx[i].maplen;
			st->tx_sleepers += __atomic_load_n(
				&g->tx[i].h->sleepers, __ATOMIC_SEQ_CST);
		}
	if (g) {
		st->rx_mapped = g->nrx;
		st->bell_heard = __atomic_load_n(&g->bell_heard,
						 __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(ep->lock);
}
