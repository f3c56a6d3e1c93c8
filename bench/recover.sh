#!/bin/sh
# Time to recover: one rank of N (8 unless told) running
# examples/elastic --timing is SIGKILLed during a step; the survivors
# revoke, agree and shrink, and go on. Per run, in ms after the kill
# (every clock is this host's CLOCK_MONOTONIC): when the last survivor's
# step failed (detection) and when the last survivor completed its next
# step, a ring exchange and an allreduce on the shrunk communicator
# (recovered). Providers rotate within each of RUNS runs; the summary
# gives, per provider, the median and the range of both and of their
# difference (what revoke, agree and shrink cost beyond detection).
#   bench/recover.sh [-n RANKS] [-p "tcp shm"] [-r RUNS] [-k VICTIM]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${PSCOMM_BUILD:-$top}
n=8 provs="tcp shm" runs=7 victim=3
while [ $# -gt 0 ]; do
	case $1 in
	-n) n=$2; shift 2 ;;
	-p) provs=$2; shift 2 ;;
	-r) runs=$2; shift 2 ;;
	-k) victim=$2; shift 2 ;;
	*) echo "usage: $0 [-n RANKS] [-p PROVIDERS] [-r RUNS] [-k VICTIM]" >&2
	   exit 2 ;;
	esac
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_recover.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
run=1
while [ "$run" -le "$runs" ]; do
	for p in $provs; do
		"$build/tools/ps_comm_run" -n "$n" --provider "$p" \
			--grace 60 --timeout 120 -- "$build/examples/elastic" \
			-s 12 -n 1024 --timing --fail "$victim@5" \
			>"$tmp/out" 2>&1 || true
		awk -v p="$p" -v run="$run" '
			/timing: killed at/ { kill = $5 }
			/timing: rank/ {
				f = $8; d = $14
				if (f > fail) fail = f
				if (d > done) done = d
				n++
			}
			END {
				if (!kill || !n) {
					printf "run %d %s: no timing (failed run)\n", run, p
					exit
				}
				printf "run %d %s: detect %.1f ms recovered %.1f ms " \
				       "(%d survivors)\n", run, p, (fail - kill) / 1e3,
				       (done - kill) / 1e3, n
			}' "$tmp/out" | tee -a "$tmp/runs"
	done
	run=$((run + 1))
done
echo "# median (min-max) over $runs runs, $n ranks, rank $victim killed at step 5"
for p in $provs; do
	for what in detect recovered extra; do
		grep " $p: detect" "$tmp/runs" | awk -v w="$what" '{
			d = $5; r = $8
			print (w == "detect" ? d : w == "recovered" ? r : r - d)
		}' | sort -n | awk -v p="$p" -v w="$what" '
			{ v[NR] = $1 }
			END {
				if (!NR) { printf "%s %s: no runs\n", p, w; exit }
				m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
				printf "%s %-9s %.1f ms (%.1f-%.1f)\n", p, w, m, v[1], v[NR]
			}'
	done
done
