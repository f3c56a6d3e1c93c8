#!/bin/sh
# Joining a running job (ps_comm_grow, PS_COMM_JOIN) is authenticated
# like a bootstrap (doc/security.md). A two-rank job of examples/elastic
# grows by one rank at step 2 and by one more at step 5, with rank 0
# serving each grow at PS_COMM_GROW_ROOT:
#
#   1. the first new process joins through a relay that records every
#      byte it sends;
#   2. while the second grow is open, the recording is replayed to it,
#      and a process with another PS_COMM_JOB_KEY tries to join;
#   3. then the real second process joins.
#
# Both intruders must be refused without taking a place, and the job must
# finish with exact results on all four processes, each stating the same
# membership [0 1 2 3]. Exit 1 when a check fails, 77 when a tool is
# missing.
# shellcheck disable=SC2086 # env lists are split into words on purpose

builddir=${top_builddir:-.}
EL=$builddir/examples/elastic
ATTACK=$builddir/tests/sec/store_attack

. "${srcdir:-$(dirname "$0")/../..}/tests/mp/common.sh"
need_programs "$EL" "$ATTACK"
need_commands timeout ss
clean_rank_env

scratch_with_pids sec_join SEC_KEEP
failed=0
LIMIT=90

free_port
root=$port
free_port
grow=$port
free_port
relay=$port
KEY="PS_COMM_JOB_KEY=join-test-key"
BASE="FI_PROVIDER=tcp PS_COMM_TIMEOUT=40 $KEY"
ARGS="-s 8 -n 256 --grow 1@2 --grow 1@5"

# proc TAG ENV...: an elastic process in the background.
proc() {
	tag=$1
	shift
	env "$@" timeout "$LIMIT" "$EL" $ARGS >"$tmp/$tag.out" 2>&1 &
	echo "$!" >>"$tmp/pids"
	echo "$!" >"$tmp/$tag.pid"
}

for r in 0 1; do
	proc "rank$r" $BASE PS_COMM_SIZE=2 PS_COMM_RANK=$r \
		PS_COMM_ROOT=127.0.0.1:$root PS_COMM_GROW_ROOT=127.0.0.1:$grow
done

# 1. The first grow opens; its new process comes through the relay.
wait_listen "$grow" 40 || exit 1
PS_COMM_ROOT=127.0.0.1:$grow timeout "$LIMIT" "$ATTACK" relay "$relay" \
	"$tmp/captured" >"$tmp/relay.out" 2>&1 &
echo "$!" >>"$tmp/pids"
wait_listen "$relay" || exit 1
proc new1 $BASE PS_COMM_JOIN=127.0.0.1:$relay
if ! wait_until 40 has_line "$tmp/rank0.out" "^elastic: step 2: 1 rank"; then
	not_ok "the first new process joins through the relay"
	tail -n 5 "$tmp"/*.out | sed 's/^/#   /'
	exit 1
fi
ok "the first new process joins through the relay"
check "the relay captured the new process's bytes" [ -s "$tmp/captured" ]
check "the key is not in what it sent" \
	eval '! grep -q join-test-key "$tmp/captured"'

# 2. The second grow is open (the first one's port closed before rank 0
#    printed the join): the replay and a stranger with another key.
wait_listen "$grow" 40 || exit 1
PS_COMM_ROOT=127.0.0.1:$grow timeout "$LIMIT" "$ATTACK" replay \
	"$tmp/captured" 3 >"$tmp/replay.out" 2>&1
check "the replayed join got an answer" \
	has_line "$tmp/replay.out" '^replay: (reply type|[0-9]+ bytes of replies)'
if grep -q "ATTACK SUCCEEDED" "$tmp/replay.out"; then
	not_ok "the replayed join is refused"
	sed 's/^/#   /' "$tmp/replay.out"
else
	ok "the replayed join is refused"
fi
env FI_PROVIDER=tcp PS_COMM_TIMEOUT=10 PS_COMM_JOB_KEY=another-key \
	PS_COMM_JOIN=127.0.0.1:$grow timeout "$LIMIT" "$EL" $ARGS \
	>"$tmp/stranger.out" 2>&1
st=$?
check "a process with another key is refused at once (status $st)" \
	eval '[ "$st" -ne 0 ] && [ "$st" -ne 124 ]'
check "it is told the rendezvous did not prove the key" \
	has_line "$tmp/stranger.out" "did not prove that it knows"

# 3. The real second process takes the place the intruders did not.
proc new2 $BASE PS_COMM_JOIN=127.0.0.1:$grow
for t in rank0 rank1 new1 new2; do
	wait "$(cat "$tmp/$t.pid")"
	rc=$?
	if [ $rc -eq 0 ] && has_line "$tmp/$t.out" \
		"^elastic: rank [0-3]: 8 steps, every result exact, 2 membership change\(s\), 4 ranks: \[0 1 2 3\]$"; then
		ok "$t finishes with exact results and members [0 1 2 3]"
	else
		not_ok "$t finishes with exact results and members [0 1 2 3] (status $rc)"
		sed 's/^/#   /' "$tmp/$t.out" | tail -n 8
	fi
done
finish
