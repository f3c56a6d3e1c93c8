/*
 * zmq_pingpong.c - ZeroMQ (TCP) reference for pscomm's examples/pingpong.
 *
 * ps-lite moves its data with ZeroMQ over TCP, so this is "what ps-lite gets
 * today" on the same machine.  Same options, defaults, iteration scaling and
 * CSV as examples/pingpong and bench/mpi_pingpong.c:
 *
 *   zmq_pingpong [-m MIN] [-M MAX] [-i ITERS] [-w WARMUP] [--csv] [--port P]
 *       one command: forks the peer (rank 1) which binds tcp://127.0.0.1:P
 *       (P = 0, the default, picks a free port); rank 0 connects and prints.
 *   zmq_pingpong --server PORT                 (rank 1, binds all interfaces)
 *   zmq_pingpong --client HOST:PORT [options]  (rank 0, prints the results)
 *       two-process mode; the client sends its options to the server.
 *
 * Transport: one ZMQ_PAIR socket per side.  Sends are zero-copy
 * (zmq_msg_init_data on the application buffer, as ps-lite's ZMQVan does)
 * and receives keep the payload in the zmq_msg_t (no copy out), as ps-lite
 * does.
 *
 *   latency_us     half the round-trip time averaged over iters(size)
 *                  ping-pongs after warmup(size) untimed ones.
 *   bandwidth_MBps rank 0 sends a window of 64 messages of `size` bytes,
 *                  rank 1 receives them and replies with a 1-byte ack;
 *                  repeated windows(size) times; bytes / time in 10^6 B/s.
 *
 * Scaling (as in examples/pingpong.c; identical in mpi_pingpong.c):
 *   iters(size)   = ITERS if size <= 64 KiB, else max(10, ITERS*64KiB/size)
 *   warmup(size)  = WARMUP if size <= 64 KiB, else max(2, WARMUP*64KiB/size)
 *   windows(size) = max(1, iters(size) / 64), after 1 untimed warm-up window
 * i.e. the stream moves about as many messages as the ping-pong does.
 *
 * Payload check: after the timed loops one extra ping-pong per size carries
 * a size-dependent byte pattern that both sides verify (untimed).
 */
#define _POSIX_C_SOURCE 200809L

#include <zmq.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pingpong_common.h"
#define CFG_MAGIC 0x7a6d7170UL /* "zmqp" */

struct config {
    uint64_t magic, min, max, iters, warmup;
};

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [-m MIN] [-M MAX] [-i ITERS] [-w WARMUP] [--csv] [--port P]\n"
            "       %s --server PORT\n"
            "       %s --client HOST:PORT [-m MIN] [-M MAX] [-i ITERS] [-w WARMUP] [--csv]\n"
            "  -m MIN     smallest message size in bytes (default 1)\n"
            "  -M MAX     largest message size in bytes (default 4194304)\n"
            "  -i ITERS   iterations for sizes <= 64 KiB (default 1000)\n"
            "  -w WARMUP  warm-up iterations (default 100)\n"
            "  --csv      print size_bytes,latency_us,bandwidth_MBps\n",
            prog, prog, prog);
}

static void die(const char *what)
{
    fprintf(stderr, "zmq_pingpong[%d]: %s: %s\n", (int)getpid(), what,
            zmq_strerror(zmq_errno()));
    exit(1);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* zero-copy send of an application buffer that stays valid and unchanged
 * until the peer has acknowledged it (NULL free function => constant data) */
static void send_zc(void *sock, void *buf, size_t len)
{
    zmq_msg_t m;
    if (zmq_msg_init_data(&m, buf, len, NULL, NULL))
        die("zmq_msg_init_data");
    if (zmq_msg_send(&m, sock, 0) < 0)
        die("zmq_msg_send");
}

static void send_copy(void *sock, const void *buf, size_t len)
{
    if (zmq_send(sock, buf, len, 0) < 0)
        die("zmq_send");
}

/* receive one message, check its length, keep it in *m (caller closes) */
static void recv_msg(void *sock, zmq_msg_t *m, size_t want)
{
    if (zmq_msg_init(m))
        die("zmq_msg_init");
    if (zmq_msg_recv(m, sock, 0) < 0)
        die("zmq_msg_recv");
    if (zmq_msg_size(m) != want) {
        fprintf(stderr, "zmq_pingpong: got %zu bytes, expected %zu\n",
                zmq_msg_size(m), want);
        exit(2);
    }
}

static void recv_discard(void *sock, size_t want)
{
    zmq_msg_t m;
    recv_msg(sock, &m, want);
    zmq_msg_close(&m);
}

static void check(const unsigned char *p, unsigned long size, int who,
                  const char *what)
{
    for (unsigned long i = 0; i < size; i++)
        if (p[i] != pattern(size, i, who)) {
            fprintf(stderr, "zmq_pingpong: %s payload mismatch at size %lu "
                    "offset %lu: got 0x%02x want 0x%02x\n", what, size, i,
                    p[i], pattern(size, i, who));
            exit(2);
        }
}

/* rank 0 (prints) or rank 1 (echoes); `sock` is connected */
static int run(int rank, void *sock, struct config *cfg, int csv)
{
    unsigned char ack = 0;

    if (rank == 0) {
        send_copy(sock, cfg, sizeof *cfg);
    } else {
        zmq_msg_t m;
        recv_msg(sock, &m, sizeof *cfg);
        memcpy(cfg, zmq_msg_data(&m), sizeof *cfg);
        zmq_msg_close(&m);
        if (cfg->magic != CFG_MAGIC) {
            fprintf(stderr, "zmq_pingpong: bad handshake\n");
            return 2;
        }
    }

    unsigned char *buf = malloc(cfg->max ? cfg->max : 1);
    if (!buf) {
        fprintf(stderr, "zmq_pingpong: out of memory\n");
        return 1;
    }
    memset(buf, rank ? 0xb1 : 0xa0, cfg->max);

    if (rank == 0) {
        if (csv)
            printf("size_bytes,latency_us,bandwidth_MBps\n");
        else
            printf("# zmq_pingpong: ZMQ_PAIR over tcp, window %d\n"
                   "%12s %12s %16s %8s %8s\n", WINDOW,
                   "size(B)", "lat(us)", "bw(MB/s)", "iters", "windows");
        fflush(stdout);
    }

    for (unsigned long size = cfg->min; size <= cfg->max; size = size ? size * 2 : 1) {
        unsigned long iters = scale(cfg->iters, size, 10);
        unsigned long warm = scale(cfg->warmup, size, 2);
        unsigned long wins = bw_windows(iters);
        unsigned long wwarm = 1;
        double t0 = 0, lat, bw;

        /* ---- latency: ping-pong ---- */
        for (unsigned long i = 0; i < warm + iters; i++) {
            if (i == warm)
                t0 = now();
            if (rank == 0) {
                send_zc(sock, buf, size);
                recv_discard(sock, size);
            } else {
                recv_discard(sock, size);
                send_zc(sock, buf, size);
            }
        }
        lat = (now() - t0) * 1e6 / (2.0 * (double)iters);

        /* ---- bandwidth: windowed one-way stream + 1-byte ack ---- */
        for (unsigned long w = 0; w < wwarm + wins; w++) {
            if (w == wwarm)
                t0 = now();
            if (rank == 0) {
                for (int k = 0; k < WINDOW; k++)
                    send_zc(sock, buf, size);
                recv_discard(sock, 1);
            } else {
                for (int k = 0; k < WINDOW; k++)
                    recv_discard(sock, size);
                send_copy(sock, &ack, 1);
            }
        }
        bw = (double)size * WINDOW * (double)wins / (now() - t0) / 1e6;

        /* ---- payload check (untimed; all earlier zero-copy sends have been
         * consumed by the peer, so buf may be rewritten) ---- */
        zmq_msg_t m;
        if (rank == 0) {
            for (unsigned long i = 0; i < size; i++)
                buf[i] = pattern(size, i, 0);
            send_copy(sock, buf, size);
            recv_msg(sock, &m, size);
            check(zmq_msg_data(&m), size, 1, "echo");
            zmq_msg_close(&m);
            if (csv)
                printf("%lu,%.3f,%.2f\n", size, lat, bw);
            else
                printf("%12lu %12.3f %16.2f %8lu %8lu\n", size, lat, bw,
                       iters, wins);
            fflush(stdout);
        } else {
            recv_msg(sock, &m, size);
            check(zmq_msg_data(&m), size, 0, "ping");
            zmq_msg_close(&m);
            for (unsigned long i = 0; i < size; i++)
                buf[i] = pattern(size, i, 1);
            send_copy(sock, buf, size);
        }
        if (size && size > cfg->max / 2)
            break; /* next size would exceed MAX (or overflow) */
    }

    /* final handshake so neither side closes with data in flight */
    if (rank == 0) {
        send_copy(sock, &ack, 1);
        recv_discard(sock, 1);
    } else {
        recv_discard(sock, 1);
        send_copy(sock, &ack, 1);
    }
    free(buf);
    return 0;
}

static void *make_socket(void *ctx)
{
    void *s = zmq_socket(ctx, ZMQ_PAIR);
    int linger = 1000;
    if (!s)
        die("zmq_socket");
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    return s;
}

/* rank 1: bind, optionally report the bound port through fd, then serve */
static int serve(const char *endpoint, int report_fd)
{
    void *ctx = zmq_ctx_new();
    void *sock;
    struct config cfg;
    int rc;

    if (!ctx)
        die("zmq_ctx_new");
    sock = make_socket(ctx);
    if (zmq_bind(sock, endpoint))
        die("zmq_bind");
    if (report_fd >= 0) {
        char ep[256];
        size_t len = sizeof ep;
        if (zmq_getsockopt(sock, ZMQ_LAST_ENDPOINT, ep, &len))
            die("zmq_getsockopt(ZMQ_LAST_ENDPOINT)");
        if (write(report_fd, ep, strlen(ep) + 1) < 0)
            return 1;
        close(report_fd);
    }
    rc = run(1, sock, &cfg, 0);
    zmq_close(sock);
    zmq_ctx_term(ctx);
    return rc;
}

static int client(const char *endpoint, struct config *cfg, int csv)
{
    void *ctx = zmq_ctx_new();
    void *sock;
    int rc;

    if (!ctx)
        die("zmq_ctx_new");
    sock = make_socket(ctx);
    if (zmq_connect(sock, endpoint))
        die("zmq_connect");
    rc = run(0, sock, cfg, csv);
    zmq_close(sock);
    zmq_ctx_term(ctx);
    return rc;
}

int main(int argc, char **argv)
{
    unsigned long min = 1, max = 4UL << 20, iters = 1000, warm = 100, port = 0;
    const char *server_port = NULL, *client_addr = NULL;
    int csv = 0, port_set = 0;
    char ep[300];

    for (int a = 1; a < argc; a++) {
        const char *o = argv[a];
        unsigned long *dst = NULL;
        if (!strcmp(o, "--csv")) { csv = 1; continue; }
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) { usage(argv[0]); return 0; }
        if ((!strcmp(o, "--server") || !strcmp(o, "--client")) && a + 1 < argc) {
            if (o[2] == 's') server_port = argv[++a]; else client_addr = argv[++a];
            continue;
        }
        if (!strcmp(o, "-m")) dst = &min;
        else if (!strcmp(o, "-M")) dst = &max;
        else if (!strcmp(o, "-i")) dst = &iters;
        else if (!strcmp(o, "-w")) dst = &warm;
        else if (!strcmp(o, "--port")) { dst = &port; port_set = 1; }
        if (!dst || a + 1 >= argc || parse_size(argv[a + 1], dst)) {
            fprintf(stderr, "zmq_pingpong: bad argument '%s'\n", o);
            usage(argv[0]);
            return 1;
        }
        a++;
    }
    if (max < min || max > (1UL << 30) || iters == 0 || port > 65535) {
        fprintf(stderr, "zmq_pingpong: need MIN <= MAX <= 1 GiB, ITERS >= 1\n");
        return 1;
    }
    struct config cfg = { CFG_MAGIC, min, max, iters, warm };

    if (server_port) {
        snprintf(ep, sizeof ep, "tcp://*:%s", server_port);
        return serve(ep, -1);
    }
    if (client_addr) {
        snprintf(ep, sizeof ep, "tcp://%s", client_addr);
        return client(ep, &cfg, csv);
    }

    /* single invocation: fork the peer before any ZeroMQ state exists */
    int pfd[2];
    if (pipe(pfd)) {
        perror("pipe");
        return 1;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        close(pfd[0]);
        if (port_set)
            snprintf(ep, sizeof ep, "tcp://127.0.0.1:%lu", port);
        else
            snprintf(ep, sizeof ep, "tcp://127.0.0.1:*");
        _exit(serve(ep, pfd[1]));
    }
    close(pfd[1]);
    size_t got = 0;
    ssize_t n;
    while (got < sizeof ep - 1 && (n = read(pfd[0], ep + got, sizeof ep - 1 - got)) > 0)
        got += (size_t)n;
    ep[got] = '\0';
    close(pfd[0]);
    if (got == 0) {
        fprintf(stderr, "zmq_pingpong: peer failed to start\n");
        waitpid(pid, NULL, 0);
        return 1;
    }
    int rc = client(ep, &cfg, csv);
    int st = 0;
    if (waitpid(pid, &st, 0) < 0) {
        perror("waitpid");
        return 1;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "zmq_pingpong: peer failed (status 0x%x)\n", st);
        return rc ? rc : 1;
    }
    return rc;
}
