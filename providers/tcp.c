/*
 * tcp;ofi_rxm: the tcp provider under the rxm utility layer. (From
 * libfabric 1.18 the tcp provider also offers native RDM entries, named
 * plain "tcp": that is 1.17's net, profiled as net is, in net.c.) One entry per
 * IP interface and address family. Progress is manual; the CQ wait fd
 * works (fi_trywait + poll). The first send to a peer returns EAGAIN while
 * rxm connects. Tunables: FI_TCP_IFACE on multi-NIC hosts, and the rxm
 * eager limit (FI_OFI_RXM_BUFFER_SIZE / FI_OFI_RXM_EAGER_LIMIT), which must
 * be identical on every rank or rxm rejects the connection; pscomm checks
 * that at bootstrap.
 *
 * A receive shorter than the message makes rxm over tcp report truncation
 * without the data that fits and then drop the connection, so pscomm
 * matches first messages in software here and posts every chunk receive
 * at its full length (lib/p2p/swmatch.c).
 */
#include <string.h>

#include "provider.h"

#define TCP_CHUNK ((size_t)512 << 10)

static const struct psc_tunable tcp_tunables[] = {
	{"FI_TCP_IFACE", "interface the tcp provider uses (default: all); "
			 "pscomm follows PS_COMM_IFNAME unless this is set"},
	{"FI_TCP_PORT_LOW_RANGE", "lowest port the provider listens on"},
	{"FI_TCP_PORT_HIGH_RANGE", "highest port the provider listens on"},
	{"FI_OFI_RXM_BUFFER_SIZE", "rxm eager limit and buffer size; must "
				   "be the same on every rank; pscomm sets "
				   "8448 unless set"},
	{"FI_UNIVERSE_SIZE", "peers rxm sizes its completion queue for; "
			     "pscomm sets it to the job size up to "
			     "libfabric's default of 1024 unless set"},
	{NULL, NULL},
};

static void tcp_derive_caps(const struct fi_info *info, struct psc_caps *c)
{
	/* libfabric 1.18 and later: net's code, as the native "tcp" RDM. */
	if (!strstr(info->fabric_attr->prov_name, "ofi_rxm")) {
		psc_xnet_derive_caps(info, c);
		return;
	}
	psc_generic_derive_caps(info, c);
	c->wait_fd = true;
	c->ip_addressed = true;
	c->sw_match = true;
	c->sw_tag_in_data = c->cq_data_size >= 8;
	c->link = PSC_LINK_IP;
	c->same_eager_limit = true;
	/*
	 * Large messages go in chunks of 512 KiB, each its own rxm
	 * rendezvous. Fewer chunks pay fewer protocol rounds; a chunk
	 * under way overlaps the next one's. Pingpong sweeps, 5 alternating
	 * rounds of medians (bench/results/2026-12-03-tcp-chunks): at 1 MiB,
	 * 512 KiB chunks 165 us against 287 for eighths of 128 KiB and
	 * 500-600 for one message (rxm's single 1 MiB read stalls under the
	 * kernel's BBR congestion control; with cubic it took 168); at 8 and
	 * 64 MiB 512 KiB chunks beat 1 MiB ones too.
	 */
	psc_caps_chunk_max(c, TCP_CHUNK);
}

/* rxm shares one receive context among tcp connections by default. */
static void tcp_explain_open_error(const struct fi_info *info,
				   const char *step, int err, size_t universe,
				   char *buf, size_t len)
{
	psc_rxm_explain_open_error(info, true, step, err, universe, buf, len);
}

const struct psc_provider_ops psc_tcp_ops = {
	.size = sizeof(struct psc_provider_ops),
	.name = "tcp",
	.derive_caps = tcp_derive_caps,
	.tunables = tcp_tunables,
	.agree_env = psc_rxm_agree_env,
	.iface_env = "FI_TCP_IFACE",
	.explain_open_error = tcp_explain_open_error,
	.env_default = psc_rxm_env_default,
};
