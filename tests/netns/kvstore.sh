#!/bin/bash
# tests/netns/kvstore.sh: the kvstore example (a parameter server on the
# ps-lite van) across "hosts", one network namespace per node: the
# scheduler in the first, then 2 servers, then 2 workers, each node
# advertising its own eth0 address through DMLC_NODE_HOST, on the tcp
# provider. Every worker checks every pulled value against the exact sum.
# Needs root; exit 77 (skip) otherwise.
#
#	sudo tests/netns/kvstore.sh		# from the build directory

# Automake may run *.sh through $(SHELL): make sure this is bash.
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
KV=$(cd "$top_builddir" && pwd)/examples/kvstore
SERVERS=2
WORKERS=2
TMO=${NETNS_TIMEOUT:-120}
export FI_PROVIDER=${FI_PROVIDER:-tcp}

netns_require
if [ ! -x "$KV" ]; then
	echo "SKIP: $KV not built"
	exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/psc-netns-kv.XXXXXX") || exit 99
netns_exit_hook() { rm -rf "$tmp"; }
trap 'netns_exit_hook' EXIT
if ! netns_setup $((1 + SERVERS + WORKERS)); then
	echo "not ok - setup: $((1 + SERVERS + WORKERS)) namespaces"
	exit 1
fi

# Node i of the job runs in namespace i (PS_COMM_RANK from lib.sh).
read -r -d '' NODE <<'EOS'
set -- $T_IPS
i=$PS_COMM_RANK
shift "$i"
export DMLC_NODE_HOST=$1
if [ "$i" -eq 0 ]; then
	export DMLC_ROLE=scheduler
elif [ "$i" -le "$DMLC_NUM_SERVER" ]; then
	export DMLC_ROLE=server
else
	export DMLC_ROLE=worker
fi
exec "$T_KV" -k 8 -s 1048576 -i 3
EOS

export T_IPS="${NETNS_IP4[*]}" T_KV=$KV DMLC_PS_ROOT_URI=${NETNS_IP4[0]} \
	DMLC_PS_ROOT_PORT=${NETNS_PORT:-29600} DMLC_NUM_SERVER=$SERVERS \
	DMLC_NUM_WORKER=$WORKERS
netns_run_ranks "$TMO" sh -c "$NODE" >"$tmp/log" 2>&1
rc=$?
sed 's/^/#   /' "$tmp/log"
good=$(grep -c ", 0 wrong values" "$tmp/log")
if [ "$rc" = 0 ] && [ "$good" -eq "$WORKERS" ]; then
	echo "ok - kvstore 1+$SERVERS+$WORKERS across namespaces on $FI_PROVIDER"
	exit 0
fi
echo "not ok - kvstore across namespaces (status $rc, $good of $WORKERS workers correct)"
exit 1
