#!/bin/sh
# node_id.sh PROG [ARGS...]: run one rank of a ps_comm_run job (which sets
# PS_COMM_RANK) as if it were on another node, by PS_COMM_NODE_ID, so that
# one machine plays several nodes: node-local ranks use shm, the others
# the network. The node is
# - the label at position PS_COMM_RANK of PSC_TEST_NODE_MAP, comma-separated
#   ("a,a,b,b": ranks 0 and 1 on one node, 2 and 3 on another; "a,b,a,b"
#   places them round-robin), when it is set;
# - else RANK / PSC_TEST_PPN (PSC_TEST_PPN=3 with 4 ranks: 3+1).
: "${PS_COMM_RANK:?PS_COMM_RANK is not set (run under ps_comm_run)}"
if [ -n "${PSC_TEST_NODE_MAP:-}" ]; then
	id=$(printf '%s\n' "$PSC_TEST_NODE_MAP" | cut -d, -f$((PS_COMM_RANK + 1)))
	if [ -z "$id" ]; then
		echo "node_id.sh: no node for rank $PS_COMM_RANK in $PSC_TEST_NODE_MAP" >&2
		exit 1
	fi
else
	id=$((PS_COMM_RANK / ${PSC_TEST_PPN:-1}))
fi
PS_COMM_NODE_ID=test-node-$id
export PS_COMM_NODE_ID
exec "$@"
