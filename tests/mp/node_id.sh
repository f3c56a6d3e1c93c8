#!/bin/sh
# node_id.sh PROG [ARGS...]: run one rank of a ps_comm_run job as if it
# were on node RANK / PSC_TEST_PPN (by PS_COMM_NODE_ID), so that one host
# plays several nodes: node-local ranks use shm, the others the network.
# PSC_TEST_PPN=3 with 4 ranks gives the uneven layout 3+1.
: "${PS_COMM_RANK:?node_id.sh runs under ps_comm_run, which sets PS_COMM_RANK}"
PS_COMM_NODE_ID=node$((PS_COMM_RANK / ${PSC_TEST_PPN:-1}))
export PS_COMM_NODE_ID
exec "$@"
