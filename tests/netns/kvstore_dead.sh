#!/bin/bash
# tests/netns/kvstore_dead.sh: a kvstore job (examples/kvstore on the
# ps-lite van: 1 scheduler, 1 server, 1 worker) with one network
# namespace per node, on the tcp provider, whose server dies in the
# middle of the traffic, once the worker has finished a round:
#
#  1. killed (SIGKILL): its host closes its connections and refuses its
#     port. The worker must name a failed node and exit non-zero within
#     10 s, long before PS_COMM_PEER_TIMEOUT (30 s by default): on the
#     evidence of the refusal, not of silence.
#  2. unplugged, then killed: its cable goes first (its switch port is
#     set down), so nothing of its death (no FIN, no RST, no refused
#     port) ever reaches the worker, which waits for the replies of a
#     node that no longer exists while the fabric says nothing, as verbs
#     did when a ps-lite server was killed. The worker, with
#     PS_COMM_PEER_TIMEOUT=4, must name node 8 itself and exit non-zero
#     within 14 s; the scheduler's timeout is far away, so that it does
#     not give up first.
#
# Every process is bounded (the worker by timeout, the others are killed
# when the worker is out, and by the teardown), and the script waits
# for events: the worker's "round 1 done" line and its exit.
# Needs root; exit 77 (skip) otherwise.
#
#	sudo tests/netns/kvstore_dead.sh	# from the build directory

# Automake may run *.sh through $(SHELL): make sure this is bash.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"

here=$(cd "$(dirname "$0")" && pwd)
if [ -f "$here/lib.sh" ]; then
	. "$here/lib.sh"
elif [ -n "${srcdir:-}" ] && [ -f "$srcdir/tests/netns/lib.sh" ]; then
	. "$srcdir/tests/netns/lib.sh"
else
	echo "not ok - cannot find tests/netns/lib.sh"
	exit 99
fi

top_builddir=${top_builddir:-.}
KV=$(cd "$top_builddir" && pwd)/examples/kvstore
TMO=${NETNS_TIMEOUT:-60}
ARGS=(-v -k 4 -s 65536 -i 1000000)
export FI_PROVIDER=${FI_PROVIDER:-tcp}

netns_require
if [ ! -x "$KV" ]; then
	echo "SKIP: $KV not built"
	exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/psc-netns-kvdead.XXXXXX") || exit 99
netns_exit_hook() { rm -rf "$tmp"; }
trap 'netns_exit_hook' EXIT
if ! netns_setup 3; then
	echo "not ok - setup: 3 namespaces"
	exit 1
fi
failed=0

# start NS ROLE LOG [VAR=VALUE...]: a kvstore node in namespace NS, in
# the background, with its environment; $! is the program itself (ip
# netns exec execs it).
start() {
	local ns=$1 role=$2 log=$3
	shift 3
	ip netns exec "${NETNS_NAMES[ns]}" env DMLC_ROLE="$role" \
		DMLC_NODE_HOST="${NETNS_IP4[ns]}" "$@" "$KV" "${ARGS[@]}" \
		</dev/null >"$log" 2>&1 &
}

# one_case NAME UNPLUG PEER_TIMEOUT MAX NODE_RE: the scheduler in
# namespace 0, the server in 1, the worker in 2 (PS_COMM_PEER_TIMEOUT
# PEER_TIMEOUT); once the worker has finished a round, unplug the
# server's cable if UNPLUG is 1, then SIGKILL it. The worker must exit
# non-zero within MAX seconds, having named a failed node that matches
# NODE_RE.
one_case() {
	local name=$1 unplug=$2 ptmo=$3 max=$4 re=$5 port=$6
	local wlog=$tmp/$name.worker sched server worker i wrc t0 took
	export DMLC_PS_ROOT_URI=${NETNS_IP4[0]} DMLC_PS_ROOT_PORT=$port \
		DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=1
	start 0 scheduler "$tmp/$name.scheduler" PS_COMM_PEER_TIMEOUT=600
	sched=$!
	start 1 server "$tmp/$name.server"
	server=$!
	ip netns exec "${NETNS_NAMES[2]}" timeout -k 5 "$TMO" env \
		DMLC_ROLE=worker DMLC_NODE_HOST="${NETNS_IP4[2]}" \
		PS_COMM_PEER_TIMEOUT="$ptmo" "$KV" "${ARGS[@]}" \
		</dev/null >"$wlog" 2>&1 &
	worker=$!
	for ((i = 0; i < TMO * 10; i++)); do
		grep -q "round 1 done" "$wlog" && break
		kill -0 "$worker" 2>/dev/null || break
		sleep 0.1
	done
	[ "$unplug" = 1 ] && netns_link_down 1
	kill -KILL "$server" 2>/dev/null
	t0=$(date +%s.%N)
	# (2>/dev/null: no "Killed" notice for the server reaped here)
	wait "$worker" 2>/dev/null
	wrc=$?
	took=$(echo "$t0 $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }')
	kill -KILL "$sched" 2>/dev/null
	wait "$sched" "$server" 2>/dev/null
	[ "$unplug" = 1 ] && netns_link_up 1
	if [ "$wrc" -ne 0 ] && [ "$wrc" -ne 124 ] && [ "$wrc" -ne 137 ] &&
		awk "BEGIN { exit !($took <= $max) }" &&
		grep -Eq "kvstore: node $re failed" "$wlog"; then
		echo "ok - $name: worker out in $took s:" \
			"$(grep 'kvstore: node' "$wlog" | tail -1)"
	else
		echo "not ok - $name: worker status $wrc after $took s" \
			"(at most $max s, naming node $re)"
		tail -5 "$wlog" | sed 's/^/#   /'
		failed=1
	fi
}

port=${NETNS_PORT:-29700}
one_case "server killed" 0 30 10 "[0-9]+" "$port"
one_case "server unplugged, then killed" 1 4 14 8 $((port + 1))
exit "$failed"
