/*
 * psc_copy: memcpy for message and collective data, which avoids a slow
 * case of glibc's memcpy on AMD Zen.
 *
 * glibc before 2.39 copies blocks from a few KiB up to its non-temporal
 * threshold with `rep movsb` (ERMS). On Zen CPUs that instruction runs at
 * about a twentieth of its speed when the destination lies a few bytes
 * past the source modulo 4096 (1 to 31 measured here; glibc bug 30994;
 * psc_copy steps around 1 to 63 for margin), which is where two
 * buffers of one power-of-two size, allocated one after the other, end
 * up: malloc's 16-byte header puts them 16 bytes apart modulo a page.
 * Measured on an EPYC VM with glibc 2.36: 64 KiB in 31 us against 1.6 us,
 * 256 KiB in 139 us against 7.6 us. The loop matches memcpy outside
 * that case and is within a third of its streaming stores for blocks of
 * several MiB, so it is used at every size.
 */
#ifndef PSC_COPY_H
#define PSC_COPY_H

#include <stddef.h>

/*
 * Copy n bytes from src to dst, which must not overlap. Takes glibc's
 * memcpy except for blocks of PSC_COPY_LOOP_MIN bytes or more whose
 * distance falls in the slow window; those go through 16-byte vector
 * moves (plain memcpy where the target has no SSE2).
 */
void psc_copy(void *dst, const void *src, size_t n);

/* Smallest block psc_copy moves by its own loop. */
#define PSC_COPY_LOOP_MIN 4096

#endif
