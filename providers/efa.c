/*
 * efa: the AWS Elastic Fabric Adapter. Its RDM entry ("efa", protocol
 * FI_PROTO_EFA) has 64 tag bits (FI_TAG_GENERIC), 4 bytes of CQ data,
 * an inject size near the MTU (or 0 on some entries), max_msg_size
 * UINT64_MAX, and keeps FI_MR_LOCAL only when offered. Entries that ask
 * for FI_MSG_PREFIX are refused (pscomm never offers it), as are the
 * DGRAM and efa-direct entries, which lack tagged RDM. It has no CQ wait
 * objects in 1.17, so waiters poll and back off. fork() after the device
 * is opened aborts unless FI_EFA_FORK_SAFE=1 was set before fi_getinfo,
 * which pscomm does; pinned pages need a high RLIMIT_MEMLOCK.
 */
#include "provider.h"

static const struct psc_tunable efa_tunables[] = {
	{"FI_EFA_FORK_SAFE", "1 before init if the program forks (pscomm "
			     "sets it)"},
	{"FI_EFA_USE_DEVICE_RDMA", "1: RDMA read for large messages "
				   "(p4d and later)"},
	{"FI_EFA_ENABLE_SHM_TRANSFER", "use shm between ranks on one node"},
	{"FI_EFA_TX_SIZE", "send queue depth"},
	{"FI_EFA_RX_SIZE", "receive queue depth"},
	{"FI_EFA_MR_CACHE_ENABLE", "the provider's own registration cache"},
	{NULL, "entries with FI_MSG_PREFIX are refused"},
	{NULL, NULL},
};

static void efa_derive_caps(const struct fi_info *info, struct psc_caps *c)
{
	psc_generic_derive_caps(info, c);
	c->link = PSC_LINK_EFA;
	c->needs_memlock = true;
	c->fork_unsafe = true;
}

const struct psc_provider_ops psc_efa_ops = {
	.size = sizeof(struct psc_provider_ops),
	.name = "efa",
	.derive_caps = efa_derive_caps,
	.tunables = efa_tunables,
	.fork_env = "FI_EFA_FORK_SAFE",
	.missing_hint = "no EFA device (AWS instances with EFA enabled; "
			"check `fi_info -p efa` and the efa kernel module)",
};
