#!/bin/sh
# Hostile input against a live rendezvous (doc/security.md). Each
# scenario starts a real two-rank job of examples/pingpong on 127.0.0.1,
# lets tests/sec/store_attack do one thing a stranger could do to rank 0
# while it waits in the bootstrap, then starts the real rank 1. The job
# must complete, and rank 0's peak RSS (VmHWM) and descriptor count,
# sampled from /proc/<pid>/status and /proc/<pid>/fd, must stay bounded.
#
#   replay     a captured rank's bytes (HELLO and all) replayed into a new
#              job that has the same key
#   forge      a stranger sends a HELLO, a made-up proof and a forged
#              record for rank 1 in one go
#   wrongkey   a client with another PS_COMM_JOB_KEY joins as rank 1
#   fdcycle    2 x RLIMIT_NOFILE sequential connect-and-close (rank 0 runs
#              with ulimit -n 128 so this is quick)
#   bloat      1,000 connections that each declare a 1 MiB message
#   helloclose no key set: a stranger says HELLO as rank 1 and closes
#
# SEC_ATTACK_REPORT=1 prints the figures and checks nothing (used for the
# before/after table); SEC_ATTACKS="a b" runs a subset. Exit 1 when a
# check fails, 77 when a tool is missing.
# shellcheck disable=SC2086 # env lists are split into words on purpose

builddir=${top_builddir:-.}
PINGPONG=${SEC_PINGPONG:-$builddir/examples/pingpong}
ATTACK=${SEC_ATTACK:-$builddir/tests/sec/store_attack}
REPORT=${SEC_ATTACK_REPORT:-}
SCENARIOS=${SEC_ATTACKS:-replay forge wrongkey fdcycle bloat helloclose}
# Bounds, above what rank 0 needs in a job nobody attacks (measured first,
# so sanitizer builds get their own baseline): 100 MiB of RSS, where 1 MiB
# per stranger would be 1 GB, and PS_COMM_UNAUTH_MAX (64) descriptors plus
# a few, where one per connection would be hundreds.
RSS_SLACK_KB=${SEC_RSS_SLACK_KB:-102400}
FD_SLACK=${SEC_FD_SLACK:-72}

# ok, not_ok, check and the need_ and clean_ helpers come from common.sh.
. "${srcdir:-$(dirname "$0")/../..}/tests/mp/common.sh"
need_programs "$PINGPONG" "$ATTACK"
need_commands timeout ss

# Only what each scenario sets explicitly may reach the ranks.
clean_rank_env

scratch_with_pids sec_attacks SEC_KEEP
failed=0


PPARGS="-M 64 -i 5 -w 1"
BASE="FI_PROVIDER=tcp PS_COMM_OP_TIMEOUT=10 PS_COMM_TIMEOUT=20 PS_COMM_SIZE=2"
LIMIT=40

# attacker_done TAG REGEX: wait (20 s at most) for the attacker's line
# that ends its exchange with rank 0, so that rank 1 comes after it.
attacker_done() {
	wait_until 20 has_line "$tmp/$1.a.out" "$2" ||
		not_ok "$1: the attacker never got to \"$2\""
}

# rank0 TAG NOFILE ENV...: start rank 0 with ulimit -n NOFILE, and a
# sampler that keeps rank 0's peak RSS and descriptor count in TAG.peak.
rank0() {
	tag=$1 nofile=$2
	shift 2
	env "$@" PS_COMM_RANK=0 sh -c 'ulimit -n "$0" && exec timeout '"$LIMIT"' "$@"' \
		"$nofile" "$PINGPONG" $PPARGS >"$tmp/$tag.0.out" 2>"$tmp/$tag.0.err" &
	pid0=$!
	echo "$pid0" >>"$tmp/pids"
	echo "$pid0" >"$tmp/$tag.0.pid"
	(
		maxfd=0 hwm=0
		while [ -d "/proc/$pid0" ]; do
			# timeout(1) forks the rank: sample its child.
			c=$(cat "/proc/$pid0/task/$pid0/children" 2>/dev/null)
			c=${c%% *}
			p=${c:-$pid0}
			n=$(ls "/proc/$p/fd" 2>/dev/null | wc -l)
			h=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\).*/\1/p' \
				"/proc/$p/status" 2>/dev/null)
			[ "${n:-0}" -gt "$maxfd" ] && maxfd=$n
			[ "${h:-0}" -gt "$hwm" ] && hwm=$h
			echo "$hwm $maxfd" >"$tmp/$tag.peak"
			sleep 0.05
		done
	) &
	echo "$!" >>"$tmp/pids"
	echo "$!" >"$tmp/$tag.sampler"
}

# rank1 TAG ENV...: the real rank 1, in the background.
rank1() {
	tag=$1
	shift
	env "$@" PS_COMM_RANK=1 timeout "$LIMIT" "$PINGPONG" $PPARGS \
		>"$tmp/$tag.1.out" 2>"$tmp/$tag.1.err" &
	echo "$!" >>"$tmp/pids"
	echo "$!" >"$tmp/$tag.1.pid"
}

# attack TAG ARGS...: the attacker, in the background.
attack() {
	tag=$1
	shift
	timeout "$LIMIT" "$ATTACK" "$@" >"$tmp/$tag.a.out" 2>&1 &
	echo "$!" >>"$tmp/pids"
	echo "$!" >"$tmp/$tag.a.pid"
}

# finish TAG: wait for the job; sets rc0, rc1, hwm, maxfd, secs.
finish() {
	wait "$(cat "$tmp/$1.0.pid")"
	rc0=$?
	wait "$(cat "$tmp/$1.1.pid")"
	rc1=$?
	wait "$(cat "$tmp/$1.sampler")" 2>/dev/null
	[ -f "$tmp/$1.a.pid" ] && wait "$(cat "$tmp/$1.a.pid")" 2>/dev/null
	read -r hwm maxfd <"$tmp/$1.peak" || { hwm=0 maxfd=0; }
	secs=$(($(date +%s) - t_start))
}

# granted TAG: the attacker got something a stranger must not get.
granted() {
	grep -q "ATTACK SUCCEEDED" "$tmp/$1.a.out" 2>/dev/null
}

# leaked TAG: a reply to the attacker told it about the job.
leaked() {
	grep -Eq "v=[0-9]|serves a job|agree=|PS_COMM_JOB_KEY=#" \
		"$tmp/$1.a.out" 2>/dev/null
}

# judge TAG WHAT: report, or check the job and the bounds.
judge() {
	if [ "$rc0" -eq 0 ] && [ "$rc1" -eq 0 ]; then
		res="completed"
	else
		res="failed (rank 0 status $rc0, rank 1 status $rc1)"
	fi
	echo "# $1: $2: job $res; rank 0 peak RSS $((hwm / 1024)) MiB, peak fds $maxfd; ${secs} s"
	if [ -n "$REPORT" ]; then
		return
	fi
	if [ "$rc0" -ne 0 ] || [ "$rc1" -ne 0 ]; then
		not_ok "$1: the real job completes ($res)"
		sed 's/^/#   rank 0: /' "$tmp/$1.0.err" | tail -n 5
		sed 's/^/#   rank 1: /' "$tmp/$1.1.err" | tail -n 5
		sed 's/^/#   attacker: /' "$tmp/$1.a.out" | tail -n 5
	else
		ok "$1: the real job completes"
	fi
	if granted "$1"; then
		not_ok "$1: the attacker was refused"
		sed 's/^/#   attacker: /' "$tmp/$1.a.out" | tail -n 5
	else
		ok "$1: the attacker was refused"
	fi
	check "$1: no refusal told the attacker about the job" eval '! leaked "$1"'
	check "$1: rank 0 peak RSS ${hwm} kB <= $RSS_MAX_KB kB" [ "$hwm" -le "$RSS_MAX_KB" ]
	check "$1: rank 0 peak fds $maxfd <= $FD_MAX" [ "$maxfd" -le "$FD_MAX" ]
}

KEY="PS_COMM_JOB_KEY=attacks-test-key"

# The baseline: the same job with nobody attacking.
free_port
t_start=$(date +%s)
rank0 base 1024 $BASE $KEY PS_COMM_ROOT=127.0.0.1:$port
wait_listen "$port"
rank1 base $BASE $KEY PS_COMM_ROOT=127.0.0.1:$port
finish base
echo "# baseline: rank 0 peak RSS $((hwm / 1024)) MiB, peak fds $maxfd"
if [ "$rc0" -ne 0 ] || [ "$rc1" -ne 0 ] || [ "$hwm" -eq 0 ]; then
	not_ok "baseline: the job completes unattacked (status $rc0, $rc1)"
	exit 1
fi
RSS_MAX_KB=$((hwm + RSS_SLACK_KB))
FD_MAX=$((maxfd + FD_SLACK))

for s in $SCENARIOS; do
	t_start=$(date +%s)
	rm -f "$tmp/$s.a.pid"
	case $s in
	replay)
		# Job 1: rank 1 reaches rank 0 through a relay that records
		# every byte rank 1 sends.
		free_port
		p1=$port
		free_port
		relay=$port
		PS_COMM_ROOT=127.0.0.1:$p1 attack "$s.relay" relay "$relay" \
			"$tmp/captured"
		rank0 "$s.job1" 1024 $BASE $KEY PS_COMM_ROOT=127.0.0.1:$p1
		wait_listen "$p1"
		wait_listen "$relay"
		rank1 "$s.job1" $BASE $KEY PS_COMM_ROOT=127.0.0.1:$relay
		finish "$s.job1"
		job1=$((rc0 + rc1))
		[ -n "$REPORT" ] || check "replay: job 1 completes through the relay" \
			[ "$job1" -eq 0 ]
		[ -n "$REPORT" ] || check "replay: the relay captured rank 1's bytes" \
			[ -s "$tmp/captured" ]
		[ -n "$REPORT" ] || check "replay: the key is not in what rank 1 sent" \
			eval '! grep -q attacks-test-key "$tmp/captured"' 
		# Job 2, same key: the capture goes in before rank 1.
		free_port
		rank0 "$s" 1024 $BASE $KEY PS_COMM_ROOT=127.0.0.1:$port
		wait_listen "$port"
		PS_COMM_ROOT=127.0.0.1:$port attack "$s" replay "$tmp/captured" 8
		attacker_done "$s" '^replay: (reply type|[0-9]+ bytes of replies)'
		rank1 "$s" $BASE $KEY PS_COMM_ROOT=127.0.0.1:$port
		finish "$s"
		judge "$s" "a captured rank's bytes replayed into a new job with the same key"
		;;
	forge | wrongkey)
		free_port
		rank0 "$s" 1024 $BASE $KEY PS_COMM_ROOT=127.0.0.1:$port
		wait_listen "$port"
		PS_COMM_ROOT=127.0.0.1:$port PS_COMM_SIZE=2 \
			PS_COMM_JOB_KEY=another-key attack "$s" "$s"
		if [ "$s" = forge ]; then
			attacker_done "$s" '^forge: [0-9]+ bytes of replies'
		else
			attacker_done "$s" '^(joined as|join as rank [0-9]+ refused)'
		fi
		rank1 "$s" $BASE $KEY PS_COMM_ROOT=127.0.0.1:$port
		finish "$s"
		if [ "$s" = forge ]; then
			judge "$s" "a stranger's HELLO, proof and forged record for rank 1"
		else
			judge "$s" "a client with the wrong key joins as rank 1"
		fi
		;;
	fdcycle)
		free_port
		rank0 "$s" 128 $BASE $KEY PS_COMM_ROOT=127.0.0.1:$port
		wait_listen "$port"
		PS_COMM_ROOT=127.0.0.1:$port "$ATTACK" fdcycle 256 >"$tmp/$s.a.out" 2>&1
		rank1 "$s" $BASE $KEY PS_COMM_ROOT=127.0.0.1:$port
		finish "$s"
		judge "$s" "2 x RLIMIT_NOFILE (128) sequential connect-and-close"
		;;
	bloat)
		free_port
		rank0 "$s" 4096 $BASE $KEY PS_COMM_ROOT=127.0.0.1:$port
		wait_listen "$port"
		PS_COMM_ROOT=127.0.0.1:$port attack "$s" bloat 1000 6
		# Let the attacker open them all before rank 1 comes.
		attacker_done "$s" '^bloat: [0-9]+ connections declared'
		rank1 "$s" $BASE $KEY PS_COMM_ROOT=127.0.0.1:$port
		finish "$s"
		judge "$s" "1,000 connections each declaring 1 MiB"
		;;
	helloclose)
		free_port
		rank0 "$s" 1024 $BASE PS_COMM_ROOT=127.0.0.1:$port
		wait_listen "$port"
		PS_COMM_ROOT=127.0.0.1:$port PS_COMM_SIZE=2 \
			"$ATTACK" hello-close 1 >"$tmp/$s.a.out" 2>&1
		sleep 0.5
		rank1 "$s" $BASE PS_COMM_ROOT=127.0.0.1:$port
		finish "$s"
		judge "$s" "no key: a stranger's HELLO as rank 1, then close"
		;;
	*)
		not_ok "unknown scenario $s"
		;;
	esac
done
exit $failed
