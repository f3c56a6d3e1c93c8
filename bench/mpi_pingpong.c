/*
 * mpi_pingpong.c - MPI reference for pscomm's examples/pingpong.
 *
 * Measures exactly what examples/pingpong measures, with the same options,
 * defaults, iteration scaling and CSV output, so the two can be compared
 * side by side (see bench/pingpong_vs_mpi.sh and bench/README.md).
 *
 *   mpi_pingpong [-m MIN] [-M MAX] [-i ITERS] [-w WARMUP] [--csv]
 *
 * Ranks 0 and 1 exchange messages of MIN, 2*MIN, ... up to MAX bytes
 * (defaults 1 B .. 4 MiB); any other rank just waits at the final barrier.
 *
 *   latency_us     half the round-trip time, averaged over iters(size)
 *                  ping-pongs after warmup(size) untimed ones.
 *   bandwidth_MBps one-way windowed stream: rank 0 posts a window of 64
 *                  nonblocking sends of `size` bytes, rank 1 receives them
 *                  (64 nonblocking receives + Waitall) and replies with a
 *                  1-byte ack; repeated windows(size) times.  Bandwidth is
 *                  bytes / time in 10^6 bytes per second.
 *
 * Scaling (as in examples/pingpong.c; identical in zmq_pingpong.c):
 *   iters(size)   = ITERS if size <= 64 KiB, else max(10, ITERS*64KiB/size)
 *   warmup(size)  = WARMUP if size <= 64 KiB, else max(2, WARMUP*64KiB/size)
 *   windows(size) = max(1, iters(size) / 64), after 1 untimed warm-up window
 * i.e. the stream moves about as many messages as the ping-pong does.
 *
 * Payload check: after the timed loops, one extra ping-pong per size carries
 * a size-dependent byte pattern that both sides verify byte by byte (outside
 * the timed region).  A mismatch aborts with a non-zero exit status.
 */
#include <mpi.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pingpong_common.h"

enum { TAG_LAT = 1, TAG_BW = 2, TAG_ACK = 3, TAG_CHECK = 4 };

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [-m MIN] [-M MAX] [-i ITERS] [-w WARMUP] [--csv]\n"
            "  -m MIN     smallest message size in bytes (default 1)\n"
            "  -M MAX     largest message size in bytes (default 4194304)\n"
            "  -i ITERS   iterations for sizes <= 64 KiB (default 1000)\n"
            "  -w WARMUP  warm-up iterations (default 100)\n"
            "  --csv      print size_bytes,latency_us,bandwidth_MBps\n",
            prog);
}

static void check_abort(const char *what, unsigned long size, unsigned long off,
                        unsigned got, unsigned want)
{
    fprintf(stderr, "mpi_pingpong: %s payload mismatch at size %lu offset %lu: "
                    "got 0x%02x want 0x%02x\n", what, size, off, got, want);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

int main(int argc, char **argv)
{
    unsigned long min = 1, max = 4UL << 20, iters_opt = 1000, warm_opt = 100;
    int csv = 0;
    int rank, nranks;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    for (int a = 1; a < argc; a++) {
        const char *o = argv[a];
        unsigned long *dst = NULL;
        if (!strcmp(o, "--csv")) { csv = 1; continue; }
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            if (rank == 0) usage(argv[0]);
            MPI_Finalize();
            return 0;
        }
        if (!strcmp(o, "-m")) dst = &min;
        else if (!strcmp(o, "-M")) dst = &max;
        else if (!strcmp(o, "-i")) dst = &iters_opt;
        else if (!strcmp(o, "-w")) dst = &warm_opt;
        if (!dst || a + 1 >= argc || parse_size(argv[a + 1], dst)) {
            if (rank == 0) {
                fprintf(stderr, "mpi_pingpong: bad argument '%s'\n", o);
                usage(argv[0]);
            }
            MPI_Finalize();
            return 1;
        }
        a++;
    }
    if (max < min || max > (1UL << 30) || iters_opt == 0) {
        if (rank == 0)
            fprintf(stderr, "mpi_pingpong: need MIN <= MAX <= 1 GiB, ITERS >= 1\n");
        MPI_Finalize();
        return 1;
    }
    if (nranks < 2) {
        if (rank == 0)
            fprintf(stderr, "mpi_pingpong: needs at least 2 ranks\n");
        MPI_Finalize();
        return 1;
    }

    if (rank <= 1) {
        unsigned char *buf = malloc(max ? max : 1);
        unsigned char ack = 0;
        MPI_Request req[WINDOW];
        /* a real status array: MPICH's headers make gcc warn
         * (-Wstringop-overflow) on MPI_STATUSES_IGNORE in MPI_Waitall */
        MPI_Status st[WINDOW];
        int peer = 1 - rank;
        if (!buf) {
            fprintf(stderr, "mpi_pingpong: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        memset(buf, rank ? 0xb1 : 0xa0, max);

        if (rank == 0) {
            if (csv)
                printf("size_bytes,latency_us,bandwidth_MBps\n");
            else
                printf("# mpi_pingpong: %d ranks, window %d\n"
                       "%12s %12s %16s %8s %8s\n", nranks, WINDOW,
                       "size(B)", "lat(us)", "bw(MB/s)", "iters", "windows");
            fflush(stdout);
        }

        for (unsigned long size = min; size <= max; size = size ? size * 2 : 1) {
            unsigned long iters = scale(iters_opt, size, 10);
            unsigned long warm = scale(warm_opt, size, 2);
            unsigned long wins = bw_windows(iters);
            unsigned long wwarm = 1;
            int n = (int)size;
            double t0 = 0, lat = 0, bw = 0;

            /* ---- latency: ping-pong ---- */
            for (unsigned long i = 0; i < warm + iters; i++) {
                if (i == warm)
                    t0 = MPI_Wtime();
                if (rank == 0) {
                    MPI_Send(buf, n, MPI_BYTE, peer, TAG_LAT, MPI_COMM_WORLD);
                    MPI_Recv(buf, n, MPI_BYTE, peer, TAG_LAT, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(buf, n, MPI_BYTE, peer, TAG_LAT, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                    MPI_Send(buf, n, MPI_BYTE, peer, TAG_LAT, MPI_COMM_WORLD);
                }
            }
            lat = (MPI_Wtime() - t0) * 1e6 / (2.0 * (double)iters);

            /* ---- bandwidth: windowed one-way stream + 1-byte ack ---- */
            for (unsigned long w = 0; w < wwarm + wins; w++) {
                if (w == wwarm)
                    t0 = MPI_Wtime();
                if (rank == 0) {
                    for (int k = 0; k < WINDOW; k++)
                        MPI_Isend(buf, n, MPI_BYTE, peer, TAG_BW, MPI_COMM_WORLD,
                                  &req[k]);
                    MPI_Waitall(WINDOW, req, st);
                    MPI_Recv(&ack, 1, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                } else {
                    /* Like OSU's osu_bw, all receives of a window target the
                     * same buffer: the content is not looked at here. */
                    for (int k = 0; k < WINDOW; k++)
                        MPI_Irecv(buf, n, MPI_BYTE, peer, TAG_BW, MPI_COMM_WORLD,
                                  &req[k]);
                    MPI_Waitall(WINDOW, req, st);
                    MPI_Send(&ack, 1, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD);
                }
            }
            bw = (double)size * WINDOW * (double)wins / (MPI_Wtime() - t0) / 1e6;

            /* ---- payload check (untimed) ---- */
            if (rank == 0) {
                for (unsigned long i = 0; i < size; i++)
                    buf[i] = pattern(size, i, 0);
                MPI_Send(buf, n, MPI_BYTE, peer, TAG_CHECK, MPI_COMM_WORLD);
                MPI_Recv(buf, n, MPI_BYTE, peer, TAG_CHECK, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                for (unsigned long i = 0; i < size; i++)
                    if (buf[i] != pattern(size, i, 1))
                        check_abort("echo", size, i, buf[i], pattern(size, i, 1));
            } else {
                MPI_Recv(buf, n, MPI_BYTE, peer, TAG_CHECK, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                for (unsigned long i = 0; i < size; i++)
                    if (buf[i] != pattern(size, i, 0))
                        check_abort("ping", size, i, buf[i], pattern(size, i, 0));
                for (unsigned long i = 0; i < size; i++)
                    buf[i] = pattern(size, i, 1);
                MPI_Send(buf, n, MPI_BYTE, peer, TAG_CHECK, MPI_COMM_WORLD);
            }

            if (rank == 0) {
                if (csv)
                    printf("%lu,%.3f,%.2f\n", size, lat, bw);
                else
                    printf("%12lu %12.3f %16.2f %8lu %8lu\n", size, lat, bw,
                           iters, wins);
                fflush(stdout);
            }
            if (size && size > max / 2)
                break; /* next size would exceed MAX (or overflow) */
        }
        free(buf);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
