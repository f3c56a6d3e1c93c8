#!/bin/sh
# Runs libFuzzer harnesses for a short time each, for CI and by hand.
#
#   smoke.sh [-t SECONDS] [-j JOBS] NAME...
#
# Harness NAME is $top_builddir/tests/fuzz/fuzz_NAME. It first runs every
# file of $srcdir/tests/fuzz/corpus/NAME/ (the seeds, and the inputs that
# once crashed it, kept as regression tests), then fuzzes for SECONDS
# (default 25) from a scratch copy under tests/fuzz/smoke/NAME/ (or
# $FUZZ_OUT/NAME/), so the source tree is never written. Its dictionary
# is tests/fuzz/dict/NAME.dict when present. JOBS harnesses (default 2) run at once, under
# nice. Prints one line per harness (runs, libFuzzer's cov and ft,
# crashes) and, for a failure, the tail of its log and where its crashing
# input is. Exit status: 0 when no harness failed, 1 otherwise.
set -u

time=25
jobs=2
while getopts t:j: opt; do
	case $opt in
	t) time=$OPTARG ;;
	j) jobs=$OPTARG ;;
	*)
		echo "usage: $0 [-t SECONDS] [-j JOBS] NAME..." >&2
		exit 2
		;;
	esac
done
shift $((OPTIND - 1))
builddir=${top_builddir:-.}
src=${srcdir:-$(dirname "$0")/../..}
out=${FUZZ_OUT:-$builddir/tests/fuzz/smoke}

# run NAME: fuzz it; its log and status go to $out/NAME/.
run() {
	d=$out/$1
	rm -rf "$d"
	mkdir -p "$d/corpus"
	dict=
	[ -f "$src/tests/fuzz/dict/$1.dict" ] &&
		dict=-dict=$src/tests/fuzz/dict/$1.dict
	# shellcheck disable=SC2086 # $dict is one word or none
	nice "$builddir/tests/fuzz/fuzz_$1" -max_total_time="$time" \
		-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$d/" $dict "$d/corpus" \
		"$src/tests/fuzz/corpus/$1" >"$d/log" 2>&1
	echo $? >"$d/status"
}

# report NAME: its line; returns 1 when it failed.
report() {
	d=$out/$1
	st=$(cat "$d/status")
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$d/log")
	last=$(grep -E '^#[0-9]+' "$d/log" | tail -n 1)
	cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
	crashes=$(find "$d" -maxdepth 1 -type f \( -name 'crash-*' -o \
		-name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
	printf 'fuzz_%-10s runs %-10s cov %-6s ft %-6s crashes %s%s\n' "$1" \
		"${runs:-?}" "${cov:-?}" "${ft:-?}" "$crashes" \
		"$([ "$st" -eq 0 ] || echo "  FAILED (status $st)")"
	if [ "$st" -ne 0 ] || [ "$crashes" -ne 0 ]; then
		tail -n 40 "$d/log"
		echo "crashing inputs:"
		find "$d" -maxdepth 1 -type f \( -name 'crash-*' -o \
			-name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \)
		return 1
	fi
	return 0
}

if [ $# -eq 0 ]; then
	echo "usage: $0 [-t SECONDS] [-j JOBS] NAME..." >&2
	exit 2
fi
for n in "$@"; do
	if [ ! -x "$builddir/tests/fuzz/fuzz_$n" ] ||
		[ ! -d "$src/tests/fuzz/corpus/$n" ]; then
		echo "fuzz_$n: no harness or no corpus/$n (make fuzz)" >&2
		exit 1
	fi
done

failed=0
set -- "$@"
while [ $# -gt 0 ]; do
	batch=
	i=0
	while [ $# -gt 0 ] && [ "$i" -lt "$jobs" ]; do
		run "$1" &
		batch="$batch $1"
		i=$((i + 1))
		shift
	done
	wait
	for n in $batch; do
		report "$n" || failed=1
	done
done
exit $failed
