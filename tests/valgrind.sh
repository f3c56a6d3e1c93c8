#!/bin/sh
# valgrind memcheck on the README's examples over the tcp provider:
# pingpong on 2 and 4 ranks, allreduce -c on 2 and 4 ranks, each rank
# under valgrind (through libtool, so the real binary is checked), with
# tests/valgrind.supp. A rank with any memory error, or with memory
# definitely, indirectly or possibly lost, exits 99, which fails its run;
# each rank must also leave a log that says "ERROR SUMMARY: 0 errors".
# Run by `make valgrind` (about a minute on two idle cores); not part of
# make check. VALGRIND_FLAGS adds options (e.g. --track-origins=yes).
# Exit status: 0 clean, 1 errors, 77 when valgrind is not installed.
# shellcheck disable=SC2086 # $VG and $VALGRIND_FLAGS are lists of words

builddir=${top_builddir:-.}
src=${srcdir:-$(dirname "$0")/..}
RUN=$builddir/tools/ps_comm_run
if ! command -v valgrind >/dev/null 2>&1; then
	echo "skip - valgrind is not installed (tools/install-deps)"
	exit 77
fi
for p in "$RUN" "$builddir/examples/pingpong" "$builddir/examples/allreduce"; do
	if [ ! -x "$p" ]; then
		echo "not ok - $p not built"
		exit 1
	fi
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/valgrind.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
VG="valgrind --error-exitcode=99 --leak-check=full
	--show-leak-kinds=definite,indirect,possible
	--errors-for-leak-kinds=definite,indirect,possible --num-callers=30
	--suppressions=$src/tests/valgrind.supp ${VALGRIND_FLAGS-}"
failed=0

# vg NAME N PROG ARGS...: PROG on N ranks over tcp, every rank under
# valgrind.
vg() {
	name=$1 n=$2
	shift 2
	mkdir "$tmp/$name"
	start=$(date +%s)
	"$RUN" -n "$n" --provider tcp --timeout 600 -- \
		"$builddir/libtool" --mode=execute $VG \
		--log-file="$tmp/$name/rank.%p" "$@" >"$tmp/$name/out" 2>&1
	rc=$?
	logs=$(find "$tmp/$name" -name 'rank.*' | wc -l)
	clean=$(grep -l 'ERROR SUMMARY: 0 errors' "$tmp/$name"/rank.* \
		2>/dev/null | wc -l)
	secs=$(($(date +%s) - start))
	if [ "$rc" -eq 0 ] && [ "$logs" -eq "$n" ] && [ "$clean" -eq "$n" ]; then
		echo "ok - $name: $n ranks clean (${secs} s)"
	else
		echo "not ok - $name: status $rc, $clean of $n ranks clean," \
			"$logs logs"
		tail -n 5 "$tmp/$name/out"
		for f in "$tmp/$name"/rank.*; do
			grep -q 'ERROR SUMMARY: 0 errors' "$f" || cat "$f"
		done
		failed=1
	fi
}

vg pingpong-2 2 "$builddir/examples/pingpong" -M 65536 -i 20 -w 2
vg pingpong-4 4 "$builddir/examples/pingpong" -M 4096 -i 10 -w 2
vg allreduce-2 2 "$builddir/examples/allreduce" -m 4 -M 262144 -i 2 -c
vg allreduce-4 4 "$builddir/examples/allreduce" -m 4 -M 1048576 -i 2 -c
exit $failed
