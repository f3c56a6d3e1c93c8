/*
 * psm2: Intel/Cornelis Omni-Path HFIs through libpsm2. Tags come from
 * PSM2's tag-matching queue: in the tag60 layout the top 4 bits are
 * reserved (mem_tag_format 0x0AAAAAAAAAAAAAAA) and 4 bytes of CQ data
 * remain; in tag64 all 64 bits are usable and there is no CQ data, so
 * pscomm sizes its tag fields and CQ data use from the entry. FI_CONTEXT
 * is required (a fi_context2 lives in every request). max_msg_size is
 * just under 4 GiB, so longer messages are split. Nothing is registered
 * locally (FI_MR_SCALABLE). All ranks of a job must share a job UUID
 * (FI_PSM2_UUID); pscomm derives one from the job's identity when it is
 * unset, because the default UUID makes concurrent jobs collide.
 */
#include "provider.h"

static const struct psc_tunable psm2_tunables[] = {
	{"FI_PSM2_UUID", "job UUID shared by all ranks; pscomm derives one "
			 "from the job when unset"},
	{"FI_PSM2_TAG_LAYOUT", "tag60 (4 bytes CQ data), tag64 or auto"},
	{"FI_PSM2_INJECT_SIZE", "inject size (default 64)"},
	{"FI_PSM2_LOCK_LEVEL", "internal locking (default 2)"},
	{"FI_PSM2_NAME_SERVER", "0 under launchers; pscomm has its own "
				"rendezvous"},
	{"FI_PSM2_PROG_AFFINITY", "CPU of the progress thread"},
	{"HFI_UNIT", "PSM2: which HFI to use on multi-HFI nodes"},
	{NULL, "fork() after init is unsupported"},
	{NULL, NULL},
};

static void psm2_derive_caps(const struct fi_info *info, struct psc_caps *c)
{
	psc_generic_derive_caps(info, c);
	c->link = PSC_LINK_OPA;
	c->needs_uuid = true;
}

const struct psc_provider_ops psc_psm2_ops = {
	.size = sizeof(struct psc_provider_ops),
	.name = "psm2",
	.derive_caps = psm2_derive_caps,
	.tunables = psm2_tunables,
	.uuid_env = "FI_PSM2_UUID",
	.missing_hint = "no Omni-Path HFI (hfi1 driver and libpsm2)",
};
