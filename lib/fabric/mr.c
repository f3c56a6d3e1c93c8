/*
 * Memory registration: a per-endpoint cache of registrations for
 * providers that need a descriptor with every buffer (FI_MR_LOCAL, or
 * PS_COMM_MR_MODE=local), the pre-registered bounce slots small messages
 * are copied through, user registrations (ps_comm_mem_register), and the
 * libfabric backend.
 *
 * The cache keeps disjoint page-aligned ranges sorted by address, so a
 * lookup is a binary search; idle ranges sit on an LRU list bounded by
 * bytes and by count, and only idle ranges are ever deregistered. The
 * registering itself goes through a small backend table so that unit tests
 * drive the same logic with a fake one. The endpoint lock guards it all.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "fabric/fabric.h"
#include "fabric/mr.h"
#include "util/log.h"
#include "util/util.h"

#define SLOTS_PER_CHUNK 32

/* A chunk of bounce slots, registered as one range. */
struct slot_chunk {
	struct slot_chunk *next;
	struct psc_mr *mr;
	void *mem;
	struct psc_mr_slot slots[SLOTS_PER_CHUNK];
};

/* A user registration (ps_comm_mem_register). */
struct ps_comm_mem {
	struct psc_mr *mr;
	struct ps_comm_mem *next;
};

struct psc_mr_cache {
	const struct psc_mr_backend *be;
	void *ctx;
	size_t max_bytes, max_entries;
	uintptr_t page;
	struct psc_mr **idx; /* disjoint ranges sorted by start */
	size_t n, cap, bytes;
	struct psc_mr *lru_head, *lru_tail; /* idle indexed, newest first */
	size_t idle;
	struct psc_mr *pinned;
	struct psc_mr *all;
	struct ps_comm_mem *users;
	struct slot_chunk *chunks;
	struct psc_mr_slot *free_slots;
	size_t bounce, slot_size;
	uint64_t next_key;
	struct psc_mr_stats st;
};

/* ------------------------------------------------ registrations */

static int mr_new(struct psc_mr_cache *c, uintptr_t start, uintptr_t end,
		  struct psc_mr **out)
{
	struct psc_mr *m = calloc(1, sizeof(*m));
	int rc;

	if (!m)
		return -ENOMEM;
	m->start = start;
	m->end = end;
	rc = c->be->reg(c->ctx, m, c->next_key++);
	if (rc) {
		free(m);
		return rc;
	}
	m->all_next = c->all;
	if (c->all)
		c->all->all_prev = m;
	c->all = m;
	c->st.regs++;
	c->st.live++;
	*out = m;
	return 0;
}

static void mr_free(struct psc_mr_cache *c, struct psc_mr *m)
{
	c->be->dereg(c->ctx, m);
	if (m->all_prev)
		m->all_prev->all_next = m->all_next;
	else
		c->all = m->all_next;
	if (m->all_next)
		m->all_next->all_prev = m->all_prev;
	c->st.deregs++;
	c->st.live--;
	free(m);
}

static void lru_unlink(struct psc_mr_cache *c, struct psc_mr *m)
{
	if (m->lru_prev)
		m->lru_prev->lru_next = m->lru_next;
	else
		c->lru_head = m->lru_next;
	if (m->lru_next)
		m->lru_next->lru_prev = m->lru_prev;
	else
		c->lru_tail = m->lru_prev;
	m->lru_prev = m->lru_next = NULL;
	c->idle--;
}

static void lru_push(struct psc_mr_cache *c, struct psc_mr *m)
{
	m->lru_prev = NULL;
	m->lru_next = c->lru_head;
	if (c->lru_head)
		c->lru_head->lru_prev = m;
	else
		c->lru_tail = m;
	c->lru_head = m;
	c->idle++;
}

/* ------------------------------------------------ interval index */

/* First index whose range ends above a (ends are sorted: disjoint). */
static size_t idx_first_after(const struct psc_mr_cache *c, uintptr_t a)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->idx[mid]->end > a)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static int idx_insert(struct psc_mr_cache *c, struct psc_mr *m)
{
	size_t i;

	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct psc_mr **p = realloc(c->idx, cap * sizeof(struct psc_mr *));

		if (!p)
			return -ENOMEM;
		c->idx = p;
		c->cap = cap;
	}
	i = idx_first_after(c, m->start);
	memmove(&c->idx[i + 1], &c->idx[i],
		(c->n - i) * sizeof(struct psc_mr *));
	c->idx[i] = m;
	c->n++;
	c->bytes += m->end - m->start;
	m->flags |= PSC_MR_F_INDEXED;
	return 0;
}

/*
 * Take entry i out of the index; deregister it if idle, else it goes
 * when its last holder releases it.
 */
static void idx_retire(struct psc_mr_cache *c, size_t i)
{
	struct psc_mr *m = c->idx[i];

	memmove(&c->idx[i], &c->idx[i + 1],
		(c->n - i - 1) * sizeof(struct psc_mr *));
	c->n--;
	c->bytes -= m->end - m->start;
	m->flags &= ~PSC_MR_F_INDEXED;
	if (m->refs == 0) {
		lru_unlink(c, m);
		mr_free(c, m);
	}
}

/* Evict least recently used idle ranges until the bounds hold. */
static void evict(struct psc_mr_cache *c)
{
	while (c->lru_tail &&
	       (c->n > c->max_entries || c->bytes > c->max_bytes)) {
		struct psc_mr *m = c->lru_tail;
		size_t i = idx_first_after(c, m->start);

		c->st.evictions++;
		idx_retire(c, i);
	}
}

/* Retire every indexed range overlapping [a, b). */
static void retire_overlaps(struct psc_mr_cache *c, uintptr_t a, uintptr_t b)
{
	size_t i = idx_first_after(c, a);

	while (i < c->n && c->idx[i]->start < b)
		idx_retire(c, i);
}

/* ------------------------------------------------ public to lib/ */

int psc_mr_cache_create(const struct psc_mr_backend *be, void *ctx,
			size_t max_bytes, size_t max_entries,
			size_t bounce_size, struct psc_mr_cache **out)
{
	struct psc_mr_cache *c = calloc(1, sizeof(*c));
	long page = sysconf(_SC_PAGESIZE);

	if (!c)
		return -ENOMEM;
	c->be = be;
	c->ctx = ctx;
	c->max_bytes = max_bytes;
	c->max_entries = max_entries;
	c->page = page > 0 ? (uintptr_t)page : 4096;
	c->next_key = 1;
	/* Request scratch always goes through a slot. */
	c->bounce = PSC_MAX(bounce_size, (size_t)PSC_MR_MIN_BOUNCE);
	/* Room for a header in front, cache-line rounded. */
	c->slot_size = (c->bounce + PSC_MR_SLOT_HDR + 63) & ~(size_t)63;
	*out = c;
	return 0;
}

void psc_mr_cache_destroy(struct psc_mr_cache *c)
{
	if (!c)
		return;
	/*
	 * The head's all_prev is NULL, so mr_free moves c->all on; the
	 * analyzer does not know that invariant.
	 */
	while (c->all)
		mr_free(c, c->all); /* NOLINT(clang-analyzer-unix.Malloc) */
	while (c->chunks) {
		struct slot_chunk *k = c->chunks;

		c->chunks = k->next;
		free(k->mem);
		free(k);
	}
	while (c->users) {
		struct ps_comm_mem *u = c->users;

		c->users = u->next;
		free(u);
	}
	free(c->idx);
	free(c);
}

bool psc_mr_covers(const struct psc_mr *mr, const void *buf, size_t len)
{
	uintptr_t a = (uintptr_t)buf;

	return mr && a >= mr->start && a <= mr->end && len <= mr->end - a;
}

static struct psc_mr *find_pinned(struct psc_mr_cache *c, const void *buf,
				  size_t len)
{
	for (struct psc_mr *m = c->pinned; m; m = m->pin_next)
		if (psc_mr_covers(m, buf, len))
			return m;
	return NULL;
}

/* Page-aligned [a, b) around [buf, buf + len). */
static void page_range(const struct psc_mr_cache *c, const void *buf,
		       size_t len, uintptr_t *a, uintptr_t *b)
{
	*a = (uintptr_t)buf & ~(c->page - 1);
	*b = ((uintptr_t)buf + len + c->page - 1) & ~(c->page - 1);
}

static void hold(struct psc_mr_cache *c, struct psc_mr *m)
{
	if (m->refs++ == 0 && (m->flags & PSC_MR_F_INDEXED))
		lru_unlink(c, m);
}

/* A miss: register the page range, merged with cached neighbours. */
static int acquire_miss(struct psc_mr_cache *c, const void *buf, size_t len,
			struct psc_mr **out)
{
	uintptr_t a, b;
	size_t i;
	int rc;

	page_range(c, buf, len, &a, &b);
	c->st.misses++;
	if (c->max_entries == 0 || b - a > c->max_bytes) {
		/* Too big to cache: its holders own it alone. */
		rc = mr_new(c, a, b, out);
		if (!rc)
			(*out)->refs = 1;
		return rc;
	}
	/* Overlapping ranges merge, so the index stays disjoint. */
	for (i = idx_first_after(c, a); i < c->n && c->idx[i]->start < b; i++) {
		a = PSC_MIN(a, c->idx[i]->start);
		b = PSC_MAX(b, c->idx[i]->end);
	}
	rc = mr_new(c, a, b, out);
	if (rc)
		return rc;
	retire_overlaps(c, a, b);
	(*out)->refs = 1;
	if (idx_insert(c, *out) == 0)
		evict(c);
	return 0;
}

int psc_mr_acquire(struct psc_mr_cache *c, const void *buf, size_t len,
		   struct psc_mr **out)
{
	struct psc_mr *m;
	size_t i;

	*out = NULL;
	if (len == 0)
		return 0;
	m = find_pinned(c, buf, len);
	if (!m) {
		i = idx_first_after(c, (uintptr_t)buf);
		if (i < c->n && psc_mr_covers(c->idx[i], buf, len))
			m = c->idx[i];
	}
	if (!m)
		return acquire_miss(c, buf, len, out);
	c->st.hits++;
	hold(c, m);
	*out = m;
	return 0;
}

void psc_mr_release(struct psc_mr_cache *c, struct psc_mr *m)
{
	if (!m || --m->refs > 0)
		return;
	if (m->flags & PSC_MR_F_INDEXED) {
		lru_push(c, m);
		evict(c);
	} else if (!(m->flags & PSC_MR_F_PINNED)) {
		mr_free(c, m);
	}
}

void psc_mr_invalidate(struct psc_mr_cache *c, const void *buf, size_t len)
{
	uintptr_t a, b;

	if (!c || len == 0)
		return;
	page_range(c, buf, len, &a, &b);
	retire_overlaps(c, a, b);
}

int psc_mr_pin(struct psc_mr_cache *c, const void *buf, size_t len,
	       struct psc_mr **out)
{
	/* Exactly: a neighbour in the same page may be freed any time. */
	int rc = mr_new(c, (uintptr_t)buf, (uintptr_t)buf + len, out);

	if (rc)
		return rc;
	(*out)->refs = 1;
	(*out)->flags = PSC_MR_F_PINNED;
	(*out)->pin_next = c->pinned;
	c->pinned = *out;
	return 0;
}

void psc_mr_unpin(struct psc_mr_cache *c, struct psc_mr *m)
{
	for (struct psc_mr **p = &c->pinned; *p; p = &(*p)->pin_next)
		if (*p == m) {
			*p = m->pin_next;
			break;
		}
	m->flags &= ~PSC_MR_F_PINNED;
	/* The memory may be freed next: no cached range may outlive it. */
	retire_overlaps(c, m->start, m->end);
	psc_mr_release(c, m);
}

void psc_mr_get_stats(const struct psc_mr_cache *c, struct psc_mr_stats *st)
{
	*st = c->st;
	st->entries = c->n;
	st->bytes = c->bytes;
	st->idle = c->idle;
}

/* ------------------------------------------------ bounce slots */

size_t psc_mr_slot_size(const struct psc_mr_cache *c)
{
	return c->slot_size;
}

static int grow_slots(struct psc_mr_cache *c)
{
	struct slot_chunk *k = calloc(1, sizeof(*k));
	size_t bytes = c->slot_size * SLOTS_PER_CHUNK;
	int rc = -ENOMEM;

	if (!k || posix_memalign(&k->mem, c->page, bytes))
		goto err;
	rc = mr_new(c, (uintptr_t)k->mem, (uintptr_t)k->mem + bytes, &k->mr);
	if (rc)
		goto err;
	k->mr->refs = 1;
	k->mr->flags = PSC_MR_F_PINNED; /* never evicted, not looked up */
	for (int i = 0; i < SLOTS_PER_CHUNK; i++) {
		k->slots[i].mr = k->mr;
		k->slots[i].buf = (char *)k->mem + (size_t)i * c->slot_size;
		k->slots[i].next = c->free_slots;
		c->free_slots = &k->slots[i];
	}
	k->next = c->chunks;
	c->chunks = k;
	return 0;
err:
	if (k)
		free(k->mem);
	free(k);
	return rc;
}

int psc_mr_slot_get(struct psc_mr_cache *c, struct psc_mr_slot **out)
{
	int rc;

	if (!c->free_slots && (rc = grow_slots(c)) != 0)
		return rc;
	*out = c->free_slots;
	c->free_slots = (*out)->next;
	(*out)->next = NULL;
	return 0;
}

void psc_mr_slot_put(struct psc_mr_cache *c, struct psc_mr_slot *s)
{
	s->next = c->free_slots;
	c->free_slots = s;
}

/* ------------------------------------------------ libfabric backend */

static int fab_reg(void *ctx, struct psc_mr *m, uint64_t key)
{
	struct psc_fab *ep = ctx;
	struct fid_mr *mr;
	int rc;

	/* Ranges are kept as integers to sort and merge them. */
	/* NOLINTNEXTLINE(performance-no-int-to-ptr) */
	rc = fi_mr_reg(ep->domain, (void *)m->start, m->end - m->start,
		       FI_SEND | FI_RECV, 0, ep->caps.mr_prov_key ? 0 : key, 0,
		       &mr, NULL);
	if (rc)
		return rc;
	if (ep->caps.mr_endpoint) {
		rc = fi_mr_bind(mr, &ep->ep->fid, 0);
		if (!rc)
			rc = fi_mr_enable(mr);
		if (rc) {
			fi_close(&mr->fid);
			return rc;
		}
	}
	m->handle = mr;
	m->desc = fi_mr_desc(mr);
	m->key = fi_mr_key(mr);
	return 0;
}

static void fab_dereg(void *ctx, struct psc_mr *m)
{
	int rc = fi_close(&((struct fid_mr *)m->handle)->fid);

	if (rc)
		psc_log(PSC_LOG_WARN, ((struct psc_fab *)ctx)->rank,
			"deregistering memory failed: %s", fi_strerror(-rc));
}

static const struct psc_mr_backend fab_backend = {fab_reg, fab_dereg};

/* Without FI_MR_LOCAL nothing needs registering: keep the books only. */
static int null_reg(void *ctx, struct psc_mr *m, uint64_t key)
{
	(void)ctx;
	m->key = key;
	return 0;
}

static void null_dereg(void *ctx, struct psc_mr *m)
{
	(void)ctx;
	(void)m;
}

static const struct psc_mr_backend null_backend = {null_reg, null_dereg};

/* ------------------------------------------------ endpoint glue */

int psc_mr_fab_open(struct psc_fab *ep, const struct psc_params *p,
		    char *err, size_t len)
{
	const char *mode = p->mr_mode ? p->mr_mode : "auto";
	int rc;

	if (strcmp(mode, "auto") != 0 && strcmp(mode, "local") != 0) {
		snprintf(err, len, "PS_COMM_MR_MODE=%s: expected auto or local",
			 mode);
		return -EINVAL;
	}
	ep->mr_local = ep->caps.mr_local || strcmp(mode, "local") == 0;
	rc = psc_mr_cache_create(ep->mr_local ? &fab_backend : &null_backend,
				 ep, p->mr_cache_bytes, p->mr_cache_entries,
				 p->mr_bounce_size, &ep->mr);
	if (rc) {
		snprintf(err, len, "out of memory for the registration cache");
		return rc;
	}
	if (ep->mr_local) {
		char how[96] = "per operation (libfabric caches where the "
			       "provider does)";

		if (p->mr_cache_entries)
			snprintf(how, sizeof(how), "pscomm's cache of %zu "
				 "bytes / %zu entries", p->mr_cache_bytes,
				 p->mr_cache_entries);
		psc_log(PSC_LOG_INFO, ep->rank, "memory registration: %s%s%s, "
			"%s, copies up to %zu bytes",
			ep->caps.mr_local ? "FI_MR_LOCAL" : "forced",
			ep->caps.mr_endpoint ? " + FI_MR_ENDPOINT" : "",
			ep->caps.mr_prov_key ? " + FI_MR_PROV_KEY" : "", how,
			p->mr_bounce_size);
	}
	return 0;
}

void psc_mr_fab_close(struct psc_fab *ep)
{
	struct psc_mr_stats st;

	if (!ep->mr)
		return;
	psc_mr_get_stats(ep->mr, &st);
	if (ep->mr_local)
		psc_log(PSC_LOG_INFO, ep->rank, "registration cache: %llu "
			"hits, %llu misses, %llu evictions, %llu registrations",
			(unsigned long long)st.hits,
			(unsigned long long)st.misses,
			(unsigned long long)st.evictions,
			(unsigned long long)st.regs);
	psc_mr_cache_destroy(ep->mr);
	ep->mr = NULL;
}

/* ------------------------------------------------ user registrations */

/*
 * Whether every page of [buf, buf + len) is mapped in this process:
 * msync with MS_ASYNC writes nothing back (Linux 2.6.19 and later) but
 * fails with ENOMEM on a hole, after a walk of the mappings, not the
 * pages, so any length costs alike.
 */
static bool range_mapped(const void *buf, size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t off = (uintptr_t)buf & (page - 1), end;
	/* msync wants the start of a page: step back within buf's page. */
	char *start = (char *)buf - off;

	/* The end rounded up to a page: a wrap means no such range. */
	if (len > SIZE_MAX - page - off ||
	    __builtin_add_overflow((uintptr_t)buf, len, &end))
		return false;
	return msync(start, (off + len + page - 1) & ~(page - 1), MS_ASYNC) ==
	       0;
}

int psc_mr_user_pin(struct psc_mr_cache *c, const void *buf, size_t len,
		    struct ps_comm_mem **out)
{
	struct ps_comm_mem *u;
	int rc;

	/* Providers that need no registration would take any range. */
	if (!range_mapped(buf, len))
		return -EINVAL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	rc = psc_mr_pin(c, buf, len, &u->mr);
	if (rc) {
		free(u);
		return rc;
	}
	u->next = c->users;
	c->users = u;
	*out = u;
	return 0;
}

int psc_mr_user_unpin(struct psc_mr_cache *c, struct ps_comm_mem *handle)
{
	/* Only handles of this cache, once: never trust the pointer. */
	for (struct ps_comm_mem **pp = &c->users; *pp; pp = &(*pp)->next)
		if (*pp == handle) {
			struct ps_comm_mem *u = *pp;

			*pp = u->next;
			psc_mr_unpin(c, u->mr);
			free(u);
			return 0;
		}
	return -ENOENT;
}

int psc_mr_acquire_pinned(struct psc_mr_cache *c, const void *buf,
			  size_t len, struct psc_mr **out)
{
	struct psc_mr *m = find_pinned(c, buf, len);

	if (!m)
		return -ENOENT;
	hold(c, m);
	c->st.hits++;
	*out = m;
	return 0;
}

size_t psc_mr_bounce_size(const struct psc_mr_cache *c)
{
	return c->bounce;
}
