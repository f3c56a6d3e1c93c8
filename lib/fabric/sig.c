/*
 * Signal dispositions around libfabric (sig.h): the provider libraries'
 * handlers dropped as libpscomm is loaded and at each guard, and guards
 * that block the termination signals around the calls that may install
 * handlers, then put back what was there.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "fabric/sig.h"
#include "provider.h"
#include "util/log.h"

/* The first three are blocked inside a guard; the crash ones never are. */
static const int kept[PSC_SIG_KEPT] = {SIGINT,	SIGTERM, SIGHUP,  SIGILL,
				       SIGABRT, SIGBUS,	 SIGSEGV, SIGFPE};
#define PSC_SIG_BLOCKED 3

static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local unsigned guard_depth;

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

		if (sigaction(kept[i], NULL, &now) == 0 &&
		    changed(&now, &g->saved[i])) {
			sigaction(kept[i], &g->saved[i], NULL);
			psc_log(PSC_LOG_DEBUG, -1,
				"signal %d: a libfabric call "
				"replaced its disposition; put back",
				kept[i]);
		}
	}
	/* Restored first, so a pending signal meets the program's action. */
	pthread_sigmask(SIG_SETMASK, &g->mask, NULL);
	pthread_mutex_unlock(&guard_lock);
}
