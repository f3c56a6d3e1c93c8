# shellcheck shell=bash
# tests/fault/lib.sh: what the fault-injection scripts share. Start N ranks
# of a program by hand (no ps_comm_run), each with its own output files and
# a watcher that records its exit status and exit time; wait for the
# "ready rank=R" markers; wait for ranks with a hard deadline, taking a
# backtrace of any rank still running then (a hang) before killing it;
# classify each rank's outcome; tally outcomes per table row and print the
# Markdown table. Sourced from bash, never run. Needs tests/mp/common.sh
# (free_port, have_provider, ok/not_ok).
#
# Times are integer microseconds (EPOCHREALTIME without its point).
#
# libpsm2 and libinfinipath, which libfabric loads, turn a crash into a
# backtrace and exit(1); without them it counts as the crash it is.
export HFI_NO_BACKTRACE=1 IPATH_NO_BACKTRACE=1
#
# Per rank i of the current run (fault_launch):
#	F_PID[i]	the program's pid	F_WATCH[i]	its watcher's pid
#	F_RC[i]		exit status ("" while running; 128+N: signal N)
#	F_END[i]	exit time		F_HUNG[i]	1: killed at the deadline
#	F_ERRSZ[i]	bytes of its stderr when it was found hanging
# Hooks a script may redefine:
#	fault_exec I CMD...	run rank I's command (default: exec it)
#	fault_tick		called every poll while waiting (timed actions)

fault_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../mp/common.sh
. "$fault_lib_dir/../mp/common.sh"

F_PID=()
F_WATCH=()
F_RC=()
F_END=()
F_HUNG=()
F_ERRSZ=()
F_DIR=
F_N=0
FAULT_POLL=0.05

fault_now() { echo "${EPOCHREALTIME/./}"; }

# fault_secs US: microseconds as seconds with two decimals.
fault_secs() { awk -v u="$1" 'BEGIN { printf "%.2f", u / 1e6 }'; }

# fault_rand VAR LO HI: set VAR to an integer in [LO, HI] (bash's RANDOM,
# 30 bits). Not through $(...): a subshell's RANDOM does not advance ours,
# so a seed would not give the same sequence again.
fault_rand() { printf -v "$1" %d $(($2 + (RANDOM << 15 | RANDOM) % ($3 - $2 + 1))); }

# fault_sleep_ms MS
fault_sleep_ms() { sleep "$(awk -v m="$1" 'BEGIN { printf "%.3f", m / 1000 }')"; }

fault_exec() {
	shift
	exec "$@"
}

fault_tick() { :; }

# fault_launch DIR N ROOT PROG [ARGS...]: rank i runs PROG with
# PS_COMM_RANK/SIZE/ROOT, stdout in DIR/rank<i>.out and stderr in
# DIR/rank<i>.err; the caller exports FI_PROVIDER and the rest. A watcher
# subshell waits for the program and writes "STATUS TIME" to
# DIR/rank<i>.rc (its own stderr, where bash reports a killed job, is
# discarded).
fault_launch() {
	local dir=$1 n=$2 root=$3 i tries
	shift 3
	F_DIR=$dir
	F_N=$n
	F_PID=() F_WATCH=() F_RC=() F_END=() F_HUNG=() F_ERRSZ=()
	mkdir -p "$dir"
	for ((i = 0; i < n; i++)); do
		(
			fault_exec "$i" env PS_COMM_RANK="$i" PS_COMM_SIZE="$n" \
				PS_COMM_ROOT="$root" "$@" \
				<"/dev/null" >"$dir/rank$i.out" 2>"$dir/rank$i.err" &
			echo $! >"$dir/rank$i.pid"
			rc=0
			wait $! || rc=$?
			echo "$rc $(fault_now)" >"$dir/rank$i.rc.tmp"
			mv "$dir/rank$i.rc.tmp" "$dir/rank$i.rc"
		) 2>/dev/null &
		F_WATCH[i]=$!
		F_RC[i]=
		F_END[i]=
		F_HUNG[i]=0
		F_ERRSZ[i]=
	done
	for ((i = 0; i < n; i++)); do
		for ((tries = 0; tries < 200; tries++)); do
			[ -s "$dir/rank$i.pid" ] && break
			sleep 0.01
		done
		F_PID[i]=$(cat "$dir/rank$i.pid")
	done
}

# fault_reap: note every rank whose watcher has reported.
fault_reap() {
	local i rc end
	for ((i = 0; i < F_N; i++)); do
		[ -n "${F_RC[i]}" ] && continue
		[ -f "$F_DIR/rank$i.rc" ] || continue
		read -r rc end <"$F_DIR/rank$i.rc"
		F_RC[i]=$rc
		F_END[i]=$end
	done
}

fault_running() { fault_reap; [ -z "${F_RC[$1]}" ]; }

# fault_markers I: how many "ready rank=" lines rank I printed.
fault_markers() {
	local c
	c=$(grep -c '^ready rank=' "$F_DIR/rank$1.out" 2>/dev/null) || true
	echo "${c:-0}"
}

# fault_wait_ready COUNT SECS: wait until every rank printed COUNT markers.
# Returns 1 if a rank exited first or SECS passed.
fault_wait_ready() {
	local want=$1 deadline i all
	deadline=$(($(fault_now) + $2 * 1000000))
	while [ "$(fault_now)" -lt "$deadline" ]; do
		all=1
		for ((i = 0; i < F_N; i++)); do
			fault_running "$i" || return 1
			[ "$(fault_markers "$i")" -ge "$want" ] || all=0
		done
		[ "$all" = 1 ] && return 0
		sleep "$FAULT_POLL"
	done
	return 1
}

# fault_backtrace I: every thread's stack of rank I into DIR/rank<I>.bt.
fault_backtrace() {
	local bt=$F_DIR/rank$1.bt
	if ! command -v gdb >/dev/null 2>&1; then
		echo "(gdb not installed: no backtrace)" >"$bt"
		return 0
	fi
	timeout 60 gdb -batch -p "${F_PID[$1]}" -ex 'thread apply all bt' \
		</dev/null >"$bt" 2>&1 || true
}

# fault_wait DEADLINE RANK...: wait until the ranks have exited, calling
# fault_tick each poll. Ranks still running at DEADLINE (microseconds)
# hang: backtrace, kill -9, F_HUNG=1. Returns 1 if any hung.
fault_wait() {
	local deadline=$1 i left hung=0
	shift
	while :; do
		fault_tick
		left=
		for i in "$@"; do
			fault_running "$i" && left+=" $i"
		done
		[ -z "$left" ] && break
		[ "$(fault_now)" -ge "$deadline" ] && break
		sleep "$FAULT_POLL"
	done
	# Stderr is measured, then every stack taken, before anyone is
	# killed: a rank killed (or gdb's attach, which can break a rank out
	# of a system call) makes the others print what they did not do by
	# themselves.
	for i in $left; do
		F_HUNG[i]=1
		hung=1
		F_ERRSZ[i]=$(wc -c <"$F_DIR/rank$i.err")
	done
	for i in $left; do fault_backtrace "$i"; done
	for i in $left; do kill -KILL "${F_PID[i]}" 2>/dev/null || true; done
	for i in $left; do
		while fault_running "$i"; do sleep "$FAULT_POLL"; done
	done
	return "$hung"
}

# fault_kill_all: nothing of the current run survives. Programs first,
# then their watchers get up to 2 s to reap them: a program whose watcher
# died first would be left to init, a zombie until init reaps it.
fault_kill_all() {
	local i tries left
	for ((i = 0; i < F_N; i++)); do
		[ -n "${F_PID[i]:-}" ] && { kill -KILL "${F_PID[i]}" 2>/dev/null || true; }
	done
	for ((tries = 0; tries < 40; tries++)); do
		left=
		for ((i = 0; i < F_N; i++)); do
			[ -n "${F_WATCH[i]:-}" ] && kill -0 "${F_WATCH[i]}" 2>/dev/null &&
				left=1
		done
		[ -z "$left" ] && break
		sleep 0.05
	done
	for ((i = 0; i < F_N; i++)); do
		[ -n "${F_WATCH[i]:-}" ] && { kill -KILL "${F_WATCH[i]}" 2>/dev/null || true; }
	done
	pkill -KILL -P $$ 2>/dev/null || true
	fault_shm_cleanup
}

# fault_shm_cleanup: remove the shm provider's regions (/dev/shm/PID:...)
# of our ranks that are gone. A process killed with -9 cannot unlink its
# own, and a later process given the same pid fails to open its endpoint
# (EBUSY) while the old name exists.
fault_shm_cleanup() {
	local i pid
	for ((i = 0; i < F_N; i++)); do
		pid=${F_PID[i]:-}
		[ -n "$pid" ] || continue
		kill -0 "$pid" 2>/dev/null && continue
		rm -f "/dev/shm/$pid:"* 2>/dev/null || true
	done
}

# ------------------------------------------------------------ outcomes

# fault_blame_re RANK...: an extended regex matching "rank R" for any R.
fault_blame_re() {
	local IFS='|'
	echo "rank ($*)([^0-9]|\$)"
}

# fault_classify I EXPECT BLAME_RE: the outcome class of rank I.
# EXPECT "fault": the rank must fail with one of FAULT_OK_CODES (default
# PS_COMM_ERR_PEER 5, BOOTSTRAP 7, the watchdog's 75), naming a rank
# BLAME_RE matches in its stderr; exit 0 is "exit0". EXPECT "clean": it
# must exit 0; any error is "other".
fault_classify() {
	local i=$1 expect=$2 re=$3 rc=${F_RC[$1]} err=$F_DIR/rank$1.err
	if [ "${F_HUNG[i]}" = 1 ]; then
		echo hang
	elif [ "$rc" -gt 128 ]; then
		echo crash
	elif [ "$rc" = 9 ] || grep -q 'WRONG RESULT' "$err"; then
		echo wrong
	elif [ "$rc" = 0 ]; then
		[ "$expect" = clean ] && echo ok || echo exit0
	elif [ "$expect" = clean ]; then
		echo other
	else
		case " ${FAULT_OK_CODES:-5 7 75} " in
		*" $rc "*)
			if grep -Eq "$re" "$err"; then echo ok; else echo wrong-blame; fi
			;;
		*) echo other ;;
		esac
	fi
}

# fault_describe I: one line on rank I's end, for the notes.
fault_describe() {
	local i=$1 rc=${F_RC[$1]} what line err=$F_DIR/rank$1.err
	if [ -n "${F_ERRSZ[i]}" ]; then
		err=$F_DIR/rank$1.err.before-deadline
		head -c "${F_ERRSZ[i]}" "$F_DIR/rank$i.err" >"$err"
	fi
	if [ "${F_HUNG[i]}" = 1 ]; then
		what="still running at the deadline (backtrace: rank$i.bt)"
	elif [ "$rc" -gt 128 ]; then
		what="killed by signal $((rc - 128))"
	else
		what="exit $rc"
	fi
	line=$(grep -m1 -E '^fault_prog:|WRONG RESULT|pscomm: fatal' \
		"$err" 2>/dev/null) ||
		line=$(grep -m1 . "$err" 2>/dev/null) || line=
	echo "rank $i: $what${line:+: $line}"
}

# ---------------------------------------------------------- the tally

FAULT_CLASSES="ok wrong-blame hang crash wrong exit0 other"
# Rows in order; per row its repetitions, its counts per class, the
# survivors' times, and whether exit 0 is tolerated (scripts set it).
FAULT_ROWS=()
# shellcheck disable=SC2034 # FAULT_EXIT0_OK is set by the scripts
declare -A FAULT_COUNT=() FAULT_REPS=() FAULT_TIMES=() FAULT_EXIT0_OK=()
FAULT_NOTES=()

# fault_row KEY: make sure row KEY ("case|provider|victim") exists.
fault_row() {
	local c
	[ -n "${FAULT_REPS[$1]+x}" ] && return 0
	FAULT_ROWS+=("$1")
	FAULT_REPS[$1]=0
	FAULT_TIMES[$1]=
	for c in $FAULT_CLASSES; do FAULT_COUNT[$1|$c]=0; done
}

# fault_count KEY CLASS [SECONDS]
fault_count() {
	FAULT_COUNT[$1|$2]=$((FAULT_COUNT[$1|$2] + 1))
	[ -n "${3:-}" ] && FAULT_TIMES[$1]+=" $3"
	return 0
}

fault_note() { FAULT_NOTES+=("$*"); }

# fault_rep_done KEY: one more repetition in row KEY.
fault_rep_done() { FAULT_REPS[$1]=$((FAULT_REPS[$1] + 1)); }

# fault_stats "T...": median and max, or "- -".
fault_stats() {
	[ -z "${1// /}" ] && { echo "- -"; return 0; }
	tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '
		{ v[NR] = $1 }
		END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		      printf "%.2f %.2f\n", m, v[NR] }'
}

# fault_table: the Markdown table, then the notes.
fault_table() {
	local key c line stats
	echo "| case | provider | victim | reps | ok | wrong-blame | hang | crash | wrong | exit0 | other | median s | max s |"
	echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	for key in "${FAULT_ROWS[@]}"; do
		line="| ${key//|/ | } | ${FAULT_REPS[$key]}"
		for c in $FAULT_CLASSES; do line+=" | ${FAULT_COUNT[$key|$c]}"; done
		stats=$(fault_stats "${FAULT_TIMES[$key]}")
		echo "$line | ${stats% *} | ${stats#* } |"
	done
	[ "${#FAULT_NOTES[@]}" -eq 0 ] && return 0
	echo
	echo "Outcomes other than ok:"
	echo
	for line in "${FAULT_NOTES[@]}"; do echo "- $line"; done
}

# fault_judge KEY EXPECT I BLAME_RE T_FAULT LABEL: classify rank I (see
# fault_classify) and count it in row KEY, with its time from T_FAULT when
# it outlived a fault; log it in DIR/summary; note it, headed LABEL, unless
# ok (or exit0 where the row tolerates it).
fault_judge() {
	local key=$1 expect=$2 i=$3 re=$4 t0=$5 label=$6 class secs=
	class=$(fault_classify "$i" "$expect" "$re")
	if [ "$expect" = fault ] && [ "${F_HUNG[i]}" = 0 ] &&
		[ "${F_END[i]}" -gt "$t0" ]; then
		secs=$(fault_secs $((F_END[i] - t0)))
	fi
	fault_count "$key" "$class" "$secs"
	echo "$class ${secs:+${secs}s }$(fault_describe "$i")" >>"$F_DIR/summary"
	[ "$class" = ok ] && return 0
	[ "$class" = exit0 ] && [ -n "${FAULT_EXIT0_OK[$key]:-}" ] && return 0
	fault_note "$label: $class: $(fault_describe "$i") [${F_DIR#"$top_builddir"/}]"
}

# fault_never_began KEY LABEL RANK...: the job never reached its phase
# loop; stop it and count each RANK as "other".
fault_never_began() {
	local key=$1 label=$2 i
	shift 2
	fault_kill_all
	fault_reap
	for i in "$@"; do
		fault_count "$key" other
		fault_note "$label: the phase never began: $(fault_describe "$i") [${F_DIR#"$top_builddir"/}]"
	done
}

# fault_bad: 0 if some row has a failing outcome (exit0 fails unless the
# row tolerates it: FAULT_EXIT0_OK[KEY]=1).
fault_bad() {
	local key c
	for key in "${FAULT_ROWS[@]}"; do
		for c in wrong-blame hang crash wrong other; do
			[ "${FAULT_COUNT[$key|$c]}" -gt 0 ] && return 0
		done
		[ "${FAULT_COUNT[$key|exit0]}" -gt 0 ] &&
			[ -z "${FAULT_EXIT0_OK[$key]:-}" ] && return 0
	done
	return 1
}
