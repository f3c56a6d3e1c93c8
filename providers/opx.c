/*
 * opx: Omni-Path Express, the native libfabric provider for Omni-Path
 * HFIs. All 64 tag bits are usable; cq_data_size is 4; inject is 16
 * bytes; FI_CONTEXT2 is required and FI_ASYNC_IOV may be listed, which
 * pscomm honours by never sending from an iov array that dies with the
 * call (caps.async_iov turns software matching off). opx advertises no
 * send-after-send ordering, so pscomm asks for FI_ORDER_SAS first and
 * falls back to a query without it (caps.ordered_sas is then false); the
 * HFI delivers one peer's messages in order in practice. Ranks share a
 * job UUID (FI_OPX_UUID), derived by pscomm when unset.
 */
#include "provider.h"

static const struct psc_tunable opx_tunables[] = {
	{"FI_OPX_UUID", "job UUID shared by all ranks; pscomm derives one "
			"from the job when unset"},
	{"FI_OPX_HFI_SELECT", "which HFI to use (by NUMA locality or index)"},
	{"FI_OPX_RELIABILITY_SERVICE_USEC_MAX", "reliability service "
						"interval"},
	{"FI_OPX_DELIVERY_COMPLETION_THRESHOLD", "size from which sends "
						 "complete on delivery"},
	{"FI_OPX_EXPECTED_RECEIVE_ENABLE", "1: expected receive (TID) for "
					   "large messages; pins memory"},
	{NULL, "no FI_ORDER_SAS advertised: pscomm retries without it"},
	{NULL, NULL},
};

static void opx_derive_caps(const struct fi_info *info, struct psc_caps *c)
{
	psc_generic_derive_caps(info, c);
	c->link = PSC_LINK_OPA;
	c->needs_uuid = true;
	c->needs_memlock = true;
}

const struct psc_provider_ops psc_opx_ops = {
	.size = sizeof(struct psc_provider_ops),
	.name = "opx",
	.derive_caps = opx_derive_caps,
	.tunables = opx_tunables,
	.uuid_env = "FI_OPX_UUID",
	/* opx advertises no FI_ORDER_SAS. */
	.order_optional = true,
	.missing_hint = "no Omni-Path HFI (hfi1 driver)",
};
