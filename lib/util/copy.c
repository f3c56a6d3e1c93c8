/*
 * psc_copy (copy.h). The loop's stores are ordinary ones: a block past
 * glibc's non-temporal threshold in the window costs about what memcpy's
 * streaming stores would, and outside the window memcpy is used anyway.
 */
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "util/copy.h"

/* Whether dst lies 1 to 63 bytes past src modulo a 4 KiB page. */
static int slow_window(const void *dst, const void *src)
{
	uintptr_t d = ((uintptr_t)dst - (uintptr_t)src) & 4095u;

	return d != 0 && d < 64;
}

#if defined(__SSE2__)
/* 64 bytes per round as four unaligned 16-byte moves, then the tail. */
static void copy_vec(char *d, const char *s, size_t n)
{
	for (; n >= 64; n -= 64, d += 64, s += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)(const void *)s);
		__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + 32));
		__m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + 48));

		_mm_storeu_si128((__m128i *)(void *)d, a);
		_mm_storeu_si128((__m128i *)(void *)(d + 16), b);
		_mm_storeu_si128((__m128i *)(void *)(d + 32), c);
		_mm_storeu_si128((__m128i *)(void *)(d + 48), e);
	}
	memcpy(d, s, n);
}
#endif

void psc_copy(void *dst, const void *src, size_t n)
{
#if defined(__SSE2__)
	if (n >= PSC_COPY_LOOP_MIN && slow_window(dst, src)) {
		copy_vec(dst, src, n);
		return;
	}
#endif
	memcpy(dst, src, n);
}
