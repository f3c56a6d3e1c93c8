/*
 * What the pingpong peers in bench/ share with each other, so that they
 * measure exactly what examples/pingpong measures: size parsing, the
 * iteration scaling above 64 KiB, the number of bandwidth windows, and the
 * payload pattern. Header only: each peer is one file built by the script.
 */
#ifndef PINGPONG_COMMON_H
#define PINGPONG_COMMON_H

#include <errno.h>
#include <stdlib.h>

#define WINDOW 64
#define SCALE_LIMIT (64UL * 1024)

static inline int parse_size(const char *s, unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 0);
    if (errno || end == s)
        return -1;
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    if (*end != '\0')
        return -1;
    *out = v;
    return 0;
}

/* fewer iterations above 64 KiB so 4 MiB does not take minutes */
static inline unsigned long scale(unsigned long n, unsigned long size,
                           unsigned long floor_)
{
    if (size <= SCALE_LIMIT)
        return n;
    unsigned long s = (unsigned long)((double)n * SCALE_LIMIT / (double)size);
    return s > floor_ ? s : floor_;
}

static inline unsigned long bw_windows(unsigned long iters)
{
    return iters / WINDOW > 0 ? iters / WINDOW : 1;
}

static inline unsigned char pattern(unsigned long size, unsigned long i, int who)
{
    return (unsigned char)((i * 131u + size * 7u + (unsigned)who * 29u) & 0xff);
}

#endif /* PINGPONG_COMMON_H */
