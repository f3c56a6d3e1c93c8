#!/bin/sh
# The ps-lite van on tcp and shm: its Check suite (bind, connect, self-
# sends, no-id senders, 8 sending threads, 0 B/1 B/64 MiB segments, stop
# and start, bad frames, unreachable peers) under each provider, then the
# kvstore example as separate processes started the way ps-lite starts a
# job (DMLC_* variables): 1 scheduler + 2 servers + 2 workers and
# 1 + 1 + 4, each worker checking every pulled value against the exact
# sum and exiting non-zero on any difference.
. "${srcdir:-.}/tests/mp/common.sh"
SUITE="$top_builddir/tests/unit/check_van"
KV="$top_builddir/examples/kvstore"
providers=${PSC_TEST_PROVIDERS:-tcp shm}
want() { case " $providers " in *" $1 "*) return 0 ;; esac; return 1; }

# kvstore_start ROLE COUNT ARGS...: COUNT kvstore processes of ROLE in the
# background, output appended to $log, their pids appended to $pids.
kvstore_start() {
	role=$1 n=$2
	shift 2
	i=0
	while [ $i -lt "$n" ]; do
		DMLC_ROLE=$role timeout 120 "$KV" "$@" >>"$log" 2>&1 &
		pids="$pids $!"
		i=$((i + 1))
	done
}

# kvstore_job PROVIDER SERVERS WORKERS ARGS...: one check.
kvstore_job() {
	prov=$1 ns=$2 nw=$3
	shift 3
	log=$(mktemp)
	pids=
	# The scheduler's port is fixed (max_retry 0), as in ps-lite.
	free_port
	export FI_PROVIDER=$prov DMLC_PS_ROOT_URI=127.0.0.1 \
		DMLC_PS_ROOT_PORT=$port DMLC_NUM_SERVER=$ns DMLC_NUM_WORKER=$nw
	kvstore_start scheduler 1 "$@"
	kvstore_start server "$ns" "$@"
	kvstore_start worker "$nw" "$@"
	bad=0
	for p in $pids; do
		wait "$p" || bad=1
	done
	unset FI_PROVIDER DMLC_PS_ROOT_URI DMLC_PS_ROOT_PORT DMLC_NUM_SERVER \
		DMLC_NUM_WORKER
	# Every worker must report, with no wrong value.
	good=$(grep -c ", 0 wrong values" "$log")
	if [ $bad -eq 0 ] && [ "$good" -eq "$nw" ]; then
		ok "kvstore 1+$ns+$nw on $prov: $(grep -m1 'worker' "$log")"
	else
		not_ok "kvstore 1+$ns+$nw on $prov"
		sed 's/^/#   /' "$log" | tail -20
	fi
	rm -f "$log"
}

for prov in tcp shm; do
	want "$prov" || continue
	if ! have_provider "$prov"; then
		skip "van on $prov: provider not present"
		continue
	fi
	if FI_PROVIDER=$prov timeout 600 "$SUITE" >/dev/null 2>&1; then
		ok "check_van on $prov"
	else
		not_ok "check_van on $prov"
		FI_PROVIDER=$prov CK_VERBOSITY=normal timeout 600 "$SUITE" 2>&1 |
			grep -v '^pscomm' | sed 's/^/#   /' | tail -20
	fi
	# Frames and segments split into 4 KiB pieces by pscomm's p2p layer.
	if PS_COMM_MAX_MSG_SIZE=4096 FI_PROVIDER=$prov timeout 600 "$SUITE" \
		>/dev/null 2>&1; then
		ok "check_van on $prov, max_msg_size 4 KiB"
	else
		not_ok "check_van on $prov, max_msg_size 4 KiB"
	fi
	kvstore_job "$prov" 2 2 -k 8 -s 1048576 -i 3
	kvstore_job "$prov" 1 4 -k 5 -s 65536 -i 3
done
# The check can fail: a server that adds wrongly must make workers fail.
if want tcp && have_provider tcp; then
	expect_fail=$(KVSTORE_CORRUPT=1 kvstore_job tcp 1 1 -k 2 -s 4096 -i 1)
	case $expect_fail in
	"not ok"*) ok "kvstore detects a wrong sum" ;;
	*) not_ok "kvstore missed a wrong sum: $expect_fail" ;;
	esac
fi
finish
