#!/bin/sh
# Failure semantics (tests/mp/live_suite.c): ps_comm_abort reaching every
# rank, and a dead rank failing exactly the communicators that hold it,
# on every provider present (sockets and udp: the abort only).
. "${srcdir:-.}/tests/mp/common.sh"
SUITE="$top_builddir/tests/mp/live_suite"
providers=${PSC_TEST_PROVIDERS:-tcp shm udp sockets}

for prov in $providers; do
	PS_COMM_PEER_TIMEOUT=5 \
		run_ranks "ps_comm_abort reaches every rank" 4 "$prov" 60 \
		"$SUITE" --abort
	case $prov in tcp|shm) ;; *) continue ;; esac
	PS_COMM_PEER_TIMEOUT=5 \
		run_ranks "a dead rank fails the communicators that hold it" 4 \
		"$prov" 60 "$SUITE" --split
done
finish
