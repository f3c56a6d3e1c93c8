#!/bin/bash
# tests/netns/nodes.sh: node-aware communicators across "hosts". Each
# network namespace plays a node with several ranks; FI_PROVIDER is left
# unset, so pscomm must choose shm inside a namespace and net (libfabric's
# native TCP provider) between them by itself, and say so. Layouts: 2 x 2,
# 3 x 2 and the uneven 3+1.
# Point-to-point (wildcards, ordering, truncation over both fabrics at
# once) and every collective run in each, checked bit for bit by their
# suites. Needs root; exit 77 (skip) otherwise.
#
#	sudo tests/netns/nodes.sh		# from the build directory

[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"

here=$(cd "$(dirname "$0")" && pwd)
if [ -f "$here/lib.sh" ]; then
	. "$here/lib.sh"
elif [ -n "${srcdir:-}" ] && [ -f "$srcdir/tests/netns/lib.sh" ]; then
	. "$srcdir/tests/netns/lib.sh"
else
	echo "not ok - cannot find tests/netns/lib.sh"
	exit 99
fi

top_builddir=${top_builddir:-.}
P2P_SUITE=$top_builddir/tests/mp/p2p_suite
COLL_SUITE=$top_builddir/tests/mp/coll_suite
TMO=${NETNS_TIMEOUT:-240}
failed=0

ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; failed=$((failed + 1)); }

netns_require
for p in "$P2P_SUITE" "$COLL_SUITE"; do
	if [ ! -x "$p" ]; then
		echo "SKIP: $p not built (make check builds it)"
		exit 77
	fi
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/psc-nodes.XXXXXX") || exit 99
netns_exit_hook() { rm -rf "$tmp"; }
trap 'netns_exit_hook' EXIT
netns_setup 3 || { not_ok "setup: 3 namespaces"; exit 1; }
export NETNS_AUTO_FABRIC=1 NETNS_FAIL_FAST=1
unset FI_PROVIDER

# check NAME WANT_FABRICS CMD...: run CMD on every rank of NETNS_LAYOUT;
# it must succeed, and unless WANT_FABRICS is -, rank 0's header must
# name those fabrics.
check() {
	local name=$1 want=$2 log=$tmp/run.log
	shift 2
	netns_run_ranks "$TMO" "$@" >"$log" 2>&1
	local rc=$?
	if [ "$rc" = 0 ] && { [ "$want" = - ] ||
		grep -q "^\[0\] # .* on $want, " "$log"; }; then
		ok "$name"
	else
		not_ok "$name (status $rc)"
		grep -m1 '^\[0\] # ' "$log" | sed 's/^/#   /'
		grep -v '^\[[0-9]*\] ok' "$log" | tail -15 | sed 's/^/#   /'
	fi
}

# libfabric's native TCP provider is called net up to 1.17; from 1.18 it
# is the tcp provider's own RDM endpoint, named tcp.
native=net
"$top_builddir/tools/ps_comm_info" 2>/dev/null |
	grep -q '^  net  *missing: libfabric 1.18' && native=tcp

for layout in "2 2" "2 2 2" "3 1"; do
	export NETNS_LAYOUT=$layout
	what="layout ${layout// /+}"
	check "p2p, $what: shm inside nodes, $native between" \
		"shm+$native" "$P2P_SUITE" --quick
	check "collectives, $what" - "$COLL_SUITE" --quick
done
# One namespace: shm for everything, unasked.
export NETNS_LAYOUT=3
check "p2p, 3 ranks in one namespace: shm only" 'shm' "$P2P_SUITE" --quick
# One rank per namespace: the network for everything.
export NETNS_LAYOUT="1 1 1"
check "p2p, one rank per namespace: $native only" "$native" \
	"$P2P_SUITE" --quick
[ "$failed" = 0 ] || exit 1
exit 0
