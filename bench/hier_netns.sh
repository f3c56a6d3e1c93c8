#!/usr/bin/env bash
# hier_netns.sh - hierarchical against flat allreduce when the wire
# between nodes is the bottleneck. Two network namespaces play two nodes
# with two ranks each (FI_PROVIDER unset: shm inside a node, tcp between
# them), and each node's link is capped with tc tbf. The flat ring and
# the hierarchical algorithm run alternately, RUNS times each; the
# summary gives median, min and max, their ratio, and what the wire
# model predicts. Needs root (network namespaces).
#
# usage: bench/hier_netns.sh [-r RUNS] [-s SIZE] [-b RATE] [-l LAYOUT]
#                            [PSCOMM_BUILD_DIR]
#   -r RUNS    runs of each algorithm, alternating (default 5)
#   -s SIZE    allreduce size in bytes, K/M suffixes (default 64M)
#   -b RATE    tbf rate of each node's link (default 1gbit)
#   -l LAYOUT  block (ranks 0,1 | 2,3; default) or cyclic (0,2 | 1,3)
#
# The model counts the bytes each node sends over its capped link, S the
# allreduce size: the flat ring of 4 ranks sends 2(n-1)/n S = 1.5 S per
# rank, and with block placement 2 of its 4 hops cross nodes, one each
# way, so each link carries 1.5 S; with cyclic placement every hop
# crosses, 3 S per link. The hierarchical algorithm allreduces S/2 per
# node peer pair between the 2 nodes (2(N-1)/N S/2 = S/2 each, two pairs),
# S per link. Predicted ratio: 1.5 (block) or 3 (cyclic), less the
# intra-node phases over shm.
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../tests/netns/lib.sh"

RUNS=5 SIZE=64M RATE=1gbit LAYOUT=block HIER=${HIER_ALGO:-hier}
while [[ $# -gt 0 ]]; do
	case $1 in
	-r) RUNS=$2; shift 2 ;;
	-s) SIZE=$2; shift 2 ;;
	-b) RATE=$2; shift 2 ;;
	-l) LAYOUT=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
build=${1:-.}
prog=$build/examples/allreduce
[ -x "$prog" ] || { echo "no $prog: build pscomm first" >&2; exit 2; }
case $LAYOUT in
block) export NETNS_LAYOUT="2 2" ; model=1.5 ;;
cyclic) model=3.0 ;;
*) echo "layout must be block or cyclic" >&2; exit 2 ;;
esac

# A 64 KB bucket at 1 Gbit/s drops bursts of TSO segments: iperf3 with a
# flow each way got 620 Mbit/s and 13,000 retransmissions, against 955
# Mbit/s and 2 with 1 MB, so the link, not the shaper, sets the pace.
export NETNS_TBF_BURST=${NETNS_TBF_BURST:-1mb}
netns_require
netns_setup 2 >/dev/null || exit 1
for i in 0 1; do netns_rate "$i" "$RATE" || exit 1; done
export NETNS_AUTO_FABRIC=1
unset FI_PROVIDER
out=$(mktemp -d "${TMPDIR:-/tmp}/hier_netns.XXXXXX")

# run ALGO: one allreduce run; appends its time in us to $out/ALGO.
run() {
	local log=$out/run.log
	if [ "$LAYOUT" = cyclic ]; then
		# Ranks alternate namespaces: rank r lives in namespace r % 2.
		unset NETNS_LAYOUT
		netns_setup_cyclic_run "$1" >"$log" 2>&1
	else
		PS_COMM_ALLREDUCE_ALGO=$1 netns_run_ranks 600 \
			env PS_COMM_ALLREDUCE_ALGO="$1" "$prog" -m "$SIZE" \
			-M "$SIZE" -i 3 --csv >"$log" 2>&1
	fi || { echo "run of $1 failed:" >&2; tail -5 "$log" >&2; return 1; }
	grep '^\[0\] [0-9]' "$log" | cut -d' ' -f2 | cut -d, -f6 >>"$out/$1"
}

# The cyclic layout: rank r in namespace r % 2, started by hand.
netns_setup_cyclic_run() {
	local r pids=() port=$((29800 + RANDOM % 100)) rc=0
	for r in 0 1 2 3; do
		ip netns exec "${NETNS_NAMES[$((r % 2))]}" env -u FI_PROVIDER \
			PS_COMM_RANK=$r PS_COMM_SIZE=4 \
			PS_COMM_NODE_ID="node$((r % 2))" \
			PS_COMM_ROOT="${NETNS_IP4[0]}:$port" \
			PS_COMM_ALLREDUCE_ALGO="$1" timeout 600 "$prog" \
			-m "$SIZE" -M "$SIZE" -i 3 --csv 2>&1 | sed "s/^/[$r] /" &
		pids+=($!)
	done
	for r in "${pids[@]}"; do wait "$r" || rc=1; done
	return $rc
}

echo "# $RUNS runs each, $SIZE float32 sum, 2 nodes x 2 ranks ($LAYOUT), tbf $RATE per node link"
for ((k = 0; k < RUNS; k++)); do
	run ring || exit 1
	run "$HIER" || exit 1
done

# stats FILE: "median min max" of the numbers in FILE.
stats() {
	sort -g "$1" | awk '{v[NR] = $1} END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.0f %.0f %.0f", m, v[1], v[NR] }'
}
read -r fm fmin fmax <<<"$(stats "$out/ring")"
read -r hm hmin hmax <<<"$(stats "$out/$HIER")"
echo "| algorithm | median (ms) | min | max |"
echo "|---|---:|---:|---:|"
awk -v a="$fm" -v b="$fmin" -v c="$fmax" 'BEGIN { printf "| flat ring | %.1f | %.1f | %.1f |\n", a / 1e3, b / 1e3, c / 1e3 }'
awk -v a="$hm" -v b="$hmin" -v c="$hmax" 'BEGIN { printf "| hierarchical | %.1f | %.1f | %.1f |\n", a / 1e3, b / 1e3, c / 1e3 }'
awk -v f="$fm" -v h="$hm" -v m="$model" 'BEGIN {
	printf "flat / hierarchical: %.2f (model: %s, before the shm phases)\n", f / h, m }'
rm -rf "$out"
