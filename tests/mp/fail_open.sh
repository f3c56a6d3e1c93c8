#!/bin/sh
# fail_open.sh PROG [ARGS...]: run one rank of a ps_comm_run job (which
# sets PS_COMM_RANK) whose endpoints of the providers PSC_TEST_FAIL_PROV
# (full names, comma-separated) fail to open when its rank is among
# PSC_TEST_FAIL_RANKS (blank-separated): PS_COMM_TEST_FAIL_OPEN for that
# rank only. Then through node_id.sh, so PSC_TEST_PPN or
# PSC_TEST_NODE_MAP lays the ranks out on nodes.
: "${PS_COMM_RANK:?PS_COMM_RANK is not set (run under ps_comm_run)}"
unset PS_COMM_TEST_FAIL_OPEN
for r in ${PSC_TEST_FAIL_RANKS:-}; do
	if [ "$r" = "$PS_COMM_RANK" ]; then
		PS_COMM_TEST_FAIL_OPEN=$PSC_TEST_FAIL_PROV
		export PS_COMM_TEST_FAIL_OPEN
	fi
done
exec "$(dirname "$0")/node_id.sh" "$@"
