/*
 * Helpers shared by the libFuzzer harnesses of tests/fuzz/. Each harness
 * defines LLVMFuzzerTestOneInput, feeds the bytes to one family of
 * decoders as a stranger would send them, and checks what the decoder
 * promises; a broken promise aborts (libFuzzer reports it as a crash).
 */
#ifndef PSC_FUZZ_H
#define PSC_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * A malloc'd NUL-terminated copy of the input, so that string parsers
 * see exactly its bytes and AddressSanitizer catches a read past them.
 * Aborts when out of memory (the harness cannot go on).
 */
static inline char *psc_fuzz_str(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	if (size)
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* A broken promise: say which, then crash so libFuzzer keeps the input. */
#define PSC_FUZZ_ASSERT(cond)                                                  \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: broken promise: %s\n",          \
				__FILE__, __LINE__, #cond);                    \
			abort();                                               \
		}                                                              \
	} while (0)

#endif /* PSC_FUZZ_H */
