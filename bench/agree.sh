#!/bin/sh
# ps_comm_agree against an 8-byte ps_comm_allreduce on the same
# communicator (bench/agree.c alternates them within each run), on each
# provider and rank count given, RUNS runs each with the providers
# rotating. Prints each run's summary line; the ratio is agree's time
# over the allreduce's.
#   bench/agree.sh [-n "2 4"] [-p "tcp net shm"] [-r RUNS] [-i ITERS]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${PSCOMM_BUILD:-$top}
ranks="2 4" provs="tcp net shm" runs=5 iters=200
while [ $# -gt 0 ]; do
	case $1 in
	-n) ranks=$2; shift 2 ;;
	-p) provs=$2; shift 2 ;;
	-r) runs=$2; shift 2 ;;
	-i) iters=$2; shift 2 ;;
	*) echo "usage: $0 [-n RANKS] [-p PROVIDERS] [-r RUNS] [-i ITERS]" >&2
	   exit 2 ;;
	esac
done
run=1
while [ $run -le "$runs" ]; do
	for n in $ranks; do
		for p in $provs; do
			"$build/tools/ps_comm_run" -n "$n" --provider "$p" \
				--timeout 300 -- "$build/bench/agree" \
				-i "$iters" -r 7 | grep '^agree:' |
				sed "s/^/run $run: /"
		done
	done
	run=$((run + 1))
done
