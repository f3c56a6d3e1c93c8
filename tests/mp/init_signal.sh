#!/bin/sh
# init_signal.sh: a SIGTERM (SIGINT, SIGHUP) that reaches a rank inside
# ps_comm_init ends it by that signal (status 128 + N) within 2 s, leaving
# no file of its own in /dev/shm (shm's queues, pscomm's rings), at
# whatever moment it arrives: while libfabric loads and queries its
# providers (fi_getinfo), opens the chosen one, or the rank waits in the
# rendezvous. Each run starts rank 0 of a 2-rank job whose rank 1 never
# comes (a file store), with the three signals at their default action
# whatever this script inherited (nohup ignores SIGHUP, and a background
# job of sh ignores SIGINT: pscomm keeps an ignored signal ignored), waits
# for it to reach main (tests/mp/init_probe
# prints "ready"), then sends the signal after a random 0-500 ms. A provider library's
# handler (libinfinipath's, which Debian's libfabric loads for psm) would
# make it exit with status 1, or hang it for ever in libfabric's
# destructor (lib/fabric/sig.h).
#
# PSC_TEST_SIG_RUNS: the SIGTERM runs (default 50); SIGINT and SIGHUP get
# a tenth of that each; two run at a time. PSC_TEST_SIG_SEED: the random
# seed (printed). PSC_TEST_SIG_BOUND: the seconds allowed from the signal
# to the end (default 2; a signal inside fi_getinfo waits for its return,
# 0.2-0.7 s here, longer on a machine loaded far beyond its cores).
. "${srcdir:-.}/tests/mp/common.sh"

PROBE=$top_builddir/tests/mp/init_probe
need_programs "$PROBE"
clean_rank_env
unset FI_PROVIDER
tmp=$(mktemp -d "${TMPDIR:-/tmp}/init_signal.XXXXXX") || exit 1
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP

runs=${PSC_TEST_SIG_RUNS:-50}
bound=${PSC_TEST_SIG_BOUND:-2}
seed=${PSC_TEST_SIG_SEED:-$$}
echo "# seed $seed (PSC_TEST_SIG_SEED reruns these delays)"
if ldconfig -p 2>/dev/null | grep -q libinfinipath; then
	echo "# libinfinipath is installed: its handlers are in play"
else
	echo "# libinfinipath is not installed: no provider handler to undo"
fi

# since T S: more than S seconds passed since T (date +%s.%N).
since() {
	awk -v a="$1" -v b="$(date +%s.%N)" -v s="$2" \
		'BEGIN { exit !(b - a > s) }'
}

# delay N: a random delay in seconds, 0 to 0.5, for run N.
delay() {
	awk -v s="$seed" -v n="$1" \
		'BEGIN { srand(s * 1000 + n); printf "%.3f", rand() * 0.5 }'
}

# one SIG N: run N with signal SIG; ok when the probe ends by it within
# $bound s. The rendezvous is a file store of its own (no port to clash).
one() {
	sig=$1 n=$2
	mkdir "$tmp/store$n" || exit 1
	touch "$tmp/stamp$n"
	: >"$tmp/out"
	PS_COMM_SIZE=2 PS_COMM_RANK=0 PS_COMM_BOOTSTRAP=file:$tmp/store$n \
		PS_COMM_JOB_KEY=init-signal PS_COMM_TIMEOUT=60 \
		env --default-signal=HUP,INT,TERM \
		"$PROBE" >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	i=0
	while [ ! -s "$tmp/out" ] && [ $i -lt 1000 ] && alive "$pid"; do
		sleep 0.01
		i=$((i + 1))
	done
	d=$(delay "$n")
	sleep "$d"
	t0=$(date +%s.%N)
	kill -"$sig" "$pid" 2>/dev/null
	# A hang is for ever: 10 s tells it from a slow end.
	while alive "$pid" && ! since "$t0" 10; do
		sleep 0.05
	done
	took=$(awk -v a="$t0" -v b="$(date +%s.%N)" \
		'BEGIN { printf "%.2f", b - a }')
	if alive "$pid"; then
		wchan=$(cat "/proc/$pid/wchan" 2>/dev/null)
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		pid=
		not_ok "SIG$sig run $n after ${d}s: hangs (wchan ${wchan:-?});" \
			"killed"
		return
	fi
	wait "$pid"
	st=$?
	pid_was=$pid pid=
	rm -rf "$tmp/store$n"
	case $sig in
	HUP) want=129 ;;
	INT) want=130 ;;
	*) want=143 ;;
	esac
	left=$(shm_files_of "$tmp/stamp$n" "$pid_was")
	if [ "$st" -ne "$want" ]; then
		not_ok "SIG$sig run $n after ${d}s: status $st, not $want"
		sed 's/^/#   /' "$tmp/err" | tail -5
	elif awk -v t="$took" -v b="$bound" 'BEGIN { exit !(t > b) }'; then
		not_ok "SIG$sig run $n after ${d}s: status $st, but ${took}s" \
			"after the signal (more than $bound s)"
	elif [ -n "$left" ]; then
		# shellcheck disable=SC2086 # one word per file
		not_ok "SIG$sig run $n after ${d}s: left in /dev/shm: $(printf "%s " $left)"
	else
		ok "SIG$sig run $n after ${d}s: status $st in ${took}s"
	fi
}

# lane K: runs K, K + LANES, ... of the list (SIGTERM runs first, then
# SIGINT and SIGHUP alternating), each line of its report in $tmp/laneK.
lane() {
	k=$1 tmp=$tmp/l$1
	mkdir -p "$tmp" || exit 1
	trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null' EXIT
	n=$k
	while [ "$n" -le $((runs + 2 * extra)) ]; do
		if [ "$n" -le "$runs" ]; then
			one TERM "$n"
		elif [ $((n % 2)) -eq 0 ]; then
			one INT "$n"
		else
			one HUP "$n"
		fi
		n=$((n + lanes))
	done
}

# Two ranks at a time, so the runs fit CI's budget on a loaded machine.
lanes=2
extra=$(((runs + 9) / 10))
k=0
lane_pids=
while [ $k -lt $lanes ]; do
	k=$((k + 1))
	lane "$k" >"$tmp/lane$k" 2>&1 &
	lane_pids="$lane_pids $!"
done
for p in $lane_pids; do
	wait "$p"
done
cat "$tmp"/lane*
passes=$(cat "$tmp"/lane* | grep -c '^ok')
failures=$(cat "$tmp"/lane* | grep -c '^not ok')
finish
