/*
 * Signal dispositions around libfabric. Some provider libraries
 * (psc_provider_signal_lib: libinfinipath and libpsm*) install handlers
 * for SIGINT, SIGTERM and the crash signals, as they are loaded or as a
 * provider opens; the handlers print a backtrace and call exit(), which
 * runs libfabric's destructors while a thread may be inside libfabric
 * holding the lock they take: a SIGTERM during fi_getinfo then hangs the
 * process for ever, and otherwise it ends with status 1 instead of by the
 * signal, which a launcher or scheduler reads. This module keeps the
 * dispositions the program had:
 *
 *  - as libpscomm is loaded (right after the libraries it depends on) and
 *    at every guard's start, a handler of such a library for one of
 *    psc_sig_kept's signals is replaced by the default action; a handler
 *    that is not a provider library's (the application's, SIG_IGN) stays;
 *  - a guard, put around the libfabric calls that may load providers or
 *    open them (fi_getinfo, fi_fabric, fi_domain, fi_endpoint, fi_enable
 *    ...), blocks SIGINT, SIGTERM and SIGHUP in the calling thread, and on
 *    leaving puts back every kept signal's disposition that the call
 *    replaced, then unblocks: a signal that arrived during the call is
 *    delivered as it returns, with the disposition the program had, so a
 *    SIGTERM ends the process with status 143 (at most one libfabric call
 *    later, well under a second here).
 *
 * Threads: pthread_sigmask is per thread, so the guard shields only the
 * thread inside libfabric. A signal sent to the process may be delivered
 * to another thread that does not block it; that is correct as long as
 * the disposition there is the program's, which holds everywhere except
 * while a guarded call is replacing it (the window between a provider's
 * sigaction and the guard's leave). A program that wants no window at all
 * blocks these signals in its other threads (e.g. before creating them)
 * while it calls ps_comm_init: a signal blocked everywhere stays pending
 * until the guard unblocks it. Guards of different threads serialise on
 * one process-wide lock (so each restores what was there before any of
 * them); a guard nests in the same thread. The application must not
 * change these signals' dispositions from another thread while a guarded
 * call runs: the guard would put back the one it saved.
 */
#ifndef PSC_SIG_H
#define PSC_SIG_H

#include <signal.h>
#include <stdbool.h>

/* Signals whose disposition is kept: SIGINT, SIGTERM, SIGHUP, the crash ones. */
#define PSC_SIG_KEPT 8

/* A guard's saved state; on the caller's stack, opaque to it. */
struct psc_sig_guard {
	bool outer;    /* the thread's outermost guard */
	sigset_t mask; /* the thread's mask before */
	struct sigaction saved[PSC_SIG_KEPT];
};

/*
 * Enter a guard: take the process-wide lock (outermost guard of the
 * thread only), give a provider library's handler of a kept signal the
 * default action back, save the kept dispositions and block SIGINT,
 * SIGTERM and SIGHUP in this thread. Never fails; pair with
 * psc_sig_guard_leave in the same thread.
 */
void psc_sig_guard_enter(struct psc_sig_guard *g);

/*
 * Leave a guard: put back each kept disposition that changed since
 * enter, restore the thread's mask (a pending signal is delivered here)
 * and release the lock. Inner guards of a nest do nothing.
 */
void psc_sig_guard_leave(struct psc_sig_guard *g);

/*
 * Give each kept signal whose handler lies in a provider library
 * (psc_provider_signal_lib) the default action; returns how many. Any
 * thread; async-signal-unsafe.
 */
int psc_sig_drop_provider_handlers(void);

/*
 * Remove, when a termination signal ends this process or it exits
 * (exit(), or main returns), the files in /dev/shm whose names begin
 * with prefix (e.g. "1234:", which should carry this process's pid: a
 * child forked later removes nothing of its parent's). pscomm keeps such
 * files only while it runs (shared-memory queues and rings); a SIGTERM,
 * SIGINT or SIGHUP at its default action, or a program that exits on an
 * error without closing what it opened, would otherwise leave them
 * behind for ever. _exit() and SIGKILL leave them (the survivors on the
 * host and ps_comm_run remove those of a dead rank).
 *
 * The first call installs pscomm's handler for each of those three
 * signals whose disposition is the default (one the program handles or
 * ignores is left alone, and a handler the program installs later
 * replaces pscomm's). The handler removes the files with async-signal-
 * safe calls only, puts the default action back and raises the signal
 * again, so the process still ends by it (status 128 + N); guards keep
 * the handler (it does what the default does). A prefix given before is
 * not added again. At most PSC_SIG_PREFIXES prefixes (-ENOSPC after);
 * returns 0 or a negative errno. Any thread.
 */
#define PSC_SIG_PREFIXES 8
int psc_sig_remove_on_term(const char *prefix);

/*
 * Remove this process's files of psc_sig_remove_on_term's prefixes now:
 * for a process about to end by _exit(). Async-signal-safe; any thread.
 */
void psc_sig_remove_files(void);

#endif
