/*
 * Unit tests for lib/util/copy.c: psc_copy moves exactly n bytes and
 * touches nothing around them, for lengths around its loop's 64-byte
 * rounds and PSC_COPY_LOOP_MIN, destinations inside and outside the
 * window it steps around (1 to 63 bytes past the source modulo 4 KiB),
 * and misaligned sources.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "util/copy.h"
#include "util/util.h"

#define GUARD 64

static const size_t lengths[] = {
	0, 1, 15, 63, 64, 65, 127, PSC_COPY_LOOP_MIN - 1, PSC_COPY_LOOP_MIN,
	PSC_COPY_LOOP_MIN + 1, PSC_COPY_LOOP_MIN + 63, 65536 + 13, 300000,
};
/* dst - src modulo 4096: none, inside the window, its edges, outside. */
static const size_t distances[] = {0, 1, 16, 31, 32, 63, 64, 100, 4095};
static const size_t src_offsets[] = {0, 1, 7, 16};

START_TEST(test_copy_exact)
{
	size_t n = lengths[_i];
	size_t span = 2 * 4096 + n + 2 * GUARD + 64;
	void *sp = NULL, *dp = NULL;
	unsigned char *src, *dst;

	/* Page-aligned, so that distances modulo 4 KiB are the ones named. */
	ck_assert_int_eq(posix_memalign(&sp, 4096, span), 0);
	ck_assert_int_eq(posix_memalign(&dp, 4096, span + 4096), 0);
	src = sp;
	dst = dp;
	for (size_t i = 0; i < span; i++)
		src[i] = (unsigned char)(i * 131 + 7);
	for (size_t d = 0; d < PSC_ARRAY_SIZE(distances); d++)
		for (size_t o = 0; o < PSC_ARRAY_SIZE(src_offsets); o++) {
			const unsigned char *s = src + GUARD + src_offsets[o];
			/* Same offset in its page as s, then the distance. */
			unsigned char *t = dst + GUARD + src_offsets[o] +
					   distances[d];

			memset(dst, 0xa5, span + 4096);
			psc_copy(t, s, n);
			ck_assert_msg(memcmp(t, s, n) == 0,
				      "n %zu, distance %zu, offset %zu: "
				      "bytes differ", n, distances[d],
				      src_offsets[o]);
			for (unsigned char *g = dst; g < t; g++)
				ck_assert_msg(*g == 0xa5, "n %zu, distance %zu: "
					      "wrote %td bytes before dst", n,
					      distances[d], t - g);
			for (unsigned char *g = t + n; g < t + n + GUARD; g++)
				ck_assert_msg(*g == 0xa5, "n %zu, distance %zu: "
					      "wrote past dst + n", n,
					      distances[d]);
		}
	free(src);
	free(dst);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("copy");
	TCase *tc = tcase_create("exact");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, test_copy_exact, 0,
			    (int)PSC_ARRAY_SIZE(lengths));
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
