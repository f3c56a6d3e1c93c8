/*
 * Unit tests for the reduction kernels (lib/coll/reduce_ops.c): float16
 * conversions checked exhaustively against the compiler's _Float16,
 * bfloat16 rounding to nearest even against an independent rule, every
 * data type and operation against a plain serial loop (integer wrap-around
 * included), both operand orders, the NaN rule of min/max, and the
 * schedule helpers that split blocks and segments.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "coll/coll.h"

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

START_TEST(half_to_float_exhaustive)
{
	for (uint32_t h = 0; h < 65536; h++) {
		_Float16 ref;
		float f, want;
		uint16_t v = (uint16_t)h;

		memcpy(&ref, &v, 2);
		want = (float)ref;
		f = psc_half_to_float(v);
		if (isnan(want))
			ck_assert_msg(isnan(f), "0x%04x should be NaN", h);
		else
			ck_assert_msg(memcmp(&f, &want, 4) == 0,
				      "0x%04x: %a, expected %a", h, (double)f,
				      (double)want);
	}
}
END_TEST

/* float -> half matches the compiler's round-to-nearest-even. */
START_TEST(float_to_half_rne)
{
	uint64_t s = 0x1234567;

	for (int i = 0; i < 2000000; i++) {
		uint32_t x = (uint32_t)rnd(&s);
		float f;
		_Float16 ref;
		uint16_t want, got;

		/* Bias towards the half range and its edges. */
		if (i % 2)
			x = (x & 0x80000000u) |
			    ((uint32_t)(100 + (x >> 8) % 50) << 23) |
			    (x & 0x7fffff);
		memcpy(&f, &x, 4);
		ref = (_Float16)f;
		memcpy(&want, &ref, 2);
		got = psc_float_to_half(f);
		if (isnan(f))
			ck_assert_msg((got & 0x7c00) == 0x7c00 && (got & 0x3ff),
				      "NaN 0x%08x gave 0x%04x", x, got);
		else
			ck_assert_msg(got == want,
				      "%a (0x%08x): 0x%04x, expected 0x%04x",
				      (double)f, x, got, want);
	}
	/* Ties: 1 + 2^-11 rounds to 1 (even), 1 + 3*2^-11 to 1 + 2^-9. */
	ck_assert_uint_eq(psc_float_to_half(1.0f + 0x1p-11f), 0x3c00);
	ck_assert_uint_eq(psc_float_to_half(1.0f + 3 * 0x1p-11f), 0x3c02);
	ck_assert_uint_eq(psc_float_to_half(65520.0f), 0x7c00);
	ck_assert_uint_eq(psc_float_to_half(65519.0f), 0x7bff);
}
END_TEST

START_TEST(bf16_rne)
{
	uint64_t s = 99;

	for (int i = 0; i < 1000000; i++) {
		uint32_t x = (uint32_t)rnd(&s), hi = x >> 16, lo = x & 0xffff;
		float f;
		uint16_t got;

		memcpy(&f, &x, 4);
		got = psc_float_to_bf16(f);
		if (isnan(f)) {
			ck_assert(isnan(psc_bf16_to_float(got)));
			continue;
		}
		/* Nearest, ties to even, carrying into the exponent. */
		if (lo > 0x8000 || (lo == 0x8000 && (hi & 1)))
			hi++;
		ck_assert_msg(got == (uint16_t)hi, "0x%08x: 0x%04x", x, got);
		ck_assert_uint_eq((uint32_t)psc_float_to_bf16(
					  psc_bf16_to_float(got)),
				  got);
	}
}
END_TEST

/* A serial reference with the documented rules, in double or uint64. */
static double ref_f(ps_comm_op_t op, double a, double b)
{
	switch (op) {
	case PS_COMM_SUM: return a + b;
	case PS_COMM_PROD: return a * b;
	case PS_COMM_MIN: return isnan(a) ? a : isnan(b) ? b : a < b ? a : b;
	default: return isnan(a) ? a : isnan(b) ? b : a > b ? a : b;
	}
}

START_TEST(int_kernels_wrap)
{
	enum { N = 1000 };
	int64_t a[N], b[N], io[N];
	uint64_t s = 7;

	for (int op = 0; op < PS_COMM_OP_COUNT; op++) {
		for (int i = 0; i < N; i++) {
			a[i] = (int64_t)rnd(&s);
			b[i] = (int64_t)rnd(&s);
		}
		memcpy(io, a, sizeof(io));
		ck_assert_int_eq(psc_reduce_local(PS_COMM_INT64, op, io, b, N,
						  false), 0);
		for (int i = 0; i < N; i++) {
			uint64_t x = (uint64_t)a[i], y = (uint64_t)b[i];
			int64_t want = op == PS_COMM_SUM    ? (int64_t)(x + y)
				       : op == PS_COMM_PROD ? (int64_t)(x * y)
				       : op == PS_COMM_MIN ? (a[i] < b[i] ? a[i] : b[i])
							   : (a[i] > b[i] ? a[i] : b[i]);

			ck_assert_msg(io[i] == want, "op %d element %d", op, i);
		}
	}
	/* Narrow types wrap at their own width, with signed compares. */
	{
		int8_t x[4] = {127, -128, -1, 5}, y[4] = {1, -1, 1, -7};
		uint8_t u[2] = {250, 16}, v[2] = {10, 16};

		psc_reduce_local(PS_COMM_INT8, PS_COMM_SUM, x, y, 4, false);
		ck_assert_int_eq(x[0], -128);
		ck_assert_int_eq(x[1], 127);
		ck_assert_int_eq(x[2], 0);
		ck_assert_int_eq(x[3], -2);
		psc_reduce_local(PS_COMM_UINT8, PS_COMM_PROD, u, v, 2, false);
		ck_assert_uint_eq(u[0], (250 * 10) & 0xff);
		ck_assert_uint_eq(u[1], 0);
	}
}
END_TEST

/* Every dtype and op against the reference, both operand orders. */
START_TEST(all_kernels)
{
	enum { N = 517 };
	uint64_t s = 12345;

	for (int d = 0; d < PS_COMM_DTYPE_COUNT; d++)
		for (int op = 0; op < PS_COMM_OP_COUNT; op++)
			for (int left = 0; left < 2; left++) {
				size_t es = ps_comm_dtype_size(d);
				unsigned char a[N * 8], b[N * 8], io[N * 8];

				for (size_t i = 0; i < sizeof(a); i++) {
					a[i] = (unsigned char)rnd(&s);
					b[i] = (unsigned char)rnd(&s);
				}
				if (d >= PS_COMM_FLOAT16)
					for (int i = 0; i < N; i++) {
						/* Finite values near 1. */
						float fa = 1 + (float)(rnd(&s) % 1000) / 997,
						      fb = (float)(rnd(&s) % 2000) / 999 - 1;

						if (d == PS_COMM_FLOAT16) {
							((uint16_t *)a)[i] = psc_float_to_half(fa);
							((uint16_t *)b)[i] = psc_float_to_half(fb);
						} else if (d == PS_COMM_BFLOAT16) {
							((uint16_t *)a)[i] = psc_float_to_bf16(fa);
							((uint16_t *)b)[i] = psc_float_to_bf16(fb);
						} else if (d == PS_COMM_FLOAT32) {
							((float *)a)[i] = fa;
							((float *)b)[i] = fb;
						} else {
							((double *)a)[i] = fa;
							((double *)b)[i] = fb;
						}
					}
				memcpy(io, a, N * es);
				psc_reduce_local(d, op, io, b, N, left);
				for (int i = 0; i < N && d >= PS_COMM_FLOAT16; i++) {
					double x, y, got, want;

					if (d == PS_COMM_FLOAT16) {
						x = psc_half_to_float(((uint16_t *)a)[i]);
						y = psc_half_to_float(((uint16_t *)b)[i]);
						got = psc_half_to_float(((uint16_t *)io)[i]);
						want = psc_half_to_float(psc_float_to_half(
							(float)ref_f(op, left ? y : x, left ? x : y)));
					} else if (d == PS_COMM_BFLOAT16) {
						x = psc_bf16_to_float(((uint16_t *)a)[i]);
						y = psc_bf16_to_float(((uint16_t *)b)[i]);
						got = psc_bf16_to_float(((uint16_t *)io)[i]);
						want = psc_bf16_to_float(psc_float_to_bf16(
							(float)ref_f(op, left ? y : x, left ? x : y)));
					} else if (d == PS_COMM_FLOAT32) {
						float fx = ((float *)a)[i], fy = ((float *)b)[i];
						float w = op == PS_COMM_SUM ? fx + fy
							  : op == PS_COMM_PROD ? fx * fy
							  : (float)ref_f(op, fx, fy);

						got = ((float *)io)[i];
						want = w;
					} else {
						x = ((double *)a)[i];
						y = ((double *)b)[i];
						got = ((double *)io)[i];
						want = ref_f(op, x, y);
					}
					ck_assert_msg(got == want,
						      "dtype %d op %d element %d: %a vs %a",
						      d, op, i, got, want);
				}
			}
}
END_TEST

START_TEST(nan_rule)
{
	float a[3] = {NAN, 1, NAN}, b[3] = {2, NAN, -NAN};
	double x[2] = {1, 3}, y[2] = {NAN, 0};
	uint32_t bits_a, bits;

	memcpy(&bits_a, &a[2], 4);
	for (int op = PS_COMM_MIN; op <= PS_COMM_MAX; op++) {
		float io[3];

		memcpy(io, a, sizeof(io));
		psc_reduce_local(PS_COMM_FLOAT32, op, io, b, 3, false);
		ck_assert(isnan(io[0]) && isnan(io[1]) && isnan(io[2]));
		/* Both NaN: the left operand's payload. */
		memcpy(&bits, &io[2], 4);
		ck_assert_uint_eq(bits, bits_a);
	}
	psc_reduce_local(PS_COMM_FLOAT64, PS_COMM_MAX, x, y, 2, true);
	ck_assert(isnan(x[0]));
	ck_assert(x[1] == 3);
	ck_assert_int_ne(psc_reduce_local(PS_COMM_DTYPE_COUNT, PS_COMM_SUM, x,
					  y, 1, false), 0);
	ck_assert_int_ne(psc_reduce_local(PS_COMM_FLOAT64, PS_COMM_OP_COUNT,
					  x, y, 1, false), 0);
}
END_TEST

START_TEST(blocks_cover)
{
	for (size_t count = 0; count < 300; count += 7)
		for (int n = 1; n <= 9; n++) {
			size_t next = 0;

			for (int b = 0; b < n; b++) {
				size_t off, len;

				psc_block(count, n, b, &off, &len);
				ck_assert_uint_eq(off, next);
				ck_assert(len == count / n || len == count / n + 1);
				next = off + len;
			}
			ck_assert_uint_eq(next, count);
		}
	ck_assert_int_eq(psc_mod(-1, 5), 4);
	ck_assert_int_eq(psc_pow2_floor(7), 4);
	ck_assert_int_eq(psc_pow2_floor(8), 8);
	ck_assert_uint_eq(psc_nseg(10, 3), 4);
	ck_assert_uint_eq(ps_comm_dtype_size(PS_COMM_BFLOAT16), 2);
	ck_assert_uint_eq(ps_comm_dtype_size((ps_comm_dtype_t)42), 0);
}
END_TEST

static Suite *reduce_suite(void)
{
	Suite *s = suite_create("reduce_ops");
	TCase *tc = tcase_create("kernels");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, half_to_float_exhaustive);
	tcase_add_test(tc, float_to_half_rne);
	tcase_add_test(tc, bf16_rne);
	tcase_add_test(tc, int_kernels_wrap);
	tcase_add_test(tc, all_kernels);
	tcase_add_test(tc, nan_rule);
	tcase_add_test(tc, blocks_cover);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(reduce_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
