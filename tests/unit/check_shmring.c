/*
 * Unit tests for lib/core/shmring.c's clean-up after a dead peer:
 * psc_shmring_remove_pid removes exactly the ring names that process made
 * (/dev/shm/psc-ring-PID-N), and no other pid's, nor other files.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <check.h>

#include "core/ep.h"

/* Pids above the kernel's limit (4194304), so no live process has them. */
#define DEAD 9000001
#define OTHER 9000011

static void make(const char *name)
{
	int fd = shm_open(name, O_CREAT | O_RDWR, 0600);

	ck_assert_int_ge(fd, 0);
	close(fd);
}

static int exists(const char *name)
{
	int fd = shm_open(name, O_RDONLY, 0);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

START_TEST(test_remove_pid)
{
	const char *mine[] = {"/psc-ring-9000001-0", "/psc-ring-9000001-17"};
	const char *kept[] = {"/psc-ring-9000011-0", "/psc-ring-90000010-0",
			      "/9000001:0:0"};

	for (size_t i = 0; i < 2; i++)
		make(mine[i]);
	for (size_t i = 0; i < 3; i++)
		make(kept[i]);
	psc_shmring_remove_pid(DEAD);
	for (size_t i = 0; i < 2; i++)
		ck_assert_msg(!exists(mine[i]), "%s was left", mine[i]);
	for (size_t i = 0; i < 3; i++) {
		ck_assert_msg(exists(kept[i]), "%s was removed", kept[i]);
		shm_unlink(kept[i]);
	}
	/* Nothing to remove, and no pid at all: no effect, no crash. */
	psc_shmring_remove_pid(OTHER);
	psc_shmring_remove_pid(0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("shmring");
	TCase *tc = tcase_create("cleanup");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_remove_pid);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
