#!/bin/bash
# tests/netns/recover.sh: recovery across "hosts". Two network namespaces
# play two nodes of three ranks each; FI_PROVIDER is unset, so the ranks
# use shm inside a node and the network between them. examples/elastic
# runs a checked loop (a ring exchange and an allreduce per step) while
# ranks SIGKILL themselves at random moments of a step, or inside
# ps_comm_agree and ps_comm_shrink: one rank of a node (whose node
# mates must rebuild on fresh shm endpoints), rank 0, three ranks at two
# steps, and a whole node. Every survivor must finish every step with
# exact results and state exactly the expected membership, and no job
# may hang. NETNS_RECOVER_REPS repeats each case (1). Needs root; exit
# 77 (skip) otherwise.
#
#	sudo tests/netns/recover.sh		# from the build directory

[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"

. "${srcdir:-$(dirname "$0")/../..}/tests/netns/lib.sh" || exit 99

top_builddir=${top_builddir:-.}
EL=$top_builddir/examples/elastic
TMO=${NETNS_TIMEOUT:-120}
REPS=${NETNS_RECOVER_REPS:-1}
STEPS=20
failed=0

ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; failed=$((failed + 1)); }

netns_require
if [ ! -x "$EL" ]; then
	echo "SKIP: $EL not built"
	exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/psc-recover.XXXXXX") || exit 99
netns_exit_hook() { rm -rf "$tmp"; }
trap 'netns_exit_hook' EXIT
netns_setup 2 || { not_ok "setup: 2 namespaces"; exit 1; }
export NETNS_AUTO_FABRIC=1 NETNS_FAIL_FAST=0 NETNS_LAYOUT="3 3"
export PS_COMM_PEER_TIMEOUT=10 PS_COMM_JOB_KEY=netns-recover-key
unset FI_PROVIDER

# elastic_case NAME SURVIVORS ARGS...: run elastic on the 2 x 3 layout;
# each rank of SURVIVORS must print its last line with every result
# exact and exactly SURVIVORS as the members, and nothing may time out.
elastic_case() {
	local name=$1 members=$2 log=$tmp/run.log rep r bad n start secs
	shift 2
	for ((rep = 1; rep <= REPS; rep++)); do
		start=$SECONDS
		netns_run_ranks "$TMO" "$EL" -s "$STEPS" "$@" >"$log" 2>&1
		secs=$((SECONDS - start))
		bad=
		for r in $members; do
			grep -q "^\[[0-9]*\] elastic: rank $r: $STEPS steps, every result exact, .* ranks: \[$members\]\$" "$log" ||
				bad="$bad rank $r did not finish with members [$members];"
		done
		n=$(grep -c "^\[[0-9]*\] elastic: rank [0-9]*: $STEPS steps" "$log")
		[ "$n" -eq "$(wc -w <<<"$members")" ] || bad="$bad $n ranks finished;"
		[ "$secs" -lt $((TMO - 1)) ] || bad="$bad the job hung;"
		if [ -n "$bad" ]; then
			not_ok "$name (run $rep):$bad"
			tail -n 25 "$log" | sed 's/^/#   /'
			return
		fi
	done
	ok "$name (2 x 3 ranks, $REPS run(s), last ${secs}s)"
}

elastic_case "a rank of the second node killed: its node rebuilds shm" \
	"0 1 2 3 5" --fail 4@6
elastic_case "rank 0, the liveness root, killed" "1 2 3 4 5" --fail 0@6
elastic_case "three ranks killed at two steps, rank 0 first" "1 3 5" \
	--fail 0@5 --fail 4@5 --fail 2@12
elastic_case "ranks killed inside agree and shrink, rank 0 too" "2 4 5" \
	--fail 1@6 --fail 3@6@recovery --fail 0@6@recovery
elastic_case "the whole second node killed" "0 1 2" \
	--fail 3@6 --fail 4@6 --fail 5@6
elastic_case "the whole first node killed, rank 0's" "3 4 5" \
	--fail 0@6 --fail 1@6 --fail 2@6
[ "$failed" = 0 ] || exit 1
exit 0
