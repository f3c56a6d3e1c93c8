/*
 * zmq_pingpong.c - ZeroMQ reference for pscomm's examples/pingpong, with the
 * socket layout and message framing of ps-lite's ZMQ van.
 *
 * ps-lite moves its data with ZeroMQ, so this is roughly "what ps-lite gets
 * today" on the same machine.  Same options, defaults, iteration scaling,
 * CSV and payload check as examples/pingpong and bench/mpi_pingpong.c:
 *
 *   zmq_pingpong [-m MIN] [-M MAX] [-i ITERS] [-w WARMUP] [--csv]
 *                [--transport tcp|ipc]
 *
 * One command runs both sides: it forks its peer (rank 1) before any ZeroMQ
 * state exists, and rank 0 prints the results.
 *
 * Sockets, as ps-lite's van arranges them: each process binds one
 * ZMQ_ROUTER, on which it only receives, and connects one ZMQ_DEALER, on
 * which it only sends, to the peer's ROUTER.  The DEALER carries the routing
 * identity "ps<rank>" (ps-lite uses the node id).  Rank 0's messages thus go
 * DEALER "ps0" -> rank 1's ROUTER, and the replies DEALER "ps1" -> rank 0's
 * ROUTER.  Both sides bind first, swap their bound endpoints through two
 * pipes, then connect.  ZMQ_SNDHWM/ZMQ_RCVHWM are 0 (unlimited), so a
 * 64-message window is never held back by a high-water mark.
 *   --transport tcp  (default) binds tcp://127.0.0.1:*; ZeroMQ picks the
 *                    port, read back with ZMQ_LAST_ENDPOINT.
 *   --transport ipc  binds ipc://$TMPDIR/zmq_pingpong.<pid>.<rank> ($TMPDIR
 *                    defaults to /tmp, <pid> is rank 0's); the socket files
 *                    are removed at exit, also after errors and on
 *                    SIGINT/SIGTERM/SIGHUP.
 *
 * Messages are multipart, the way ps-lite frames them:
 *   meta  24 bytes, copied, sent with ZMQ_SNDMORE: struct meta below
 *         (magic, payload size, per-direction sequence number from 0);
 *   data  the payload, zero-copy: zmq_msg_init_data on the application
 *         buffer with no free function.  This is safe because a buffer is
 *         only rewritten after the peer has answered a later message, so
 *         ZeroMQ's I/O thread is done reading it.
 * A zero-size payload is the meta frame alone (no empty data frame), which
 * is how a message without data looks on the wire.  The ROUTER hands the
 * receiver the sender's identity frame first; the receiver checks the
 * identity, the meta frame (length, magic, size, sequence number) and the
 * data frame's length and keeps the payload in its zmq_msg_t, without
 * copying it out.  A malformed message makes the program exit 2.
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
 *
 * Failures: every ZeroMQ and system call is checked.  A blocked receive
 * wakes up once a second (ZMQ_RCVTIMEO; this costs one clock read per
 * blocking receive) to check that the peer process still lives, so a failure
 * on either side ends both with a non-zero status; rank 0 reaps rank 1 and
 * reports how it ended.
 */
#define _POSIX_C_SOURCE 200809L

#include <zmq.h>

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
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
#define META_MAGIC 0x6d657461U /* "meta" */
#define MAX_SIZE (1UL << 30)
#define LINGER_MS 1000
#define LIVENESS_MS 1000 /* how often a blocked receive checks the peer */
#define EP_LEN 256

/* The run's parameters, sent by rank 0 as the first message. */
struct config {
    uint64_t magic, min, max, iters, warmup;
};

/* The first frame of every message: 24 bytes, host byte order. */
struct meta {
    uint32_t magic;    /* META_MAGIC */
    uint32_t reserved; /* 0 */
    uint64_t size;     /* payload bytes; 0 = no data frame follows */
    uint64_t seq;      /* number of earlier messages in this direction */
};
typedef char meta_is_24_bytes[sizeof(struct meta) == 24 ? 1 : -1];

/* Command-line options. */
struct opts {
    struct config cfg;
    int csv;
    int ipc; /* 0: tcp, 1: ipc */
};

/* One process's end: its ROUTER (receives), its DEALER (sends). */
struct side {
    int rank;
    void *ctx, *router, *dealer;
    char peer_id[8]; /* identity frame that the peer's messages carry */
    uint64_t tx_seq, rx_seq;
};

/* What exit paths and signal handlers need; set before and after fork. */
static struct {
    int rank;         /* 0 in the parent, 1 in the forked peer */
    pid_t parent;     /* rank 0's pid */
    pid_t child;      /* rank 1's pid, in rank 0 until reaped; else 0 */
    char ipc[2][EP_LEN]; /* ipc socket file of rank 0 / 1; "" for tcp */
} g;

/* The 1-byte payload of acks; never written, so it may be sent zero-copy. */
static unsigned char ack_byte;

/* Print the usage text to stderr. */
static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [-m MIN] [-M MAX] [-i ITERS] [-w WARMUP] [--csv]\n"
            "          [--transport tcp|ipc]\n"
            "Ping-pong over ZeroMQ between this process and a forked peer,\n"
            "using ps-lite's ZMQ van layout: each side binds a ROUTER it\n"
            "receives on and connects a DEALER (identity ps0/ps1) to the\n"
            "peer's ROUTER; each message is a 24-byte meta frame plus a\n"
            "zero-copy data frame.\n"
            "  -m MIN     smallest message size in bytes (default 1)\n"
            "  -M MAX     largest message size in bytes (default 4194304)\n"
            "  -i ITERS   iterations for sizes <= 64 KiB (default 1000)\n"
            "  -w WARMUP  warm-up iterations (default 100)\n"
            "  --csv      print size_bytes,latency_us,bandwidth_MBps\n"
            "  --transport tcp  bind tcp://127.0.0.1 on a free port (default)\n"
            "  --transport ipc  bind ipc://$TMPDIR/zmq_pingpong.<pid>.<rank>\n"
            "                   ($TMPDIR defaults to /tmp)\n",
            prog);
}

/* Print "zmq_pingpong[pid]: <message>" and exit with `status`. */
static void fail(int status, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "zmq_pingpong[%d]: ", (int)getpid());
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(status);
}

/* Like fail(1, ...), with ": <errno string>" appended (zmq_strerror also
 * covers system errno values). */
static void die(const char *fmt, ...)
{
    int err = zmq_errno();
    va_list ap;
    fprintf(stderr, "zmq_pingpong[%d]: ", (int)getpid());
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, ": %s\n", zmq_strerror(err));
    exit(1);
}

/* Remove the ipc socket files this process answers for: rank 0 both (its
 * child is gone or going), rank 1 its own.  Async-signal-safe. */
static void remove_ipc_files(void)
{
    for (int r = g.rank; r < 2; r++)
        if (g.ipc[r][0])
            unlink(g.ipc[r]);
}

/* atexit handler: on a failure in rank 0 the peer may still be running or
 * blocked, so stop and reap it; then remove the socket files. */
static void at_exit(void)
{
    if (g.rank == 0 && g.child > 0) {
        kill(g.child, SIGTERM);
        waitpid(g.child, NULL, 0);
        g.child = 0;
    }
    remove_ipc_files();
}

/* SIGINT/SIGTERM/SIGHUP: clean up, then die of the signal as usual. */
static void on_signal(int sig)
{
    remove_ipc_files();
    if (g.rank == 0 && g.child > 0)
        kill(g.child, SIGTERM);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Install the exit and signal handlers (inherited by the forked peer).
 * SIGPIPE is ignored so a dead peer shows up as EPIPE on the pipes. */
static void install_handlers(void)
{
    static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        if (sigaction(sigs[i], &sa, NULL))
            die("sigaction");
    signal(SIGPIPE, SIG_IGN);
    if (atexit(at_exit))
        fail(1, "atexit failed");
}

/* Describe a peer that ended with wait status `st` on stderr.  Returns
 * its exit status (2 = bad message), or 1 if a signal ended it. */
static int report_peer(int st)
{
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    if (WIFEXITED(st)) {
        fprintf(stderr, "zmq_pingpong: peer (rank 1) exited with status %d\n",
                WEXITSTATUS(st));
        return WEXITSTATUS(st);
    }
    if (WIFSIGNALED(st))
        fprintf(stderr, "zmq_pingpong: peer (rank 1) killed by signal %d\n",
                WTERMSIG(st));
    else
        fprintf(stderr, "zmq_pingpong: peer (rank 1) failed (status 0x%x)\n",
                st);
    return 1;
}

/* Called while a receive waits: returns if the peer process still runs,
 * else exits nonzero (rank 0 reaps it and passes on its failure status). */
static void check_peer(void)
{
    int st;

    if (g.rank == 1) {
        if (getppid() == g.parent)
            return;
        if (g.ipc[0][0])
            unlink(g.ipc[0]); /* rank 0 died without removing it */
        fail(1, "rank 0 exited; giving up");
    }
    pid_t r = waitpid(g.child, &st, WNOHANG);
    if (r == 0)
        return;
    if (r < 0)
        die("waitpid");
    g.child = 0;
    int rc = report_peer(st);
    fail(rc ? rc : 1, "peer ended in the middle of the run");
}

/* Monotonic time in seconds. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* zmq_msg_close that exits on failure. */
static void close_msg(zmq_msg_t *m)
{
    if (zmq_msg_close(m))
        die("zmq_msg_close");
}

/* Send frame *m on sock (ZeroMQ takes it over), retrying on EINTR. */
static void send_frame(void *sock, zmq_msg_t *m, int flags, const char *what)
{
    while (zmq_msg_send(m, sock, flags) < 0)
        if (zmq_errno() != EINTR)
            die("zmq_msg_send(%s)", what);
}

/* Send one message on s->dealer: a copied meta frame, then unless len is 0
 * the payload zero-copy.  buf must stay valid and unchanged until the peer
 * has answered a later message: ZeroMQ's I/O thread reads it after this
 * returns, and the NULL free function marks it as constant data. */
static void send_msg(struct side *s, void *buf, size_t len)
{
    struct meta h = { META_MAGIC, 0, len, s->tx_seq++ };
    zmq_msg_t m;

    if (zmq_msg_init_size(&m, sizeof h))
        die("zmq_msg_init_size");
    memcpy(zmq_msg_data(&m), &h, sizeof h);
    send_frame(s->dealer, &m, len ? ZMQ_SNDMORE : 0, "meta");
    if (len == 0)
        return;
    if (zmq_msg_init_data(&m, buf, len, NULL, NULL))
        die("zmq_msg_init_data");
    send_frame(s->dealer, &m, 0, "data");
}

/* Receive the next frame on s->router into *m (initialised here; the caller
 * closes it).  Blocks as long as the peer process lives. */
static void recv_frame(struct side *s, zmq_msg_t *m)
{
    if (zmq_msg_init(m))
        die("zmq_msg_init");
    while (zmq_msg_recv(m, s->router, 0) < 0) {
        if (zmq_errno() != EAGAIN && zmq_errno() != EINTR)
            die("zmq_msg_recv");
        check_peer();
    }
}

/* Exit 2 unless frame *m (called `what`) is `len` bytes long and is
 * followed by more frames exactly when `more` is set. */
static void check_frame(zmq_msg_t *m, const char *what, size_t len, int more)
{
    if (zmq_msg_size(m) != len)
        fail(2, "%s frame is %zu bytes, expected %zu", what,
             zmq_msg_size(m), len);
    if (!zmq_msg_more(m) != !more)
        fail(2, "%s frame %s", what, more ? "is the last, expected more"
                                          : "is followed by more frames");
}

/* Receive the identity frame and exit 2 unless it names the peer. */
static void recv_identity(struct side *s)
{
    size_t n = strlen(s->peer_id);
    zmq_msg_t m;

    recv_frame(s, &m);
    check_frame(&m, "identity", n, 1);
    if (memcmp(zmq_msg_data(&m), s->peer_id, n))
        fail(2, "identity frame is '%.*s', expected '%s'", (int)n,
             (const char *)zmq_msg_data(&m), s->peer_id);
    close_msg(&m);
}

/* Receive the meta frame and exit 2 unless it announces `want` payload
 * bytes with the next sequence number (and a data frame iff want > 0). */
static void recv_meta(struct side *s, size_t want)
{
    struct meta h;
    zmq_msg_t m;

    recv_frame(s, &m);
    if (zmq_msg_size(&m) != sizeof h)
        fail(2, "meta frame is %zu bytes, expected %zu", zmq_msg_size(&m),
             sizeof h);
    memcpy(&h, zmq_msg_data(&m), sizeof h);
    if (h.magic != META_MAGIC || h.size != want || h.seq != s->rx_seq)
        fail(2, "bad meta: magic 0x%08" PRIx32 " size %" PRIu64 " seq %"
             PRIu64 ", expected 0x%08x size %zu seq %" PRIu64, h.magic,
             h.size, h.seq, META_MAGIC, want, s->rx_seq);
    check_frame(&m, "meta", sizeof h, want > 0);
    close_msg(&m);
    s->rx_seq++;
}

/* Receive one message of `want` payload bytes from the peer; the payload
 * stays in *data (an empty message if want is 0), which the caller reads
 * in place and closes.  Exits 2 on a malformed message. */
static void recv_msg(struct side *s, zmq_msg_t *data, size_t want)
{
    recv_identity(s);
    recv_meta(s, want);
    if (want == 0) {
        if (zmq_msg_init(data))
            die("zmq_msg_init");
        return;
    }
    recv_frame(s, data);
    check_frame(data, "data", want, 0);
}

/* Receive and check one message of `want` bytes, then drop it. */
static void recv_discard(struct side *s, size_t want)
{
    zmq_msg_t m;
    recv_msg(s, &m, want);
    close_msg(&m);
}

/* Fill buf[0..size) with the check pattern of rank `who`. */
static void fill(unsigned char *buf, unsigned long size, int who)
{
    for (unsigned long i = 0; i < size; i++)
        buf[i] = pattern(size, i, who);
}

/* Exit 2 unless p[0..size) holds rank `who`'s check pattern. */
static void check(const unsigned char *p, unsigned long size, int who,
                  const char *what)
{
    for (unsigned long i = 0; i < size; i++)
        if (p[i] != pattern(size, i, who))
            fail(2, "%s payload mismatch at size %lu offset %lu: got 0x%02x "
                 "want 0x%02x", what, size, i, p[i], pattern(size, i, who));
}

/* Rank 0 sends the config and waits for rank 1's ack; rank 1 receives and
 * validates it into *cfg (exit 2 if bad) and acks.  Once the ack is in,
 * both DEALERs are connected and messages flow both ways. */
static void handshake(struct side *s, struct config *cfg)
{
    zmq_msg_t m;

    if (s->rank == 0) {
        send_msg(s, cfg, sizeof *cfg);
        recv_discard(s, 1);
        return;
    }
    recv_msg(s, &m, sizeof *cfg);
    memcpy(cfg, zmq_msg_data(&m), sizeof *cfg);
    close_msg(&m);
    if (cfg->magic != CFG_MAGIC || cfg->min > cfg->max ||
        cfg->max > MAX_SIZE || cfg->iters == 0)
        fail(2, "bad handshake");
    send_msg(s, &ack_byte, 1);
}

/* The timed ping-pong of one size; returns the one-way latency in us. */
static double ping_pong(struct side *s, void *buf, unsigned long size,
                        unsigned long warm, unsigned long iters)
{
    double t0 = now();

    for (unsigned long i = 0; i < warm + iters; i++) {
        if (i == warm)
            t0 = now();
        if (s->rank == 0) {
            send_msg(s, buf, size);
            recv_discard(s, size);
        } else {
            recv_discard(s, size);
            send_msg(s, buf, size);
        }
    }
    return (now() - t0) * 1e6 / (2.0 * (double)iters);
}

/* The timed windowed stream of one size (after one untimed window);
 * returns the bandwidth in 10^6 B/s. */
static double stream(struct side *s, void *buf, unsigned long size,
                     unsigned long wins)
{
    double t0 = now();

    for (unsigned long w = 0; w < 1 + wins; w++) {
        if (w == 1)
            t0 = now();
        if (s->rank == 0) {
            for (int k = 0; k < WINDOW; k++)
                send_msg(s, buf, size);
            recv_discard(s, 1);
        } else {
            for (int k = 0; k < WINDOW; k++)
                recv_discard(s, size);
            send_msg(s, &ack_byte, 1);
        }
    }
    return (double)size * WINDOW * (double)wins / (now() - t0) / 1e6;
}

/* Untimed payload check of one size: rank 0 sends its pattern, rank 1
 * verifies it and answers with its own, which rank 0 verifies.  Rewriting
 * buf is safe: the peer has answered every earlier send from it. */
static void check_round(struct side *s, unsigned char *buf,
                        unsigned long size)
{
    zmq_msg_t m;

    if (s->rank == 0) {
        fill(buf, size, 0);
        send_msg(s, buf, size);
        recv_msg(s, &m, size);
        check(zmq_msg_data(&m), size, 1, "echo");
    } else {
        recv_msg(s, &m, size);
        check(zmq_msg_data(&m), size, 0, "ping");
        fill(buf, size, 1);
        send_msg(s, buf, size);
    }
    close_msg(&m);
}

/* Rank 0's output header. */
static void print_header(int csv, int ipc)
{
    if (csv)
        printf("size_bytes,latency_us,bandwidth_MBps\n");
    else
        printf("# zmq_pingpong: DEALER/ROUTER over %s, window %d\n"
               "%12s %12s %16s %8s %8s\n", ipc ? "ipc" : "tcp", WINDOW,
               "size(B)", "lat(us)", "bw(MB/s)", "iters", "windows");
    fflush(stdout);
}

/* Rank 0's result line for one size. */
static void print_row(int csv, unsigned long size, double lat, double bw,
                      unsigned long iters, unsigned long wins)
{
    if (csv)
        printf("%lu,%.3f,%.2f\n", size, lat, bw);
    else
        printf("%12lu %12.3f %16.2f %8lu %8lu\n", size, lat, bw, iters,
               wins);
    fflush(stdout);
}

/* The whole benchmark on one side (rank 1 learns cfg from rank 0);
 * returns when both sides are done, exits on any failure. */
static void run(struct side *s, struct config *cfg, int csv, int ipc)
{
    handshake(s, cfg);
    unsigned char *buf = malloc(cfg->max ? cfg->max : 1);
    if (!buf)
        fail(1, "out of memory");
    memset(buf, s->rank ? 0xb1 : 0xa0, cfg->max);
    if (s->rank == 0)
        print_header(csv, ipc);

    for (unsigned long size = cfg->min; size <= cfg->max;
         size = size ? size * 2 : 1) {
        unsigned long iters = scale(cfg->iters, size, 10);
        unsigned long warm = scale(cfg->warmup, size, 2);
        unsigned long wins = bw_windows(iters);
        double lat = ping_pong(s, buf, size, warm, iters);
        double bw = stream(s, buf, size, wins);

        check_round(s, buf, size);
        if (s->rank == 0)
            print_row(csv, size, lat, bw, iters, wins);
        if (size && size > cfg->max / 2)
            break; /* next size would exceed MAX (or overflow) */
    }

    /* final exchange so neither side closes with data in flight */
    if (s->rank == 0) {
        send_msg(s, &ack_byte, 1);
        recv_discard(s, 1);
    } else {
        recv_discard(s, 1);
        send_msg(s, &ack_byte, 1);
    }
    free(buf);
}

/* zmq_setsockopt of an int option that exits on failure. */
static void set_int(void *sock, int opt, int val, const char *name)
{
    if (zmq_setsockopt(sock, opt, &val, sizeof val))
        die("zmq_setsockopt(%s)", name);
}

/* A new socket of `type` with the options both socket kinds share. */
static void *make_socket(void *ctx, int type)
{
    void *sock = zmq_socket(ctx, type);

    if (!sock)
        die("zmq_socket");
    set_int(sock, ZMQ_LINGER, LINGER_MS, "ZMQ_LINGER");
    set_int(sock, ZMQ_SNDHWM, 0, "ZMQ_SNDHWM");
    set_int(sock, ZMQ_RCVHWM, 0, "ZMQ_RCVHWM");
    return sock;
}

/* Create s->router, bind it (tcp on a free port or this rank's ipc file)
 * and store the endpoint actually bound in ep[EP_LEN]. */
static void bind_router(struct side *s, int ipc, char *ep)
{
    size_t len = EP_LEN;

    s->router = make_socket(s->ctx, ZMQ_ROUTER);
    set_int(s->router, ZMQ_RCVTIMEO, LIVENESS_MS, "ZMQ_RCVTIMEO");
    if (ipc)
        snprintf(ep, EP_LEN, "ipc://%s", g.ipc[s->rank]);
    else
        snprintf(ep, EP_LEN, "tcp://127.0.0.1:*");
    if (zmq_bind(s->router, ep))
        die("zmq_bind(%s)", ep);
    if (zmq_getsockopt(s->router, ZMQ_LAST_ENDPOINT, ep, &len))
        die("zmq_getsockopt(ZMQ_LAST_ENDPOINT)");
}

/* Write all of buf[0..len) to fd, then close fd; exits 1 on failure. */
static void write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            die("write to peer pipe");
        buf += n;
        len -= (size_t)n;
    }
    if (close(fd))
        die("close");
}

/* Read the peer's NUL-terminated endpoint from fd until EOF into
 * ep[EP_LEN], then close fd; exits 1 if the peer sent none. */
static void read_endpoint(int fd, char *ep)
{
    size_t got = 0;
    ssize_t n;

    while (got < EP_LEN && (n = read(fd, ep + got, EP_LEN - got)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            die("read from peer pipe");
        got += (size_t)n;
    }
    close(fd);
    if (got == 0 || ep[got - 1] != '\0')
        fail(1, "peer failed to start (no endpoint received)");
}

/* Set up one side: context, bound ROUTER, endpoint swap with the peer over
 * the pipes (wfd to it, rfd from it; both closed here), then the DEALER
 * with identity "ps<rank>" connected to the peer's ROUTER. */
static void open_side(struct side *s, int rank, int ipc, int rfd, int wfd)
{
    char mine[EP_LEN], peer[EP_LEN], id[8];

    memset(s, 0, sizeof *s);
    s->rank = rank;
    snprintf(s->peer_id, sizeof s->peer_id, "ps%d", 1 - rank);
    s->ctx = zmq_ctx_new();
    if (!s->ctx)
        die("zmq_ctx_new");
    bind_router(s, ipc, mine);
    write_all(wfd, mine, strlen(mine) + 1);
    read_endpoint(rfd, peer);

    s->dealer = make_socket(s->ctx, ZMQ_DEALER);
    snprintf(id, sizeof id, "ps%d", rank);
    if (zmq_setsockopt(s->dealer, ZMQ_IDENTITY, id, strlen(id)))
        die("zmq_setsockopt(ZMQ_IDENTITY)");
    if (zmq_connect(s->dealer, peer))
        die("zmq_connect(%s)", peer);
}

/* Close both sockets and terminate the context. */
static void close_side(struct side *s)
{
    if (zmq_close(s->dealer) || zmq_close(s->router))
        die("zmq_close");
    while (zmq_ctx_term(s->ctx))
        if (zmq_errno() != EINTR)
            die("zmq_ctx_term");
}

/* One rank's life after the fork: set up, run, tear down. */
static void side_main(int rank, struct opts *o, int rfd, int wfd)
{
    struct side s;

    open_side(&s, rank, o->ipc, rfd, wfd);
    run(&s, &o->cfg, o->csv, o->ipc);
    close_side(&s);
}

/* Parse argv into *o.  Returns -1 to go on, else the exit status (0 after
 * --help, 1 after a bad argument, with a message). */
static int parse_opts(int argc, char **argv, struct opts *o)
{
    unsigned long min = 1, max = 4UL << 20, iters = 1000, warm = 100;

    memset(o, 0, sizeof *o);
    for (int a = 1; a < argc; a++) {
        const char *opt = argv[a];
        unsigned long *dst = NULL;
        if (!strcmp(opt, "--csv")) { o->csv = 1; continue; }
        if (!strcmp(opt, "-h") || !strcmp(opt, "--help")) {
            usage(argv[0]);
            return 0;
        }
        if (!strcmp(opt, "--transport") && a + 1 < argc) {
            const char *t = argv[++a];
            if (strcmp(t, "tcp") && strcmp(t, "ipc")) {
                fprintf(stderr, "zmq_pingpong: unknown transport '%s' "
                        "(want tcp or ipc)\n", t);
                usage(argv[0]);
                return 1;
            }
            o->ipc = !strcmp(t, "ipc");
            continue;
        }
        if (!strcmp(opt, "-m")) dst = &min;
        else if (!strcmp(opt, "-M")) dst = &max;
        else if (!strcmp(opt, "-i")) dst = &iters;
        else if (!strcmp(opt, "-w")) dst = &warm;
        if (!dst || a + 1 >= argc || parse_size(argv[a + 1], dst)) {
            fprintf(stderr, "zmq_pingpong: bad argument '%s'\n", opt);
            usage(argv[0]);
            return 1;
        }
        a++;
    }
    if (max < min || max > MAX_SIZE || iters == 0) {
        fprintf(stderr, "zmq_pingpong: need MIN <= MAX <= 1 GiB, ITERS >= 1\n");
        return 1;
    }
    o->cfg = (struct config){ CFG_MAGIC, min, max, iters, warm };
    return -1;
}

/* Name the two ipc socket files after our pid; exits 1 if too long. */
static void name_ipc_files(void)
{
    const char *dir = getenv("TMPDIR");

    if (!dir || !*dir)
        dir = "/tmp";
    for (int r = 0; r < 2; r++) {
        int n = snprintf(g.ipc[r], EP_LEN - 6, "%s/zmq_pingpong.%ld.%d", dir,
                         (long)g.parent, r);
        if (n < 0 || n >= EP_LEN - 6) /* room for "ipc://" */
            fail(1, "TMPDIR too long for an ipc endpoint");
    }
}

/* Rank 0 after its run: wait for rank 1; 0 if it exited cleanly, else
 * nonzero (see report_peer). */
static int reap_peer(void)
{
    int st;

    while (waitpid(g.child, &st, 0) < 0)
        if (errno != EINTR)
            die("waitpid");
    g.child = 0;
    return report_peer(st);
}

int main(int argc, char **argv)
{
    struct opts o;
    int rc = parse_opts(argc, argv, &o);
    int to_child[2], to_parent[2];

    if (rc >= 0)
        return rc;
    g.parent = getpid();
    if (o.ipc)
        name_ipc_files();
    install_handlers();
    if (pipe(to_child) || pipe(to_parent))
        die("pipe");
    fflush(stdout);

    /* fork before any ZeroMQ state (threads, sockets) exists */
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        g.rank = 1;
        close(to_child[1]);
        close(to_parent[0]);
        side_main(1, &o, to_child[0], to_parent[1]);
        exit(0);
    }
    g.child = pid;
    close(to_child[0]);
    close(to_parent[1]);
    side_main(0, &o, to_parent[0], to_child[1]);
    return reap_peer();
}
