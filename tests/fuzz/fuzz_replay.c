/*
 * The fi_info replay parser (lib/replay/): recorded `fi_info -v` text,
 * read by `ps_comm_info --replay FILE` and the unit tests. The input is
 * such a text. Whatever list the parser builds must survive what the
 * library does with real entries: duplication and filtering by
 * psc_replay_getinfo (fi_dupinfo copies src_addrlen bytes of src_addr),
 * each provider profile's accept and derive_caps, and fi_freeinfo.
 */
#include <errno.h>

#include <rdma/fabric.h>

#include "fuzz.h"
#include "provider.h"
#include "replay/replay.h"

/* Run the entries through what pscomm does with fi_getinfo's answer. */
static void use_entries(const struct fi_info *list)
{
	for (const struct fi_info *e = list; e; e = e->next) {
		const struct psc_provider_ops *ops = psc_provider_lookup(
			e->fabric_attr ? e->fabric_attr->prov_name : NULL);
		struct psc_caps caps;
		char why[256];

		memset(&caps, 0, sizeof(caps));
		if (ops->accept(e, why, sizeof(why)))
			ops->derive_caps(e, &caps);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = psc_fuzz_str(data, size);
	struct fi_info *list = NULL, *out = NULL, *hints;
	char err[256];
	int rc = psc_replay_parse(text, &list, err, sizeof(err));

	free(text);
	if (rc) {
		PSC_FUZZ_ASSERT(rc < 0 && !list && err[0]);
		return 0;
	}
	PSC_FUZZ_ASSERT(list);
	psc_replay_use(list);
	/* Every entry, duplicated. */
	if (psc_replay_getinfo(FI_VERSION(1, 18), NULL, NULL, 0, NULL, &out) ==
	    0) {
		use_entries(out);
		psc_replay_free(out);
	}
	/* The hints pscomm asks with: tagged RDM, its mr_mode duties. */
	hints = fi_allocinfo();
	if (!hints)
		abort();
	hints->caps = FI_TAGGED | FI_MSG;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->tx_attr->msg_order = FI_ORDER_SAS;
	hints->rx_attr->msg_order = FI_ORDER_SAS;
	out = NULL;
	if (psc_replay_getinfo(FI_VERSION(1, 18), NULL, NULL, 0, hints,
			       &out) == 0)
		use_entries(out);
	psc_replay_free(out);
	fi_freeinfo(hints);
	psc_replay_use(NULL);
	psc_replay_free(list);
	return 0;
}
