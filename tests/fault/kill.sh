#!/bin/bash
# tests/fault/kill.sh: kill -9 (or stop) one rank of a running job and
# judge what the others do. Ranks are started by hand (not ps_comm_run),
# on 127.0.0.1, each with its own stdout/stderr file under
# tests/fault/logs/ in the build tree. A survivor passes ("ok") when it
# exits with PS_COMM_ERR_PEER (5), PS_COMM_ERR_BOOTSTRAP (7) or the
# watchdog's 75 and its stderr names "rank <victim>". The table counts
# every survivor of every repetition and gives the median and maximum time
# from the fault to its exit; it is printed and written to
# tests/fault/results.md in the build tree.
#
#	tests/fault/kill.sh [-p "tcp shm"] [-c CASES] [-r REPS] [-t SECS]
#			    [-n RANKS] [-s SEED]
#
# Cases (default all):
#	bootstrap	kill 0-300 ms after launch (inside ps_comm_init)
#	pingpong allreduce64k allreduce16m bcast iallreduce
#			kill 0-500 ms after every rank began its phase loop
#	finalize	communicators split and finalized in a loop for 1 s,
#			then the world's finalize; kill 0-1.2 s in, so a
#			survivor may also finish first (exit0, tolerated here)
#	sigstop		SIGSTOP a rank for 2*T: the others must fail naming it
#	sigstop-short	SIGSTOP a rank for T/3, then SIGCONT: all exit 0
#	busy		one rank (or all) sleeps 3*T outside pscomm: all exit 0
# Each case but busy runs with victim rank 0 and with a random non-root
# rank. T is PS_COMM_PEER_TIMEOUT (-t, default 4); a rank still running
# T + 10 s after the fault hangs (backtrace with gdb when installed, then
# kill -9).
#
# Exit: 0 if every outcome passed, 1 if any hang, crash, wrong result,
# wrong blame, other failure, or exit 0 outside the finalize case, 2 on
# bad usage, 77 when no provider asked for is present.

[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -eu

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

ALL_CASES="bootstrap pingpong allreduce64k allreduce16m bcast iallreduce \
finalize sigstop sigstop-short busy"
providers="tcp net shm"
cases=$ALL_CASES
reps=3
T=4
nranks=4
seed=$$

usage() {
	sed -n '/^#	tests/,/^#	\{3\}/p' "$0" | sed 's/^#//'
	echo "cases: $ALL_CASES"
}

while getopts p:c:r:t:n:s:h opt; do
	case $opt in
	p) providers=$OPTARG ;;
	c) cases=$OPTARG ;;
	r) reps=$OPTARG ;;
	t) T=$OPTARG ;;
	n) nranks=$OPTARG ;;
	s) seed=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
for v in "$reps" "$T" "$nranks" "$seed"; do
	case $v in '' | *[!0-9]*) echo "kill.sh: '$v' is not a number" >&2; exit 2 ;; esac
done
if [ "$reps" -lt 1 ] || [ "$T" -lt 1 ] || [ "$nranks" -lt 2 ]; then
	echo "kill.sh: need -r >= 1, -t >= 1, -n >= 2" >&2
	exit 2
fi
for c in $cases; do
	case " $ALL_CASES " in *" $c "*) ;; *) echo "kill.sh: unknown case '$c'" >&2; exit 2 ;; esac
done

PROG=$top_builddir/tests/fault/fault_prog
if [ ! -x "$PROG" ]; then
	echo "kill.sh: $PROG not built (make check builds it)" >&2
	exit 2
fi
outdir=${FAULT_OUT:-$top_builddir/tests/fault}	# FAULT_OUT: elsewhere
logs=$outdir/logs
rm -rf "$logs"
mkdir -p "$logs"
RANDOM=$seed
trap 'fault_kill_all' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
export PS_COMM_PEER_TIMEOUT=$T
MARGIN=10		# seconds past T before a survivor hangs
STOP_SHORT_MS=$((T * 1000 / 3))
SHORT_DUR_MS=$((STOP_SHORT_MS + 3000))

# case_args CASE: fault_prog's arguments.
case_args() {
	case $1 in
	bootstrap) echo "bootstrap -d 300" ;;
	pingpong) echo "pingpong -d 300" ;;
	allreduce64k | sigstop) echo "allreduce -s 64K -d 300" ;;
	allreduce16m) echo "allreduce -s 16M -d 300" ;;
	bcast) echo "bcast -s 1M -d 300" ;;
	iallreduce) echo "iallreduce -s 256K -d 300" ;;
	finalize) echo "finalize -d 1" ;;
	sigstop-short) echo "allreduce -s 64K -d $(fault_secs $((SHORT_DUR_MS * 1000)))" ;;
	busy) echo "busy -S $((3 * T)) -n 2" ;;
	esac
}

# case_delay CASE: "LO HI", milliseconds from the markers to the fault.
case_delay() {
	case $1 in
	bootstrap) echo "0 300" ;;	# from launch, no markers
	finalize) echo "0 1200" ;;
	*) echo "0 500" ;;
	esac
}

case_victims() {
	case $1 in
	busy) echo "-" ;;
	*) echo "0 nonroot" ;;
	esac
}

# pick_victim LABEL: set v (-1: nobody).
pick_victim() {
	case $1 in
	0) v=0 ;;
	nonroot) fault_rand v 1 $((nranks - 1)) ;;
	*) v=-1 ;;
	esac
}

# The SIGCONT of a stopped victim, due at TICK_AT (see fault_tick).
TICK_AT=
TICK_PID=
fault_tick() {
	if [ -n "$TICK_AT" ] && [ "$(fault_now)" -ge "$TICK_AT" ]; then
		kill -CONT "$TICK_PID" 2>/dev/null || true
		TICK_AT=
	fi
	return 0
}

# inject CASE VICTIM: the fault; sets t_fault.
inject() {
	t_fault=$(fault_now)
	case $1 in
	busy) ;;
	sigstop)
		kill -STOP "${F_PID[$2]}" 2>/dev/null || true
		TICK_AT=$((t_fault + 2 * T * 1000000)) TICK_PID=${F_PID[$2]}
		;;
	sigstop-short)
		kill -STOP "${F_PID[$2]}" 2>/dev/null || true
		TICK_AT=$((t_fault + STOP_SHORT_MS * 1000)) TICK_PID=${F_PID[$2]}
		;;
	*) kill -KILL "${F_PID[$2]}" 2>/dev/null || true ;;
	esac
}

# expect CASE: "clean" when every rank must exit 0, else "fault".
expect() {
	case $1 in sigstop-short | busy) echo clean ;; *) echo fault ;; esac
}

# deadline CASE: when a rank still running hangs (microseconds).
deadline() {
	local s=$((T + MARGIN))
	case $1 in
	sigstop-short) s=$((SHORT_DUR_MS / 1000 + T + MARGIN)) ;;
	busy) s=$((7 * T + MARGIN)) ;;
	esac
	echo $((t_fault + s * 1000000))
}

# settle CASE VICTIM: after the survivors, the victim. A stopped one is
# continued (if not yet) and given T + 10 s to go; its end is only noted.
settle() {
	local v=$2
	[ "$v" -lt 0 ] && return 0
	case $1 in
	sigstop)
		TICK_AT=$(fault_now)
		fault_wait $(($(fault_now) + (T + MARGIN) * 1000000)) "$v" || true
		echo "victim $(fault_describe "$v")" >>"$F_DIR/summary"
		;;
	sigstop-short) ;;
	*) fault_wait $(($(fault_now) + 5000000)) "$v" || true ;;
	esac
}

# progress KEY REP VICTIM DIR: one line per repetition while running.
progress() {
	local counts
	counts=$(tail -n +2 "$4/summary" | grep -v '^victim' | cut -d' ' -f1 |
		sort | uniq -c |
		awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2 }')
	echo "# ${1//|/ } rep $2 (victim ${3/#-1/none}): ${counts:-see the notes}"
}

# run_rep CASE PROVIDER VICTIM-LABEL REP
run_rep() {
	local case=$1 prov=$2 label=$3 rep=$4 key v dir lo hi i args ms
	local -a others=()
	key="$case|$prov|$label"
	fault_row "$key"
	[ "$case" = finalize ] && FAULT_EXIT0_OK[$key]=1
	pick_victim "$label"
	dir=$logs/$case-$prov-$label-$rep
	args=$(case_args "$case")
	[ "$case" = busy ] && args+=" -b $(((rep - 1) % nranks))"
	free_port
	read -r lo hi <<<"$(case_delay "$case")"
	mkdir -p "$dir"
	echo "case $case provider $prov victim $v T=$T port $port: fault_prog $args" >"$dir/summary"
	# A rank killed before it joined the rendezvous cannot be told from
	# a late one: the others give up after PS_COMM_TIMEOUT, so the
	# bootstrap case bounds that by T too (doc/faults.md).
	local boot=${PS_COMM_TIMEOUT:-120}
	[ "$case" = bootstrap ] && boot=$T
	# shellcheck disable=SC2086
	PS_COMM_TIMEOUT=$boot FI_PROVIDER="$(fab "$prov")" \
		fault_launch "$dir" "$nranks" "127.0.0.1:$port" "$PROG" $args
	for ((i = 0; i < nranks; i++)); do
		if [ "$(expect "$case")" = clean ] || [ "$i" != "$v" ]; then
			others+=("$i")
		fi
	done
	if [ "$case" != bootstrap ] && ! fault_wait_ready 2 30; then
		fault_never_began "$key" "$key rep $rep" "${others[@]}"
		fault_rep_done "$key"
		progress "$key" "$rep" "$v" "$dir"
		return 0
	fi
	fault_rand ms "$lo" "$hi"
	fault_sleep_ms "$ms"
	inject "$case" "$v"
	fault_wait "$(deadline "$case")" "${others[@]}" || true
	settle "$case" "$v"
	for i in "${others[@]}"; do
		fault_judge "$key" "$(expect "$case")" "$i" \
			"$(fault_blame_re "$v")" "$t_fault" "$key rep $rep (victim $v)"
	done
	fault_rep_done "$key"
	TICK_AT=
	fault_kill_all
	progress "$key" "$rep" "$v" "$dir"
}

echo "# kill.sh: $nranks ranks, PS_COMM_PEER_TIMEOUT=$T, $reps reps, seed $seed"
echo "# logs in $logs"
for prov in $providers; do
	if ! have_provider "$prov"; then
		echo "# provider $prov not present: skipped"
		continue
	fi
	for case in $cases; do
		for label in $(case_victims "$case"); do
			for ((rep = 1; rep <= reps; rep++)); do
				run_rep "$case" "$prov" "$label" "$rep"
			done
		done
	done
done
[ "${#FAULT_ROWS[@]}" -eq 0 ] && { echo "# nothing ran"; exit 77; }

{
	echo "# pscomm fault injection (tests/fault/kill.sh)"
	echo
	echo "$nranks ranks, PS_COMM_PEER_TIMEOUT=$T s, seed $seed, $(date -u '+%Y-%m-%d %H:%M UTC'), pscomm at $(git -C "$here" describe --always --dirty 2>/dev/null || echo '?')."
	echo "Survivors are counted (all ranks for sigstop-short and busy); times run from the fault to each survivor's exit."
	echo
	fault_table
} >"$outdir/results.md"
echo
sed -n '/^| case/,$p' "$outdir/results.md"
echo
echo "# table written to $outdir/results.md"
if fault_bad; then
	echo "# FAILED"
	exit 1
fi
echo "# PASSED"
exit 0
