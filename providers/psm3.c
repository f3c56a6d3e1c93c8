/*
 * psm3: the PSM3 library inside libfabric, for Intel Ethernet NICs (and
 * verbs devices) with RDMA or UDP/TCP transports. Its attributes mirror
 * psm2's: tag60 or tag64 layout from mem_tag_format, FI_CONTEXT
 * required, max_msg_size just under 4 GiB, inject 64 bytes, no local
 * registration (FI_MR_SCALABLE), manual progress. All ranks need one job
 * UUID (FI_PSM3_UUID), derived by pscomm when unset. With RDMA enabled it
 * pins memory, so RLIMIT_MEMLOCK matters.
 */
#include "provider.h"

static const struct psc_tunable psm3_tunables[] = {
	{"FI_PSM3_UUID", "job UUID shared by all ranks; pscomm derives one "
			 "from the job when unset"},
	{"FI_PSM3_INJECT_SIZE", "inject size (default 64)"},
	{"FI_PSM3_NAME_SERVER", "0 under launchers; pscomm has its own "
				"rendezvous"},
	{"PSM3_NIC", "which NIC (name or index) on multi-NIC nodes"},
	{"PSM3_RDMA", "0: UD/UDP only; 1-3: RDMA modes that pin memory"},
	{"PSM3_IDENTIFY", "1: print the PSM3 build and NIC in use"},
	{NULL, NULL},
};

static void psm3_derive_caps(const struct fi_info *info, struct psc_caps *c)
{
	psc_generic_derive_caps(info, c);
	if (c->link == PSC_LINK_UNKNOWN)
		c->link = PSC_LINK_OPA;
	c->needs_uuid = true;
	c->needs_memlock = true;
}

const struct psc_provider_ops psc_psm3_ops = {
	.size = sizeof(struct psc_provider_ops),
	.name = "psm3",
	.derive_caps = psm3_derive_caps,
	.tunables = psm3_tunables,
	.uuid_env = "FI_PSM3_UUID",
	.missing_hint = "no NIC that PSM3 drives (Intel Ethernet with "
			"irdma/rv, or a verbs device)",
};
