#!/bin/sh
# shm_files.sh: a job on shm leaves no file in /dev/shm, however it ends.
# Each rank's shm queues (16 MiB each) and pscomm's message rings live
# there while it runs; a file left behind holds its memory until the next
# reboot. Three ways a 3-rank job of examples/allreduce ends, each checked
# by the pids of its ranks (each rank writes its pid before it execs the
# program):
#  - it finishes;
#  - one rank gets SIGTERM once every rank has its queues: it ends by the
#    signal (lib/fabric/sig.h removes its files), and the launcher stops
#    the others;
#  - one rank gets SIGKILL (maybe still inside ps_comm_init): the
#    survivors on its host remove its files when they see it die and its
#    process is gone (lib/live, also as they finalize), and their own
#    rings toward it; the launcher removes the files of a rank a signal
#    killed, for the deaths no survivor saw;
#  - the launcher gets SIGINT (a user's ^C) and passes it on.
#
# The rank script is single-quoted on purpose (the ranks expand it), and
# wait_until calls has_queues indirectly.
# shellcheck disable=SC2016,SC2317
. "${srcdir:-.}/tests/mp/common.sh"

RUN=$top_builddir/tools/ps_comm_run
AR=$top_builddir/examples/allreduce
need_programs "$RUN" "$AR"
clean_rank_env
if ! have_provider shm; then
	skip "shm files: provider shm not present"
	finish
fi
launcher_scratch shm_files

# has_queues PIDFILE: every rank listed has its shm queues in /dev/shm.
has_queues() {
	[ "$(wc -l <"$1")" -eq 3 ] || return 1
	while read -r p; do
		[ -n "$(shm_files_of "$tmp/stamp" "$p")" ] || return 1
	done <"$1"
}

# job NAME SIGNAL [launcher]: run the job, send SIGNAL (none: let it
# finish) to rank 1 (or the launcher) once every rank has its queues, and
# check that no file is left.
job() {
	name=$1 sig=$2 to=${3:-rank} iters=20
	[ "$sig" = none ] || iters=100000000
	: >"$tmp/pids"
	touch "$tmp/stamp"
	# A background job of sh ignores SIGINT: not this one.
	env --default-signal=INT "$RUN" -n 3 --provider shm --timeout 60 --grace 2 -- sh -c \
		'echo $$ >>"$0"; exec "$@"' "$tmp/pids" \
		"$AR" -c -m 4K -M 64K -i "$iters" >"$tmp/out" 2>&1 &
	lpid=$!
	if [ "$sig" != none ]; then
		if ! wait_until 30 has_queues "$tmp/pids"; then
			not_ok "$name: the ranks never had their queues"
			kill -9 "$lpid" 2>/dev/null
			wait "$lpid" 2>/dev/null
			return
		fi
		if [ "$to" = launcher ]; then
			kill -"$sig" "$lpid"
		else
			kill -"$sig" "$(sed -n 2p "$tmp/pids")"
		fi
	fi
	wait "$lpid"
	rc=$?
	# shellcheck disable=SC2046
	left=$(shm_files_of "$tmp/stamp" $(cat "$tmp/pids"))
	if [ "$sig" = none ] && [ "$rc" -ne 0 ]; then
		not_ok "$name: exit $rc"
		sed 's/^/#   /' "$tmp/out" | tail -10
	elif [ "$sig" != none ] && [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
		not_ok "$name: exit $rc, not stopped by the signal"
	elif [ -n "$left" ]; then
		# shellcheck disable=SC2086 # one word per file
		not_ok "$name: left in /dev/shm: $(printf "%s " $left)"
	else
		ok "$name: exit $rc, nothing left in /dev/shm"
	fi
}

job "a finished job" none
job "SIGTERM to one rank" TERM
job "SIGKILL of one rank" KILL
job "SIGINT to the launcher" INT launcher
finish
