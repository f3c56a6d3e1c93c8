#!/bin/sh
# Hierarchical collectives (lib/coll/*_hier.c) on one machine playing
# several nodes: tests/mp/node_id.sh gives each rank the node id of a
# layout, and FI_PROVIDER stays unset, so ranks of one "node" talk over
# shm and the others over tcp, as on a real cluster. Every collective
# with the algorithm forced to hier, and with auto, on the layouts 2x2,
# 3x2, 3+1, 2+2+1, one rank per node, one node and ranks placed round
# robin; checked by coll_suite against its serial reference (integers
# and min/max bitwise, floats within its bound, the same bits on every
# rank). Deterministic mode: hier and the flat algorithms must all give
# exactly the rank-order fold's bits on inputs where the order matters.
# Also: auto really picks hier across nodes and not on one rank per
# node, and an unknown algorithm name still fails clearly.
. "${srcdir:-.}/tests/mp/common.sh"
SUITE="$top_builddir/tests/mp/coll_suite"
WRAP="${srcdir:-.}/tests/mp/node_id.sh"
need_programs "$SUITE" "$RUN" "$top_builddir/examples/allreduce"
clean_rank_env
unset FI_PROVIDER PS_COMM_NODE_ID PS_COMM_INTRA PS_COMM_ALLREDUCE_ALGO \
	PS_COMM_BCAST_ALGO PS_COMM_REDUCE_ALGO PS_COMM_ALLGATHER_ALGO \
	PS_COMM_REDUCE_SCATTER_ALGO PS_COMM_BARRIER_ALGO
if ! have_provider shm || ! have_provider tcp; then
	echo "skip - needs the shm and tcp providers"
	exit 77
fi

# launch MAP TIMEOUT PROG [ARGS...]: run PROG on the ranks laid out by
# MAP (node labels, one per rank), its status in $rc, its output in $log
# until the next call, its duration in $secs.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
launch() {
	map=$1 tmo=$2
	shift 2
	n=$(printf '%s\n' "$map" | tr ',' '\n' | wc -l)
	start=$(date +%s)
	PSC_TEST_NODE_MAP=$map "$RUN" -n "$n" --timeout "$tmo" -- \
		"$WRAP" "$@" >"$log" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
}

# nodes NAME MAP TIMEOUT PROG [ARGS...]: launch, one check.
nodes() {
	name=$1
	shift
	launch "$@"
	# shm and tcp exist (checked above): any other status is a failure.
	if [ $rc -eq 0 ]; then
		ok "$name ($map, ${secs}s)"
	else
		not_ok "$name ($map): exit $rc after ${secs}s"
		sed 's/^/#   /' "$log" | tail -20
	fi
}

# Every collective forced to hier: all types and counts on 2x2 and 3+1
# (the irregular fold), the quick matrix on the other layouts (6 ranks on
# 2 cores are oversubscribed). The variables are set as users would;
# --algo forces the same through the parameters, sub-communicators too.
for map in a,a,b,b a,a,a,b; do
	PS_COMM_ALLREDUCE_ALGO=hier PS_COMM_BCAST_ALGO=hier \
		PS_COMM_REDUCE_ALGO=hier PS_COMM_ALLGATHER_ALGO=hier \
		PS_COMM_REDUCE_SCATTER_ALGO=hier PS_COMM_BARRIER_ALGO=hier \
		nodes "hier, full matrix" "$map" 200 "$SUITE" --algo hier
done
for map in a,a,b,b,c,c a,a,b,b,c a,b,c a,a,a a,b,a,b; do
	nodes "hier" "$map" 200 "$SUITE" --quick --algo hier
done
nodes "hier, 64 MiB" a,a,b,b 200 "$SUITE" --large --algo hier

# auto: hier across nodes, the flat algorithms with one rank per node.
# The suite counts what the dispatcher chose (--expect-hier).
for map in a,a,b,b a,a,b,b,c,c a,a,a,b; do
	nodes "auto picks hier on $map" "$map" 200 "$SUITE" --quick \
		--algo auto --expect-hier yes
done
nodes "auto keeps the flat algorithms on one rank per node" a,b,c 200 \
	"$SUITE" --quick --algo auto --expect-hier no

# Deterministic: hier and every flat algorithm against the rank-order
# fold, bit for bit, so hier and flat agree bit for bit.
for map in a,a,b,b a,a,a,b; do
	PS_COMM_DETERMINISTIC=1 nodes "deterministic, hier" "$map" 200 \
		"$SUITE" --det --algo hier
	PS_COMM_DETERMINISTIC=1 nodes "deterministic, flat" "$map" 200 \
		"$SUITE" --det
done

# A wrong name fails at init, naming the variable; hier is a name the
# example takes.
PS_COMM_ALLREDUCE_ALGO=tree launch a,a,b,b 60 \
	"$top_builddir/examples/allreduce" -m 4K -M 4K -i 1
check "an unknown algorithm fails, named" \
	sh -c "[ $rc -ne 0 ] && grep -q 'PS_COMM_ALLREDUCE_ALGO=\"tree\" is not one of' '$log'"
nodes "examples/allreduce -a hier" a,a,b,b 60 \
	"$top_builddir/examples/allreduce" -a hier -m 4 -M 4M -i 2 -c
finish
