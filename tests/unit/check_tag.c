/*
 * Unit tests for the 64-bit tag layout (lib/p2p/tag.c): sizing from a
 * provider's mem_tag_format (64 bits, psm2's 60-bit tags, 0 meaning 64,
 * and too few bits refused), make/extract round-trips over random fields,
 * fields that never overlap and stay below the usable bits, and receive
 * masks: exact matches, ANY_SOURCE and ANY_TAG wildcards, the large bit
 * always ignored, and protocols that never match one another.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include <check.h>

#include "p2p/tag.h"
#include "provider.h"
#include "ps_comm.h"
#include "util/util.h"

#define FMT64 0xAAAAAAAAAAAAAAAAULL
#define FMT60 0x0AAAAAAAAAAAAAAAULL
#define FMT48 0x0000FFFFFFFFFFFFULL

/* The formats tested for every layout property. */
static const uint64_t formats[] = {FMT64, FMT60, 0, 0x0007FFFFFFFFFFFFULL,
				   0x00FFFFFFFFFFFFFFULL};

static const unsigned protos[] = {PSC_PROTO_USER, PSC_PROTO_CONT,
				  PSC_PROTO_COLL, PSC_PROTO_VAN,
				  PSC_PROTO_CTRL};

static uint64_t mask_below(unsigned bits)
{
	return bits >= 64 ? ~0ULL : (1ULL << bits) - 1;
}

/* A small, seeded generator so that failures reproduce. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void layout(struct psc_tag_layout *l, uint64_t fmt)
{
	ck_assert_int_eq(psc_tag_layout_init(l, fmt), 0);
}

START_TEST(test_layout_64)
{
	struct psc_tag_layout l;

	layout(&l, FMT64);
	ck_assert_uint_eq(l.usable_bits, 64);
	ck_assert_uint_eq(l.user_bits, 28);
	ck_assert_int_eq(l.tag_ub, (1 << 28) - 1);
	ck_assert_uint_eq(l.user_mask, 0xFFFFFFFULL);
}
END_TEST

START_TEST(test_layout_zero_is_64)
{
	struct psc_tag_layout a, b;

	layout(&a, 0);
	layout(&b, FMT64);
	ck_assert_uint_eq(a.usable_bits, 64);
	ck_assert_uint_eq(a.user_bits, b.user_bits);
	ck_assert_int_eq(a.tag_ub, b.tag_ub);
	ck_assert_uint_eq(a.proto_mask, b.proto_mask);
}
END_TEST

START_TEST(test_layout_psm2_tag60)
{
	struct psc_tag_layout l;
	uint64_t t;

	layout(&l, FMT60);
	ck_assert_uint_eq(l.usable_bits, 60);
	ck_assert_uint_eq(l.user_bits, 24);
	ck_assert_int_eq(l.tag_ub, (1 << 24) - 1);
	ck_assert_uint_eq(l.proto_mask & ~mask_below(60), 0);
	/* Every field set to all ones still leaves the top 4 bits clear. */
	t = psc_tag_make(&l, 7, true, UINT32_MAX, UINT32_MAX, UINT32_MAX);
	ck_assert_uint_eq(t >> 60, 0);
	ck_assert_uint_eq(t, mask_below(60));
}
END_TEST

/* The smallest layout: 36 fixed bits plus 15 user bits. */
START_TEST(test_layout_min)
{
	struct psc_tag_layout l;

	layout(&l, mask_below(51));
	ck_assert_uint_eq(l.user_bits, PSC_TAG_MIN_USER_BITS);
	ck_assert_int_eq(l.tag_ub, 32767);
	ck_assert_int_eq(psc_tag_layout_init(&l, mask_below(50)), -ENOSPC);
}
END_TEST

static const uint64_t too_small[] = {FMT48, 0x0000AAAAAAAAAAAAULL, 1,
				     0xFFFFFFFFULL, 0x0003FFFFFFFFFFFFULL};

START_TEST(test_layout_too_small)
{
	struct psc_tag_layout l;

	ck_assert_int_eq(psc_tag_layout_init(&l, too_small[_i]), -ENOSPC);
}
END_TEST

/* Fields are disjoint, cover the usable bits exactly, and lie below them. */
START_TEST(test_fields_disjoint)
{
	struct psc_tag_layout l;
	uint64_t m[5], all = 0;

	layout(&l, formats[_i]);
	m[0] = l.user_mask;
	m[1] = l.rank_mask;
	m[2] = l.ctx_mask;
	m[3] = l.large_bit;
	m[4] = l.proto_mask;
	for (int i = 0; i < 5; i++) {
		ck_assert_uint_ne(m[i], 0);
		ck_assert_msg((m[i] & ~mask_below(l.usable_bits)) == 0,
			      "field %d 0x%016llx above %u bits", i,
			      (unsigned long long)m[i], l.usable_bits);
		for (int j = i + 1; j < 5; j++)
			ck_assert_msg((m[i] & m[j]) == 0,
				      "fields %d and %d overlap", i, j);
		all |= m[i];
	}
	ck_assert_uint_eq(__builtin_popcountll(l.user_mask), l.user_bits);
	ck_assert_uint_eq(__builtin_popcountll(l.rank_mask),
			  PSC_TAG_RANK_BITS);
	ck_assert_uint_eq(__builtin_popcountll(l.ctx_mask), PSC_TAG_CTX_BITS);
	ck_assert_uint_eq(__builtin_popcountll(l.proto_mask),
			  PSC_TAG_PROTO_BITS);
	ck_assert_uint_eq(l.user_bits,
			  PSC_MIN(l.usable_bits - 36, PSC_TAG_MAX_USER_BITS));
	ck_assert_uint_eq(all, mask_below(l.user_bits + 36));
	ck_assert_int_eq(l.tag_ub, (int)l.user_mask);
}
END_TEST

START_TEST(test_roundtrip_random)
{
	struct psc_tag_layout l;
	uint64_t seed = 0x9E3779B97F4A7C15ULL + (uint64_t)_i;

	layout(&l, formats[_i]);
	for (int n = 0; n < 100000; n++) {
		unsigned proto = protos[rnd(&seed) % PSC_ARRAY_SIZE(protos)];
		bool large = rnd(&seed) & 1;
		uint32_t ctx = (uint32_t)rnd(&seed) & 0xFFF;
		uint32_t rank = (uint32_t)rnd(&seed) & 0xFFFFF;
		uint32_t tag = (uint32_t)(rnd(&seed) & l.user_mask);
		uint64_t t = psc_tag_make(&l, proto, large, ctx, rank, tag);

		/* One check per tag: ck_assert is too slow for 10^5 tags. */
		if (psc_tag_proto(&l, t) != proto ||
		    psc_tag_is_large(&l, t) != large ||
		    psc_tag_rank(&l, t) != rank ||
		    psc_tag_user(&l, t) != tag ||
		    (t & l.ctx_mask) >> l.ctx_shift != ctx ||
		    (t & ~mask_below(l.usable_bits)) != 0)
			ck_abort_msg("tag 0x%016llx from proto %u large %d "
				     "ctx %u rank %u tag %u does not "
				     "round-trip",
				     (unsigned long long)t, proto, large, ctx,
				     rank, tag);
	}
}
END_TEST

/* Whether a receive (tag, ignore) matches the message tag t. */
static bool matches(uint64_t tag, uint64_t ignore, uint64_t t)
{
	return ((tag ^ t) & ~ignore) == 0;
}

START_TEST(test_match_exact)
{
	struct psc_tag_layout l;
	uint64_t tag, ign;

	layout(&l, formats[_i]);
	psc_tag_match(&l, PSC_PROTO_USER, 5, 7, 42, &tag, &ign);
	ck_assert_uint_eq(ign, l.large_bit);
	ck_assert_uint_eq(tag, psc_tag_make(&l, PSC_PROTO_USER, false, 5, 7,
					    42));
	ck_assert(matches(tag, ign, psc_tag_make(&l, 0, false, 5, 7, 42)));
	ck_assert(matches(tag, ign, psc_tag_make(&l, 0, true, 5, 7, 42)));
	ck_assert(!matches(tag, ign, psc_tag_make(&l, 0, false, 5, 8, 42)));
	ck_assert(!matches(tag, ign, psc_tag_make(&l, 0, false, 5, 7, 43)));
	ck_assert(!matches(tag, ign, psc_tag_make(&l, 0, false, 6, 7, 42)));
	ck_assert(!matches(tag, ign, psc_tag_make(&l, 1, false, 5, 7, 42)));
	/* The largest user tag and rank are matched exactly, too. */
	psc_tag_match(&l, PSC_PROTO_USER, 0xFFF, 0xFFFFF, l.tag_ub, &tag,
		      &ign);
	ck_assert(matches(tag, ign, psc_tag_make(&l, 0, false, 0xFFF, 0xFFFFF,
						 (uint32_t)l.tag_ub)));
	ck_assert(!matches(tag, ign, psc_tag_make(&l, 0, false, 0xFFF,
						  0xFFFFF, 0)));
}
END_TEST

START_TEST(test_match_wildcards)
{
	struct psc_tag_layout l;
	uint64_t tag, ign;

	layout(&l, formats[_i]);
	psc_tag_match(&l, PSC_PROTO_USER, 3, PS_COMM_ANY_SOURCE, 9, &tag,
		      &ign);
	ck_assert_uint_eq(ign, l.large_bit | l.rank_mask);
	ck_assert(matches(tag, ign, psc_tag_make(&l, 0, false, 3, 0, 9)));
	ck_assert(matches(tag, ign, psc_tag_make(&l, 0, true, 3, 0xFFFFF, 9)));
	ck_assert(!matches(tag, ign, psc_tag_make(&l, 0, false, 3, 1, 10)));

	psc_tag_match(&l, PSC_PROTO_USER, 3, 4, PS_COMM_ANY_TAG, &tag, &ign);
	ck_assert_uint_eq(ign, l.large_bit | l.user_mask);
	ck_assert(matches(tag, ign, psc_tag_make(&l, 0, false, 3, 4, 0)));
	ck_assert(matches(tag, ign, psc_tag_make(&l, 0, true, 3, 4,
						 (uint32_t)l.tag_ub)));
	ck_assert(!matches(tag, ign, psc_tag_make(&l, 0, false, 3, 5, 0)));

	psc_tag_match(&l, PSC_PROTO_USER, 3, -1, -1, &tag, &ign);
	ck_assert_uint_eq(ign, l.large_bit | l.user_mask | l.rank_mask);
	ck_assert(!matches(tag, ign, psc_tag_make(&l, 0, false, 2, 0, 0)));
}
END_TEST

/*
 * A receive of one protocol, even with both wildcards, never matches a
 * message of another protocol or context, whatever its other fields.
 */
START_TEST(test_protocols_disjoint)
{
	struct psc_tag_layout l;
	uint64_t seed = 12345 + (uint64_t)_i;
	size_t np = PSC_ARRAY_SIZE(protos);

	layout(&l, formats[_i]);
	for (size_t n = 0; n < 1000 * np * np; n++) {
		size_t a = n % np, b = n / np % np;
		uint64_t tag, ign, t;
		bool same;

		psc_tag_match(&l, protos[a], 1, -1, -1, &tag, &ign);
		t = psc_tag_make(&l, protos[b], rnd(&seed) & 1,
				 n % 2 ? 1 : (uint32_t)rnd(&seed),
				 (uint32_t)rnd(&seed), (uint32_t)rnd(&seed));
		same = a == b && (t & l.ctx_mask) >> l.ctx_shift == 1;
		if (matches(tag, ign, t) != same)
			ck_abort_msg("proto %u receive vs proto %u tag "
				     "0x%016llx",
				     protos[a], protos[b],
				     (unsigned long long)t);
	}
}
END_TEST

static Suite *tag_suite(void)
{
	Suite *s = suite_create("tag");
	TCase *tc = tcase_create("layout");
	int nfmt = (int)PSC_ARRAY_SIZE(formats);

	tcase_add_test(tc, test_layout_64);
	tcase_add_test(tc, test_layout_zero_is_64);
	tcase_add_test(tc, test_layout_psm2_tag60);
	tcase_add_test(tc, test_layout_min);
	tcase_add_loop_test(tc, test_layout_too_small, 0,
			    (int)PSC_ARRAY_SIZE(too_small));
	tcase_add_loop_test(tc, test_fields_disjoint, 0, nfmt);
	suite_add_tcase(s, tc);

	tc = tcase_create("make");
	tcase_add_loop_test(tc, test_roundtrip_random, 0, nfmt);
	suite_add_tcase(s, tc);

	tc = tcase_create("match");
	tcase_add_loop_test(tc, test_match_exact, 0, nfmt);
	tcase_add_loop_test(tc, test_match_wildcards, 0, nfmt);
	tcase_add_loop_test(tc, test_protocols_disjoint, 0, nfmt);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tag_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
