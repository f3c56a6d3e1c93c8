/*
 * tcp;ofi_rxm: the tcp provider under the rxm utility layer. One entry per
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
 * at its full length (lib/swmatch.c).
 */
#include "provider.h"

#define TCP_CHUNK_MIN ((size_t)128 << 10)
#define TCP_CHUNK_MAX ((size_t)1 << 20)

static const struct psc_tunable tcp_tunables[] = {
	{"FI_TCP_IFACE", "interface the tcp provider uses (default: all); "
			 "pscomm follows PS_COMM_IFNAME unless this is set"},
	{"FI_TCP_PORT_LOW_RANGE", "lowest port the provider listens on"},
	{"FI_TCP_PORT_HIGH_RANGE", "highest port the provider listens on"},
	{"FI_OFI_RXM_BUFFER_SIZE", "rxm eager limit; must be the same on "
				   "every rank"},
	{"FI_UNIVERSE_SIZE", "peers rxm sizes its queues for (256)"},
	{NULL, NULL},
};

static void tcp_derive_caps(const struct fi_info *info, struct psc_caps *c)
{
	psc_generic_derive_caps(info, c);
	c->wait_fd = true;
	c->ip_addressed = true;
	c->sw_match = true;
	c->sw_tag_in_data = c->cq_data_size >= 8;
	c->link = PSC_LINK_IP;
	c->same_eager_limit = true;
	/*
	 * Chunks that grow with the message, from 128 KiB to 1 MiB (an
	 * eighth of it). rxm reports a max_msg_size far above any message,
	 * so a large message went as one chunk through rxm's rendezvous;
	 * smaller chunks overlap. Pingpong, medians of 5 alternating rounds
	 * of the two builds: 1 MiB 339 -> 200 us in 128 KiB chunks. Sweeps
	 * of one build (3 rounds): at 1 MiB, 128 KiB chunks 180-207 us,
	 * 256 KiB 242-265, 64 KiB 300-307, one chunk 337-403; at 4 MiB,
	 * 1 MiB chunks 642-723 us, 128 KiB 1005-1082, one chunk 948-1110;
	 * at 64 MiB, 1 MiB chunks 13.8-14.9 ms, 128 KiB 19.4-22.2, one chunk
	 * 24.1-25.1 (bench/results/2026-12-02-chunks).
	 */
	psc_caps_chunk_max(c, TCP_CHUNK_MAX);
	c->chunk_min = TCP_CHUNK_MIN;
}

const struct psc_provider_ops psc_tcp_ops = {
	.size = sizeof(struct psc_provider_ops),
	.name = "tcp",
	.derive_caps = tcp_derive_caps,
	.tunables = tcp_tunables,
	.agree_env = psc_rxm_agree_env,
	.iface_env = "FI_TCP_IFACE",
};
