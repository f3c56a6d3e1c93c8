#!/bin/sh
# Failure semantics (tests/mp/live_suite.c): ps_comm_abort reaching every
# rank, a dead rank failing exactly the communicators that hold it, a
# dead rank 0 handing the liveness star over (tcp and net), agreement
# and shrink after a death (tcp, net and shm),
# on every provider present (sockets and udp: the abort only); a wait
# for a rank that finalized ending as a dead peer's would; a killed
# rank's shm region not blocking the next process with its pid; and
# ranks whose connection rank 0's full listener dropped joining again.
. "${srcdir:-.}/tests/mp/common.sh"
SUITE="$top_builddir/tests/mp/live_suite"
providers=${PSC_TEST_PROVIDERS:-tcp net shm udp sockets}

# A rank killed by SIGKILL leaves its shm region in /dev/shm under its pid.
# A later process given that pid must still open its endpoint, and remove
# its region when it finalizes. The pid is handed on through ns_last_pid
# (root only); a run where another process took it first is tried again.
stale_region() {
	name="a process reusing a killed rank's pid opens its shm endpoint"
	if ! have_provider shm; then
		skip "$name: provider shm not present"
		return
	fi
	if ! [ -w /proc/sys/kernel/ns_last_pid ]; then
		skip "$name: needs root to choose a pid (ns_last_pid)"
		return
	fi
	ar=$top_builddir/examples/allreduce
	log=$(mktemp)
	for _try in 1 2 3 4 5; do
		FI_PROVIDER=shm "$ar" -m 4K -M 4K -i 1000000000 >/dev/null 2>&1 &
		pid=$!
		for _i in $(seq 100); do
			ls /dev/shm/"$pid":* >/dev/null 2>&1 && break
			sleep 0.1
		done
		kill -9 "$pid"
		wait "$pid" 2>/dev/null
		if ! ls /dev/shm/"$pid":* >/dev/null 2>&1; then
			not_ok "$name: the killed rank left no region to test with"
			rm -f "$log"
			return
		fi
		echo $((pid - 1)) >/proc/sys/kernel/ns_last_pid
		FI_PROVIDER=shm PSC_WANT_PID=$pid sh -c \
			'[ $$ -eq "$PSC_WANT_PID" ] || exit 99; exec "$0" "$@"' \
			"$ar" -m 4K -M 64K -c >"$log" 2>&1 &
		child=$!
		(sleep 60; kill -9 "$child" 2>/dev/null) &
		guard=$!
		wait "$child"
		rc=$?
		kill "$guard" 2>/dev/null
		wait "$guard" 2>/dev/null
		[ $rc -eq 99 ] || break
		rm -f /dev/shm/"$pid":*
	done
	if [ $rc -eq 99 ]; then
		skip "$name: pid $pid was taken by another process 5 times"
	elif [ $rc -ne 0 ]; then
		not_ok "$name: exit $rc"
		sed 's/^/#   /' "$log" | tail -5
	elif ls /dev/shm/"$pid":* >/dev/null 2>&1; then
		not_ok "$name: it left its region in /dev/shm"
	else
		ok "$name"
	fi
	rm -f "$log" /dev/shm/"$pid":*
}

# A rank whose goodbye to the rendezvous is held back (as loss on its
# link holds it back under TCP's backoff) is slow, not dead: the ranks
# that finished first must be answered when they join rank 0's liveness
# monitor, although rank 0 still waits for that goodbye, and the slow
# rank must not count as "never connected". Rank 2 waits 3 s with a
# PS_COMM_PEER_TIMEOUT of 1 s; every rank must finish its checked
# allreduce.
slow_goodbye() {
	name="a rank slow to leave the rendezvous is not taken for dead"
	ar=$top_builddir/examples/allreduce
	dir=$(mktemp -d)
	free_port
	pids=
	for r in 0 1 2; do
		delay=0
		[ "$r" -eq 2 ] && delay=3
		(clean_rank_env; PS_COMM_SIZE=3 PS_COMM_RANK=$r \
			PS_COMM_ROOT=127.0.0.1:$port PS_COMM_PEER_TIMEOUT=1 \
			PS_COMM_TEST_BYE_DELAY=$delay \
			exec timeout 60 "$ar" -m 4K -M 4K -c) \
			>"$dir/$r.log" 2>&1 &
		pids="$pids $!"
	done
	bad=
	r=0
	for p in $pids; do
		wait "$p" || bad="$bad rank $r: exit $?;"
		r=$((r + 1))
	done
	if [ -n "$bad" ]; then
		not_ok "$name:$bad"
		tail -n 3 "$dir"/*.log | sed 's/^/#   /'
	else
		ok "$name"
	fi
	rm -rf "$dir"
}

stale_region
slow_goodbye
# Rank 0's listener takes one stranger at a time and drops the oldest
# past that; 16 ranks joining at once each lose their connection, before
# or after their proof, and must join again rather than take rank 0 for
# dead (every run of this failed before they did).
PS_COMM_UNAUTH_MAX=1 run_ranks \
	"ranks dropped by a full listener join again" 16 tcp 120 \
	"$top_builddir/examples/allreduce" -c -m 4K -M 4K -i 1
for prov in $providers; do
	PS_COMM_PEER_TIMEOUT=5 \
		run_ranks "ps_comm_abort reaches every rank" 4 "$prov" 60 \
		"$SUITE" --abort
	PS_COMM_PEER_TIMEOUT=5 \
		run_ranks "ps_comm_revoke reaches every rank" 4 "$prov" 60 \
		"$SUITE" --revoke
	PS_COMM_PEER_TIMEOUT=5 \
		run_ranks "a wait for a rank that finalized ends" 4 "$prov" 60 \
		"$SUITE" --left
	case $prov in tcp|net|shm) ;; *) continue ;; esac
	PS_COMM_PEER_TIMEOUT=5 \
		run_ranks "ps_comm_agree and ps_comm_shrink" 4 "$prov" 60 \
		"$SUITE" --agree
	PS_COMM_PEER_TIMEOUT=5 \
		run_ranks "a dead rank fails the communicators that hold it" 4 \
		"$prov" 60 "$SUITE" --split
	# A local death poisons shm's endpoint: nothing goes on there.
	[ "$prov" = shm ] && continue
	PS_COMM_PEER_TIMEOUT=5 \
		run_ranks "rank 0 dies: rank 1 takes over the liveness star" 4 \
		"$prov" 60 "$SUITE" --reroot
done
finish
