/*
 * Unit tests for the registration cache (lib/fabric/mr.c), driven through a fake
 * backend that records every registration: interval hits, merging of
 * overlapping ranges, LRU eviction by count and by bytes, holds that keep
 * a range registered, invalidation, pinned ranges, unique keys, backend
 * failures, bounce slots, and a random sequence checked against the
 * backend's books. Addresses are never dereferenced by the cache, so the
 * tests use made-up ones.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/ep_int.h"
#include "core/req.h"
#include "fabric/mr.h"

#define MAXREG 4096

/* The fake backend's books. */
static struct {
	struct psc_mr *live[MAXREG];
	uint64_t keys[MAXREG];
	size_t nlive, nkeys;
	int fail_next;
	uintptr_t last_start, last_end;
} fk;

static uintptr_t PG;

static int fake_reg(void *ctx, struct psc_mr *mr, uint64_t key)
{
	(void)ctx;
	if (fk.fail_next) {
		fk.fail_next = 0;
		return -ENOMEM;
	}
	ck_assert_uint_lt(fk.nlive, MAXREG);
	ck_assert_uint_lt(mr->start, mr->end);
	fk.live[fk.nlive++] = mr;
	fk.keys[fk.nkeys++] = key;
	fk.last_start = mr->start;
	fk.last_end = mr->end;
	mr->desc = (void *)(mr->start ^ 0x5a5a);
	mr->key = key;
	return 0;
}

static void fake_dereg(void *ctx, struct psc_mr *mr)
{
	(void)ctx;
	for (size_t i = 0; i < fk.nlive; i++)
		if (fk.live[i] == mr) {
			fk.live[i] = fk.live[--fk.nlive];
			return;
		}
	ck_abort_msg("deregistering a range that is not registered");
}

static bool is_live(const struct psc_mr *mr)
{
	for (size_t i = 0; i < fk.nlive; i++)
		if (fk.live[i] == mr)
			return true;
	return false;
}

static const struct psc_mr_backend fake = {fake_reg, fake_dereg};

static struct psc_mr_cache *mk(size_t bytes, size_t entries)
{
	struct psc_mr_cache *c;

	memset(&fk, 0, sizeof(fk));
	PG = (uintptr_t)sysconf(_SC_PAGESIZE);
	ck_assert_int_eq(psc_mr_cache_create(&fake, NULL, bytes, entries, 256,
					     &c), 0);
	return c;
}

static void *A(size_t page, size_t off)
{
	return (void *)(0x10000000u + page * PG + off);
}

static struct psc_mr *get(struct psc_mr_cache *c, void *buf, size_t len)
{
	struct psc_mr *m;

	ck_assert_int_eq(psc_mr_acquire(c, buf, len, &m), 0);
	ck_assert(psc_mr_covers(m, buf, len));
	ck_assert(is_live(m));
	return m;
}

static void done(struct psc_mr_cache *c)
{
	psc_mr_cache_destroy(c);
	ck_assert_uint_eq(fk.nlive, 0);
}

START_TEST(interval_hits)
{
	struct psc_mr_cache *c = mk(1u << 30, 100);
	struct psc_mr *a, *b, *m;
	struct psc_mr_stats st;

	a = get(c, A(0, 10), 100);
	ck_assert_uint_eq(a->start, (uintptr_t)A(0, 0));
	ck_assert_uint_eq(a->end, (uintptr_t)A(1, 0));
	/* Anywhere inside the page range hits, even the last byte. */
	ck_assert_ptr_eq(get(c, A(0, 200), 300), a);
	ck_assert_ptr_eq(get(c, A(0, PG - 1), 1), a);
	ck_assert_int_eq(a->refs, 3);
	/* A buffer reaching past it merges into one wider range. */
	b = get(c, A(0, PG - 8), 16);
	ck_assert_ptr_ne(b, a);
	ck_assert_uint_eq(b->start, (uintptr_t)A(0, 0));
	ck_assert_uint_eq(b->end, (uintptr_t)A(2, 0));
	/* The old range still serves its holders until they let go. */
	ck_assert(is_live(a));
	ck_assert_ptr_eq(get(c, A(0, 10), 100), b);
	psc_mr_get_stats(c, &st);
	ck_assert_uint_eq(st.entries, 1);
	ck_assert_uint_eq(st.hits, 3);
	ck_assert_uint_eq(st.misses, 2);
	for (int i = 0; i < 3; i++)
		psc_mr_release(c, a);
	ck_assert(!is_live(a));
	/* len 0 needs nothing. */
	ck_assert_int_eq(psc_mr_acquire(c, A(9, 0), 0, &m), 0);
	ck_assert_ptr_null(m);
	psc_mr_release(c, b);
	psc_mr_release(c, b);
	done(c);
}
END_TEST

START_TEST(disjoint_lookup)
{
	struct psc_mr_cache *c = mk(1u << 30, 1000);
	struct psc_mr *m[50];

	/* Every other page, inserted out of order. */
	for (int i = 0; i < 50; i++) {
		int p = (i * 17) % 50;

		m[p] = get(c, A((size_t)p * 2, 5), 10);
		psc_mr_release(c, m[p]);
	}
	for (int p = 0; p < 50; p++) {
		ck_assert_ptr_eq(get(c, A((size_t)p * 2, 100), 50), m[p]);
		psc_mr_release(c, m[p]);
	}
	ck_assert_uint_eq(fk.nlive, 50);
	done(c);
}
END_TEST

START_TEST(lru_by_count)
{
	struct psc_mr_cache *c = mk(1u << 30, 3);
	struct psc_mr *m[5];

	for (int i = 0; i < 3; i++) {
		m[i] = get(c, A((size_t)i * 4, 0), 8);
		psc_mr_release(c, m[i]);
	}
	/* Touch 0: now 1 is the least recently used. */
	psc_mr_release(c, get(c, A(0, 1), 8));
	m[3] = get(c, A(12, 0), 8);
	psc_mr_release(c, m[3]);
	ck_assert(is_live(m[0]));
	ck_assert(!is_live(m[1]));
	ck_assert(is_live(m[2]));
	m[4] = get(c, A(16, 0), 8);
	psc_mr_release(c, m[4]);
	ck_assert(!is_live(m[2]));
	ck_assert(is_live(m[0]) && is_live(m[3]) && is_live(m[4]));
	done(c);
}
END_TEST

START_TEST(lru_by_bytes)
{
	struct psc_mr_cache *c = mk(4 * (size_t)sysconf(_SC_PAGESIZE), 100);
	struct psc_mr *m[4], *big, *huge;
	struct psc_mr_stats st;

	for (int i = 0; i < 4; i++) {
		m[i] = get(c, A((size_t)i * 4, 0), 8);
		psc_mr_release(c, m[i]);
	}
	ck_assert_uint_eq(fk.nlive, 4);
	/* Two pages more: the two oldest go. */
	big = get(c, A(40, 0), 2 * PG);
	psc_mr_release(c, big);
	ck_assert(!is_live(m[0]) && !is_live(m[1]));
	ck_assert(is_live(m[2]) && is_live(m[3]) && is_live(big));
	psc_mr_get_stats(c, &st);
	ck_assert_uint_eq(st.bytes, 4 * PG);
	ck_assert_uint_eq(st.evictions, 2);
	/* Larger than the bound: registered for its holder only. */
	huge = get(c, A(100, 0), 5 * PG);
	ck_assert(is_live(m[2]));
	psc_mr_release(c, huge);
	ck_assert(!is_live(huge));
	psc_mr_get_stats(c, &st);
	ck_assert_uint_eq(st.entries, 3);
	done(c);
}
END_TEST

START_TEST(holds_pin)
{
	struct psc_mr_cache *c = mk(1u << 30, 1);
	struct psc_mr *a, *b;

	a = get(c, A(0, 0), 8);
	b = get(c, A(8, 0), 8);
	/* Over the bound, but both in use: nothing may go. */
	ck_assert(is_live(a) && is_live(b));
	psc_mr_release(c, a);
	ck_assert(!is_live(a));
	ck_assert(is_live(b));
	psc_mr_release(c, b);
	ck_assert(is_live(b));
	done(c);
}
END_TEST

START_TEST(no_cache)
{
	struct psc_mr_cache *c = mk(1u << 30, 0);
	struct psc_mr *a, *b;

	a = get(c, A(0, 0), 8);
	b = get(c, A(0, 0), 8);
	ck_assert_ptr_ne(a, b);
	psc_mr_release(c, a);
	ck_assert(!is_live(a));
	psc_mr_release(c, b);
	ck_assert_uint_eq(fk.nlive, 0);
	done(c);
}
END_TEST

START_TEST(invalidation)
{
	struct psc_mr_cache *c = mk(1u << 30, 100);
	struct psc_mr *a, *b, *a2;

	a = get(c, A(0, 0), 8);
	psc_mr_release(c, a);
	b = get(c, A(4, 0), PG);
	psc_mr_invalidate(c, A(0, 100), 1);
	ck_assert(!is_live(a));
	/* Held: it stays registered until released, but is out of reach. */
	psc_mr_invalidate(c, A(4, 0), 1);
	ck_assert(is_live(b));
	a2 = get(c, A(4, 0), 8);
	ck_assert_ptr_ne(a2, b);
	psc_mr_release(c, b);
	ck_assert(!is_live(b));
	psc_mr_release(c, a2);
	/* A range spanning several entries retires them all. */
	psc_mr_release(c, get(c, A(10, 0), 8));
	psc_mr_release(c, get(c, A(12, 0), 8));
	psc_mr_invalidate(c, A(9, 0), 5 * PG);
	ck_assert_uint_eq(fk.nlive, 1); /* a2 */
	done(c);
}
END_TEST

START_TEST(pinned)
{
	struct psc_mr_cache *c = mk(1u << 30, 100);
	struct psc_mr *p, *cached, *m;

	cached = get(c, A(2, 0), 8);
	psc_mr_release(c, cached);
	ck_assert_int_eq(psc_mr_pin(c, A(0, 16), 8 * PG, &p), 0);
	/* Pinned ranges are exact, and come first. */
	ck_assert_uint_eq(p->start, (uintptr_t)A(0, 16));
	ck_assert_ptr_eq(get(c, A(2, 0), 8), p);
	ck_assert_ptr_eq(get(c, A(0, 16), 8 * PG), p);
	/* Not covered by the pin: the cache. */
	m = get(c, A(0, 0), 32);
	ck_assert_ptr_ne(m, p);
	psc_mr_release(c, m);
	/* Unpin with holders: registered until the last goes. */
	psc_mr_unpin(c, p);
	ck_assert(!is_live(cached)); /* invalidated with the pin */
	ck_assert(is_live(p));
	psc_mr_release(c, p);
	ck_assert(is_live(p));
	psc_mr_release(c, p);
	ck_assert(!is_live(p));
	m = get(c, A(2, 0), 8);
	ck_assert_ptr_ne(m, p);
	psc_mr_release(c, m);
	/* Destroy takes everything, pinned and held alike. */
	ck_assert_int_eq(psc_mr_pin(c, A(50, 0), 8, &p), 0);
	get(c, A(60, 0), 8);
	done(c);
}
END_TEST

START_TEST(keys_and_failure)
{
	struct psc_mr_cache *c = mk(1u << 30, 100);
	struct psc_mr *m;
	struct psc_mr_stats st;

	for (int i = 0; i < 20; i++)
		psc_mr_release(c, get(c, A((size_t)i * 3, 0), 8));
	for (size_t i = 0; i < fk.nkeys; i++)
		for (size_t j = i + 1; j < fk.nkeys; j++)
			ck_assert_uint_ne(fk.keys[i], fk.keys[j]);
	fk.fail_next = 1;
	ck_assert_int_eq(psc_mr_acquire(c, A(1000, 0), 8, &m), -ENOMEM);
	ck_assert_ptr_null(m);
	fk.fail_next = 1;
	ck_assert_int_eq(psc_mr_pin(c, A(1000, 0), 8, &m), -ENOMEM);
	/* A failed merge leaves the old ranges in place. */
	fk.fail_next = 1;
	ck_assert_int_eq(psc_mr_acquire(c, A(0, 0), 4 * PG, &m), -ENOMEM);
	psc_mr_get_stats(c, &st);
	ck_assert_uint_eq(st.entries, 20);
	ck_assert_uint_eq(fk.nlive, 20);
	done(c);
}
END_TEST

START_TEST(slots)
{
	struct psc_mr_cache *c = mk(1u << 30, 100);
	struct psc_mr_slot *s[40];

	ck_assert_uint_ge(psc_mr_slot_size(c), 256 + PSC_EP_FIRST_HDR);
	for (int i = 0; i < 40; i++) {
		ck_assert_int_eq(psc_mr_slot_get(c, &s[i]), 0);
		ck_assert(psc_mr_covers(s[i]->mr, s[i]->buf,
					psc_mr_slot_size(c)));
		memset(s[i]->buf, i, psc_mr_slot_size(c));
	}
	/* Two chunks of slots, each one registration. */
	ck_assert_uint_eq(fk.nlive, 2);
	for (int i = 0; i < 40; i++)
		psc_mr_slot_put(c, s[i]);
	ck_assert_int_eq(psc_mr_slot_get(c, &s[0]), 0);
	ck_assert_uint_eq(fk.nlive, 2);
	done(c);
}
END_TEST

/* Random traffic: every answer covers its buffer; the books balance. */
START_TEST(random_ops)
{
	struct psc_mr_cache *c = mk(64 * (size_t)sysconf(_SC_PAGESIZE), 16);
	struct psc_mr *held[64] = {0};
	struct psc_mr_stats st;
	unsigned seed = 12345;

	for (int step = 0; step < 5000; step++) {
		int k = rand_r(&seed) % 64;
		size_t page = (size_t)(rand_r(&seed) % 200);
		size_t off = (size_t)(rand_r(&seed) % (int)PG);
		size_t len = 1 + (size_t)(rand_r(&seed) % (int)(3 * PG));

		switch (rand_r(&seed) % 3) {
		case 0:
			if (!held[k])
				held[k] = get(c, A(page, off), len);
			break;
		case 1:
			psc_mr_release(c, held[k]);
			held[k] = NULL;
			break;
		default:
			psc_mr_invalidate(c, A(page, off), len);
		}
		for (int i = 0; i < 64 && step % 50 == 0; i++)
			ck_assert(!held[i] || is_live(held[i]));
		psc_mr_get_stats(c, &st);
		ck_assert_uint_eq(st.live, fk.nlive);
	}
	for (int i = 0; i < 64; i++)
		psc_mr_release(c, held[i]);
	psc_mr_get_stats(c, &st);
	ck_assert_uint_le(st.entries, 16);
	ck_assert_uint_le(st.bytes, 64 * PG);
	ck_assert_uint_eq(st.idle, st.entries);
	done(c);
}
END_TEST

/* The post path's choices, on a fake endpoint with the fake backend. */
START_TEST(request_paths)
{
	static uint8_t big[100000], small[100], hdr[PSC_EP_FIRST_HDR];
	struct psc_ep ep;
	struct ps_comm_request r, parent, child;
	struct iovec iov[2];
	void *buf, *desc, *descs[2];
	size_t n;
	struct psc_mr *pin;

	memset(&ep, 0, sizeof(ep));
	ep.fab.mr = mk(1u << 30, 100);
	ep.fab.mr_local = true;
	memset(&r, 0, sizeof(r));
	for (size_t i = 0; i < sizeof(small); i++)
		small[i] = (uint8_t)(i * 7 + 1);
	memset(hdr, 0xAB, sizeof(hdr));
	/* A small send goes from a slot holding a copy. */
	r.kind = PSC_REQ_SEND;
	r.buf = small;
	r.len = sizeof(small);
	ck_assert_int_eq(psc_reqmr_prepare(&ep, &r, &buf, &desc), 0);
	ck_assert_ptr_nonnull(r.mr_slot);
	ck_assert_ptr_eq(buf, r.mr_slot->buf);
	ck_assert_ptr_eq(desc, r.mr_slot->mr->desc);
	ck_assert_mem_eq(buf, small, sizeof(small));
	psc_reqmr_done(&ep, &r, 0);
	ck_assert_ptr_null(r.mr_slot);
	/* A large one from the cache; a retry takes no second hold. */
	r.buf = big;
	r.len = sizeof(big);
	ck_assert_int_eq(psc_reqmr_prepare(&ep, &r, &buf, &desc), 0);
	ck_assert_int_eq(psc_reqmr_prepare(&ep, &r, &buf, &desc), 0);
	ck_assert_ptr_eq(buf, big);
	ck_assert_ptr_eq(desc, r.mr->desc);
	ck_assert_int_eq(r.mr->refs, 1);
	psc_reqmr_done(&ep, &r, 0);
	ck_assert_ptr_null(r.mr);
	/* A small receive lands in a slot; only what arrived is copied. */
	memset(small, 0, sizeof(small));
	r.kind = PSC_REQ_RECV;
	r.buf = small;
	r.len = sizeof(small);
	ck_assert_int_eq(psc_reqmr_prepare(&ep, &r, &buf, &desc), 0);
	memset(buf, 0x77, sizeof(small));
	psc_reqmr_done(&ep, &r, 50);
	ck_assert_uint_eq(small[49], 0x77);
	ck_assert_uint_eq(small[50], 0);
	/* Header plus a small payload: one flat slot. */
	r.kind = PSC_REQ_SEND;
	ck_assert_int_eq(psc_reqmr_prepare_hdr(&ep, &r, hdr, sizeof(hdr),
						iov, descs, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(iov[0].iov_len, sizeof(hdr) + sizeof(small));
	ck_assert_mem_eq(iov[0].iov_base, hdr, sizeof(hdr));
	ck_assert_mem_eq((uint8_t *)iov[0].iov_base + sizeof(hdr), small,
			 sizeof(small));
	psc_reqmr_done(&ep, &r, 0);
	/* Header plus a large payload: header slot, registered payload. */
	r.buf = big;
	r.len = sizeof(big);
	ck_assert_int_eq(psc_reqmr_prepare_hdr(&ep, &r, hdr, sizeof(hdr),
						iov, descs, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(iov[0].iov_len, sizeof(hdr));
	ck_assert_ptr_eq(iov[1].iov_base, big);
	ck_assert_ptr_eq(descs[1], r.mr->desc);
	psc_reqmr_done(&ep, &r, 0);
	/* A child inside its parent's held range borrows its descriptor. */
	memset(&parent, 0, sizeof(parent));
	memset(&child, 0, sizeof(child));
	ck_assert_int_eq(psc_reqmr_hold(&ep, &parent, big, sizeof(big)), 0);
	child.kind = PSC_REQ_SEND;
	child.parent = &parent;
	child.buf = big + 4096;
	child.len = 64;
	ck_assert_int_eq(psc_reqmr_prepare(&ep, &child, &buf, &desc), 0);
	ck_assert_ptr_eq(buf, child.buf);
	ck_assert_ptr_eq(desc, parent.mr->desc);
	ck_assert_ptr_null(child.mr);
	ck_assert_ptr_null(child.mr_slot);
	psc_reqmr_done(&ep, &child, 0);
	psc_reqmr_done(&ep, &parent, 0);
	/* Inside a pinned range: that registration, even when small. */
	ck_assert_int_eq(psc_mr_pin(ep.fab.mr, small, sizeof(small), &pin), 0);
	r.buf = small + 10;
	r.len = 20;
	ck_assert_int_eq(psc_reqmr_prepare(&ep, &r, &buf, &desc), 0);
	ck_assert_ptr_eq(r.mr, pin);
	ck_assert_ptr_eq(buf, small + 10);
	psc_reqmr_done(&ep, &r, 0);
	psc_mr_unpin(ep.fab.mr, pin);
	ck_assert(!is_live(pin));
	done(ep.fab.mr);
}
END_TEST

static Suite *mr_suite(void)
{
	Suite *s = suite_create("mr");
	TCase *t = tcase_create("cache");

	tcase_add_test(t, interval_hits);
	tcase_add_test(t, disjoint_lookup);
	tcase_add_test(t, lru_by_count);
	tcase_add_test(t, lru_by_bytes);
	tcase_add_test(t, holds_pin);
	tcase_add_test(t, no_cache);
	tcase_add_test(t, invalidation);
	tcase_add_test(t, pinned);
	tcase_add_test(t, keys_and_failure);
	tcase_add_test(t, slots);
	tcase_add_test(t, random_ops);
	tcase_add_test(t, request_paths);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(mr_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
