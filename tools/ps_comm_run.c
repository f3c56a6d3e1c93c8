/*
 * ps_comm_run: start N local ranks of a pscomm program and supervise them.
 *
 * This is the launcher the test suite uses, and the easiest way to try
 * pscomm on one machine.  It gives every rank the environment pscomm's
 * bootstrap reads (PS_COMM_RANK, PS_COMM_SIZE, PS_COMM_ROOT, a random
 * PS_COMM_JOB_KEY unless one is set and, on request,
 * FI_PROVIDER and PS_COMM_BIND), then treats the ranks as one job: the first rank that fails,
 * a timeout or an interrupt stops all of them, so a broken test can neither
 * leave processes behind nor hang the build.  Each rank runs in its own
 * process group, so stopping it also reaches whatever it started, and dies
 * with the launcher even if the launcher is killed.  Faults are named
 * precisely: the rank that failed first and how (the real signal, as the
 * Omni-Path/TrueScale PSM backtrace handlers are switched off), what the
 * others did after it, and which ranks are stopped rather than running.
 *
 * The launcher does not use the library on purpose: it has to keep working
 * while the library is broken, which is exactly when it matters most.
 *
 * All waiting happens in one poll() loop.  Signal handlers only write the
 * signal number to a self-pipe; with --tag-output the ranks' output pipes
 * are polled alongside it; pending deadlines become the poll timeout.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum {
	EXIT_USAGE = 2,
	EXIT_SKIP = 77,		/* automake's "test skipped" */
	EXIT_TIMEOUT = 124,	/* as timeout(1) */
	EXIT_NOEXEC = 127,	/* as the shell */
	MAX_RANKS = 4096,
	STREAM_MIN = 4096,	/* first size of a line buffer */
	STREAM_MAX = 65536,	/* longer lines are passed on in pieces */
};

#define KILL_GRACE_S 2.0	/* from SIGTERM to SIGKILL */
#define FAIL_GRACE_S 3.0	/* default time from a failure to SIGTERM */
#define SKIP_GRACE_S 2.0	/* for the other ranks to skip as well */
#define DRAIN_S 1.0		/* bound on reading output after the end */
#define NO_TIME 0.0		/* unset deadline; CLOCK_MONOTONIC is past it */
#define LABEL_MAX 80		/* how a rank ended, or its state, as text */

static const char progname[] = "ps_comm_run";

struct options {
	int nranks;
	const char *provider;	/* NULL: leave FI_PROVIDER alone */
	const char *bind;	/* NULL: leave PS_COMM_BIND alone */
	double timeout;		/* seconds; 0: none */
	double grace;		/* seconds from a failure to SIGTERM */
	bool tag_output;
	char **argv;		/* PROG and its arguments */
};

/* One output pipe of a rank, with --tag-output. */
struct stream {
	int fd;			/* read end; -1 when closed or unused */
	int dest;		/* our own fd the lines go to */
	bool bol;		/* next byte starts a line: needs the prefix */
	char *buf;		/* the incomplete line read so far */
	size_t len, cap;
	char prefix[16];	/* "[R] " */
	size_t plen;
};

struct rank {
	int id;
	pid_t pid;		/* also its process group */
	bool running;		/* started and not reaped yet */
	int stop_sig;		/* the signal that stopped it; 0: not stopped */
	int stop_at_fail;	/* stop_sig when the first failure came */
	int sent;		/* the last signal we sent it, 0 if none */
	int status;		/* its wait status, once reaped */
	int end_seq;		/* 1 for the first rank reaped, ...; 0 before */
	struct stream out, err;
};

struct job {
	struct options opt;
	struct rank *ranks;
	pid_t launcher;		/* our pid, for the children's check */
	double t0;		/* when the ranks were started */
	int nrunning;
	int nended;		/* ranks reaped so far */
	int first_fail;		/* the first rank to fail, or -1 */
	int fail_code;		/* our exit status once a rank failed */
	double fail_at;		/* when, relative to t0 */
	double grace_end;	/* then when the others are stopped */
	int nskipped;		/* ranks that exited 77 */
	int first_skip;		/* the first of them, or -1 */
	double deadline;	/* end of --timeout */
	double skip_at;		/* when a lone skip stops the others */
	bool stopping;		/* the ranks have been told to stop */
	int stop_code;		/* our exit status once stopping */
	double kill_at;		/* when stopping turns into SIGKILL */
	bool interrupted;	/* a SIGINT/SIGTERM/SIGHUP reached us */
	char (*label)[LABEL_MAX]; /* per rank, for messages; see put_groups */
	struct pollfd *pfd;	/* [0] is the self-pipe, then streams */
	struct stream **pstream; /* the stream behind each pfd[i], i > 0 */
};

/* Signals we handle; children get the original dispositions back. */
static const int handled[] = { SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGPIPE };
#define NHANDLED (sizeof handled / sizeof handled[0])
static struct sigaction saved_action[NHANDLED];
static sigset_t saved_mask;
static int self_pipe[2] = { -1, -1 };
static struct rlimit saved_nofile;
static bool nofile_changed;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s -n N [--provider P] [--bind none|core|numa]"
		" [--timeout S]\n"
		"       [--grace S] [--tag-output] [--] PROG [ARGS...]\n"
		"Start N local ranks of PROG as one pscomm job.\n"
		"  -n, --np N       number of ranks (1 to %d)\n"
		"  --provider P     set FI_PROVIDER=P for the ranks\n"
		"  --bind B         set PS_COMM_BIND=B for the ranks: none,"
		" core (a core\n"
		"                   each, spread over NUMA nodes) or numa"
		" (a NUMA node each)\n"		"  --timeout S      kill the ranks after S seconds"
		" (fractions allowed;\n"
		"                   0 means none); exit 124\n"
		"  --grace S        after a rank fails, give the others S"
		" seconds to exit\n"
		"                   on their own before SIGTERM (default"
		" %g)\n"
		"  --tag-output     prefix each line of output with \"[R] \"\n"
		"  -h, --help       show this help\n"
		"Ranks get HFI_NO_BACKTRACE=1 and IPATH_NO_BACKTRACE=1 unless"
		" set, so that\n"
		"a crash shows as its signal; ranks die with the launcher.\n"
		"Unless PS_COMM_JOB_KEY or PS_COMM_JOB_KEY_FILE is set, the"
		" ranks share a\n"
		"random PS_COMM_JOB_KEY made for this job.\n"
		"The last line names the first rank to fail and what the"
		" others did next.\n"
		"Exit status: 0 if all ranks exit 0, 77 if all exit 77,"
		" else that of the\n"
		"first rank to fail (128+N for signal N); 2 for bad usage.\n",
		progname, MAX_RANKS, FAIL_GRACE_S);
}

static _Noreturn void __attribute__((format(printf, 1, 2)))
usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	usage(stderr);
	exit(EXIT_USAGE);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Parse a whole decimal integer in [lo, hi] into *out; false if s is not. */
static bool parse_int(const char *s, long lo, long hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = (int)v;
	return true;
}

/* Parse a finite, non-negative number of seconds into *out. */
static bool parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0)
		return false;
	*out = v;
	return true;
}

/*
 * Whether s is a PS_COMM_BIND value. The launcher does not link the
 * library (see above), so it keeps its own copy of the list that
 * lib/fabric/topo.c parses; the ranks check it again at init.
 */
static bool bind_known(const char *s)
{
	static const char *const modes[] = { "none", "core", "numa" };

	for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++)
		if (strcmp(s, modes[k]) == 0)
			return true;
	return false;
}

/* Fill *o from the command line, or exit with status 2 (0 for --help). */
static void parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "np", required_argument, NULL, 'n' },
		{ "provider", required_argument, NULL, 'p' },
		{ "bind", required_argument, NULL, 'b' },
		{ "timeout", required_argument, NULL, 't' },
		{ "grace", required_argument, NULL, 'g' },
		{ "tag-output", no_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof *o);
	o->grace = -1;
	opterr = 0;
	/* '+': stop at PROG, whose options are its own. */
	while ((c = getopt_long(argc, argv, "+:hn:", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (!parse_int(optarg, 1, MAX_RANKS, &o->nranks))
				usage_error("bad number of ranks '%s' (want "
					    "1 to %d)", optarg, MAX_RANKS);
			break;
		case 'p':
			if (!*optarg)
				usage_error("empty provider name");
			o->provider = optarg;
			break;
		case 'b':
			if (!bind_known(optarg))
				usage_error("bad --bind '%s' (want none, core "
					    "or numa)", optarg);
			o->bind = optarg;
			break;
		case 't':
			if (!parse_seconds(optarg, &o->timeout))
				usage_error("bad timeout '%s'", optarg);
			break;
		case 'g':
			if (!parse_seconds(optarg, &o->grace))
				usage_error("bad grace period '%s'", optarg);
			break;
		case 'T':
			o->tag_output = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case ':':
			usage_error("option '%s' needs an argument",
				    argv[optind - 1]);
		default:
			if (optopt)
				usage_error("unknown option '-%c'", optopt);
			usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (!o->nranks)
		usage_error("missing -n N");
	if (optind >= argc)
		usage_error("missing program to run");
	o->argv = argv + optind;
}

/*
 * The default --grace. The ranks share this kernel, so pscomm ranks see
 * a peer's death at once (pidfd) and a stuck one is ended by pscomm's
 * watchdog within a second: a few seconds let every survivor report.
 */
static double default_grace(void)
{
	return FAIL_GRACE_S;
}

/* The first port of the kernel's ephemeral range (Linux's default 32768). */
static int ephemeral_low(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	int lo = 32768;

	if (f) {
		/* A kernel file, range-checked below. */
		/* NOLINTNEXTLINE(cert-err34-c) */
		if (fscanf(f, "%d", &lo) != 1 || lo < 2048 || lo > 65535)
			lo = 32768;
		fclose(f);
	}
	return lo;
}

/* Whether port is free on 127.0.0.1 right now (it is bound and released). */
static bool port_free(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	if (fd < 0)
		return false;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons((uint16_t)port);
	ok = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
	close(fd);
	return ok;
}

/*
 * Return a TCP port on 127.0.0.1 that is free right now, or -1. Rank 0
 * binds it a moment later. The port is taken below the kernel's ephemeral
 * range: the ranks' own sockets (the tcp and sockets providers bind while
 * rank 0 starts) get ephemeral ports and so can never take it in between.
 */
static int pick_port(void)
{
	int lo = ephemeral_low(), base, span;

	base = lo > 16384 + 1024 ? lo - 16384 : 1024;
	span = lo - base;
	srand((unsigned)getpid() ^ (unsigned)time(NULL));
	for (int i = 0; i < 200 && span > 0; i++) {
		/* Only spreads concurrent launchers: rand() is enough. */
		/* NOLINTNEXTLINE(cert-msc30-c,cert-msc50-cpp) */
		int port = base + rand() % span;

		if (port_free(port))
			return port;
	}
	errno = EADDRINUSE;
	return -1;
}

/*
 * A job key for a job that set none: 32 random bytes in hex, after
 * "pscomm-random-256:", the form pscomm takes as random and does not
 * stretch (PSC_AUTH_MADE_PREFIX in lib/net/auth.h; doc/security.md). Every
 * connection to the ranks' listeners must then prove it knows the key
 * (doc/security.md); the ranks' environment is readable by this user and
 * root only. False (after a message) when the kernel gives no randomness.
 */
static bool make_job_key(void)
{
	const char *k = getenv("PS_COMM_JOB_KEY");
	const char *f = getenv("PS_COMM_JOB_KEY_FILE");
	static const char prefix[] = "pscomm-random-256:";
	unsigned char raw[32];
	char hex[sizeof(prefix) - 1 + 2 * sizeof(raw) + 1];
	size_t got = 0;

	if ((k && *k) || (f && *f))
		return true;
	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "%s: cannot make a job key: getrandom: "
				"%s\n", progname, strerror(errno));
			return false;
		}
		got += (size_t)n;
	}
	memcpy(hex, prefix, sizeof(prefix) - 1);
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(hex + sizeof(prefix) - 1 + 2 * i, 3, "%02x", raw[i]);
	setenv("PS_COMM_JOB_KEY", hex, 1);
	memset(raw, 0, sizeof(raw));
	memset(hex, 0, sizeof(hex));
	return true;
}

/* Set the environment all ranks share; false (after a message) if not. */
static bool setup_env(const struct options *o)
{
	const char *root = getenv("PS_COMM_ROOT");
	char buf[64];

	if (!make_job_key())
		return false;
	if (!root || !*root) {
		int port = pick_port();

		if (port < 0) {
			fprintf(stderr, "%s: cannot find a free port on "
				"127.0.0.1: %s\n", progname, strerror(errno));
			return false;
		}
		snprintf(buf, sizeof buf, "127.0.0.1:%d", port);
		setenv("PS_COMM_ROOT", buf, 1);
	}
	snprintf(buf, sizeof buf, "%d", o->nranks);
	setenv("PS_COMM_SIZE", buf, 1);
	if (o->provider)
		setenv("FI_PROVIDER", o->provider, 1);
	/* Every rank is on this node: the node-local rank is the rank. */
	if (o->bind)
		setenv("PS_COMM_BIND", o->bind, 1);
	/* PSM's handlers turn SIGSEGV, SIGBUS, ... into a backtrace and
	 * exit(1), which hides the signal; they test only for presence. */
	setenv("HFI_NO_BACKTRACE", "1", 0);
	setenv("IPATH_NO_BACKTRACE", "1", 0);
	return true;
}

/* Make sure fds 0-2 are open, so our pipes never land on them and then get
 * clobbered by the dup2() calls in the children. */
static void ensure_std_fds(void)
{
	int fd;

	do
		fd = open("/dev/null", O_RDWR);
	while (fd >= 0 && fd < 3);
	if (fd >= 0)
		close(fd);
}

/* --tag-output needs two fds per rank, more than the usual soft limit
 * allows for big jobs; the ranks get the original limit back. */
static void raise_fd_limit(int nranks)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)nranks * 2 + 64;

	if (getrlimit(RLIMIT_NOFILE, &saved_nofile) || saved_nofile.rlim_cur
	    == RLIM_INFINITY || saved_nofile.rlim_cur >= need)
		return;
	rl = saved_nofile;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ?
		need : rl.rlim_max;
	nofile_changed = !setrlimit(RLIMIT_NOFILE, &rl);
}

static void on_signal(int sig)
{
	int saved = errno;
	unsigned char c = (unsigned char)sig;
	ssize_t r = write(self_pipe[1], &c, 1);

	(void)r;	/* a full pipe already holds a wake-up */
	errno = saved;
}

/* Route the handled signals into the self-pipe; false if impossible. */
static bool install_signals(void)
{
	struct sigaction sa;
	size_t i;

	if (pipe2(self_pipe, O_CLOEXEC | O_NONBLOCK))
		return false;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < NHANDLED; i++) {
		int sig = handled[i];

		sigaction(sig, NULL, &saved_action[i]);
		/* An ignored SIGINT (a background job) stays ignored. */
		if (sig != SIGCHLD && saved_action[i].sa_handler == SIG_IGN)
			continue;
		/* SIGCHLD also for stopped ranks: they are reported. */
		sa.sa_handler = sig == SIGPIPE ? SIG_IGN : on_signal;
		sigaction(sig, &sa, NULL);
	}
	return true;
}

/* Block the handled signals, saving the old mask in *old. */
static void block_signals(sigset_t *old)
{
	sigset_t set;
	size_t i;

	sigemptyset(&set);
	for (i = 0; i < NHANDLED; i++)
		sigaddset(&set, handled[i]);
	sigprocmask(SIG_BLOCK, &set, old);
}

/* In a child: undo everything install_signals() and raise_fd_limit() did. */
static void restore_process_state(void)
{
	size_t i;

	for (i = 0; i < NHANDLED; i++)
		sigaction(handled[i], &saved_action[i], NULL);
	sigprocmask(SIG_SETMASK, &saved_mask, NULL);
	if (nofile_changed)
		setrlimit(RLIMIT_NOFILE, &saved_nofile);
}

/* In the child of rank r: become the rank.  out/err are the write ends of
 * its output pipes, or -1 to keep ours. */
static _Noreturn void exec_rank(const struct job *job, const struct rank *r,
				int out, int err)
{
	char **argv = job->opt.argv;
	char buf[16];

	setpgid(0, 0);
	/* Die with the launcher; if it died before this, nobody would. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != job->launcher)
		_exit(EXIT_NOEXEC);
	restore_process_state();
	if (out >= 0 && (dup2(out, STDOUT_FILENO) < 0 ||
			 dup2(err, STDERR_FILENO) < 0))
		_exit(EXIT_NOEXEC);
	/* Ranks are background process groups, so reading the terminal
	 * would stop them (SIGTTIN) and hang the job. */
	if (isatty(STDIN_FILENO)) {
		int fd = open("/dev/null", O_RDONLY);

		if (fd > STDIN_FILENO) {
			dup2(fd, STDIN_FILENO);
			close(fd);
		}
	}
	snprintf(buf, sizeof buf, "%d", r->id);
	setenv("PS_COMM_RANK", buf, 1);
	execvp(argv[0], argv);
	fprintf(stderr, "%s: cannot run %s: %s\n", progname, argv[0],
		strerror(errno));
	_exit(EXIT_NOEXEC);
}

static void stream_init(struct stream *s, int fd, int dest, int rank)
{
	memset(s, 0, sizeof *s);
	s->fd = fd;
	s->dest = dest;
	s->bol = true;
	s->plen = (size_t)snprintf(s->prefix, sizeof s->prefix, "[%d] ",
				   rank);
}

static void close_pair(int p[2])
{
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	p[0] = p[1] = -1;
}

/* Fork and exec rank r; false (after a message) if that failed. */
static bool start_rank(struct job *job, struct rank *r)
{
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
	sigset_t old;
	pid_t pid;
	int e;

	if (job->opt.tag_output &&
	    (pipe2(outp, O_CLOEXEC) || pipe2(errp, O_CLOEXEC))) {
		fprintf(stderr, "%s: pipe: %s\n", progname, strerror(errno));
		close_pair(outp);
		close_pair(errp);
		return false;
	}
	/* No handler of ours may run in the child before it execs. */
	block_signals(&old);
	pid = fork();
	if (!pid)
		exec_rank(job, r, outp[1], errp[1]);
	e = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		fprintf(stderr, "%s: fork: %s\n", progname, strerror(e));
		close_pair(outp);
		close_pair(errp);
		return false;
	}
	/* The child does the same; whoever is first closes the window in
	 * which kill(-pid) would not reach it. */
	setpgid(pid, pid);
	r->pid = pid;
	r->running = true;
	job->nrunning++;
	if (job->opt.tag_output) {
		close(outp[1]);
		close(errp[1]);
		stream_init(&r->out, outp[0], STDOUT_FILENO, r->id);
		stream_init(&r->err, errp[0], STDERR_FILENO, r->id);
	}
	return true;
}

static void kill_rank(const struct rank *r, int sig)
{
	if (kill(-r->pid, sig))
		kill(r->pid, sig);
}

/* Send sig to every running rank's process group.  A stopped process acts
 * on no signal but SIGKILL until it is continued, so SIGCONT follows. */
static void signal_ranks(struct job *job, int sig)
{
	int i;

	for (i = 0; i < job->opt.nranks; i++) {
		struct rank *r = &job->ranks[i];

		if (!r->running)
			continue;
		kill_rank(r, sig);
		if (sig != SIGKILL)
			kill_rank(r, SIGCONT);
		r->sent = sig;
	}
}

/* Tell all ranks to stop; code becomes our exit status. */
static void stop_job(struct job *job, int code, int sig)
{
	job->stopping = true;
	job->stop_code = code;
	job->kill_at = now() + KILL_GRACE_S;
	signal_ranks(job, sig);
}

/* Start all ranks; if one cannot start, stop those that did. */
static void start_ranks(struct job *job)
{
	int i;

	for (i = 0; i < job->opt.nranks; i++) {
		if (!start_rank(job, &job->ranks[i])) {
			stop_job(job, 1, SIGTERM);
			return;
		}
	}
}

/* Write all of buf to fd.  Errors (nobody reads our output any more) drop
 * the output: how the job ends must not depend on that. */
static void write_all(int fd, const char *buf, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, buf, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		buf += w;
		n -= (size_t)w;
	}
}

/* Write n bytes of s's output, prefixed if asked to; one writev() keeps a
 * line whole among the other ranks' lines. */
static void stream_put(struct stream *s, char *data, size_t n, bool prefix)
{
	struct iovec iov[2] = {
		{ .iov_base = s->prefix, .iov_len = prefix ? s->plen : 0 },
		{ .iov_base = data, .iov_len = n },
	};
	ssize_t w;
	size_t done;

	do
		w = writev(s->dest, iov, 2);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		return;
	done = (size_t)w;
	if (done < iov[0].iov_len) {
		write_all(s->dest, s->prefix + done, iov[0].iov_len - done);
		done = 0;
	} else {
		done -= iov[0].iov_len;
	}
	write_all(s->dest, data + done, n - done);
}

/* Pass on every complete line in s's buffer, keeping a partial last one. */
static void stream_put_lines(struct stream *s)
{
	size_t start = 0;
	char *nl;

	while ((nl = memchr(s->buf + start, '\n', s->len - start))) {
		size_t end = (size_t)(nl - s->buf) + 1;

		stream_put(s, s->buf + start, end - start, s->bol);
		s->bol = true;
		start = end;
	}
	s->len -= start;
	memmove(s->buf, s->buf + start, s->len);
}

/* Make room in s's buffer; false if it is as large as it may get. */
static bool stream_grow(struct stream *s)
{
	size_t cap = s->cap ? s->cap * 2 : STREAM_MIN;
	char *buf;

	if (s->cap >= STREAM_MAX || !(buf = realloc(s->buf, cap)))
		return false;
	s->buf = buf;
	s->cap = cap;
	return true;
}

/* Flush s at EOF; a partial last line is ended so the next line, maybe
 * another rank's, starts with its own prefix. */
static void stream_close(struct stream *s)
{
	static char newline[] = "\n";

	if (s->len || !s->bol) {
		stream_put(s, s->buf, s->len, s->bol);
		stream_put(s, newline, 1, false);
	}
	close(s->fd);
	free(s->buf);
	s->fd = -1;
	s->buf = NULL;
	s->len = s->cap = 0;
}

/* Read what s has to offer and pass on its complete lines. */
static void stream_read(struct stream *s)
{
	ssize_t n;

	if (s->len == s->cap && !stream_grow(s)) {
		if (!s->cap) {		/* out of memory: drop the output */
			stream_close(s);
			return;
		}
		/* An endless line must not stall the rank: pass it on in
		 * pieces, the continuations without a prefix. */
		stream_put(s, s->buf, s->len, s->bol);
		s->bol = false;
		s->len = 0;
	}
	n = read(s->fd, s->buf + s->len, s->cap - s->len);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		stream_close(s);
		return;
	}
	s->len += (size_t)n;
	stream_put_lines(s);
}

/* The earlier of two deadlines, either of which may be NO_TIME. */
static double earlier(double a, double b)
{
	if (a == NO_TIME)
		return b;
	return b == NO_TIME || a < b ? a : b;
}

/* Milliseconds until the next deadline, for poll(); -1 if there is none. */
static int poll_timeout_ms(const struct job *job)
{
	double next, ms;

	if (job->stopping)
		next = job->kill_at;
	else
		next = earlier(job->deadline,
			       earlier(job->skip_at, job->grace_end));
	if (next == NO_TIME)
		return -1;
	ms = (next - now()) * 1000.0 + 1;	/* +1: never wake too early */
	if (ms < 0)
		return 0;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* Wait up to ms for the self-pipe or the output pipes, serving the latter.
 * Return how many output pipes were ready, or -1 if poll() failed. */
static int poll_once(struct job *job, int ms)
{
	int i, n = 0, ready = 0;

	job->pfd[n++] = (struct pollfd){ .fd = self_pipe[0], .events = POLLIN };
	for (i = 0; i < job->opt.nranks && job->opt.tag_output; i++) {
		struct stream *s[2] = { &job->ranks[i].out,
					&job->ranks[i].err };
		int k;

		for (k = 0; k < 2; k++) {
			if (s[k]->fd < 0)
				continue;
			job->pfd[n] = (struct pollfd){ .fd = s[k]->fd,
						       .events = POLLIN };
			job->pstream[n++] = s[k];
		}
	}
	if (poll(job->pfd, (nfds_t)n, ms) < 0)
		return errno == EINTR ? 0 : -1;
	for (i = 1; i < n; i++) {
		if (job->pfd[i].revents) {
			stream_read(job->pstream[i]);
			ready++;
		}
	}
	return ready;
}

/* The short name of the signals we send or that can stop a rank. */
static const char *signal_name(int sig)
{
	static const struct {
		int sig;
		const char *name;
	} names[] = {
		{ SIGINT, "SIGINT" },	{ SIGTERM, "SIGTERM" },
		{ SIGHUP, "SIGHUP" },	{ SIGKILL, "SIGKILL" },
		{ SIGSTOP, "SIGSTOP" }, { SIGTSTP, "SIGTSTP" },
		{ SIGTTIN, "SIGTTIN" }, { SIGTTOU, "SIGTTOU" },
	};
	size_t i;

	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		if (names[i].sig == sig)
			return names[i].name;
	return "a signal";
}

/*
 * Messages are built in memory and written at once, so that they do not
 * mix with the ranks' output.  msg_begin() starts one with our name and
 * returns false if out of memory; msg_end() writes and frees it.
 */
struct msg {
	FILE *f;
	char *buf;
	size_t len;
};

static bool msg_begin(struct msg *m)
{
	m->buf = NULL;
	m->f = open_memstream(&m->buf, &m->len);
	if (m->f)
		fprintf(m->f, "%s: ", progname);
	return m->f != NULL;
}

static void msg_end(struct msg *m)
{
	fputc('\n', m->f);
	if (!fclose(m->f))
		write_all(STDERR_FILENO, m->buf, m->len);
	free(m->buf);
}

static void __attribute__((format(printf, 1, 2))) say(const char *fmt, ...)
{
	struct msg m;
	va_list ap;

	if (!msg_begin(&m))
		return;
	va_start(ap, fmt);
	vfprintf(m.f, fmt, ap);
	va_end(ap);
	msg_end(&m);
}

/* Describe how r ended, e.g. "killed by signal 11 (Segmentation fault)". */
static void describe_end(const struct rank *r, char *buf, size_t n)
{
	int st = r->status, sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;

	if (sig && sig == r->sent)
		snprintf(buf, n, "killed by the launcher's %s",
			 signal_name(sig));
	else if (sig)
		snprintf(buf, n, "killed by signal %d (%s)%s", sig,
			 strsignal(sig), WCOREDUMP(st) ? ", core dumped" : "");
	else
		snprintf(buf, n, "exited with status %d%s%s",
			 WEXITSTATUS(st), r->sent ? " after the launcher's " : "",
			 r->sent ? signal_name(r->sent) : "");
}

/* Describe what a running rank is doing: "stopped (state T)" and so on,
 * from /proc, which knows better than our last waitpid(). */
static void describe_state(const struct rank *r, char *buf, size_t n)
{
	static const char *const what[128] = {
		['R'] = "running",	['S'] = "sleeping",
		['D'] = "in uninterruptible sleep",
		['T'] = "stopped",	['t'] = "stopped by a debugger",
		['Z'] = "exiting",
	};
	char path[64], line[512], *p;
	int st = 0;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)r->pid);
	if ((f = fopen(path, "r"))) {
		/* The name in parentheses may hold ')'; the state follows the
		 * last one. */
		if (fgets(line, sizeof line, f) && (p = strrchr(line, ')')) &&
		    p[1] == ' ' && (unsigned char)p[2] < 128)
			st = (unsigned char)p[2];
		fclose(f);
	}
	if (!st)
		snprintf(buf, n, "%s", r->stop_sig ? "stopped"
						    : "running or sleeping");
	else
		snprintf(buf, n, "%s (state %c)", what[st] ? what[st] : "in a "
			 "state", st);
}

/* Write ranks first..last (consecutive), after a comma unless the first. */
static void put_run(FILE *f, int first, int last, bool *any)
{
	fputs(*any ? ", " : "", f);
	if (first == last)
		fprintf(f, "%d", first);
	else
		fprintf(f, last == first + 1 ? "%d, %d" : "%d-%d", first,
			last);
	*any = true;
}

/*
 * Write the ranks whose label is not empty, grouped by label in the order
 * of their first rank: "rank 2 L; ranks 0-1, 3 L'", with infix between
 * the ranks and their label, and "; " before each group if sep_first, else
 * between them.  The labels are used up (emptied), ready for the next.
 */
static void put_groups(FILE *f, char (*label)[LABEL_MAX], int n,
		       const char *infix, bool sep_first)
{
	char cur[LABEL_MAX];
	int i, j, start, prev, count;
	bool any, first = true;

	for (i = 0; i < n; i++) {
		if (!label[i][0])
			continue;
		memcpy(cur, label[i], sizeof cur);
		for (count = 0, j = i; j < n; j++)
			count += !strcmp(label[j], cur);
		fprintf(f, "%s%s ", sep_first || !first ? "; " : "",
			count > 1 ? "ranks" : "rank");
		any = false;
		start = prev = -1;
		for (j = i; j < n; j++) {
			if (strcmp(label[j], cur) != 0)
				continue;
			label[j][0] = '\0';
			if (start >= 0 && j == prev + 1) {
				prev = j;
				continue;
			}
			if (start >= 0)
				put_run(f, start, prev, &any);
			start = prev = j;
		}
		put_run(f, start, prev, &any);
		fprintf(f, "%s%s", infix, cur);
		first = false;
	}
}

/* Say why the ranks still running are stopped, and what each is doing:
 * a stopped rank is often why the others hang. */
static void report_running(struct job *job, const char *why)
{
	struct msg m;
	int i;

	if (!msg_begin(&m))
		return;
	fprintf(m.f, "%s; stopping the ranks still running: ", why);
	for (i = 0; i < job->opt.nranks; i++)
		if (job->ranks[i].running)
			describe_state(&job->ranks[i], job->label[i],
				       LABEL_MAX);
	put_groups(m.f, job->label, job->opt.nranks, " ", false);
	msg_end(&m);
}

/* Pass a SIGINT/SIGTERM/SIGHUP on to the ranks and stop the job; a second
 * one means the user will not wait for the grace period. */
static void forward_signal(struct job *job, int sig)
{
	if (job->interrupted) {
		signal_ranks(job, SIGKILL);
		job->kill_at = NO_TIME;
		return;
	}
	job->interrupted = true;
	if (job->stopping) {
		signal_ranks(job, sig);
		return;
	}
	say("got %s; stopping the ranks", signal_name(sig));
	stop_job(job, 128 + sig, sig);
}

static void handle_signals(struct job *job)
{
	unsigned char buf[64];
	ssize_t n, i;

	while ((n = read(self_pipe[0], buf, sizeof buf)) > 0) {
		for (i = 0; i < n; i++)
			if (buf[i] != SIGCHLD)
				forward_signal(job, buf[i]);
	}
}

/*
 * Rank r is the first to fail, with our exit status code.  The others
 * usually fail in turn, and their own messages (which peer, which call)
 * are worth having: they get the grace period to end by themselves.
 */
static void first_failure(struct job *job, struct rank *r, int code)
{
	char how[LABEL_MAX], tail[96] = "";
	int i;

	job->first_fail = r->id;
	job->fail_code = code;
	job->fail_at = now() - job->t0;
	for (i = 0; i < job->opt.nranks; i++)
		job->ranks[i].stop_at_fail = job->ranks[i].stop_sig;
	if (job->nrunning && job->opt.grace > 0)
		snprintf(tail, sizeof tail, "; stopping the other ranks in "
			 "%g s unless they exit first", job->opt.grace);
	else if (job->nrunning)
		snprintf(tail, sizeof tail, "; stopping the other ranks");
	describe_end(r, how, sizeof how);
	say("rank %d (pid %ld) %s%s", r->id, (long)r->pid, how, tail);
	if (!job->nrunning)
		return;
	if (job->opt.grace > 0)
		job->grace_end = now() + job->opt.grace;
	else
		stop_job(job, code, SIGTERM);
}

/*
 * Account for rank r's end.  A failure stops the job (after the grace
 * period), except exit 77: a rank that skips usually means all ranks are
 * about to skip, so the others get SKIP_GRACE_S to do so before they are
 * stopped.
 */
static void rank_exited(struct job *job, struct rank *r, int status)
{
	int code = WIFEXITED(status) ? WEXITSTATUS(status)
				     : 128 + WTERMSIG(status);

	r->running = false;
	r->stop_sig = 0;
	r->status = status;
	r->end_seq = ++job->nended;
	job->nrunning--;
	if (WIFEXITED(status) && code == EXIT_SKIP) {
		job->nskipped++;
		if (job->first_skip < 0) {
			job->first_skip = r->id;
			job->skip_at = now() + SKIP_GRACE_S;
		}
		return;
	}
	if (code && !job->stopping && job->first_fail < 0)
		first_failure(job, r, code);
}

/* A stopped rank is not a failure, but the others will soon blame it. */
static void rank_stopped(struct job *job, struct rank *r, int status)
{
	if (WIFSTOPPED(status)) {
		r->stop_sig = WSTOPSIG(status);
		if (!job->stopping)
			say("rank %d (pid %ld) stopped by signal %d (%s); the "
			    "others may fail naming it as unresponsive", r->id,
			    (long)r->pid, r->stop_sig, signal_name(r->stop_sig));
	} else {
		r->stop_sig = 0;
		if (!job->stopping)
			say("rank %d (pid %ld) continued", r->id,
			    (long)r->pid);
	}
}

static struct rank *find_rank(struct job *job, pid_t pid)
{
	int i;

	for (i = 0; i < job->opt.nranks; i++)
		if (job->ranks[i].running && job->ranks[i].pid == pid)
			return &job->ranks[i];
	return NULL;
}

/*
 * A rank killed by a signal: remove the shared-memory files it left in
 * /dev/shm (libfabric shm's queues, "PID:...", and pscomm's message
 * rings, "psc-ring-PID-..."). A rank removes its own when it ends by
 * SIGTERM, SIGINT or SIGHUP, and the survivors of a job remove a dead
 * rank's once they see it die; a rank killed before the survivors know
 * it (SIGKILL during ps_comm_init) or whose survivors exit first would
 * keep its files until the next reboot. Called before the rank is
 * reaped, so its pid cannot belong to another process yet.
 */
static void remove_shm_files(pid_t pid)
{
	char shm[32], ring[40];
	size_t ns, nr;
	struct dirent *d;
	DIR *dir;

	ns = (size_t)snprintf(shm, sizeof shm, "%ld:", (long)pid);
	nr = (size_t)snprintf(ring, sizeof ring, "psc-ring-%ld-", (long)pid);
	if (!(dir = opendir("/dev/shm")))
		return;
	while ((d = readdir(dir)) != NULL)
		if (strncmp(d->d_name, shm, ns) == 0 ||
		    strncmp(d->d_name, ring, nr) == 0)
			unlinkat(dirfd(dir), d->d_name, 0);
	closedir(dir);
}

static void reap(struct job *job)
{
	struct rank *r;
	siginfo_t si;
	pid_t pid;
	int status;

	for (;;) {
		/* Look first (WNOWAIT): the pid stays this rank's. */
		memset(&si, 0, sizeof si);
		if (waitid(P_ALL, 0, &si, WEXITED | WSTOPPED | WCONTINUED |
			   WNOHANG | WNOWAIT) != 0 || si.si_pid == 0)
			break;
		pid = si.si_pid;
		r = find_rank(job, pid);
		if (r && (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED))
			remove_shm_files(pid);
		if (waitpid(pid, &status, WNOHANG | WUNTRACED | WCONTINUED) <= 0)
			break;
		if (!r)
			continue;
		if (WIFSTOPPED(status) || WIFCONTINUED(status))
			rank_stopped(job, r, status);
		else
			rank_exited(job, r, status);
	}
}

static void check_deadlines(struct job *job)
{
	double t = now();
	char why[96];

	if (!job->nrunning)
		return;
	if (job->stopping) {
		if (job->kill_at != NO_TIME && t >= job->kill_at) {
			signal_ranks(job, SIGKILL);
			job->kill_at = NO_TIME;
		}
	} else if (job->deadline != NO_TIME && t >= job->deadline) {
		snprintf(why, sizeof why, "timeout after %g s",
			 job->opt.timeout);
		report_running(job, why);
		stop_job(job, EXIT_TIMEOUT, SIGTERM);
	} else if (job->first_fail >= 0) {
		if (t < job->grace_end)
			return;
		snprintf(why, sizeof why, "%g s after rank %d failed",
			 job->opt.grace, job->first_fail);
		report_running(job, why);
		stop_job(job, job->fail_code, SIGTERM);
	} else if (job->skip_at != NO_TIME && t >= job->skip_at) {
		const struct rank *r = &job->ranks[job->first_skip];

		say("rank %d (pid %ld) exited with status %d but others "
		    "still run; stopping them", r->id, (long)r->pid,
		    EXIT_SKIP);
		stop_job(job, EXIT_SKIP, SIGTERM);
	}
}

/*
 * The last line about a failed job: the first rank to fail, how and when,
 * which ranks were stopped then (the likely cause of a hang), and how the
 * others ended after it, grouped.
 */
static void report_summary(struct job *job)
{
	const struct rank *first = &job->ranks[job->first_fail];
	char how[LABEL_MAX];
	struct msg m;
	int i, n = job->opt.nranks;

	if (!msg_begin(&m))
		return;
	describe_end(first, how, sizeof how);
	fprintf(m.f, "first failure: rank %d %s at +%.1f s", first->id, how,
		job->fail_at);
	for (i = 0; i < n; i++)
		if (job->ranks[i].stop_at_fail)
			snprintf(job->label[i], LABEL_MAX, "stopped by %s",
				 signal_name(job->ranks[i].stop_at_fail));
	put_groups(m.f, job->label, n, " had been ", true);
	for (i = 0; i < n; i++) {
		const struct rank *r = &job->ranks[i];

		if (r->end_seq > first->end_seq)
			describe_end(r, job->label[i], LABEL_MAX);
	}
	put_groups(m.f, job->label, n, " then ", true);
	msg_end(&m);
}

/* As a last resort, when we cannot wait properly: kill and reap all. */
static void abandon(struct job *job)
{
	fprintf(stderr, "%s: poll: %s; killing all ranks\n", progname,
		strerror(errno));
	if (!job->stopping)
		job->stop_code = 1;
	job->stopping = true;
	signal_ranks(job, SIGKILL);
	while (job->nrunning && waitpid(-1, NULL, 0) > 0)
		job->nrunning--;
	job->nrunning = 0;
}

/* Supervise the job until no rank runs, then pass on the rest of output. */
static void run(struct job *job)
{
	double end;

	while (job->nrunning) {
		if (poll_once(job, poll_timeout_ms(job)) < 0) {
			abandon(job);
			break;
		}
		handle_signals(job);
		reap(job);
		check_deadlines(job);
	}
	/* A rank's last words are in its pipes by now; grandchildren that
	 * keep a pipe open are not waited for. */
	end = now() + DRAIN_S;
	while (job->opt.tag_output && poll_once(job, 0) > 0 && now() < end)
		;
}

static int exit_code(const struct job *job)
{
	if (job->nskipped == job->opt.nranks)
		return EXIT_SKIP;
	if (job->first_fail >= 0)
		return job->fail_code;
	if (job->stopping)
		return job->stop_code;
	return job->first_skip >= 0 ? EXIT_SKIP : 0;
}

/* Allocate job's per-rank state; false (after a message) if impossible. */
static bool job_init(struct job *job)
{
	size_t n = (size_t)job->opt.nranks;
	int i;

	job->first_skip = -1;
	job->first_fail = -1;
	job->ranks = calloc(n, sizeof *job->ranks);
	job->pfd = calloc(2 * n + 1, sizeof *job->pfd);
	job->pstream = calloc(2 * n + 1, sizeof(struct stream *));
	job->label = calloc(n, sizeof *job->label);
	if (!job->ranks || !job->pfd || !job->pstream || !job->label) {
		fprintf(stderr, "%s: out of memory\n", progname);
		return false;
	}
	for (i = 0; i < job->opt.nranks; i++) {
		job->ranks[i].id = i;
		stream_init(&job->ranks[i].out, -1, STDOUT_FILENO, i);
		stream_init(&job->ranks[i].err, -1, STDERR_FILENO, i);
	}
	return true;
}

static void job_free(struct job *job)
{
	int i;

	for (i = 0; job->ranks && i < job->opt.nranks; i++) {
		if (job->ranks[i].out.fd >= 0)
			stream_close(&job->ranks[i].out);
		if (job->ranks[i].err.fd >= 0)
			stream_close(&job->ranks[i].err);
	}
	free(job->ranks);
	free(job->pfd);
	free(job->pstream);
	free(job->label);
	close_pair(self_pipe);
}

int main(int argc, char **argv)
{
	struct job job;
	int code = 1;

	memset(&job, 0, sizeof job);
	parse_options(argc, argv, &job.opt);
	ensure_std_fds();
	sigprocmask(SIG_SETMASK, NULL, &saved_mask);
	if (job.opt.tag_output)
		raise_fd_limit(job.opt.nranks);
	if (!setup_env(&job.opt) || !job_init(&job))
		goto out;
	if (!install_signals()) {
		fprintf(stderr, "%s: pipe: %s\n", progname, strerror(errno));
		goto out;
	}
	if (job.opt.grace < 0)
		job.opt.grace = default_grace();
	job.launcher = getpid();
	job.t0 = now();
	if (job.opt.timeout > 0)
		job.deadline = job.t0 + job.opt.timeout;
	start_ranks(&job);
	run(&job);
	if (job.first_fail >= 0)
		report_summary(&job);
	code = exit_code(&job);
out:
	job_free(&job);
	return code;
}
