/*
 * Unit tests for lib/util/scratch.c: blocks are aligned and usable for
 * their whole length, an idle block is handed out again for a request it
 * covers, the smallest fitting one first, the byte limit and the slot
 * count bound what stays idle, a full cache keeps the largest blocks,
 * and drain empties it. Tests run in forked processes (Check's default),
 * so each starts with an empty cache.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "util/scratch.h"

#define MIB ((size_t)1 << 20)
#define LOTS ((size_t)1 << 40)

START_TEST(test_aligned_and_writable)
{
	char *p = psc_scratch_get(3 * MIB + 5);

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq((uintptr_t)p % 64, 0);
	memset(p, 0x5a, 3 * MIB + 5);
	psc_scratch_put(p, LOTS);
	psc_scratch_drain();
}
END_TEST

START_TEST(test_reuse_fitting_block)
{
	char *a = psc_scratch_get(2 * MIB), *b;

	psc_scratch_put(a, LOTS);
	/* Smaller requests reuse it; a larger one cannot. */
	b = psc_scratch_get(MIB);
	ck_assert_ptr_eq(a, b);
	psc_scratch_put(b, LOTS);
	b = psc_scratch_get(4 * MIB);
	ck_assert_ptr_ne(a, b);
	memset(b, 1, 4 * MIB);
	psc_scratch_put(b, LOTS);
	psc_scratch_drain();
}
END_TEST

START_TEST(test_smallest_fitting_first)
{
	char *big = psc_scratch_get(8 * MIB), *small = psc_scratch_get(MIB);

	psc_scratch_put(big, LOTS);
	psc_scratch_put(small, LOTS);
	ck_assert_ptr_eq(psc_scratch_get(MIB / 2), small);
	ck_assert_ptr_eq(psc_scratch_get(MIB), big);
	psc_scratch_put(small, LOTS);
	psc_scratch_put(big, LOTS);
	psc_scratch_drain();
}
END_TEST

START_TEST(test_limit)
{
	char *a = psc_scratch_get(2 * MIB), *b = psc_scratch_get(2 * MIB);
	char *c;

	/* Limit 0: nothing stays idle. */
	psc_scratch_put(a, 0);
	c = psc_scratch_get(2 * MIB);
	psc_scratch_put(c, 3 * MIB);
	/* One 2 MiB block fits under 3 MiB, a second does not. */
	psc_scratch_put(b, 3 * MIB);
	a = psc_scratch_get(2 * MIB);
	b = psc_scratch_get(2 * MIB);
	ck_assert_msg(a == c || b == c, "the block kept was not reused");
	ck_assert_ptr_ne(a, b);
	psc_scratch_put(a, 0);
	psc_scratch_put(b, 0);
	psc_scratch_drain();
}
END_TEST

START_TEST(test_full_keeps_largest)
{
	char *blk[6];

	for (int i = 0; i < 6; i++)
		blk[i] = psc_scratch_get((size_t)(i + 1) * MIB);
	for (int i = 0; i < 6; i++)
		psc_scratch_put(blk[i], LOTS);
	/* Four slots: the 3..6 MiB blocks stay, 1 and 2 MiB were freed. */
	for (int i = 5; i >= 2; i--)
		ck_assert_ptr_eq(psc_scratch_get((size_t)(i + 1) * MIB), blk[i]);
	for (int i = 2; i < 6; i++)
		psc_scratch_put(blk[i], LOTS);
	psc_scratch_drain();
	/* Drained: a new request gets a new block of its own size. */
	blk[0] = psc_scratch_get(6 * MIB);
	memset(blk[0], 2, 6 * MIB);
	psc_scratch_put(blk[0], 0);
}
END_TEST

START_TEST(test_null_and_huge)
{
	psc_scratch_put(NULL, LOTS);
	ck_assert_ptr_null(psc_scratch_get(SIZE_MAX - 8));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("scratch");
	TCase *tc = tcase_create("cache");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_aligned_and_writable);
	tcase_add_test(tc, test_reuse_fitting_block);
	tcase_add_test(tc, test_smallest_fitting_first);
	tcase_add_test(tc, test_limit);
	tcase_add_test(tc, test_full_keeps_largest);
	tcase_add_test(tc, test_null_and_huge);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
