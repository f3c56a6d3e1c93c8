#!/bin/bash
# kvstore (pscomm's van) against ps-lite's own test_kv_app_benchmark, on
# this machine, 1 scheduler + 1 server + 1 worker, median of RUNS runs.
#
#   bench/kvstore_vs_pslite.sh BUILD_DIR PSLITE_ZMQ_TESTS [PSLITE_PSCOMM_TESTS]
#
# BUILD_DIR: a pscomm build (examples/kvstore). PSLITE_ZMQ_TESTS: the
# tests/ directory of a ps-lite build (test_kv_app_benchmark, local.sh);
# PSLITE_PSCOMM_TESTS: the same for a ps-lite build with pscomm's van
# added (doc/pslite.md), run with DMLC_PS_VAN_TYPE=pscomm. A build with
# pscomm's van keeps ZeroMQ's, so one directory may be given for both.
# This script fetches and builds neither; make the ps-lite build as
# doc/pslite.md says. Environment: FI_PROVIDER (default tcp; PROVIDERS,
# e.g. "tcp shm", runs the pscomm rows once per provider), RUNS (3),
# KEYS (64), VALUE (1048576 bytes), ROUNDS (5). local.sh takes port
# 8000: run one copy at a time.
#
# ps-lite's benchmark pushes and pulls 10,000,000 float values with their
# 8-byte keys in one request: its MB/s are given for the 40 MB of values
# (what kvstore counts) and, in brackets, for all bytes on the wire
# (push 120 MB; pull 80 MB of keys out, 120 MB back).
set -u
build=${1:?usage: $0 BUILD_DIR PSLITE_ZMQ_TESTS [PSLITE_PSCOMM_TESTS]}
zmq_tests=${2:?usage: $0 BUILD_DIR PSLITE_ZMQ_TESTS [PSLITE_PSCOMM_TESTS]}
pscomm_tests=${3:-}
export FI_PROVIDER=${FI_PROVIDER:-tcp}
RUNS=${RUNS:-3} KEYS=${KEYS:-64} VALUE=${VALUE:-1048576} ROUNDS=${ROUNDS:-5}

median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

kvstore_once() {
	local port=$((20000 + RANDOM % 12768)) pids= log
	log=$(mktemp)
	export DMLC_PS_ROOT_URI=127.0.0.1 DMLC_PS_ROOT_PORT=$port \
		DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=1
	for role in scheduler server worker; do
		DMLC_ROLE=$role timeout 300 "$build/examples/kvstore" -k "$KEYS" \
			-s "$VALUE" -i "$ROUNDS" >>"$log" 2>&1 &
		pids="$pids $!"
	done
	wait $pids
	grep -o 'push [0-9.]* MB/s, pull [0-9.]* MB/s' "$log" |
		awk '{print $2, $5}'
	rm -f "$log"
}

pslite_once() {	# pslite_once TESTS_DIR VAN: "push_ms pull_ms"
	(cd "$1" && DMLC_PS_VAN_TYPE=$2 timeout 300 ./local.sh 1 1 \
		./test_kv_app_benchmark 2>&1) |
		sed -n 's/.*\(Push\|Pull\) average time cost: \([0-9.]*\)ms.*/\2/p' |
		paste -sd' '
}

printf '%-34s %12s %12s\n' "($FI_PROVIDER, median of $RUNS)" "push MB/s" "pull MB/s"
res=$(for i in $(seq "$RUNS"); do kvstore_once; done)
printf '%-34s %12s %12s\n' "kvstore ${VALUE} B x $KEYS" \
	"$(awk '{print $1}' <<<"$res" | median)" \
	"$(awk '{print $2}' <<<"$res" | median)"
for v in zmq $(for p in ${PROVIDERS:-$FI_PROVIDER}; do echo "pscomm:$p"; done); do
	dir=$zmq_tests
	case $v in pscomm:*) dir=$pscomm_tests ;; esac
	[ -n "$dir" ] || continue
	prov=$FI_PROVIDER
	case $v in pscomm:*) prov=${v#pscomm:} ;; esac
	res=$(for i in $(seq "$RUNS"); do
		FI_PROVIDER=$prov pslite_once "$dir" "${v%%:*}"
	done)
	push=$(awk '{print $1}' <<<"$res" | median)
	pull=$(awk '{print $2}' <<<"$res" | median)
	printf '%-34s %12s %12s\n' "ps-lite benchmark, ${v/:/ } van" \
		"$(awk -v t="$push" 'BEGIN {printf "%.1f [%.1f]", 40e6 / t / 1e3, 120e6 / t / 1e3}')" \
		"$(awk -v t="$pull" 'BEGIN {printf "%.1f [%.1f]", 40e6 / t / 1e3, 200e6 / t / 1e3}')"
done
