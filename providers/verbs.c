/*
 * verbs: InfiniBand, RoCE and iWARP NICs through libibverbs, as
 * "verbs;ofi_rxm" (reliable connections under the rxm utility layer, the
 * usual choice) or "verbs;ofi_rxd" (datagrams under rxd). One entry per
 * RDMA device and port. The link family comes from the entry: iWARP
 * fabrics are named "Ethernet-iWARP", IB and RoCE share "IB-0x<prefix>"
 * and differ by the NIC's network type.
 *
 * What the attributes say and pscomm honours: FI_MR_LOCAL is kept only
 * when offered, and then every buffer needs a descriptor; registered
 * pages are pinned, so RLIMIT_MEMLOCK must be high; data progress is
 * manual under rxm; iWARP reports cq_data_size 0, so nothing may ride in
 * CQ data there. Pitfalls kept as data below: the RoCE GID of datagram
 * endpoints (connections take the GID of their IP address from rdma_cm),
 * fork() after opening the device, and the rxm
 * eager limit, which must be identical on every rank (bootstrap compares
 * it). The NIC is not tied to the bootstrap interface: pscomm prefers the
 * device nearest to the process unless FI_VERBS_IFACE pins one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "provider.h"

static const struct psc_tunable verbs_tunables[] = {
	{"FI_VERBS_GID_IDX", "RoCE, verbs;ofi_rxd (datagrams) only: the GID "
			     "index its endpoints use (default 0, the "
			     "link-local RoCE v1 GID); set it to the RoCE v2 "
			     "index of the address on every rank (`show_gids`)."
			     " verbs;ofi_rxm connects through rdma_cm, which "
			     "takes the GID of the entry's IP address"},
	{"FI_VERBS_IFACE", "netdev (prefix) of the RDMA device; default ib"},
	{"FI_VERBS_DEVICE_NAME", "use only this RDMA device (e.g. mlx5_0)"},
	{"FI_VERBS_INLINE_SIZE", "bytes sent inline; sets the inject size"},
	{"FI_OFI_RXM_BUFFER_SIZE", "rxm eager limit and buffer size; must "
				   "be the same on every rank; pscomm sets "
				   "8448 unless set"},
	{"FI_OFI_RXM_SAR_LIMIT", "largest segmented message before "
				 "rendezvous; pscomm sets it to the eager "
				 "limit (no segmentation) unless set"},
	{"FI_OFI_RXM_USE_SRX", "1: shared receive context, saves memory in "
			       "large jobs"},
	{"FI_UNIVERSE_SIZE", "peers rxm sizes its connections' completion "
			     "queue for: (128 + 128) x it entries, which "
			     "must fit the device's max_cqe (rxe: 32767); "
			     "pscomm sets it to the job size up to "
			     "libfabric's default of 1024 unless set"},
	{"RDMAV_FORK_SAFE", "1 before the device is opened if the program "
			    "forks (pscomm sets it)"},
	{NULL, "iWARP: cq_data_size is 0, so nothing travels in CQ data"},
	{NULL, "RoCE: needs a lossless or congestion-controlled Ethernet "
	       "(PFC or ECN/DCQCN) for full speed"},
	{NULL, NULL},
};

/* rxm's eager limit as rxm reads it: FI_OFI_RXM_BUFFER_SIZE or 16 KiB. */
static unsigned long long verbs_rxm_buffer(void)
{
	return psc_rxm_env_size("FI_OFI_RXM_BUFFER_SIZE", 16384);
}

/*
 * The largest payload of a software-matched first message: rxm's eager
 * limit (which every rank must share) less pscomm's header.
 */
static size_t verbs_rxm_eager(void)
{
	unsigned long long b = verbs_rxm_buffer();

	/* Less pscomm's 16-byte header, with room to spare. */
	return b > 4096 ? (size_t)b - 64 : 4032;
}

/*
 * FI_OFI_RXM_SAR_LIMIT at rxm's eager limit, which turns segmentation
 * (SAR) off: messages above the eager size go by rendezvous (an RDMA
 * read of the sender's buffer, no copy). When a peer's connection shuts
 * down with a SAR message half received, rxm_close_conn (libfabric 1.14
 * to 1.22) unlinks the receive from the wrong list and loops for ever in
 * fi_cq_read with the endpoint's lock held: a rank would hang instead of
 * reporting its dead peer. rxm over tcp never segments (its receive
 * buffers are dynamic), so this matters to verbs only; iWARP also splits
 * messages at the eager size (verbs_derive_caps).
 */
static bool verbs_env_default(size_t i, const char **name, char *value,
			      size_t len, const char **why)
{
	/* rxm's first: the SAR limit follows its buffer size. */
	if (i == 0)
		return psc_rxm_env_default(i, name, value, len, why);
	if (i > 1)
		return false;
	*name = "FI_OFI_RXM_SAR_LIMIT";
	snprintf(value, len, "%llu", verbs_rxm_buffer());
	*why = "rxm's segmented messages can hang a rank whose peer dies "
	       "mid-message (libfabric 1.14 to 1.22); above the eager size "
	       "they go by rendezvous";
	return true;
}

static void verbs_derive_caps(const struct fi_info *info, struct psc_caps *c)
{
	psc_generic_derive_caps(info, c);
	/* Every memory region, including rxm's own buffers, is pinned. */
	c->needs_memlock = true;
	c->fork_unsafe = true;
	c->same_eager_limit = strstr(info->fabric_attr->prov_name,
				     "ofi_rxm") != NULL;
	/*
	 * Software matching, as on tcp: first messages land in pscomm's
	 * bounce buffers, up to rxm's eager size, and anything larger goes
	 * as a header plus data received at its exact size. Two things seen
	 * on rxe (tests/rdma) make this necessary. A header received into
	 * the user's buffer can be overwritten before pscomm reads it when
	 * several receives share that buffer (a bandwidth window): a chunk
	 * of the message before, matched when its receive is posted, lands
	 * there first, and the window hung. And rxm's own segmented and
	 * rendezvous messages, when truncated by a short receive, delivered
	 * their remaining segments as further messages or let the next
	 * small message overtake them.
	 */
	if (c->same_eager_limit) {
		c->sw_match = true;
		c->sw_eager = verbs_rxm_eager();
		/*
		 * fi_close of the rxm endpoint died with SIGSEGV inside
		 * libfabric 1.17 after every message was delivered: a van
		 * node's stop on siw, ps-lite's servers at Finalize on rxe,
		 * and ps_comm_finalize of the pingpong example on siw (a call
		 * through a freed object's operations, about 1 in 16).
		 */
		c->stop_unclosed = true;
	}
	/* iWARP has no immediate data; never trust CQ data for tags. */
	if (c->link == PSC_LINK_IWARP)
		c->cq_data_size = 0;
	/*
	 * rxm opens a connection on the first send, from either end, and on
	 * iWARP (siw, tests/rdma) a new one sometimes came up at its
	 * accepting end only: connected there ("shutdown conn ... state 3"
	 * in rxm's ep_ctrl log a moment later), still connecting at the
	 * other, which connected again. A send the accepting end injected
	 * meanwhile is lost without a word (rxm 1.17 drops an inject's
	 * error completion), and crossing connects (a 2-rank allreduce's
	 * first messages) make the accepting end send at once: the
	 * collectives suite once hung there. So a new world on iWARP
	 * connects its ranks pairwise from the lower rank first
	 * (comm/wire.c). Not on RoCE and InfiniBand, where rxm connects on
	 * demand so that a large job does not open every pair's queue pair.
	 */
	if (c->same_eager_limit && c->link == PSC_LINK_IWARP)
		c->connect_race = true;
	/*
	 * On iWARP pscomm splits messages at rxm's eager size, so that rxm
	 * neither reads (rendezvous) nor segments (SAR); libfabric has a
	 * bug on each path (tests/rdma, doc/fabrics.md):
	 * - an iWARP device (siw) completes a send posted after a read
	 *   before the read, and verbs in libfabric 1.15 to 2.6 retires
	 *   send completions in posting order: the next completion dies
	 *   with SIGSEGV in fi_cq_read or fi_close;
	 * - when a peer's connection shuts down with a SAR message half
	 *   received, rxm_close_conn (rxm_conn.c:82-87 in 1.17, the same
	 *   from 1.14 to 1.22) unlinks the receive from the wrong list and
	 *   loops for ever inside fi_cq_read, lock held: a kvstore worker
	 *   hung when its server was killed mid-pull (1 in 10 on siw).
	 * SAR copied through the same eager buffers, so the split costs
	 * pscomm's chunk headers, and above 128 KiB a copy that the read
	 * avoided.
	 */
	if (c->same_eager_limit && c->link == PSC_LINK_IWARP &&
	    c->max_msg_size > verbs_rxm_eager())
		c->max_msg_size = verbs_rxm_eager();
	/*
	 * rxm's connections are rdma_cm's: the kernel takes the GID of the
	 * source IP address (IPv4-mapped for IPv4), of the port's default
	 * RoCE type (v2 where the port has it). FI_VERBS_GID_IDX only
	 * indexes the GID of datagram endpoints (and names the fabric).
	 */
	c->gid_from_addr = strstr(info->fabric_attr->prov_name, "ofi_rxm") !=
			   NULL;
}

/* rxm gives each verbs connection its own receive queue by default. */
static void verbs_explain_open_error(const struct fi_info *info,
				     const char *step, int err,
				     size_t universe, char *buf, size_t len)
{
	psc_rxm_explain_open_error(info, false, step, err, universe, buf,
				   len);
}

const struct psc_provider_ops psc_verbs_ops = {
	.size = sizeof(struct psc_provider_ops),
	.name = "verbs",
	.derive_caps = verbs_derive_caps,
	.tunables = verbs_tunables,
	.agree_env = psc_rxm_agree_env,
	.gid_env = "FI_VERBS_GID_IDX",
	.iface_env = "FI_VERBS_IFACE",
	.fork_env = "RDMAV_FORK_SAFE",
	.explain_open_error = verbs_explain_open_error,
	.env_default = verbs_env_default,
	.missing_hint = "no RDMA device; for RoCE load rdma_rxe or install "
			"the NIC driver (rdma-core, `ibv_devices` lists "
			"devices)",
};
