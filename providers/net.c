/*
 * net: libfabric's native RDM provider over TCP sockets (xnet in the
 * sources), without the rxm layer. One entry per IP interface and
 * address family. Connections open on the first send; progress runs in
 * the caller's CQ reads (no provider thread unless the fabric is opened
 * for it), and the CQ wait fd covers every socket.
 *
 * From libfabric 1.18 on, this code is the tcp provider's native RDM
 * endpoint ("tcp", beside "tcp;ofi_rxm"), which tcp.c profiles with
 * psc_xnet_derive_caps too.
 *
 * Two facts shape pscomm's use of it (libfabric 1.17):
 * - A receive that finds no matching posted buffer keeps at most
 *   FI_NET_MAX_SAVED (4) tagged messages of up to 128 bytes per
 *   connection; any other unexpected message stops the connection
 *   until a receive for it is posted. pscomm therefore matches first
 *   messages in software (bounce buffers are always posted), and a
 *   large message's chunks wait for the receiver's go-ahead
 *   (caps.chunks_wait), so nothing unexpected ever blocks the messages
 *   behind it.
 * - The tag travels in the 8 bytes of remote CQ data of untagged sends.
 * - Connections open on the first send, from either end. When both ends
 *   connect at once, each side may keep a different one of the two
 *   (xnet_process_connreq) and close the other, failing the sends queued
 *   on it (FI_ECANCELED) or in flight on it (FI_ENOTCONN, broken pipe)
 *   although the peer is alive and never received them. pscomm posts such
 *   a send again (caps.resend_on_reset); the next one opens or uses the
 *   surviving connection. Seen once in the p2p suite's finalize barrier,
 *   between two ranks that had never talked before. An injected send
 *   fails so without any completion, so pscomm injects nothing on net.
 *   Worse, a crossing connect can replace a connection that is already
 *   up and lose what was sent on it (caps.connect_race): a new world's
 *   ranks connect pairwise before anything else (comm/wire.c).
 */
#include <string.h>

#include "provider.h"

#define NET_CHUNK_MAX ((size_t)256 << 10)

static const struct psc_tunable net_tunables[] = {
	{"FI_NET_IFACE", "interface the net provider uses (default: all); "
			 "pscomm follows PS_COMM_IFNAME unless this is set"},
	{"FI_NET_PORT_LOW_RANGE", "lowest port the provider listens on"},
	{"FI_NET_PORT_HIGH_RANGE", "highest port the provider listens on"},
	{"FI_NET_NODELAY", "TCP_NODELAY on the provider's sockets"},
	{"FI_NET_MAX_SAVED", "unexpected small tagged messages kept per "
			     "connection (4); pscomm does not rely on it"},
	{NULL, NULL},
};

void psc_xnet_derive_caps(const struct fi_info *info, struct psc_caps *c)
{
	psc_generic_derive_caps(info, c);
	c->wait_fd = true;
	/*
	 * net's fi_trywait (libfabric 1.17) returns 0 without clearing the
	 * signal that every completion sets on the CQ's wait fd, so after
	 * the first one the fd stays readable and a wait on it spins (a
	 * ps-lite van over net used a core even when idle). From 1.18 the
	 * same code is the tcp provider, whose trywait clears it.
	 */
	c->wait_set = strcmp(info->fabric_attr->prov_name, "net") == 0;
	c->ip_addressed = true;
	c->sw_match = true;
	c->sw_tag_in_data = c->cq_data_size >= 8;
	c->chunks_wait = true;
	c->resend_on_reset = true;
	c->connect_race = true;
	/*
	 * Never inject. An injected send has no completion, so when a
	 * crossing connect closes the connection it was queued on, it is
	 * lost without a word, and no resend can bring it back. (The hang
	 * after deaths at 8 ranks was the replaced connection, above: with
	 * no injection alone it still hung 6 runs in 80.) A send with a
	 * completion costs no more here (net, 2 ranks, 8 B pingpong:
	 * 0.98-1.01x of injecting, bench/compare_builds.sh).
	 */
	c->inject_size = 0;
	/*
	 * A message above the eager size costs a go-ahead round trip (about
	 * 10 us here) more than copying it out of a receive buffer (64 KiB:
	 * 3-5 us): send up to 64 KiB eagerly (64 buffers of 64 KiB are kept
	 * posted, 4 MiB per endpoint).
	 */
	c->sw_eager = 65536;
	/*
	 * Chunks of at most 256 KiB. net reports a max_msg_size far above
	 * any message, so a large message went as one chunk: a 1 MiB
	 * pingpong took 341 us against 229 us in 256 KiB chunks (medians of
	 * 5 alternating rounds of the two builds); 512 KiB chunks were as
	 * fast at 1 MiB but slower at 4 MiB (bench/results/2026-12-02-chunks).
	 */
	psc_caps_chunk_max(c, NET_CHUNK_MAX);
	/*
	 * Receives come from a pool that grows (rx_size is a hint), and a
	 * chunk receive that pscomm held back would stop its connection:
	 * with 4 KiB chunks and every slot taken, ranks waited on each
	 * other's go-ahead messages queued behind chunks for good.
	 */
	c->rx_unbounded = true;
	/* It reports automatic progress, but without a progress thread. */
	c->manual_progress = true;
	c->link = PSC_LINK_IP;
}

const struct psc_provider_ops psc_net_ops = {
	.size = sizeof(struct psc_provider_ops),
	.name = "net",
	.derive_caps = psc_xnet_derive_caps,
	.tunables = net_tunables,
	.iface_env = "FI_NET_IFACE",
	.renamed = "libfabric 1.18 and later have no net: its code is the "
		   "tcp provider's own RDM endpoint (listed as tcp), which "
		   "pscomm uses in its place",
};
