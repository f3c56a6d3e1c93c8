#!/bin/bash
# tests/fault/soak.sh: `fault_prog mixed` (random point-to-point and
# collectives, 0 B to 16 MiB, every result checked) on 8 local ranks for
# 600 s, then a check that nothing leaks: on every rank the last resident
# set sample is at most 1.1 times the one after the warm-up plus 16 MiB,
# the heap in use (malloc's, every arena) grew by at most 1 MiB, and no
# more descriptors are open than after the warm-up. Prints the figures of
# each rank; logs are under tests/fault/logs-soak/.
#
# FI_UNIVERSE_SIZE defaults to the rank count here (unless set), as
# pscomm itself sets it: rxm sizes its message completion ring as
# tx_size x FI_UNIVERSE_SIZE entries (12 MiB at libfabric's default of
# 1024), allocated at startup and touched one entry at a time until it has
# wrapped once, which takes far longer than the warm-up and would read as
# growth. glibc's per-thread cache is off
# (GLIBC_TUNABLES=glibc.malloc.tcache_count=0, unless GLIBC_TUNABLES is
# set), because malloc counts the chunks it caches as in use, so the heap
# figure would creep up as the cache fills. doc/faults.md has the figures.
#
#	tests/fault/soak.sh [-n RANKS] [-d SECS] [-w WARMUP] [-p PROVIDER]
#			    [-r SEED]
#
# Exit: 0 passed, 1 a rank failed or grew, 2 bad usage, 77 provider absent.

[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -eu

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

nranks=8
dur=600
warm=60
prov=tcp
seed=1
while getopts n:d:w:p:r:h opt; do
	case $opt in
	n) nranks=$OPTARG ;;
	d) dur=$OPTARG ;;
	w) warm=$OPTARG ;;
	p) prov=$OPTARG ;;
	r) seed=$OPTARG ;;
	h) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) exit 2 ;;
	esac
done
for v in "$nranks" "$dur" "$warm" "$seed"; do
	case $v in '' | *[!0-9]*) echo "soak.sh: '$v' is not a number" >&2; exit 2 ;; esac
done
if [ "$warm" -ge "$dur" ]; then
	echo "soak.sh: the warm-up (-w $warm) must be shorter than the run (-d $dur)" >&2
	exit 2
fi
PROG=$top_builddir/tests/fault/fault_prog
[ -x "$PROG" ] || { echo "soak.sh: $PROG not built" >&2; exit 2; }
have_provider "$prov" || { echo "SKIP: provider $prov not present"; exit 77; }
logs=$top_builddir/tests/fault/logs-soak
rm -rf "$logs"
trap 'fault_kill_all' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# sample FILE T: "rss fds heap" of the first stats line at T seconds or
# later (the last line when T is "last").
sample() {
	awk -v t="$2" '
		$1 != "stats" { next }
		{ for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] } }
		t == "last" { r = f["rss_kib"]; d = f["fds"]; h = f["heap_kib"]; next }
		f["t"] + 0 >= t + 0 && r == "" {
			r = f["rss_kib"]; d = f["fds"]; h = f["heap_kib"]
		}
		END { if (r != "") print r, d, h }' "$1"
}

export FI_UNIVERSE_SIZE="${FI_UNIVERSE_SIZE:-$nranks}"
export GLIBC_TUNABLES="${GLIBC_TUNABLES:-glibc.malloc.tcache_count=0}"
echo "# soak: $nranks ranks, $prov, ${dur} s of fault_prog mixed (seed $seed), warm-up ${warm} s, FI_UNIVERSE_SIZE=$FI_UNIVERSE_SIZE"
free_port
FI_PROVIDER="$(fab "$prov")" fault_launch "$logs" "$nranks" "127.0.0.1:$port" \
	"$PROG" mixed -d "$dur" -r "$seed"
fault_wait_ready 2 60 || true
t0=$(fault_now)
fault_wait $((t0 + (dur + 120) * 1000000)) $(seq 0 $((nranks - 1))) || true

failed=0
printf '%-5s %-8s %12s %12s %8s %10s %10s %8s %8s  %s\n' rank outcome \
	"rss@${warm}s" "rss_last" growth "heap@${warm}s" heap_last \
	"fds@${warm}s" fds_last verdict
for ((i = 0; i < nranks; i++)); do
	out=$logs/rank$i.out
	class=$(fault_classify "$i" clean x)
	read -r r0 d0 h0 <<<"$(sample "$out" "$warm")" || true
	read -r r1 d1 h1 <<<"$(sample "$out" last)" || true
	verdict=ok
	if [ "$class" != ok ]; then
		verdict="$(fault_describe "$i")"
	elif [ -z "${r0:-}" ] || [ -z "${r1:-}" ]; then
		verdict="no stats after ${warm} s"
	elif [ "$r1" -gt $((r0 * 11 / 10 + 16384)) ]; then
		verdict="resident set grew more than 10% + 16 MiB"
	elif [ "$h1" -gt $((h0 + 1024)) ]; then
		verdict="heap in use grew more than 1 MiB"
	elif [ "$d1" -gt "$d0" ]; then
		verdict="descriptors grew"
	fi
	[ "$verdict" = ok ] || failed=1
	printf '%-5s %-8s %12s %12s %8s %10s %10s %8s %8s  %s\n' "$i" "$class" \
		"${r0:--}" "${r1:--}" \
		"$([ -n "${r0:-}" ] && [ -n "${r1:-}" ] && echo $((r1 - r0)) || echo -)" \
		"${h0:--}" "${h1:--}" "${d0:--}" "${d1:--}" "$verdict"
	r0='' r1='' d0='' d1='' h0='' h1=''
done
iters=$(awk '$1 == "stats" { for (i = 2; i <= NF; i++) if ($i ~ /^iter=/) n = substr($i, 6) }
	END { print n + 0 }' "$logs/rank0.out")
echo "# rank 0 ran $iters operations; resident sets and heaps in KiB"
if [ "$failed" = 1 ]; then
	echo "# FAILED"
	exit 1
fi
echo "# PASSED"
exit 0
