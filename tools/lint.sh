#!/bin/sh
# Static analysis: cppcheck and clang-tidy over lib/, providers/ and
# tools/, with the checked-in configuration (.clang-tidy,
# tools/cppcheck.supp). Run by `make lint`, which passes the build's
# preprocessor flags; by hand:
#
#   tools/lint.sh -- CPPFLAGS...
#
# LINT_DEFER (environment) lists paths, space-separated, whose findings
# are shown as deferred and do not fail the run: code that is being
# rewritten elsewhere, to be fixed there. Set it empty to fail on them.
# LINT_TOOLS chooses "cppcheck clang-tidy" (the default) or one of them;
# LINT_FILES, a list of sources, narrows the run to them; LINT_JOBS runs
# that many analyses at once (default: the number of cores).
# Exit status: 0 when no finding outside LINT_DEFER, 1 otherwise.
set -u

jobs=${LINT_JOBS:-$(nproc 2>/dev/null || echo 2)}
[ "${1-}" = -- ] && shift
src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src" || exit 1
tools=${LINT_TOOLS-cppcheck clang-tidy}
defer=${LINT_DEFER-}
out=$(mktemp -d "${TMPDIR:-/tmp}/lint.XXXXXX") || exit 1
trap 'rm -rf "$out"' EXIT
files=${LINT_FILES:-$(find lib providers tools -name '*.c' | sort)}

for t in $tools; do
	if ! command -v "$t" >/dev/null 2>&1; then
		echo "lint: $t is not installed (tools/install-deps)" >&2
		exit 1
	fi
done

# Findings, one a line: "path:line:col: tool: message [check]".
: >"$out/findings"
case " $tools " in
*" cppcheck "*)
	# shellcheck disable=SC2086 # $files and "$@" are lists of words
	cppcheck -j "$jobs" --quiet --std=c11 --language=c \
		--enable=warning,style,performance,portability \
		--inline-suppr --suppressions-list=tools/cppcheck.supp \
		--template='{file}:{line}:{column}: cppcheck: {message} [{id}]' \
		-D__linux__ -D__x86_64__ "$@" $files 2>"$out/cppcheck" >/dev/null
	grep -E '^[^ ]+:[0-9]+:[0-9]+: cppcheck: ' "$out/cppcheck" \
		>>"$out/findings"
	;;
esac
case " $tools " in
*" clang-tidy "*)
	# One file per process, JOBS at once; diagnostics in project
	# headers come once per file that includes them, hence sort -u.
	# shellcheck disable=SC2086,SC2016 # $files is a list of words; the
	# single-quoted script is expanded by the sh that xargs starts
	printf '%s\n' $files | xargs -P "$jobs" -I{} sh -c \
		'f=$0 s=$1; shift; clang-tidy --quiet --header-filter="^$s/(lib|providers|include)/" "$f" -- "$@" 2>/dev/null' \
		{} "$src" "$@" >"$out/tidy"
	sed -n "s|^$src/||; s|^\([^ ]*:[0-9]*:[0-9]*\): warning: |\1: clang-tidy: |p; s|^\([^ ]*:[0-9]*:[0-9]*\): error: |\1: clang-tidy: error: |p" \
		"$out/tidy" | grep ': clang-tidy: ' >>"$out/findings"
	;;
esac

# Only the project's files: system headers are not ours to fix.
grep -v '^/' "$out/findings" | sort -u >"$out/sorted"
: >"$out/fail"
: >"$out/deferred"
while IFS= read -r line; do
	d=
	for p in $defer; do
		case $line in
		"$p"*) d=1 ;;
		esac
	done
	if [ -n "$d" ]; then
		echo "$line" >>"$out/deferred"
	else
		echo "$line" >>"$out/fail"
	fi
done <"$out/sorted"

nfail=$(wc -l <"$out/fail")
ndef=$(wc -l <"$out/deferred")
if [ "$ndef" -gt 0 ]; then
	echo "lint: $ndef deferred finding(s) (LINT_DEFER=\"$defer\"):"
	sed 's/^/  deferred: /' "$out/deferred"
fi
if [ "$nfail" -gt 0 ]; then
	echo "lint: $nfail finding(s):"
	cat "$out/fail"
	exit 1
fi
# shellcheck disable=SC2086 # $files is a list of words
echo "lint: clean ($tools; $(printf '%s\n' $files | wc -l) files)"
exit 0
