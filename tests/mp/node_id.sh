#!/bin/sh
# node_id.sh PROG [ARGS...]: run PROG as if this rank were on the node
# that PSC_TEST_NODE_MAP names at position PS_COMM_RANK (comma-separated
# labels, "a,a,b,b": ranks 0 and 1 on one node, 2 and 3 on another), by
# setting PS_COMM_NODE_ID; so one machine plays several nodes. For
# ps_comm_run, which sets PS_COMM_RANK.
: "${PS_COMM_RANK:?PS_COMM_RANK is not set (run under ps_comm_run)}"
: "${PSC_TEST_NODE_MAP:?PSC_TEST_NODE_MAP is not set}"
id=$(printf '%s\n' "$PSC_TEST_NODE_MAP" | cut -d, -f$((PS_COMM_RANK + 1)))
if [ -z "$id" ]; then
	echo "node_id.sh: no node for rank $PS_COMM_RANK in $PSC_TEST_NODE_MAP" >&2
	exit 1
fi
PS_COMM_NODE_ID=test-node-$id
export PS_COMM_NODE_ID
exec "$@"
