#!/bin/sh
# Test of ps_comm_run, the local launcher, with real processes.
#
# Every other multi-process test trusts the launcher to start ranks with the
# right environment and, above all, to stop a job that went wrong; this test
# checks that contract directly, using sh -c '...' as the rank program so it
# needs nothing from the library.  Output follows TAP loosely: one "ok" or
# "not ok" line per check; the exit status is 1 if any check failed.
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

# The ranks' view of these is what is under test.
unset PS_COMM_ROOT FI_PROVIDER PS_COMM_OP_TIMEOUT PS_COMM_BIND

# ok, not_ok, check and the launcher helpers (run, quick, gone) come from
# common.sh.
. "${srcdir:-$(dirname "$0")/../..}/tests/mp/common.sh"
launcher_scratch launcher

# --- environment -----------------------------------------------------------

env_ok() {
	[ "$rc" -eq 0 ] || return 1
	[ "$(cut -d' ' -f1 "$tmp/out" | sort -n | tr '\n' ' ')" = \
	  "$1" ] || return 1
	[ "$(cut -d' ' -f2- "$tmp/out" | sort -u | wc -l)" -eq 1 ] ||
		return 1
	[ "$(cut -d' ' -f2 "$tmp/out" | sort -u)" = "$2" ]
}

run -n 4 sh -c 'echo "$PS_COMM_RANK $PS_COMM_SIZE $PS_COMM_ROOT"'
check "4 ranks see ranks 0..3, size 4 and one root" \
	env_ok "0 1 2 3 " 4
check "the root is 127.0.0.1:PORT" \
	grep -Eq ' 127\.0\.0\.1:[0-9]+$' "$tmp/out"

run -n3 sh -c 'echo "$PS_COMM_RANK $PS_COMM_SIZE $PS_COMM_ROOT"'
check "-n3 form" env_ok "0 1 2 " 3
run --np 2 sh -c 'echo "$PS_COMM_RANK $PS_COMM_SIZE $PS_COMM_ROOT"'
check "--np 2 form" env_ok "0 1 " 2
run --np=1 -- sh -c 'echo "$PS_COMM_RANK $PS_COMM_SIZE $PS_COMM_ROOT"'
check "--np=1 and -- forms" env_ok "0 " 1

PS_COMM_ROOT=10.1.2.3:4567
export PS_COMM_ROOT
run -n 2 sh -c 'echo "$PS_COMM_ROOT"'
unset PS_COMM_ROOT
check "a PS_COMM_ROOT set by the user is kept" \
	[ "$(sort -u "$tmp/out")" = 10.1.2.3:4567 ]

run -n 2 --provider tcp sh -c 'echo "$FI_PROVIDER"'
check "--provider sets FI_PROVIDER" \
	[ "$(sort -u "$tmp/out")" = tcp ]
run -n 2 --provider=shm sh -c 'echo "$FI_PROVIDER"'
check "--provider=P form" [ "$(sort -u "$tmp/out")" = shm ]

run -n 2 --bind core sh -c 'echo "$PS_COMM_BIND"'
check "--bind sets PS_COMM_BIND" [ "$(sort -u "$tmp/out")" = core ]
run -n 2 --bind=numa sh -c 'echo "$PS_COMM_BIND"'
check "--bind=B form" [ "$(sort -u "$tmp/out")" = numa ]
run -n 1 sh -c 'echo "${PS_COMM_BIND-unset}"'
check "without --bind, PS_COMM_BIND stays unset" \
	[ "$(cat "$tmp/out")" = unset ]

run -n 2 sh -c 'echo "$PS_COMM_RANK" "$@"' sh a 'b c'
check "arguments reach the program" \
	[ "$(sort "$tmp/out" | tr '\n' '|')" = "0 a b c|1 a b c|" ]

# --- exit status and stopping ----------------------------------------------

run -n 3 sh -c 'exit 0'
check "all ranks exit 0: status 0" [ "$rc" -eq 0 ]

run -n 3 sh -c 'exit 77'
check "all ranks exit 77: status 77" [ "$rc" -eq 77 ]

: >"$tmp/pids"
run -n 3 sh -c 'if [ "$PS_COMM_RANK" = 1 ]; then sleep 1; exit 3; fi
	echo $$ >>"$0"; exec sleep 60' "$tmp/pids"
check "a rank exiting 3: status 3" [ "$rc" -eq 3 ]
check "a rank exiting 3: sleeping siblings stopped quickly" quick
check "a rank exiting 3: siblings are gone" gone "$tmp/pids"
check "a rank exiting 3: one line names the rank" \
	grep -q 'rank 1 (pid [0-9]*) exited with status 3; stopping' \
	"$tmp/err"

: >"$tmp/pids"
run -n 2 sh -c 'if [ "$PS_COMM_RANK" = 0 ]; then sleep 1; exit 5; fi
	sleep 60 & echo $! >>"$0"; wait' "$tmp/pids"
check "grandchildren of a stopped rank are stopped too" gone "$tmp/pids"

run -n 2 sh -c 'if [ "$PS_COMM_RANK" = 1 ]; then kill -9 $$; fi; sleep 60'
check "a rank killed by SIGKILL: status 137" [ "$rc" -eq 137 ]
check "a rank killed by SIGKILL: sibling stopped quickly" quick

run -n 2 --grace 1 sh -c 'trap "" TERM; if [ "$PS_COMM_RANK" = 1 ]; then exit 4; fi
	while :; do sleep 1; done'
check "a rank ignoring SIGTERM is killed after the grace period" \
	status_quick 4

run -n 4 --timeout 2 sh -c 'exec sleep 30'
check "--timeout 2: status 124" [ "$rc" -eq 124 ]
check "--timeout 2: quick" quick
check "--timeout 2: message lists the ranks" \
	grep -q 'timeout after 2 s; stopping the ranks still running: ranks 0-3 [a-z]* (state [RS])$' \
	"$tmp/err"

run -n 2 --timeout=2.5 sh -c 'if [ "$PS_COMM_RANK" = 1 ]; then exit 0; fi
	exec sleep 30'
check "--timeout=2.5: only the running rank is listed" \
	grep -q 'still running: rank 0 [a-z]* (state [RS])$' "$tmp/err"

run -n 2 --timeout 30 sh -c 'exit 0'
check "a timeout that does not expire changes nothing" status_quick 0

: >"$tmp/pids"
"$RUN" -n 2 sh -c 'echo $$ >>"$0"; exec sleep 60' "$tmp/pids" \
	>/dev/null 2>&1 &
pid=$!
wait_lines "$tmp/pids" 2
kill -TERM "$pid"
wait "$pid"
rc=$?
check "SIGTERM to the launcher: status 143" [ "$rc" -eq 143 ]
check "SIGTERM to the launcher: ranks are gone" gone "$tmp/pids"

# --- output ----------------------------------------------------------------

run -n 2 --tag-output sh -c 'echo "out $PS_COMM_RANK"
	echo "err $PS_COMM_RANK" >&2; printf "part $PS_COMM_RANK"'
check "--tag-output: stdout lines are prefixed" \
	[ "$(grep -c '^\[\([01]\)\] out \1$' "$tmp/out")" -eq 2 ]
check "--tag-output: stderr lines are prefixed" \
	[ "$(grep -c '^\[\([01]\)\] err \1$' "$tmp/err")" -eq 2 ]
check "--tag-output: partial last lines are flushed" \
	[ "$(grep -c '^\[\([01]\)\] part \1$' "$tmp/out")" -eq 2 ]
check "--tag-output: nothing else is printed" \
	[ "$(cat "$tmp/out" "$tmp/err" | wc -l)" -eq 6 ]

run -n 1 sh -c 'echo plain'
check "without --tag-output, output is passed through" \
	[ "$(cat "$tmp/out")" = plain ]

# --- usage errors ----------------------------------------------------------

usage_error() {
	run "$@"
	[ "$rc" -eq 2 ] && grep -q '^usage:' "$tmp/err"
}
check "missing -n: status 2" usage_error true
check "-n 0: status 2" usage_error -n 0 true
check "-n 4097: status 2" usage_error -n 4097 true
check "-n x: status 2" usage_error -n x true
check "missing PROG: status 2" usage_error -n 2
check "unknown option: status 2" usage_error -n 2 --bogus true
check "bad timeout: status 2" usage_error -n 2 --timeout=abc true
check "negative timeout: status 2" usage_error -n 2 --timeout -1 true
check "unknown --bind: status 2" usage_error -n 2 --bind socket true
check "the --bind error lists the values" \
	grep -q "bad --bind 'socket' (want none, core or numa)" "$tmp/err"
help_ok() {
	run --help
	[ "$rc" -eq 0 ] && grep -q '^usage:' "$tmp/out"
}
check "--help: status 0 and usage on stdout" help_ok

run -n 2 /nonexistent/program
check "non-existent PROG: status 127" [ "$rc" -eq 127 ]
check "non-existent PROG: says so" \
	grep -q 'cannot run /nonexistent/program' "$tmp/err"
run -n 2 no-such-program-ps-comm-run
check "PROG is searched in PATH: status 127" [ "$rc" -eq 127 ]

exit $failed
