#!/bin/sh
# Memory registration on providers that do not need it: with
# PS_COMM_MR_MODE=local every buffer is registered (or copied through a
# pre-registered slot) and its descriptor passed, so tcp and shm exercise
# the path verbs and efa take. The point-to-point suite runs with it,
# also with 4 KiB chunks (many children of one message), with pscomm's
# cache tiny (evictions) and off (a registration per operation, the
# default); the registration suite runs in both modes and with pscomm's
# cache, and the collectives suite forced with 4 KiB chunks. sockets covers the tagged receive path (no
# software matching) in a quick run.
. "${srcdir:-.}/tests/mp/common.sh"
P2P="$top_builddir/tests/mp/p2p_suite"
MR="$top_builddir/tests/mp/mr_suite"
COLL="$top_builddir/tests/mp/coll_suite"
providers=${PSC_TEST_PROVIDERS:-tcp net shm sockets}
want() { case " $providers " in *" $1 "*) return 0 ;; esac; return 1; }

for prov in tcp net shm; do
	want "$prov" || continue
	PS_COMM_MR_MODE=local \
		run_ranks "p2p, registration forced" 2 "$prov" 240 "$P2P"
	PS_COMM_MR_MODE=local PS_COMM_MAX_MSG_SIZE=4096 \
		run_ranks "p2p, registration forced, max_msg_size 4 KiB" 3 \
		"$prov" 240 "$P2P"
	PS_COMM_MR_MODE=local PS_COMM_MR_CACHE_ENTRIES=2 \
	PS_COMM_MR_CACHE_BYTES=256K PS_COMM_MR_BOUNCE_SIZE=0 \
		run_ranks "p2p, registration forced, tiny cache" 3 "$prov" \
		240 "$P2P"
	PS_COMM_MR_MODE=local PS_COMM_MR_CACHE_ENTRIES=0 \
		run_ranks "p2p, registration forced, no cache" 2 "$prov" 240 \
		"$P2P"
	PS_COMM_MR_MODE=local \
		run_ranks "registration suite, forced" 3 "$prov" 240 "$MR"
	PS_COMM_MR_MODE=local PS_COMM_MAX_MSG_SIZE=4096 \
		run_ranks "registration suite, forced, max_msg_size 4 KiB" 2 \
		"$prov" 240 "$MR"
	run_ranks "registration suite" 3 "$prov" 240 "$MR"
	PS_COMM_MR_MODE=local PS_COMM_MR_CACHE_ENTRIES=1024 \
		run_ranks "registration suite, forced, pscomm's cache" 2 \
		"$prov" 240 "$MR"
	# Collectives (allreduce and the rest) on the same path.
	[ -x "$COLL" ] || continue
	PS_COMM_MR_MODE=local PS_COMM_MAX_MSG_SIZE=4096 \
		run_ranks "collectives (quick), registration forced, 4 KiB" 3 \
		"$prov" 400 "$COLL" --quick
done
if want sockets; then
	PS_COMM_MR_MODE=local \
		run_ranks "p2p (quick), registration forced" 2 sockets 240 \
		"$P2P" --quick
fi
finish
