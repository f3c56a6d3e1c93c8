/*
 * init_probe: a program that is about to call ps_comm_init, for
 * tests/mp/init_signal.sh. It prints "ready" on stdout (flushed) as main
 * starts, so that the test can time a signal from the start of
 * ps_comm_init rather than from the program's loading, then initialises
 * pscomm from the environment and finalizes.
 *
 * Exit codes: 0 ps_comm_init and ps_comm_finalize worked; 3 ps_comm_init
 * failed. A signal that reaches it ends it by that signal.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ps_comm.h"

int main(void)
{
	ps_comm_t c;
	int rc;

	printf("ready\n");
	fflush(stdout);
	rc = ps_comm_init(&c, NULL);
	if (rc) {
		fprintf(stderr, "init_probe: ps_comm_init: %s\n",
			ps_comm_strerror(rc));
		return 3;
	}
	ps_comm_finalize(c);
	return 0;
}
