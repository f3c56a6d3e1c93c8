/*
 * udp;ofi_rxd: reliable datagrams over UDP. Progress is manual. Its CQ
 * has no wait fd (FI_GETWAIT is ENOSYS) but fi_cq_sread honours its
 * timeout. It truncates an oversized message silently and reports
 * success, so pscomm sends each message's length as remote CQ data and
 * compares it on receipt; lengths must then fit the CQ data, so the
 * largest single operation is capped at 4 GiB - 1 and longer messages are
 * split.
 */
#include <stdint.h>

#include "provider.h"

static void udp_derive_caps(const struct fi_info *info, struct psc_caps *c)
{
	psc_generic_derive_caps(info, c);
	c->wait_sread = true;
	c->ip_addressed = true;
	c->link = PSC_LINK_IP;
	if (c->cq_data_size >= 4) {
		c->len_in_cq_data = true;
		if (c->max_msg_size > UINT32_MAX)
			c->max_msg_size = UINT32_MAX;
	}
}

const struct psc_provider_ops psc_udp_ops = {
	.size = sizeof(struct psc_provider_ops),
	.name = "udp",
	.derive_caps = udp_derive_caps,
};
