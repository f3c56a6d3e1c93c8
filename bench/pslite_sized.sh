#!/bin/bash
# bench/pslite_sized.sh: ps-lite's zero-copy push, pull and pushpull on one
# key of 4 KiB, 1 MiB and 64 MiB (bench/pslite_sized.cc), over ps-lite's
# ZeroMQ van and over pscomm's van on each provider (auto: FI_PROVIDER
# unset, the van's default), the vans rotating in every round. Every run
# checks its values exactly.
#
#	bench/pslite_sized.sh [-r ROUNDS] [-l "1x1 2x2"] [-p "tcp shm"]
#			      [-c CASES] [-b BASE_PREFIX] [-o DIR]
#			      PSCOMM_PREFIX PSLITE_DIR
#
# PSCOMM_PREFIX: an installed pscomm (include/, lib/). PSLITE_DIR: a
# ps-lite checkout built with pscomm's van added, as doc/pslite.md says
# (include/ and build/libps.a); this script fetches and builds neither,
# only bench/pslite_sized.cc against them, into DIR. Every node runs on
# this host over loopback, SERVERSxWORKERS per layout (-l). CASES (-c) is
# a list of BYTES:OPS:MODE (default: 4096:5000:pushpull 1048576:1000:push
# 1048576:1000:pushpull 67108864:10:pushpull). Writes DIR/raw.csv
# (round,layout,van,bytes,ops,mode,us_per_op: the workers' mean, or
# "fail") and DIR/summary.md: per case the median (min-max) microseconds
# per operation over the rounds, and ZeroMQ's median over each pscomm
# van's (above 1: pscomm is faster). Default DIR: bench/results/pslite-sized.
# BASE_PREFIX (-b): another installed pscomm, an older build to measure a
# change of the van against; the same program then also runs with that
# build's library (LD_LIBRARY_PATH) on each provider, as van base:PROV, in
# the same rotation.
set -u
rounds=5 layouts="1x1 2x2" provs="tcp shm" out=bench/results/pslite-sized
base=
cases="4096:5000:pushpull 1048576:1000:push 1048576:1000:pushpull 67108864:10:pushpull"
usage() {
	sed -n 's/^#\t/    /p; s/^#\(\s*bench\/pslite_sized.sh.*\)/\1/p' "$0" >&2
	exit 2
}
while getopts r:l:p:c:b:o: opt; do
	case $opt in
	b) base=$OPTARG ;;
	r) rounds=$OPTARG ;;
	l) layouts=$OPTARG ;;
	p) provs=$OPTARG ;;
	c) cases=$OPTARG ;;
	o) out=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 2 ] || usage
prefix=$1 pslite=$2
for f in "$prefix/include/ps_comm/van.h" "$pslite/include/ps/ps.h" \
	"$pslite/build/libps.a"; do
	[ -f "$f" ] || { echo "pslite_sized.sh: $f is missing" >&2; exit 2; }
done
baselib=
if [ -n "$base" ]; then
	baselib=$base/lib
	[ -d "$baselib" ] || baselib=$base/lib64
	[ -f "$baselib/libpscomm.so.0" ] || {
		echo "pslite_sized.sh: $baselib/libpscomm.so.0 is missing" >&2
		exit 2
	}
fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
prog=$out/pslite_sized
libdir=$prefix/lib
[ -d "$libdir" ] || libdir=$prefix/lib64
g++ -std=c++11 -O2 -pthread -isystem "$pslite/include" -I"$prefix/include" \
	"$here/pslite_sized.cc" "$pslite/build/libps.a" -lprotobuf-lite -lzmq \
	-L"$libdir" -lpscomm -Wl,--enable-new-dtags,-rpath,"$libdir" \
	-o "$prog" || exit 1

# once VAN LAYOUT BYTES OPS MODE: the workers' mean us/op, or "fail" (the
# run's whole output kept in DIR/fail-*.log). The root port is below
# Linux's ephemeral range (32768 up), where ps-lite's nodes pick theirs.
once() {
	local van=$1 s=${2%x*} w=${2#*x} log keep pids=() rc=0 prov=
	log=$(mktemp)
	case $van in pscomm:* | base:*) prov=${van#*:} ;; esac
	(
		export DMLC_NUM_SERVER=$s DMLC_NUM_WORKER=$w \
			DMLC_PS_ROOT_URI=127.0.0.1 DMLC_NODE_HOST=127.0.0.1 \
			DMLC_PS_ROOT_PORT=$((20000 + RANDOM % 12768)) \
			DMLC_PS_VAN_TYPE=${van%%:*} PS_COMM_JOB_KEY=pslite-sized
		# The base build's library in place of PSCOMM_PREFIX's.
		if [ "${van%%:*}" = base ]; then
			DMLC_PS_VAN_TYPE=pscomm
			export LD_LIBRARY_PATH=$baselib
		fi
		# auto: FI_PROVIDER unset, the van's default (shm inside a
		# node, which here is every node).
		unset FI_PROVIDER
		[ -n "$prov" ] && [ "$prov" != auto ] && export FI_PROVIDER=$prov
		DMLC_ROLE=scheduler timeout 300 "$prog" "$3" "$4" "$5" & pids+=($!)
		for ((i = 0; i < s; i++)); do
			DMLC_ROLE=server timeout 300 "$prog" "$3" "$4" "$5" &
			pids+=($!)
		done
		for ((i = 0; i < w; i++)); do
			DMLC_ROLE=worker timeout 300 "$prog" "$3" "$4" "$5" &
			pids+=($!)
		done
		for p in "${pids[@]}"; do wait "$p" || rc=1; done
		exit $rc
	) >"$log" 2>&1 || rc=1
	if [ "$rc" = 0 ] && [ "$(grep -c 'check ok$' "$log")" = "$w" ]; then
		sed -n 's/.*s, \([0-9.]*\) us\/op.*/\1/p' "$log" |
			awk '{t += $1} END {printf "%.2f\n", t / NR}'
	else
		echo fail
		keep=$(mktemp "$out/fail-XXXXXX.log")
		cp "$log" "$keep"
		echo "pslite_sized.sh: $van $2 $3 $5 failed: $keep" >&2
	fi
	rm -f "$log"
}

vans="zmq"
for p in $provs; do vans="$vans pscomm:$p"; done
[ -n "$base" ] && for p in $provs; do vans="$vans base:$p"; done
read -r -a vl <<<"$vans"
echo "round,layout,van,bytes,ops,mode,us_per_op" >"$out/raw.csv"
for ((r = 0; r < rounds; r++)); do
	for lay in $layouts; do
		for c in $cases; do
			IFS=: read -r bytes ops mode <<<"$c"
			# The van order rotates by one every round.
			for ((k = 0; k < ${#vl[@]}; k++)); do
				v=${vl[$(((k + r) % ${#vl[@]}))]}
				t=$(once "$v" "$lay" "$bytes" "$ops" "$mode")
				echo "$r,$lay,$v,$bytes,$ops,$mode,$t" >>"$out/raw.csv"
				echo "# round $r $lay $v $bytes B $mode: $t us/op" >&2
			done
		done
	done
done

# The summary: median (min-max) per layout, case and van, and ratios.
awk -F, -v vans="$vans" '
NR > 1 && $7 != "fail" {
	k = $2 SUBSEP $4 SUBSEP $5 SUBSEP $6
	if (!(k in seen)) { seen[k] = 1; order[++n] = k }
	v[k, $3, ++c[k, $3]] = $7
}
NR > 1 && $7 == "fail" { failed[$2 SUBSEP $4 SUBSEP $5 SUBSEP $6, $3]++ }
function med(k, van,   m, i, j, t, a) {
	m = c[k, van]
	if (!m) return ""
	for (i = 1; i <= m; i++) a[i] = v[k, van, i]
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++)
		if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	lo[k, van] = a[1]; hi[k, van] = a[m]
	return a[int((m + 1) / 2)]
}
END {
	nv = split(vans, vl, " ")
	printf "| layout | bytes | ops | mode |"
	for (i = 1; i <= nv; i++) printf " %s us/op |", vl[i]
	for (i = 2; i <= nv; i++) printf " zmq / %s |", vl[i]
	printf "\n|---|---|---|---|"
	for (i = 1; i < 2 * nv; i++) printf "---|"
	printf "\n"
	for (o = 1; o <= n; o++) {
		k = order[o]; split(k, f, SUBSEP)
		printf "| %s | %s | %s | %s |", f[1], f[2], f[3], f[4]
		for (i = 1; i <= nv; i++) {
			m[i] = med(k, vl[i])
			if (m[i] == "") printf " fail |"
			else printf " %s (%s-%s)%s |", m[i], lo[k, vl[i]],
				hi[k, vl[i]], failed[k, vl[i]] ? \
				sprintf(", %d failed", failed[k, vl[i]]) : ""
		}
		for (i = 2; i <= nv; i++)
			if (m[1] == "" || m[i] == "") printf " - |"
			else printf " %.2f |", m[1] / m[i]
		printf "\n"
	}
}' "$out/raw.csv" >"$out/summary.md"
cat "$out/summary.md"
