#!/bin/sh
# Test of how ps_comm_run reports faults: the real signal of a crashed rank,
# the first rank to fail named in the last line whatever the others do next,
# the grace period that lets them report, ranks that die with a killed
# launcher, and stopped ranks named as such.  The rank programs are plain
# shell scripts, so the test needs nothing from the library; it takes about
# 15 s.  Output follows TAP loosely, as in launcher.sh.
#
# The single quotes around rank scripts are deliberate (the ranks expand
# them), and check() calls the helpers below indirectly.
# shellcheck disable=SC2016,SC2317

builddir=${top_builddir:-.}
RUN=${PS_COMM_RUN:-$builddir/tools/ps_comm_run}

if [ ! -x "$RUN" ]; then
	echo "not ok - launcher $RUN not found or not executable"
	exit 1
fi

# What the ranks see is under test.
unset PS_COMM_ROOT FI_PROVIDER PS_COMM_OP_TIMEOUT HFI_NO_BACKTRACE \
	IPATH_NO_BACKTRACE

# ok, not_ok, check and the launcher helpers (run, quick, alive, gone) come
# from common.sh.
. "${srcdir:-$(dirname "$0")/../..}/tests/mp/common.sh"
launcher_scratch launcher_faults

# says REGEX: the launcher's stderr has a line matching REGEX; not_says:
# it has none.
says() {
	grep -q "$1" "$tmp/err"
}

not_says() {
	! says "$1"
}

# last_says REGEX: its last line matches REGEX.
last_says() {
	tail -n 1 "$tmp/err" | grep -q "$1"
}

# --- signals -----------------------------------------------------------------

run -n 2 sh -c 'echo "$HFI_NO_BACKTRACE $IPATH_NO_BACKTRACE"'
check "ranks get HFI_NO_BACKTRACE=1 and IPATH_NO_BACKTRACE=1" \
	[ "$(sort -u "$tmp/out")" = "1 1" ]
HFI_NO_BACKTRACE=0 run -n 1 sh -c 'echo "$HFI_NO_BACKTRACE $IPATH_NO_BACKTRACE"'
check "a HFI_NO_BACKTRACE set by the user is kept" \
	[ "$(cat "$tmp/out")" = "0 1" ]

run -n 3 sh -c 'ulimit -c 0; [ "$PS_COMM_RANK" = 2 ] && kill -SEGV $$
	exec sleep 30'
check "a rank killed by SIGSEGV: status 139, quickly" status_quick 139
check "a rank killed by SIGSEGV: its signal is named" \
	says '^ps_comm_run: rank 2 (pid [0-9]*) killed by signal 11 (Segmentation fault); stopping'
check "without a core dump, none is claimed" not_says 'core dumped'

# A core is dumped only where the pattern is a plain file name and the hard
# limit allows it: elsewhere the check cannot tell right from wrong.
pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null)
case $pattern in
'' | '|'* | */*) core_ok=false ;;
*)	# ulimit -H is not POSIX, but dash and bash have it.
	# shellcheck disable=SC3045
	[ "$(ulimit -Hc)" = unlimited ] && core_ok=true || core_ok=false ;;
esac
if $core_ok; then
	mkdir "$tmp/core"
	run -n 1 sh -c 'cd "$0" && ulimit -c unlimited && kill -SEGV $$' \
		"$tmp/core"
	check "a core dump is mentioned" \
		says 'killed by signal 11 (Segmentation fault), core dumped'
else
	skip "a core dump is mentioned: core_pattern '$pattern' or hard limit"
fi

# --- the first failure and the grace period ------------------------------------

# Rank 1 dies; the others notice a moment later and fail in turn.
run -n 4 --grace 5 sh -c 'if [ "$PS_COMM_RANK" = 1 ]; then sleep 0.3
	kill -KILL $$; fi; sleep 1; exit 1'
check "first failure: status of the first rank to fail (137)" \
	[ "$rc" -eq 137 ]
check "first failure: the last line names it and the others' ends" \
	last_says 'first failure: rank 1 killed by signal 9 (Killed) at +0\.[0-9] s; ranks 0, 2, 3 then exited with status 1$'
check "first failure: a grace period ends when the others have exited" \
	under 4

run -n 4 --grace 0.5 sh -c 'if [ "$PS_COMM_RANK" = 1 ]; then exit 3; fi
	exec sleep 30'
check "grace period over: status 3, quickly" status_quick 3
check "grace period over: the others are stopped, named with their state" \
	says '0\.5 s after rank 1 failed; stopping the ranks still running: ranks 0, 2, 3 sleeping (state S)$'
check "grace period over: the last line says the launcher killed them" \
	last_says "rank 1 exited with status 3 at +0\.[0-9] s; ranks 0, 2, 3 then killed by the launcher's SIGTERM$"

run -n 2 sh -c '[ "$PS_COMM_RANK" = 1 ] && exit 4
	sleep 0.2; exit 1'
check "the default grace period is 3 s" \
	says 'exited with status 4; stopping the other ranks in 3 s unless'
run -n 2 --grace 0 sh -c '[ "$PS_COMM_RANK" = 1 ] &&
	exit 4; exec sleep 30'
check "--grace 0 overrides it and stops the others at once" \
	says 'exited with status 4; stopping the other ranks$'

run -n 3 --timeout 1 --grace 10 sh -c '[ "$PS_COMM_RANK" = 1 ] && exit 5
	exec sleep 30'
check "a timeout in the grace period: the first failure's status" \
	status_quick 5
check "a timeout in the grace period: the last line names the failure" \
	last_says '^ps_comm_run: first failure: rank 1 exited with status 5'

# --- the launcher killed ---------------------------------------------------------

: >"$tmp/pids"
"$RUN" -n 2 -- sh -c 'echo $$ >>"$0"; exec sleep 100' "$tmp/pids" \
	>/dev/null 2>&1 &
pid=$!
wait_lines "$tmp/pids" 2
kill -KILL "$pid"
wait "$pid" 2>/dev/null
none_alive() {
	[ "$(wc -l <"$1")" -eq 2 ] || return 1
	while read -r p; do
		alive "$p" && return 1
	done <"$1"
	return 0
}
# The ranks would sleep 100 s if the launcher's death did not end them.
check "SIGKILL to the launcher: the ranks are gone (within 10 s)" \
	wait_until 10 none_alive "$tmp/pids"
while read -r p; do kill -KILL "$p" 2>/dev/null; done <"$tmp/pids"

# --- stopped ranks -------------------------------------------------------------

# Rank 2 stops; only SIGCONT after SIGTERM lets its trap run.
rm -f "$tmp/term"
run -n 3 --timeout 1 sh -c 'if [ "$PS_COMM_RANK" = 2 ]; then
	trap "echo term >\"\$0\"; exit 0" TERM; kill -STOP $$; fi
	exec sleep 30' "$tmp/term"
check "a stopped rank: --timeout gives status 124, quickly" \
	status_quick 124
check "a stopped rank is reported when it stops" \
	says '^ps_comm_run: rank 2 (pid [0-9]*) stopped by signal [0-9]* (SIGSTOP); the others may fail naming it as unresponsive$'
check "a stopped rank: the timeout line tells stopped from sleeping" \
	says 'timeout after 1 s; stopping the ranks still running: ranks 0, 1 sleeping (state S); rank 2 stopped (state T)$'
check "a stopped rank is continued after SIGTERM, so it acts on it" \
	[ -s "$tmp/term" ]

# Rank 0 fails as a pscomm rank would, blaming a silent peer: rank 2.
run -n 3 --grace 0.5 sh -c 'case $PS_COMM_RANK in
	0) sleep 0.5; echo "peer 2 does not answer" >&2; exit 1 ;;
	2) kill -STOP $$ ;; esac; exec sleep 30'
check "a failure while a rank is stopped: the last line names the stopped rank" \
	last_says 'first failure: rank 0 exited with status 1 at +0\.[0-9] s; rank 2 had been stopped by SIGSTOP; ranks 1, 2 then killed by'

# Rank 0 continues rank 1, which lives on for a while: once it has exited,
# waitpid() no longer reports that it was continued.
: >"$tmp/pids"
run -n 2 sh -c 'if [ "$PS_COMM_RANK" = 1 ]; then echo $$ >"$0"; kill -STOP $$
	sleep 1; exit 0; fi; while [ ! -s "$0" ]; do sleep 0.1; done; sleep 0.3
	kill -CONT "$(cat "$0")"' "$tmp/pids"
continued_ok() {
	[ "$rc" -eq 0 ] && says '^ps_comm_run: rank 1 (pid [0-9]*) continued$'
}
check "a continued rank is reported, and the job goes on" continued_ok

exit $failed
