/*
 * Signal dispositions around libfabric (sig.h): the provider libraries'
 * handlers dropped as libpscomm is loaded and at each guard, and guards
 * that block the termination signals around the calls that may install
 * handlers, then put back what was there.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fabric/sig.h"
#include "provider.h"
#include "util/log.h"

/* The first three are blocked inside a guard; the crash ones never are. */
static const int kept[PSC_SIG_KEPT] = {SIGINT,	SIGTERM, SIGHUP,  SIGILL,
				       SIGABRT, SIGBUS,	 SIGSEGV, SIGFPE};
#define PSC_SIG_BLOCKED 3

static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local unsigned guard_depth;

#define PREFIX_MAX 48

/*
 * psc_sig_remove_on_term's prefixes, each with the pid that gave it;
 * entries below nprefixes (atomic) are complete, for the handler.
 */
static struct {
	pid_t pid;
	char name[PREFIX_MAX];
} prefixes[PSC_SIG_PREFIXES];
static unsigned nprefixes;
static bool handler_installed;
static pthread_mutex_t prefix_lock = PTHREAD_MUTEX_INITIALIZER;

static bool starts_with(const char *s, const char *p)
{
	while (*p)
		if (*s++ != *p++)
			return false;
	return true;
}

/* Whether name is one of this process's files. Async-signal-safe. */
static bool is_mine(const char *name, pid_t me, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (__atomic_load_n(&prefixes[i].pid, __ATOMIC_ACQUIRE) == me &&
		    starts_with(name, prefixes[i].name))
			return true;
	return false;
}

/*
 * Remove this process's files in /dev/shm. Async-signal-safe: system
 * calls only (getdents64, not readdir, which may allocate).
 */
void psc_sig_remove_files(void)
{
	unsigned n = __atomic_load_n(&nprefixes, __ATOMIC_ACQUIRE);
	char buf[4096] __attribute__((aligned(8)));
	pid_t me = getpid();
	long got;
	int fd;

	if (!n || (fd = open("/dev/shm", O_RDONLY | O_DIRECTORY |
					     O_CLOEXEC)) < 0)
		return;
	while ((got = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
		for (long off = 0; off < got;) {
			const struct dirent64 *d =
				(const void *)(buf + off);

			off += d->d_reclen;
			if (is_mine(d->d_name, me, n))
				unlinkat(fd, d->d_name, 0);
		}
	close(fd);
}

/*
 * A termination signal at what was its default action: remove the
 * files, then let the default (SA_RESETHAND put it back) end the process
 * by the same signal, delivered as the handler returns (it is blocked
 * until then).
 */
static void on_term(int sig)
{
	int e = errno;

	psc_sig_remove_files();
	errno = e;
	raise(sig);
}

/*
 * The process exits (exit(), or main returns) with files still listed:
 * a program that gives up on an error without finalizing, or a ps-lite
 * node whose van lost a peer. _exit() skips this, as does a death by a
 * signal that on_term does not handle.
 */
__attribute__((destructor)) static void remove_at_exit(void)
{
	psc_sig_remove_files();
}

/* pscomm's handler for each of the blocked signals left at the default. */
static void install_handler(void)
{
	for (size_t i = 0; i < PSC_SIG_BLOCKED; i++) {
		struct sigaction sa;

		if (sigaction(kept[i], NULL, &sa) != 0 ||
		    (sa.sa_flags & SA_SIGINFO) || sa.sa_handler != SIG_DFL)
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_term;
		sa.sa_flags = SA_RESETHAND | SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaction(kept[i], &sa, NULL);
	}
}

int psc_sig_remove_on_term(const char *prefix)
{
	pid_t me = getpid();
	unsigned n, slot;
	int rc = 0;

	if (!prefix[0] || strlen(prefix) >= PREFIX_MAX)
		return -EINVAL;
	pthread_mutex_lock(&prefix_lock);
	n = nprefixes;
	slot = n;
	for (unsigned i = 0; i < n; i++) {
		if (prefixes[i].pid == me &&
		    strcmp(prefixes[i].name, prefix) == 0)
			goto out;
		/* A parent's, inherited through fork: free for this one. */
		if (prefixes[i].pid != me && slot == n)
			slot = i;
	}
	if (slot == PSC_SIG_PREFIXES) {
		rc = -ENOSPC;
		goto out;
	}
	/* Not in use while its pid is not this process's. */
	snprintf(prefixes[slot].name, sizeof(prefixes[slot].name), "%s",
		 prefix);
	__atomic_store_n(&prefixes[slot].pid, me, __ATOMIC_RELEASE);
	if (slot == n)
		__atomic_store_n(&nprefixes, n + 1, __ATOMIC_RELEASE);
	install_handler();
	__atomic_store_n(&handler_installed, true, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&prefix_lock);
	return rc;
}

static void *handler_of(const struct sigaction *sa)
{
	return (sa->sa_flags & SA_SIGINFO) ? (void *)sa->sa_sigaction
					   : (void *)sa->sa_handler;
}

int psc_sig_drop_provider_handlers(void)
{
	int dropped = 0;

	for (size_t i = 0; i < PSC_SIG_KEPT; i++) {
		struct sigaction sa;
		void *fn;
		Dl_info di;

		if (sigaction(kept[i], NULL, &sa) != 0)
			continue;
		fn = handler_of(&sa);
		if (fn == (void *)SIG_DFL || fn == (void *)SIG_IGN ||
		    !dladdr(fn, &di) || !psc_provider_signal_lib(di.dli_fname))
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		if (sigaction(kept[i], &sa, NULL) == 0)
			dropped++;
	}
	return dropped;
}

/*
 * As libpscomm is loaded: its dependencies' constructors (libinfinipath's
 * among them) have run, the program's main has not, so what a provider
 * library replaced can only have been the default action.
 */
__attribute__((constructor)) static void drop_at_load(void)
{
	psc_sig_drop_provider_handlers();
}

/* Whether two dispositions differ in what a signal would do. */
static bool changed(const struct sigaction *a, const struct sigaction *b)
{
	return handler_of(a) != handler_of(b) ||
	       (a->sa_flags & SA_SIGINFO) != (b->sa_flags & SA_SIGINFO);
}

void psc_sig_guard_enter(struct psc_sig_guard *g)
{
	sigset_t block;
	int dropped;

	g->outer = guard_depth++ == 0;
	if (!g->outer)
		return;
	pthread_mutex_lock(&guard_lock);
	dropped = psc_sig_drop_provider_handlers();
	if (dropped)
		psc_log(PSC_LOG_DEBUG, -1,
			"%d signal(s) got their default "
			"action back from a provider library's handler",
			dropped);
	for (size_t i = 0; i < PSC_SIG_KEPT; i++)
		sigaction(kept[i], NULL, &g->saved[i]);
	sigemptyset(&block);
	for (size_t i = 0; i < PSC_SIG_BLOCKED; i++)
		sigaddset(&block, kept[i]);
	pthread_sigmask(SIG_BLOCK, &block, &g->mask);
}

void psc_sig_guard_leave(struct psc_sig_guard *g)
{
	guard_depth--;
	if (!g->outer)
		return;
	for (size_t i = 0; i < PSC_SIG_KEPT; i++) {
		struct sigaction now;

		/* pscomm's own handler does what the default does: kept. */
		if (sigaction(kept[i], NULL, &now) == 0 &&
		    changed(&now, &g->saved[i]) &&
		    handler_of(&now) != (void *)on_term) {
			sigaction(kept[i], &g->saved[i], NULL);
			psc_log(PSC_LOG_DEBUG, -1,
				"signal %d: a libfabric call "
				"replaced its disposition; put back",
				kept[i]);
		}
	}
	/*
	 * A provider that took a signal inside the call (shm's own cleanup
	 * handler) had it back at the default just now: pscomm's again.
	 */
	if (__atomic_load_n(&handler_installed, __ATOMIC_ACQUIRE))
		install_handler();
	/* Restored first, so a pending signal meets the program's action. */
	pthread_sigmask(SIG_SETMASK, &g->mask, NULL);
	pthread_mutex_unlock(&guard_lock);
}
