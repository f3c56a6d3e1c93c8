/*
 * mpi_allreduce.c - MPI reference for pscomm's examples/allreduce.
 *
 * Measures MPI_Allreduce exactly the way examples/allreduce measures
 * ps_comm_allreduce, with the same options, defaults, iteration rule, input
 * values, check and CSV output, so the two can be compared line by line
 * (see bench/allreduce_vs_mpi.sh and bench/README.md).
 *
 *   mpi_allreduce [-m MIN] [-M MAX] [-t DTYPE] [-o OP] [-i ITERS] [-c] [--csv]
 *
 * Sizes go from MIN to MAX bytes, doubling (defaults 4 KiB .. 64 MiB);
 * sizes below one element are skipped. DTYPE: int8 uint8 int32 uint32
 * int64 uint64 float32 float64 (MPI has no float16/bfloat16 type);
 * OP: sum prod min max. The algorithm column reads "mpi": the MPI library
 * picks its own.
 *
 *   time_us     per call, the slowest rank's average over iters(size)
 *               timed calls that follow warmup(size) untimed ones and a
 *               barrier; send and receive buffers are distinct.
 *   algbw_GBps  bytes / time_us, in 10^9 bytes per second.
 *   busbw_GBps  algbw * 2(n-1)/n, as nccl-tests reports it.
 *   errors      with -c: wrong elements over all ranks and calls.
 *
 * Iterations (as in examples/allreduce.c):
 *   iters(size)  = ITERS if given, else 256 MiB / size within [5, 1000]
 *   warmup(size) = iters(size) / 10 within [2, 50]
 *
 * Inputs of rank r at element i (small integers, exact in every type):
 *   sum      (i + 3r) mod 5, minus 2 for signed and floating types;
 *            floating-point sums take zeros from ranks >= 64;
 *   prod     with k = (i + r) mod n: 2 if k == 0 or (k == 1 and i mod 3
 *            == 0); -1 if k == 2, i odd and the type is signed; else 1;
 *   min/max  (7i + 13r) mod 61, minus 30 for signed and floating types.
 * With -c every result of every call is compared bit for bit with the
 * reference reduced here; the receive buffer is overwritten with the
 * complement of the reference before each call (untimed).
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pingpong_common.h" /* parse_size */

#define FLOAT_SUM_RANKS 64

struct dtype {
    const char *name;
    MPI_Datatype type;
    size_t size;
    int is_signed, is_float;
};

static const struct dtype dtypes[] = {
    {"int8", MPI_INT8_T, 1, 1, 0},     {"uint8", MPI_UINT8_T, 1, 0, 0},
    {"int32", MPI_INT32_T, 4, 1, 0},   {"uint32", MPI_UINT32_T, 4, 0, 0},
    {"int64", MPI_INT64_T, 8, 1, 0},   {"uint64", MPI_UINT64_T, 8, 0, 0},
    {"float32", MPI_FLOAT, 4, 1, 1},   {"float64", MPI_DOUBLE, 8, 1, 1},
};
#define NDTYPES (int)(sizeof(dtypes) / sizeof(dtypes[0]))

enum { OP_SUM, OP_PROD, OP_MIN, OP_MAX, NOPS };
static const char *const op_names[NOPS] = {"sum", "prod", "min", "max"};

struct opts {
    unsigned long min, max, iters;
    const struct dtype *dt;
    int op, check, csv;
};

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [-m MIN] [-M MAX] [-t DTYPE] [-o OP] [-i ITERS] [-c] [--csv]\n"
            "  -m MIN    smallest size in bytes (default 4096)\n"
            "  -M MAX    largest size in bytes (default 67108864)\n"
            "  -t DTYPE  int8 uint8 int32 uint32 int64 uint64 float32 (default) float64\n"
            "  -o OP     sum (default) prod min max\n"
            "  -i ITERS  timed calls per size (default: 5 to 1000, fewer for large sizes)\n"
            "  -c        check every result\n"
            "  --csv     print size_bytes,count,dtype,op,algo,time_us,algbw_GBps,busbw_GBps,errors\n",
            prog);
}

/* 0 when argv parsed into o; 2 on a usage error; 1 after -h. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){4UL << 10, 64UL << 20, 0, &dtypes[6], OP_SUM, 0, 0};
    for (int a = 1; a < argc; a++) {
        const char *f = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;
        int ok = 0;

        if (!strcmp(f, "--csv")) { o->csv = 1; continue; }
        if (!strcmp(f, "-c")) { o->check = 1; continue; }
        if (!strcmp(f, "-h") || !strcmp(f, "--help"))
            return 1;
        if (v && !strcmp(f, "-m"))
            ok = !parse_size(v, &o->min);
        else if (v && !strcmp(f, "-M"))
            ok = !parse_size(v, &o->max);
        else if (v && !strcmp(f, "-i"))
            ok = !parse_size(v, &o->iters) && o->iters > 0;
        else if (v && !strcmp(f, "-t")) {
            for (int i = 0; i < NDTYPES; i++)
                if (!strcmp(v, dtypes[i].name))
                    o->dt = &dtypes[i], ok = 1;
        } else if (v && !strcmp(f, "-o")) {
            for (int i = 0; i < NOPS; i++)
                if (!strcmp(v, op_names[i]))
                    o->op = i, ok = 1;
        }
        if (!ok)
            return 2;
        a++;
    }
    return o->min <= o->max && o->max < (1UL << 31) ? 0 : 2;
}

static long long value(const struct opts *o, int r, int n, size_t i)
{
    size_t k = (i + (size_t)r) % (size_t)n;
    long long s;

    switch (o->op) {
    case OP_SUM:
        if (o->dt->is_float && r >= FLOAT_SUM_RANKS)
            return 0;
        s = (long long)((i + 3 * (size_t)r) % 5);
        return o->dt->is_signed ? s - 2 : s;
    case OP_PROD:
        if (k == 0 || (k == 1 && i % 3 == 0))
            return 2;
        return k == 2 && i % 2 && o->dt->is_signed ? -1 : 1;
    default:
        s = (long long)((7 * i + 13 * (size_t)r) % 61);
        return o->dt->is_signed ? s - 30 : s;
    }
}

static long long fold(int op, long long a, long long b)
{
    switch (op) {
    case OP_SUM: return a + b;
    case OP_PROD: return a * b;
    case OP_MIN: return a < b ? a : b;
    default: return a > b ? a : b;
    }
}

static void store(const struct dtype *dt, void *buf, size_t i, long long v)
{
    if (dt->is_float && dt->size == 4)
        ((float *)buf)[i] = (float)v;
    else if (dt->is_float)
        ((double *)buf)[i] = (double)v;
    else if (dt->size == 1)
        ((uint8_t *)buf)[i] = (uint8_t)v;
    else if (dt->size == 4)
        ((uint32_t *)buf)[i] = (uint32_t)v;
    else
        ((uint64_t *)buf)[i] = (uint64_t)v;
}

static unsigned long iters_for(size_t bytes)
{
    size_t n = bytes ? (256UL << 20) / bytes : 1000;

    return n < 5 ? 5 : n > 1000 ? 1000 : n;
}

static unsigned long warmup_for(unsigned long iters)
{
    unsigned long w = iters / 10;

    return w < 2 ? 2 : w > 50 ? 50 : w;
}

int main(int argc, char **argv)
{
    MPI_Op ops[NOPS] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
    struct opts o;
    unsigned long long total_errors = 0;
    unsigned char *send, *recv, *expect = NULL;
    int rank, n, prc;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);

    prc = parse_opts(argc, argv, &o);
    if (prc) {
        if (rank == 0) {
            if (prc == 2)
                fprintf(stderr, "mpi_allreduce: bad arguments\n");
            usage(argv[0]);
        }
        MPI_Finalize();
        return prc == 1 ? 0 : 2;
    }
    send = malloc(o.max ? o.max : 1);
    recv = malloc(o.max ? o.max : 1);
    if (o.check)
        expect = malloc(o.max ? o.max : 1);
    if (!send || !recv || (o.check && !expect)) {
        fprintf(stderr, "mpi_allreduce: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    if (rank == 0) {
        if (o.csv)
            printf("size_bytes,count,dtype,op,algo,time_us,algbw_GBps,busbw_GBps,errors\n");
        else
            printf("# mpi_allreduce: %d ranks, %s %s%s\n"
                   "%12s %12s %12s %12s %12s %8s\n", n, o.dt->name,
                   op_names[o.op], o.check ? ", checked" : "", "size(B)",
                   "count", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "errors");
        fflush(stdout);
    }

    for (unsigned long s = o.min; s <= o.max; s = s ? s * 2 : 1) {
        size_t esize = o.dt->size, count = s / esize, bytes = count * esize;
        unsigned long iters, warm;
        unsigned long long errors = 0, all_errors = 0;
        double us = 0, avg, slowest;

        if (s && s < esize)
            continue;
        iters = o.iters ? o.iters : iters_for(bytes);
        warm = warmup_for(iters);
        for (size_t i = 0; i < count; i++)
            store(o.dt, send, i, value(&o, rank, n, i));
        if (o.check) {
            for (size_t i = 0; i < count; i++) {
                long long acc = value(&o, 0, n, i);
                for (int r = 1; r < n; r++)
                    acc = fold(o.op, acc, value(&o, r, n, i));
                store(o.dt, expect, i, acc);
            }
        }
        for (unsigned long it = 0; it < warm + iters; it++) {
            double t0;

            if (it == warm) {
                MPI_Barrier(MPI_COMM_WORLD);
                us = 0;
            }
            if (o.check)
                for (size_t b = 0; b < bytes; b++)
                    recv[b] = (unsigned char)~expect[b];
            t0 = MPI_Wtime();
            MPI_Allreduce(send, recv, (int)count, o.dt->type, ops[o.op],
                          MPI_COMM_WORLD);
            us += (MPI_Wtime() - t0) * 1e6;
            if (o.check && memcmp(recv, expect, bytes))
                for (size_t i = 0; i < count; i++)
                    errors += memcmp(recv + i * esize, expect + i * esize,
                                     esize) != 0;
        }
        avg = us / (double)iters;
        MPI_Allreduce(&avg, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(&errors, &all_errors, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM,
                      MPI_COMM_WORLD);
        total_errors += all_errors;
        if (rank == 0) {
            double algbw = slowest > 0 ? (double)bytes / slowest / 1e3 : 0;
            double busbw = algbw * 2 * (n - 1) / n;

            if (o.csv)
                printf("%zu,%zu,%s,%s,mpi,%.3f,%.4f,%.4f,%llu\n", bytes, count,
                       o.dt->name, op_names[o.op], slowest, algbw, busbw,
                       all_errors);
            else
                printf("%12zu %12zu %12.3f %12.4f %12.4f %8llu\n", bytes, count,
                       slowest, algbw, busbw, all_errors);
            fflush(stdout);
        }
        if (s > o.max / 2)
            break; /* next size would exceed MAX (or overflow) */
    }
    if (total_errors && rank == 0)
        fprintf(stderr, "mpi_allreduce: %llu wrong elements\n", total_errors);
    free(send);
    free(recv);
    free(expect);
    MPI_Finalize();
    return total_errors ? 1 : 0;
}
