/*
 * Reduction kernels: inout = op(inout, in) for every data type and
 * operation, as simple restrict-qualified loops that the compiler
 * vectorizes (lib/coll/Makefile.include asks for the vectorizer by name:
 * a user's -O2 after our -O3 would otherwise leave them scalar).
 * Vectorizing changes no bits: each element is combined on its own. The
 * operand order is a parameter because it is visible in the bits: float
 * sum and product are commutative, but when both operands of min/max are
 * NaN the left one's payload wins, and algorithms keep a fixed order so
 * that every rank ends with the same bits.
 *
 * Rules a user can rely on:
 * - integer sum and product wrap around (two's complement);
 * - min/max return NaN when either operand is NaN (like numpy.maximum),
 *   so a NaN anywhere in the input shows in the result;
 * - float16 and bfloat16 are widened to float32, combined, and rounded
 *   back to nearest even after every operation.
 */
#include <errno.h>
#include <string.h>

#include "coll.h"

/* ------------------------------------------------ half-precision formats */

float psc_half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
	float f;

	if (exp == 0x1f) {
		bits = sign | 0x7f800000u | man << 13; /* inf or NaN */
	} else if (exp) {
		bits = sign | (exp + 112) << 23 | man << 13;
	} else if (man) {
		/* Subnormal: value is man * 2^-24, exact in float32. */
		f = (float)man * 0x1p-24f;
		return sign ? -f : f;
	} else {
		bits = sign;
	}
	memcpy(&f, &bits, sizeof(f));
	return f;
}

uint16_t psc_float_to_half(float f)
{
	uint32_t x, sign, exp, man;

	memcpy(&x, &f, sizeof(x));
	sign = (x >> 16) & 0x8000;
	exp = (x >> 23) & 0xff;
	man = x & 0x7fffff;
	if (exp == 0xff) /* inf stays inf; NaN stays a quiet NaN */
		return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | man >> 13 : 0));
	if (exp > 142) /* >= 2^16: overflows to inf */
		return (uint16_t)(sign | 0x7c00);
	if (exp < 113) {
		/* Subnormal or zero in half: round man|1.0 shifted right. */
		uint32_t shift, full, half, rest, v;

		if (exp < 102) /* below half the smallest subnormal */
			return (uint16_t)sign;
		full = man | 0x800000;
		shift = 126 - exp; /* 14..24 */
		v = full >> shift;
		rest = full & ((1u << shift) - 1);
		half = 1u << (shift - 1);
		if (rest > half || (rest == half && (v & 1)))
			v++;
		return (uint16_t)(sign | v);
	}
	{
		uint32_t v = (exp - 112) << 10 | man >> 13;
		uint32_t rest = man & 0x1fff;

		/* A carry into the exponent is the right rounding (to inf). */
		if (rest > 0x1000 || (rest == 0x1000 && (v & 1)))
			v++;
		return (uint16_t)(sign | v);
	}
}

float psc_bf16_to_float(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

uint16_t psc_float_to_bf16(float f)
{
	uint32_t x;

	memcpy(&x, &f, sizeof(x));
	if ((x & 0x7fffffff) > 0x7f800000) /* NaN: keep it quiet */
		return (uint16_t)(x >> 16 | 0x40);
	x += 0x7fff + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

/* ------------------------------------------------------------ operations */

#define OP_SUM(a, b) ((a) + (b))
#define OP_PROD(a, b) ((a) * (b))
#define OP_MIN(a, b) ((a) < (b) ? (a) : (b))
#define OP_MAX(a, b) ((a) > (b) ? (a) : (b))
/* Floats: NaN in either operand gives NaN, the left one first. */
#define OP_FMIN(a, b) ((a) != (a) ? (a) : (b) != (b) ? (b) : OP_MIN(a, b))
#define OP_FMAX(a, b) ((a) != (a) ? (a) : (b) != (b) ? (b) : OP_MAX(a, b))
/* Integers: wrap-around through the unsigned type U. */
#define OP_WSUM(a, b) ((U)((U)(a) + (U)(b)))
#define OP_WPROD(a, b) ((U)((U)(a) * (U)(b)))

typedef void (*kernel_fn)(void *inout, const void *in, size_t n,
			  bool in_left);

/*
 * One kernel: T is the element type, U its unsigned twin, E the op. T
 * and U_ are types, which cannot be put in parentheses.
 */
/* NOLINTBEGIN(bugprone-macro-parentheses) */
#define KERNEL(name, T, U_, E)                                                 \
	static void name(void *inout_, const void *in_, size_t n,              \
			 bool in_left)                                         \
	{                                                                      \
		typedef U_ U;                                                  \
		T *restrict io = inout_;                                       \
		(void)sizeof(U);                                               \
		const T *restrict in = in_;                                    \
		if (in_left)                                                   \
			for (size_t i = 0; i < n; i++)                         \
				io[i] = (T)E(in[i], io[i]);                    \
		else                                                           \
			for (size_t i = 0; i < n; i++)                         \
				io[i] = (T)E(io[i], in[i]);                    \
	}
/* NOLINTEND(bugprone-macro-parentheses) */

/* A 16-bit float kernel: widen, combine in float32, round back. */
#define KERNEL16(name, TOF, FROMF, E)                                          \
	static void name(void *inout_, const void *in_, size_t n,              \
			 bool in_left)                                         \
	{                                                                      \
		uint16_t *restrict io = inout_;                                \
		const uint16_t *restrict in = in_;                             \
		for (size_t i = 0; i < n; i++) {                               \
			float x = TOF(io[i]), y = TOF(in[i]);                  \
			io[i] = FROMF(in_left ? E(y, x) : E(x, y));            \
		}                                                              \
	}

#define INT_KERNELS(tag, T, U_)                                                \
	KERNEL(tag##_sum, T, U_, OP_WSUM)                                      \
	KERNEL(tag##_prod, T, U_, OP_WPROD)                                    \
	KERNEL(tag##_min, T, U_, OP_MIN)                                       \
	KERNEL(tag##_max, T, U_, OP_MAX)

#define FLOAT_KERNELS(tag, T)                                                  \
	KERNEL(tag##_sum, T, T, OP_SUM)                                        \
	KERNEL(tag##_prod, T, T, OP_PROD)                                      \
	KERNEL(tag##_min, T, T, OP_FMIN)                                       \
	KERNEL(tag##_max, T, T, OP_FMAX)

#define HALF_KERNELS(tag, TOF, FROMF)                                          \
	KERNEL16(tag##_sum, TOF, FROMF, OP_SUM)                                \
	KERNEL16(tag##_prod, TOF, FROMF, OP_PROD)                              \
	KERNEL16(tag##_min, TOF, FROMF, OP_FMIN)                               \
	KERNEL16(tag##_max, TOF, FROMF, OP_FMAX)

/* uint8_t and friends promote to int: the casts keep arithmetic defined. */
INT_KERNELS(i8, int8_t, uint8_t)
INT_KERNELS(u8, uint8_t, uint8_t)
INT_KERNELS(i32, int32_t, uint32_t)
INT_KERNELS(u32, uint32_t, uint32_t)
INT_KERNELS(i64, int64_t, uint64_t)
INT_KERNELS(u64, uint64_t, uint64_t)
HALF_KERNELS(f16, psc_half_to_float, psc_float_to_half)
HALF_KERNELS(bf16, psc_bf16_to_float, psc_float_to_bf16)
FLOAT_KERNELS(f32, float)
FLOAT_KERNELS(f64, double)

#define ROW(tag) {tag##_sum, tag##_prod, tag##_min, tag##_max}

static const kernel_fn kernels[PS_COMM_DTYPE_COUNT][PS_COMM_OP_COUNT] = {
	[PS_COMM_INT8] = ROW(i8),	  [PS_COMM_UINT8] = ROW(u8),
	[PS_COMM_INT32] = ROW(i32),	  [PS_COMM_UINT32] = ROW(u32),
	[PS_COMM_INT64] = ROW(i64),	  [PS_COMM_UINT64] = ROW(u64),
	[PS_COMM_FLOAT16] = ROW(f16),	  [PS_COMM_BFLOAT16] = ROW(bf16),
	[PS_COMM_FLOAT32] = ROW(f32),	  [PS_COMM_FLOAT64] = ROW(f64),
};

int psc_reduce_local(ps_comm_dtype_t dtype, ps_comm_op_t op, void *inout,
		     const void *in, size_t count, bool in_left)
{
	if ((unsigned)dtype >= PS_COMM_DTYPE_COUNT ||
	    (unsigned)op >= PS_COMM_OP_COUNT)
		return -EINVAL;
	if (count)
		kernels[dtype][op](inout, in, count, in_left);
	return 0;
}

size_t ps_comm_dtype_size(ps_comm_dtype_t dtype)
{
	static const size_t sizes[PS_COMM_DTYPE_COUNT] = {1, 1, 4, 4, 8,
							  8, 2, 2, 4, 8};

	return (unsigned)dtype < PS_COMM_DTYPE_COUNT ? sizes[dtype] : 0;
}
