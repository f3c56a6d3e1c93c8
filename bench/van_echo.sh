#!/usr/bin/env bash
# van_echo.sh - the van's round trip, without ps-lite, for one or more
# installed pscomm builds: bench/van_echo.c is built against each PREFIX
# and run as two nodes on 127.0.0.1, one thread per node and then with
# ps-lite's threads (a receiving thread hands messages to the sending
# one); every round runs each build in turn, the first one rotating, and
# the summary gives medians (min-max) in microseconds per round trip.
#
# usage: bench/van_echo.sh [-r ROUNDS] [-b BYTES] [-n ITERS] [-p PROVIDER]
#                          [-o DIR] PREFIX...
#   -r ROUNDS    rounds (default 8, at least 5)
#   -b BYTES     segment size (default 1048576)
#   -n ITERS     timed round trips per run (default 1000)
#   -p PROVIDER  FI_PROVIDER for both nodes (default net; "auto" unsets it)
#   -o DIR       where the programs and raw samples go (default a
#                temporary directory, removed at the end)
# Exit status: 0, 1 when a run failed, 2 for bad usage or a failed build.
set -u
rounds=8 bytes=1048576 iters=1000 prov=net out=
while getopts r:b:n:p:o: opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	b) bytes=$OPTARG ;;
	n) iters=$OPTARG ;;
	p) prov=$OPTARG ;;
	o) out=$OPTARG ;;
	*) sed -n '2,18p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -lt 1 ] || [ "$rounds" -lt 5 ]; then
	sed -n '2,18p' "$0" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
keep=1
if [ -z "$out" ]; then
	out=$(mktemp -d)
	keep=0
fi
mkdir -p "$out"
prefixes=("$@")
for i in "${!prefixes[@]}"; do
	p=${prefixes[$i]}
	lib=$p/lib
	[ -d "$lib" ] || lib=$p/lib64
	cc -O2 -pthread -I"$p/include" "$here/van_echo.c" -L"$lib" -lpscomm \
		-Wl,-rpath,"$lib" -o "$out/van_echo.$i" || exit 2
done

# once I MODE: one run of build I, its us per round trip, or "fail".
once() {
	local port=$((20000 + RANDOM % 10000)) r
	(
		export PS_COMM_JOB_KEY=van-echo
		unset FI_PROVIDER
		[ "$prov" != auto ] && export FI_PROVIDER=$prov
		timeout 120 "$out/van_echo.$1" 2 $((port + 1)) "$port" \
			"$bytes" "$iters" "$2" >/dev/null &
		r=$(timeout 120 "$out/van_echo.$1" 1 "$port" $((port + 1)) \
			"$bytes" "$iters" "$2") || r=fail
		wait $! || r=fail
		echo "$r"
	)
}

rc=0
: >"$out/samples.txt"
for ((r = 0; r < rounds; r++)); do
	for mode in one threads; do
		for ((k = 0; k < ${#prefixes[@]}; k++)); do
			i=$(((k + r) % ${#prefixes[@]}))
			us=$(once "$i" "$mode")
			[ "$us" = fail ] && rc=1
			echo "$i $mode $us" >>"$out/samples.txt"
		done
	done
done
echo "van_echo: $bytes B, $iters round trips per run, $rounds rounds," \
	"FI_PROVIDER=$prov; us per round trip, median (min-max)"
for mode in one threads; do
	for i in "${!prefixes[@]}"; do
		awk -v i="$i" -v m="$mode" '$1 == i && $2 == m && $3 != "fail" \
			{ print $3 }' "$out/samples.txt" | sort -n |
			awk -v m="$mode" -v p="${prefixes[$i]}" '
				{ v[++n] = $1 }
				END {
					if (!n) { printf "%-8s %s: no run\n", m, p; exit }
					med = n % 2 ? v[(n + 1) / 2] \
						    : (v[n / 2] + v[n / 2 + 1]) / 2
					printf "%-8s %s: %.0f (%.0f-%.0f), %d runs\n",
						m, p, med, v[1], v[n], n
				}'
	done
done
[ "$keep" = 0 ] && rm -rf "$out"
exit $rc
