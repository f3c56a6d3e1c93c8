/*
 * sockets: the deprecated reference provider. Automatic progress, one
 * entry per IP interface, a working CQ wait fd, queue depth 256. It is
 * slow (milliseconds per message on these machines), so it is supported
 * for correctness, not speed.
 */
#include "provider.h"

static void sockets_derive_caps(const struct fi_info *info,
				struct psc_caps *c)
{
	psc_generic_derive_caps(info, c);
	c->wait_fd = true;
	c->ip_addressed = true;
	c->link = PSC_LINK_IP;
}

const struct psc_provider_ops psc_sockets_ops = {
	.size = sizeof(struct psc_provider_ops),
	.name = "sockets",
	.derive_caps = sockets_derive_caps,
};
