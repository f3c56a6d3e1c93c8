#!/usr/bin/env bash
# startup.sh - what starting a pscomm process costs, per pscomm build (and
# so per libfabric: each build runs on the libfabric it links).  Each
# round runs, for every build in turn (the first build alternates):
#   pscomm    a one-rank examples/allreduce of one 4 KiB call: init,
#             allreduce, finalize, with FI_PROVIDER as given
#   fi_info   fi_info -p PROVIDER of the same libfabric: libfabric's own
#             first fi_getinfo (provider loading and discovery), plus a
#             little printing
# and records wall and CPU (user + system) seconds with /usr/bin/time.
# The summary gives medians (min-max) and pscomm's CPU beyond fi_info's.
#
# usage: bench/startup.sh [-r ROUNDS] [-p PROVIDER] BUILD...
#   BUILD       top of a configured and built pscomm tree
#   -r ROUNDS   rounds (default 7, at least 5)
#   -p PROVIDER FI_PROVIDER for both (default tcp; "" leaves it unset)
#
# Exit status: 0, 1 when a run failed, 2 for bad usage.
set -u

rounds=7
prov=tcp
while getopts r:p:h opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	p) prov=$OPTARG ;;
	h) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
case $rounds in '' | *[!0-9]*) echo "startup.sh: bad -r" >&2; exit 2 ;; esac
[ "$rounds" -ge 5 ] || { echo "startup.sh: -r must be at least 5" >&2; exit 2; }
[ $# -ge 1 ] || { echo "usage: bench/startup.sh [-r ROUNDS] [-p PROVIDER] BUILD..." >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "startup.sh: needs /usr/bin/time (package time)" >&2; exit 2; }

builds=() infos=() libs=()
for b; do
	b=$(cd "$b" 2>/dev/null && pwd) || { echo "startup.sh: no build $b" >&2; exit 2; }
	[ -x "$b/examples/allreduce" ] || { echo "startup.sh: $b has no examples/allreduce" >&2; exit 2; }
	lib=$(ldd "$b/.libs/libpscomm.so" 2>/dev/null | awk '/libfabric/ {print $3}')
	fi=$(dirname "$(dirname "$lib")")/bin/fi_info
	[ -x "$fi" ] || fi=$(command -v fi_info)
	builds+=("$b") infos+=("$fi") libs+=("$lib")
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# measure FILE CMD...: append "wall cpu" of one run of CMD to FILE.
measure() {
	local f=$1
	shift
	if ! /usr/bin/time -f '%e %U %S' -o "$tmp/t" "$@" >"$tmp/out" 2>&1; then
		echo "startup.sh: failed: $*" >&2
		tail -n 5 "$tmp/out" >&2
		exit 1
	fi
	awk '{printf "%s %.3f\n", $1, $2 + $3}' "$tmp/t" >>"$f"
}
# The program itself, not libtool's wrapper script around it (a shell
# that sets LD_LIBRARY_PATH): an installed pscomm has no wrapper.
program() {
	if [ -x "$1/examples/.libs/allreduce" ]; then
		echo env LD_LIBRARY_PATH="$1/.libs" "$1/examples/.libs/allreduce"
	else
		echo "$1/examples/allreduce"
	fi
}
run_build() {
	local k=$1 b=${builds[$1]}
	# shellcheck disable=SC2046 # program's words
	if [ -n "$prov" ]; then
		measure "$tmp/p$k" env FI_PROVIDER="$prov" PS_COMM_SIZE=1 \
			$(program "$b") -m 4K -M 4K -i 1
		measure "$tmp/f$k" "${infos[$k]}" -p "$prov"
	else
		measure "$tmp/p$k" env -u FI_PROVIDER PS_COMM_SIZE=1 \
			$(program "$b") -m 4K -M 4K -i 1
		measure "$tmp/f$k" "${infos[$k]}"
	fi
}
for ((r = 0; r < rounds; r++)); do
	n=${#builds[@]}
	for ((j = 0; j < n; j++)); do
		run_build $(((j + r) % n))
	done
done

# med COLUMN FILE: "median (min-max)" of a column, in ms.
med() {
	awk -v c="$1" '{print $c * 1000}' "$2" | sort -n | awk '
		{v[NR] = $1}
		END {m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		     printf "%.0f (%.0f-%.0f)", m, v[1], v[NR]}'
}
median_of() {
	awk -v c="$1" '{print $c * 1000}' "$2" | sort -n | awk '
		{v[NR] = $1}
		END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
echo "# startup of one pscomm process, FI_PROVIDER=${prov:-unset}, $rounds rounds, ms: median (min-max)"
echo "| build | libfabric | pscomm wall | pscomm CPU | fi_info wall | fi_info CPU | pscomm CPU beyond fi_info |"
echo "|---|---|---|---|---|---|---|"
for ((k = 0; k < ${#builds[@]}; k++)); do
	extra=$(awk -v a="$(median_of 2 "$tmp/p$k")" -v b="$(median_of 2 "$tmp/f$k")" \
		'BEGIN {printf "%.0f", a - b}')
	echo "| ${builds[$k]} | ${libs[$k]} | $(med 1 "$tmp/p$k") | $(med 2 "$tmp/p$k") | $(med 1 "$tmp/f$k") | $(med 2 "$tmp/f$k") | $extra |"
done
