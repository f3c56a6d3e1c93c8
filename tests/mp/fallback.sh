#!/bin/sh
# Provider fallback (doc/fabrics.md, "When a provider fails to open"):
# with FI_PROVIDER unset, a network provider that fails to open on some
# ranks (PS_COMM_TEST_FAIL_OPEN, set per rank by fail_open.sh) makes
# every rank move on to the next provider in pscomm's order together,
# with one warning from rank 0, and the job works; a provider that
# FI_PROVIDER names fails ps_comm_init with PS_COMM_ERR_FABRIC (it
# failed while opening; PS_COMM_ERR_PROVIDER is "none usable"), and the
# error names it. Ranks play separate nodes (node_id.sh), so the
# network provider carries their traffic.
. "${srcdir:-.}/tests/mp/common.sh"
PROBE="$top_builddir/tests/mp/provider_probe"
WRAP="${srcdir:-.}/tests/mp/fail_open.sh"
need_programs "$PROBE" "$RUN"
clean_rank_env
unset FI_PROVIDER PS_COMM_NODE_ID PS_COMM_INTRA PS_COMM_TEST_FAIL_OPEN \
	PSC_TEST_NODE_MAP
if ! have_provider net || ! have_provider tcp; then
	echo "skip - needs the net and tcp providers"
	exit 77
fi
# pscomm's order between nodes puts the native RDM over TCP first (net;
# from libfabric 1.18, "tcp") and tcp;ofi_rxm next.
FIRST=$(fab net)
NEXT="tcp;ofi_rxm"
# Failing FIRST alone: its exact name, since from 1.18 "tcp" as a core
# name would also fail tcp;ofi_rxm.
FAIL_FIRST="=$FIRST"
ERR_FABRIC=$(sed -n 's/.*PS_COMM_ERR_FABRIC = \(-[0-9]*\),.*/\1/p' \
	"${srcdir:-.}/include/ps_comm.h")
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# launch N PPN FAILRANKS FAILPROV [RUNOPTS...] -- PROBEARGS...: run the
# probe on N ranks, PPN per node, with FAILPROV failing on FAILRANKS.
# Status in $rc, stdout in $tmp/out, stderr in $tmp/err, time in $secs.
launch() {
	n=$1 ppn=$2 franks=$3 fprov=$4
	shift 4
	opts=
	while [ "$1" != -- ]; do
		opts="$opts $1"
		shift
	done
	shift
	t0=$(date +%s)
	# shellcheck disable=SC2086 # $opts is a list of words
	PSC_TEST_PPN=$ppn PSC_TEST_FAIL_RANKS=$franks \
		PSC_TEST_FAIL_PROV=$fprov "$RUN" -n "$n" --timeout 120 $opts \
		-- "$WRAP" "$PROBE" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	secs=$(($(date +%s) - t0))
}

# providers_are P COUNT: the last run printed COUNT provider lines, all P.
providers_are() {
	[ "$(grep -c ' provider ' "$tmp/out")" -eq "$2" ] &&
		[ "$(grep ' provider ' "$tmp/out" | grep -vc " provider $1\$")" \
			-eq 0 ]
}

# rank0_warned: rank 0 logged at warn level (the log's own prefix).
rank0_warned() { grep -q 'rank 0 warn: ' "$tmp/err"; }
rank0_quiet() { ! rank0_warned; }

# none_but P: no rank of the last run printed a provider other than P.
none_but() { ! grep ' provider ' "$tmp/out" | grep -qv " provider $1\$"; }

show() { sed 's/^/#   /' "$tmp/out" "$tmp/err" | tail -20; }

# The control: nothing fails, every rank stays on the first provider.
launch 3 1 "" "" --
check "no failure: exit 0" [ "$rc" -eq 0 ] || show
check "no failure: every rank on $FIRST" providers_are "$FIRST" 3 || show
check "no failure: no warning from rank 0" rank0_quiet || show

# One rank's first provider fails: all move on together.
for r in 1 0 2; do
	launch 3 1 "$r" "$FAIL_FIRST" --
	check "$FIRST fails on rank $r: exit 0" [ "$rc" -eq 0 ] || show
	check "$FIRST fails on rank $r: every rank on $NEXT" \
		providers_are "$NEXT" 3 || show
	check "$FIRST fails on rank $r: rank 0 warns" rank0_warned || show
done

# Every rank's fails, and a second world in the same process (which may
# share the endpoints of the first) agrees again.
launch 4 1 "0 1 2 3" "$FAIL_FIRST" -- --twice
check "$FIRST fails everywhere, two worlds: exit 0" [ "$rc" -eq 0 ] || show
check "$FIRST fails everywhere, two worlds: all on $NEXT" \
	providers_are "$NEXT" 8 || show

# Rank 2 runs out of network providers while the others have one: the
# job cannot work across nodes and every rank fails, without waiting
# for the bootstrap's timeout.
all=$(present_providers | sed 's/;.*//' | sort -u |
	grep -v -e '^shm$' -e '^sm2$' | tr '\n' ',')
launch 3 1 2 "$all" --
check "no network provider on rank 2: the job fails" [ "$rc" -ne 0 ] || show
check "no network provider on rank 2: every rank fails at init" \
	[ "$(grep -c ' init error ' "$tmp/out")" -eq 3 ] || show
check "no network provider on rank 2: within 60 s" [ "$secs" -lt 60 ] || show

# Named: FI_PROVIDER=net and net fails on rank 1: no fallback.
launch 3 1 1 "$FAIL_FIRST" --provider "$FIRST" --
check "FI_PROVIDER=$FIRST, it fails on rank 1: the job fails" \
	[ "$rc" -ne 0 ] || show
check "FI_PROVIDER=$FIRST, it fails on rank 1: PS_COMM_ERR_FABRIC" \
	grep -q "^rank 1 init error $ERR_FABRIC\$" "$tmp/out" || show
check "FI_PROVIDER=$FIRST, it fails on rank 1: the error names it" \
	grep -q "rank 1 error: .*provider $FIRST " "$tmp/err" || show
check "FI_PROVIDER=$FIRST: no rank uses another provider" \
	none_but "$FIRST" || show

# ps_comm_info --open tries each usable provider and reports the one
# that fails, and the choice after the fallback.
INFO="$top_builddir/tools/ps_comm_info"
# opened P: the open line of provider P's entry in the last report.
opened() {
	awk -v p="$1" '$1 == p && $2 ~ /^(yes|no)/ { on = 1; next }
		on && /^      open: / { print; exit }
		/^  [^ ]/ { on = 0 }' "$tmp/out"
}
# open_says P TEXT: that line holds TEXT.
open_says() { opened "$1" | grep -qF -- "$2"; }
if [ -x "$INFO" ]; then
	"$INFO" --open=2 >"$tmp/out" 2>"$tmp/err"
	check "--open: exit 0" [ $? -eq 0 ] || show
	check "--open: $FIRST opens" open_says "$FIRST" "open: ok" || show
	check "--open: sized for the RANKS given" \
		grep -q 'FI_UNIVERSE_SIZE=2)' "$tmp/out" || show
	PS_COMM_TEST_FAIL_OPEN=$FAIL_FIRST "$INFO" --open >"$tmp/out" 2>"$tmp/err"
	check "--open, $FIRST fails: exit 0" [ $? -eq 0 ] || show
	check "--open, $FIRST fails: reported with the step" \
		open_says "$FIRST" "open: FAILED: fi_enable on provider $FIRST" ||
		show
	check "--open, $FIRST fails: the choice falls back to $NEXT" \
		grep -q "^pscomm would use: $NEXT," "$tmp/out" || show
	FI_PROVIDER=$FIRST PS_COMM_TEST_FAIL_OPEN=$FAIL_FIRST "$INFO" --open \
		>"$tmp/out" 2>"$tmp/err"
	check "--open, FI_PROVIDER=$FIRST fails: no choice" \
		grep -q "^pscomm would use: nothing" "$tmp/out" || show
	"$INFO" --open --replay "${srcdir:-.}/tests/data/fi_info/efa.txt" \
		>"$tmp/out" 2>"$tmp/err"
	check "--open with --replay: usage error" [ $? -eq 2 ] || show
fi

finish
