/*
 * Unit tests for lib/fabric/sig.c, through psc_fab_query with a getinfo
 * of the test's that does what a provider library may do inside
 * fi_getinfo: install a handler that calls exit() for SIGTERM, SIGINT or
 * SIGHUP, and have that signal arrive before the call returns. Each must
 * end the process by the signal itself (the handler undone), or reach
 * the application's own handler when it had one, and leave the thread's
 * mask and a nest of guards as they were. And psc_sig_remove_on_term:
 * a termination signal at its default action removes the process's
 * files in /dev/shm, and still ends it by the signal; so does exit(),
 * though not _exit() nor a forked child's exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>
#include <rdma/fi_errno.h>

#include "fabric/select.h"
#include "fabric/sig.h"

static int hit_sig; /* the signal a provider_getinfo installs and raises */

/* The provider library's handler: what libinfinipath's does, less the print. */
static void provider_handler(int sig)
{
	(void)sig;
	exit(3);
}

static int provider_getinfo(uint32_t version, const char *node,
			    const char *service, uint64_t flags,
			    const struct fi_info *hints, struct fi_info **info)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = provider_handler;
	sigaction(hit_sig, &sa, NULL);
	raise(hit_sig);
	*info = NULL;
	return -FI_ENODATA;
}

static void query(int sig)
{
	struct fi_info *list = NULL;
	bool relaxed;

	hit_sig = sig;
	psc_fab_query(provider_getinfo, NULL, &list, &relaxed);
}

/* Give sig the default action (Check's runner may leave SIGINT ignored). */
static void set_default(int sig)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	ck_assert_int_eq(sigaction(sig, &sa, NULL), 0);
}

/* Run as tests that must end by the signal (tcase_add_test_raise_signal). */
START_TEST(test_term_in_getinfo)
{
	set_default(SIGTERM);
	query(SIGTERM);
}
END_TEST

START_TEST(test_int_in_getinfo)
{
	set_default(SIGINT);
	query(SIGINT);
}
END_TEST

START_TEST(test_hup_in_getinfo)
{
	set_default(SIGHUP);
	query(SIGHUP);
}
END_TEST

static volatile sig_atomic_t app_hits;

static void app_handler(int sig)
{
	(void)sig;
	app_hits++;
}

START_TEST(test_app_handler_kept)
{
	struct sigaction sa, now;
	sigset_t mask;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = app_handler;
	ck_assert_int_eq(sigaction(SIGTERM, &sa, NULL), 0);
	query(SIGTERM);
	/* Delivered as the guard unblocked it, to the application's handler. */
	ck_assert_int_eq(app_hits, 1);
	ck_assert_int_eq(sigaction(SIGTERM, NULL, &now), 0);
	ck_assert_ptr_eq((void *)now.sa_handler, (void *)app_handler);
	ck_assert_int_eq(pthread_sigmask(SIG_BLOCK, NULL, &mask), 0);
	ck_assert(!sigismember(&mask, SIGTERM));
}
END_TEST

START_TEST(test_ignored_kept)
{
	struct sigaction sa, now;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	ck_assert_int_eq(sigaction(SIGHUP, &sa, NULL), 0);
	query(SIGHUP);
	ck_assert_int_eq(sigaction(SIGHUP, NULL, &now), 0);
	ck_assert_ptr_eq((void *)now.sa_handler, (void *)SIG_IGN);
}
END_TEST

/*
 * A nest restores at its outermost leave only, and leaves the mask the
 * thread had (here with SIGUSR1 blocked by the application).
 */
START_TEST(test_nest_and_mask)
{
	struct psc_sig_guard outer, inner;
	struct sigaction sa, now;
	sigset_t app, mask;

	set_default(SIGINT);
	sigemptyset(&app);
	sigaddset(&app, SIGUSR1);
	ck_assert_int_eq(pthread_sigmask(SIG_SETMASK, &app, NULL), 0);
	psc_sig_guard_enter(&outer);
	psc_sig_guard_enter(&inner);
	ck_assert_int_eq(pthread_sigmask(SIG_BLOCK, NULL, &mask), 0);
	ck_assert(sigismember(&mask, SIGTERM) && sigismember(&mask, SIGINT) &&
		  sigismember(&mask, SIGHUP));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = provider_handler;
	sigaction(SIGINT, &sa, NULL);
	psc_sig_guard_leave(&inner);
	sigaction(SIGINT, NULL, &now);
	ck_assert_ptr_eq((void *)now.sa_handler, (void *)provider_handler);
	psc_sig_guard_leave(&outer);
	sigaction(SIGINT, NULL, &now);
	ck_assert_ptr_eq((void *)now.sa_handler, (void *)SIG_DFL);
	ck_assert_int_eq(pthread_sigmask(SIG_BLOCK, NULL, &mask), 0);
	ck_assert(sigismember(&mask, SIGUSR1) && !sigismember(&mask, SIGTERM));
}
END_TEST

/* A file /dev/shm/psc-sigtest-PID-TAG; returns whether it exists. */
static bool shm_file(pid_t pid, const char *tag, bool create)
{
	char path[96];
	int fd;

	snprintf(path, sizeof(path), "/dev/shm/psc-sigtest-%ld-%s",
		 (long)pid, tag);
	if (!create)
		return access(path, F_OK) == 0;
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

static void register_own(void)
{
	char prefix[48];

	snprintf(prefix, sizeof(prefix), "psc-sigtest-%ld-", (long)getpid());
	ck_assert_int_eq(psc_sig_remove_on_term(prefix), 0);
	/* Given again: not a second entry. */
	ck_assert_int_eq(psc_sig_remove_on_term(prefix), 0);
}

/*
 * Run body in a child that made two files of its own, and return how it
 * ended; *left says whether either file is still there (then removed).
 */
static int in_child(void (*body)(void), bool *left)
{
	int st = 0;
	pid_t c = fork();

	ck_assert_int_ge(c, 0);
	if (c == 0) {
		set_default(SIGTERM);
		if (!shm_file(getpid(), "a", true) ||
		    !shm_file(getpid(), "b", true))
			_exit(2);
		body();
		_exit(0);
	}
	ck_assert_int_eq(waitpid(c, &st, 0), c);
	*left = shm_file(c, "a", false) || shm_file(c, "b", false);
	if (*left) {
		char path[96];

		snprintf(path, sizeof(path), "/dev/shm/psc-sigtest-%ld-a",
			 (long)c);
		unlink(path);
		path[strlen(path) - 1] = 'b';
		unlink(path);
	}
	return st;
}

static void term_after_register(void)
{
	register_own();
	raise(SIGTERM);
}

/* What shm does: a provider takes the signal inside a guarded call. */
static void term_after_provider_took_it(void)
{
	struct psc_sig_guard g;
	struct sigaction sa;

	psc_sig_guard_enter(&g);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = provider_handler;
	sigaction(SIGTERM, &sa, NULL);
	register_own();
	raise(SIGTERM); /* blocked until the guard is left */
	psc_sig_guard_leave(&g);
}

static void ignored_term(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigaction(SIGTERM, &sa, NULL);
	register_own();
	raise(SIGTERM);
}

/* A program that gives up on an error without closing pscomm. */
static void exit_after_register(void)
{
	register_own();
	exit(3);
}

/* _exit runs no destructor: the files stay (the survivors' to remove). */
static void underscore_exit_after_register(void)
{
	register_own();
	_exit(4);
}

START_TEST(test_exit_removes_files)
{
	bool left;
	int st = in_child(exit_after_register, &left);

	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 3);
	ck_assert(!left);
	st = in_child(underscore_exit_after_register, &left);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 4);
	ck_assert(left);
}
END_TEST

START_TEST(test_term_removes_files)
{
	bool left;
	int st = in_child(term_after_register, &left);

	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	ck_assert(!left);
	st = in_child(term_after_provider_took_it, &left);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	ck_assert(!left);
}
END_TEST

START_TEST(test_term_ignored_removes_nothing)
{
	bool left;
	int st = in_child(ignored_term, &left);

	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ck_assert(left);
}
END_TEST

/* A child forked after registering does not remove its parent's files. */
START_TEST(test_forked_child_spares_parent)
{
	int st = 0;
	pid_t c;

	set_default(SIGTERM);
	ck_assert(shm_file(getpid(), "a", true));
	register_own();
	c = fork();
	ck_assert_int_ge(c, 0);
	if (c == 0) {
		raise(SIGTERM);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(c, &st, 0), c);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	ck_assert(shm_file(getpid(), "a", false));
	/* Nor by exiting. */
	c = fork();
	ck_assert_int_ge(c, 0);
	if (c == 0)
		exit(0);
	ck_assert_int_eq(waitpid(c, &st, 0), c);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ck_assert(shm_file(getpid(), "a", false));
	ck_assert_int_eq(psc_sig_remove_on_term(""), -EINVAL);
	/* Removed by the signal, as a check that it was the parent's. */
	raise(SIGTERM);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sig");
	TCase *tc = tcase_create("guard");
	SRunner *sr;
	int failed;

	tcase_add_test_raise_signal(tc, test_term_in_getinfo, SIGTERM);
	tcase_add_test_raise_signal(tc, test_int_in_getinfo, SIGINT);
	tcase_add_test_raise_signal(tc, test_hup_in_getinfo, SIGHUP);
	tcase_add_test(tc, test_app_handler_kept);
	tcase_add_test(tc, test_ignored_kept);
	tcase_add_test(tc, test_nest_and_mask);
	tcase_add_test(tc, test_term_removes_files);
	tcase_add_test(tc, test_exit_removes_files);
	tcase_add_test(tc, test_term_ignored_removes_nothing);
	tcase_add_test_raise_signal(tc, test_forked_child_spares_parent,
				    SIGTERM);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	/* Each test changes its process's signals: one fork each. */
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
