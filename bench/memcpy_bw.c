/*
 * memcpy_bw.c - the physical reference for shared-memory transports:
 * how fast one core copies between two buffers of this process.
 *
 *   memcpy_bw [-m MIN] [-M MAX] [-t SECONDS]
 *
 * Sizes go from MIN to MAX bytes, doubling (defaults 4 KiB .. 256 MiB).
 * For each size both buffers are touched first, then memcpy runs until at
 * least SECONDS (default 0.2) have passed; the figure is bytes copied per
 * second in 10^6 B/s (one read and one write of each byte).  A shared-memory
 * message copied once through a bounce buffer costs two such copies, so a
 * transport's bandwidth is expected at or below half of this above the
 * cache sizes and near it for single-copy (CMA, xpmem) paths.
 *
 * Output: CSV "size_bytes,copy_MBps", one row per size.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Parse a positive size with an optional K/M/G suffix into *out; returns 0
 * on success and -1 (with *out untouched) on anything else. */
static int parse_size(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);

    if (end == s || v <= 0)
        return -1;
    if (*end == 'K' || *end == 'k')
        v *= 1024, end++;
    else if (*end == 'M' || *end == 'm')
        v *= 1024 * 1024, end++;
    else if (*end == 'G' || *end == 'g')
        v *= 1024.0 * 1024 * 1024, end++;
    if (*end != '\0')
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    double min = 4096, max = 256.0 * 1024 * 1024, secs = 0.2;

    for (int a = 1; a < argc; a++) {
        double *dst = NULL;

        if (!strcmp(argv[a], "-m"))
            dst = &min;
        else if (!strcmp(argv[a], "-M"))
            dst = &max;
        else if (!strcmp(argv[a], "-t"))
            dst = &secs;
        if (!dst || a + 1 >= argc || parse_size(argv[a + 1], dst)) {
            fprintf(stderr, "usage: %s [-m MIN] [-M MAX] [-t SECONDS]\n",
                    argv[0]);
            return 1;
        }
        a++;
    }
    if (max < min || max > 4.0 * 1024 * 1024 * 1024) {
        fprintf(stderr, "memcpy_bw: need MIN <= MAX <= 4 GiB\n");
        return 1;
    }

    size_t cap = (size_t)max;
    char *src = malloc(cap), *dst = malloc(cap);
    if (!src || !dst) {
        fprintf(stderr, "memcpy_bw: out of memory for 2 x %zu bytes\n", cap);
        return 1;
    }
    memset(src, 0x5a, cap);
    memset(dst, 0xa5, cap);

    printf("size_bytes,copy_MBps\n");
    for (size_t size = (size_t)min; size <= cap; size *= 2) {
        unsigned long n = 0;
        double t0 = now(), t;

        do {
            memcpy(dst, src, size);
            /* keep the copy from being optimised away or merged */
            __asm__ __volatile__("" : : "r"(dst) : "memory");
            n++;
        } while ((t = now() - t0) < secs);
        if (memcmp(dst, src, size) != 0) {
            fprintf(stderr, "memcpy_bw: copy of %zu bytes differs\n", size);
            return 2;
        }
        printf("%zu,%.1f\n", size, (double)size * (double)n / t / 1e6);
        fflush(stdout);
    }
    free(src);
    free(dst);
    return 0;
}
