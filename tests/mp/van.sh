#!/bin/sh
# The ps-lite van on tcp, net and shm, and with FI_PROVIDER unset (shm
# inside a node, the network between nodes; a kvstore job split into two
# nodes by PS_COMM_NODE_ID uses both): its Check suite (bind, connect, self-
# sends, no-id senders, 8 sending threads, 0 B/1 B/64 MiB segments, stop
# and start, bad frames, unreachable, dead and silent peers) under each
# provider, then the
# kvstore example as separate processes started the way ps-lite starts a
# job (DMLC_* variables): 1 scheduler + 2 servers + 2 workers and
# 1 + 1 + 4, each worker checking every pulled value against the exact
# sum and exiting non-zero on any difference; a server killed with
# SIGKILL in the middle of the traffic, which the worker must report;
# and a server stopped (SIGSTOP) in the middle of the traffic, which
# neither the fabric nor a closed port reports: the worker must find it
# by its unanswered probes within PS_COMM_PEER_TIMEOUT. Every kvstore
# process that ends by itself, on an error or not, must leave no file in
# /dev/shm.
. "${srcdir:-.}/tests/mp/common.sh"
SUITE="$top_builddir/tests/unit/check_van"
KV="$top_builddir/examples/kvstore"
providers=${PSC_TEST_PROVIDERS:-tcp net shm}
launcher_scratch van
# "auto" is the van's default, FI_PROVIDER unset: shm to the nodes of
# this node and the network provider to the others. It runs where shm
# and tcp are both tested.
want() {
	[ "$1" = auto ] && { want tcp && want shm; return; }
	case " $providers " in *" $1 "*) return 0 ;; esac
	return 1
}
have() {
	[ "$1" = auto ] && { have_provider tcp && have_provider shm; return; }
	have_provider "$1"
}
# fabenv PROVIDER: FI_PROVIDER for it, exported (unset for auto).
fabenv() {
	if [ "$1" = auto ]; then
		unset FI_PROVIDER
	else
		FI_PROVIDER="$(fab "$1")"
		export FI_PROVIDER
	fi
}

# kvstore SECS PIDFILE ARGS...: examples/kvstore ARGS, under a timeout
# of SECS, after writing its own pid to PIDFILE.
kvstore() {
	_kv_secs=$1 _kv_pidfile=$2
	shift 2
	# shellcheck disable=SC2016 # expanded by the inner shell
	timeout "$_kv_secs" sh -c 'echo $$ >>"$0"; exec "$@"' "$_kv_pidfile" \
		"$KV" "$@"
}

# no_files_left WHAT: fail the check WHAT if a process listed in
# $tmp/pids left a file in /dev/shm (made after $tmp/stamp), and
# remove them.
no_files_left() {
	# shellcheck disable=SC2046 # one pid per word
	left=$(shm_files_of "$tmp/stamp" $(cat "$tmp/pids"))
	[ -z "$left" ] && return 0
	# shellcheck disable=SC2086 # one word per file
	not_ok "$1: left in /dev/shm: $(printf "%s " $left)"
	for f in $left; do rm -f "/dev/shm/$f"; done
	return 1
}

# kv_scratch: a fresh $tmp/pids and $tmp/stamp for one job.
kv_scratch() {
	: >"$tmp/pids"
	touch "$tmp/stamp"
}

# kvstore_start ROLE COUNT ARGS...: COUNT kvstore processes of ROLE in the
# background, output appended to $log, their pids appended to $pids (and
# the kvstores' own to $tmp/pids).
kvstore_start() {
	role=$1 n=$2
	shift 2
	i=0
	# KV_SPLIT: two nodes on this host, scheduler and servers on one,
	# workers on the other (PS_COMM_NODE_ID), so that each process
	# reaches some nodes over shm and others over the network.
	node=${KV_SPLIT:+kv-node-$role}
	[ "$role" = scheduler ] && node=${KV_SPLIT:+kv-node-server}
	while [ $i -lt "$n" ]; do
		DMLC_ROLE=$role PS_COMM_NODE_ID=$node \
			kvstore 120 "$tmp/pids" "$@" >>"$log" 2>&1 &
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
	kv_scratch
	# The scheduler's port is fixed (max_retry 0), as in ps-lite.
	free_port
	fabenv "$prov"
	export DMLC_PS_ROOT_URI=127.0.0.1 \
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
	what="kvstore 1+$ns+$nw on $prov${KV_SPLIT:+, two nodes}${PS_COMM_WAIT:+, PS_COMM_WAIT=$PS_COMM_WAIT}"
	if ! no_files_left "$what"; then
		:
	elif [ $bad -eq 0 ] && [ "$good" -eq "$nw" ]; then
		ok "$what: $(grep -m1 'worker' "$log")"
	else
		not_ok "$what"
		sed 's/^/#   /' "$log" | tail -20
	fi
	rm -f "$log"
}

for prov in tcp net shm auto; do
	want "$prov" || continue
	if ! have "$prov"; then
		skip "van on $prov: provider not present"
		continue
	fi
	out=$(mktemp)
	if (fabenv "$prov" && exec timeout 600 "$SUITE") >"$out" 2>&1; then
		ok "check_van on $prov"
	else
		# What failed, from this run: a flaky failure may not come back.
		not_ok "check_van on $prov"
		grep -v '^pscomm' "$out" | sed 's/^/#   /' | tail -20
	fi
	# Frames and segments split into 4 KiB pieces by pscomm's p2p layer:
	# the data path (the suite's "van" case; its fault and silence
	# cases ran above and do not depend on the message size). On net a
	# 64 MiB segment is 16,384 chunks under the receiver's go-ahead.
	if (fabenv "$prov" && CK_RUN_CASE=van PS_COMM_MAX_MSG_SIZE=4096 \
		exec timeout 600 "$SUITE") >"$out" 2>&1 &&
		grep -q 'Checks: [1-9]' "$out"; then
		ok "check_van on $prov, max_msg_size 4 KiB"
	else
		not_ok "check_van on $prov, max_msg_size 4 KiB"
		grep -v '^pscomm' "$out" | sed 's/^/#   /' | tail -20
	fi
	rm -f "$out"
	kvstore_job "$prov" 2 2 -k 8 -s 1048576 -i 3
	kvstore_job "$prov" 1 4 -k 5 -s 65536 -i 3
	# A van waits on its provider's wait object unless told to poll.
	PS_COMM_WAIT=poll kvstore_job "$prov" 1 1 -k 4 -s 262144 -i 3
	[ "$prov" = auto ] && KV_SPLIT=1 kvstore_job auto 2 2 -k 8 -s 1048576 -i 3
done
# kvstore_kill PROVIDER DELAY: kill -9 the server of a 1+1+1 job DELAY
# seconds after the worker connected it, in the middle of its pushes and
# pulls; the worker must name a failed node (the server, or the
# scheduler when that noticed first and gave up) and exit non-zero
# within 20 s, and so must the scheduler.
kvstore_kill() {
	prov=$1 delay=$2
	log=$(mktemp) slog=$(mktemp)
	free_port
	fabenv "$prov"
	kv_scratch
	export DMLC_PS_ROOT_URI=127.0.0.1 \
		DMLC_PS_ROOT_PORT=$port DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=1
	DMLC_ROLE=scheduler kvstore 60 "$tmp/pids" -k 2 -s 4194304 \
		-i 100000 >"$slog" 2>&1 &
	sched=$!
	DMLC_ROLE=server "$KV" -k 2 -s 4194304 -i 100000 >/dev/null 2>&1 &
	server=$!
	DMLC_ROLE=worker PS_COMM_LOG_LEVEL=debug kvstore 60 "$tmp/pids" \
		-k 2 -s 4194304 -i 100000 >"$log" 2>&1 &
	worker=$!
	unset FI_PROVIDER DMLC_PS_ROOT_URI DMLC_PS_ROOT_PORT DMLC_NUM_SERVER \
		DMLC_NUM_WORKER
	# DELAY seconds into the traffic: after the worker connected node 8.
	i=0
	while ! grep -q "van: node 8 at" "$log" && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	sleep "$delay"
	kill -9 "$server" 2>/dev/null
	t0=$(date +%s)
	wait "$worker"
	wrc=$?
	wait "$sched"
	src=$?
	took=$(($(date +%s) - t0))
	wait "$server" 2>/dev/null
	# The killed server left its shm region (and rings) behind; the
	# worker and the scheduler, which gave up, left nothing.
	rm -f "/dev/shm/$server:"* "/dev/shm/psc-ring-$server-"*
	if ! no_files_left "kvstore on $prov: server killed after $delay s"; then
		:
	elif [ $wrc -ne 0 ] && [ $wrc -ne 124 ] && [ $src -ne 0 ] &&
		[ $src -ne 124 ] && [ $took -le 20 ] &&
		grep -q "kvstore: node [0-9]* failed" "$log"; then
		ok "kvstore on $prov: server killed after $delay s, worker out in" \
			"$took s: $(grep 'kvstore: node' "$log" | tail -1)"
	else
		not_ok "kvstore on $prov: server killed after $delay s (worker" \
			"$wrc, scheduler $src, $took s)"
		sed 's/^/#   /' "$log" | tail -5
	fi
	rm -f "$log" "$slog"
}

for prov in tcp net shm auto; do
	want "$prov" && have "$prov" || continue
	kvstore_kill "$prov" 0.3
	kvstore_kill "$prov" 1.5
done

# kvstore_stop PROVIDER: SIGSTOP the server of a 1+1+1 job once the
# worker has finished a round (so it waits on the server's replies from
# then on). A stopped server closes nothing and answers nothing, like a
# node that died where the fabric does not say so (verbs) or whose host
# dropped off the network. The worker, with PS_COMM_PEER_TIMEOUT=3, must
# name node 8 and exit non-zero within 15 s; the scheduler, whose
# timeout is far away, must not be the one that gave up. The worker
# ends either through kvstore (status 1, the van reported node 8) or,
# when the stop caught node 8 holding its shm lock and a send of the
# worker's spins on it, through the van's watchdog (status 75, naming
# the call for node 8).
kvstore_stop() {
	prov=$1
	log=$(mktemp)
	free_port
	fabenv "$prov"
	kv_scratch
	export DMLC_PS_ROOT_URI=127.0.0.1 \
		DMLC_PS_ROOT_PORT=$port DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=1
	: >"$tmp/spid"
	DMLC_ROLE=scheduler PS_COMM_PEER_TIMEOUT=600 kvstore 60 "$tmp/spid" \
		-k 4 -s 65536 -i 1000000 >/dev/null 2>&1 &
	sched=$!
	DMLC_ROLE=server "$KV" -k 4 -s 65536 -i 1000000 >/dev/null 2>&1 &
	server=$!
	DMLC_ROLE=worker PS_COMM_PEER_TIMEOUT=3 kvstore 60 "$tmp/pids" -v \
		-k 4 -s 65536 -i 1000000 >"$log" 2>&1 &
	worker=$!
	unset FI_PROVIDER DMLC_PS_ROOT_URI DMLC_PS_ROOT_PORT DMLC_NUM_SERVER \
		DMLC_NUM_WORKER
	# The worker's first round: the server serves it.
	i=0
	while ! grep -q "round 1 done" "$log" && kill -0 "$worker" 2>/dev/null &&
		[ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -STOP "$server"
	t0=$(date +%s.%N)
	wait "$worker"
	wrc=$?
	took=$(echo "$t0 $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }')
	# The scheduler ends by SIGTERM, which removes its files too.
	kill -9 "$server"
	kill -TERM "$(cat "$tmp/spid")" 2>/dev/null
	cat "$tmp/spid" >>"$tmp/pids"
	wait "$server" 2>/dev/null
	wait "$sched" 2>/dev/null
	rm -f "/dev/shm/$server:"* "/dev/shm/psc-ring-$server-"*
	if ! no_files_left "kvstore on $prov: server stopped"; then
		:
	elif awk "BEGIN { exit !($took <= 15) }" &&
		{ { [ $wrc -eq 1 ] && grep -q "kvstore: node 8 failed" "$log"; } ||
			{ [ $wrc -eq 75 ] && grep -q " for node 8 " "$log"; }; }; then
		ok "kvstore on $prov: server stopped, worker out in $took s" \
			"(status $wrc):" \
			"$(grep -E 'kvstore: node|van: fatal' "$log" | tail -1)"
	else
		not_ok "kvstore on $prov: server stopped (worker $wrc, $took s)"
		sed 's/^/#   /' "$log" | tail -5
	fi
	rm -f "$log"
}

for prov in tcp net shm auto; do
	want "$prov" && have "$prov" || continue
	kvstore_stop "$prov"
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
