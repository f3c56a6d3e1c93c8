/*
 * The generic profile: defaults that hold for any provider that honours
 * the libfabric specification. Family profiles override a member only
 * where their provider differs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "provider.h"

unsigned psc_tag_bits_from_format(uint64_t fmt)
{
	if (fmt == 0)
		return 64;
	return 64 - (unsigned)__builtin_clzll(fmt);
}

bool psc_generic_accept(const struct fi_info *info, char *why, size_t len)
{
	if (!(info->caps & FI_TAGGED)) {
		snprintf(why, len, "no tagged messaging (FI_TAGGED)");
		return false;
	}
	if (info->ep_attr->type != FI_EP_RDM) {
		snprintf(why, len, "no reliable datagram endpoint (FI_EP_RDM)");
		return false;
	}
	if (psc_tag_bits_from_format(info->ep_attr->mem_tag_format) < 51) {
		snprintf(why, len, "only %u tag bits (pscomm needs 51)",
			 psc_tag_bits_from_format(
				 info->ep_attr->mem_tag_format));
		return false;
	}
	/*
	 * FI_MR_HMEM concerns device memory only, and the legacy
	 * BASIC/SCALABLE values only remote keys: pscomm does no RMA.
	 */
	if (info->domain_attr->mr_mode & ~(FI_MR_LOCAL | FI_MR_VIRT_ADDR |
					   FI_MR_ALLOCATED | FI_MR_PROV_KEY |
					   FI_MR_ENDPOINT | PSC_MR_BASIC |
					   PSC_MR_SCALABLE | FI_MR_HMEM)) {
		snprintf(why, len, "mr_mode 0x%x asks for modes pscomm "
			 "does not implement", info->domain_attr->mr_mode);
		return false;
	}
	if (info->mode & ~PSC_MODES_HONOURED) {
		uint64_t extra = info->mode & ~PSC_MODES_HONOURED;
		char names[128];

		snprintf(why, len, "mode %s, which pscomm does not implement",
			 fi_tostr_r(names, sizeof(names), &extra,
				    FI_TYPE_MODE));
		return false;
	}
	why[0] = '\0';
	return true;
}

void psc_generic_fixup_hints(struct fi_info *hints)
{
	/* The base hints suit any provider that follows the specification. */
}

void psc_caps_chunk_max(struct psc_caps *c, size_t max)
{
	if (!c->max_msg_size || c->max_msg_size > max)
		c->max_msg_size = max;
}

void psc_generic_derive_caps(const struct fi_info *info, struct psc_caps *c)
{
	int mr = info->domain_attr->mr_mode;

	memset(c, 0, sizeof(*c));
	c->mem_tag_format = info->ep_attr->mem_tag_format;
	c->tag_bits = psc_tag_bits_from_format(c->mem_tag_format);
	c->mr_local = (mr & FI_MR_LOCAL) != 0;
	c->mr_endpoint = (mr & FI_MR_ENDPOINT) != 0;
	c->mr_prov_key = (mr & FI_MR_PROV_KEY) != 0;
	c->max_msg_size = info->ep_attr->max_msg_size;
	c->inject_size = info->tx_attr->inject_size;
	c->directed_recv = (info->caps & FI_DIRECTED_RECV) != 0;
	c->cq_data_size = info->domain_attr->cq_data_size;
	c->mode = info->mode;
	c->ordered_sas = (info->tx_attr->msg_order & FI_ORDER_SAS) &&
			 (info->rx_attr->msg_order & FI_ORDER_SAS);
	c->manual_progress = info->domain_attr->data_progress ==
			     FI_PROGRESS_MANUAL;
	/* Unknown providers get the one wait strategy that always works. */
	c->wait_fd = false;
	c->wait_sread = false;
	c->len_in_cq_data = false;
	c->ip_addressed = false;
	c->tx_size = info->tx_attr->size;
	c->rx_size = info->rx_attr->size;
	/*
	 * The legacy values are whole-mode enums that share bits 0 and 1:
	 * BASIC implies provider keys; SCALABLE means no local registration.
	 */
	c->mr_prov_key |= (mr & PSC_MR_BASIC) != 0;
	c->mr_scalable = (mr & PSC_MR_SCALABLE) != 0;
	c->link = psc_link_from_info(info);
	/* Registered pages are pinned and count against RLIMIT_MEMLOCK. */
	c->needs_memlock = c->mr_local;
	c->async_iov = (info->mode & FI_ASYNC_IOV) != 0;
	c->nic_local = info->nic && info->nic->bus_attr &&
		       info->nic->bus_attr->bus_type == FI_BUS_PCI;
}

enum psc_link psc_link_from_info(const struct fi_info *info)
{
	const char *fab = info->fabric_attr ? info->fabric_attr->name : NULL;
	const char *net = info->nic && info->nic->link_attr
				  ? info->nic->link_attr->network_type
				  : NULL;

	if (fab && strstr(fab, "iWARP"))
		return PSC_LINK_IWARP;
	if (info->addr_format == FI_SOCKADDR_IB || info->addr_format ==
	    FI_ADDR_IB_UD)
		return net && strcmp(net, "Ethernet") == 0 ? PSC_LINK_ROCE
							   : PSC_LINK_IB;
	if (net && strcmp(net, "InfiniBand") == 0)
		return PSC_LINK_IB;
	/* verbs names RoCE and IB fabrics "IB-0x<subnet prefix>" alike. */
	if (fab && strncmp(fab, "IB-", 3) == 0)
		return net && strcmp(net, "Ethernet") == 0 ? PSC_LINK_ROCE
							   : PSC_LINK_IB;
	return PSC_LINK_UNKNOWN;
}

const char *psc_link_name(enum psc_link link)
{
	static const char *const names[] = {
		[PSC_LINK_UNKNOWN] = "unknown", [PSC_LINK_IP] = "IP sockets",
		[PSC_LINK_SHM] = "shared memory", [PSC_LINK_IB] = "InfiniBand",
		[PSC_LINK_ROCE] = "RoCE",	[PSC_LINK_IWARP] = "iWARP",
		[PSC_LINK_OPA] = "Omni-Path",	[PSC_LINK_EFA] = "EFA",
	};

	return (unsigned)link < sizeof(names) / sizeof(names[0]) &&
				       names[link]
		       ? names[link]
		       : "unknown";
}

void psc_generic_describe_cq_error(int err, int prov_errno,
				   const char *prov_str, char *buf, size_t len)
{
	snprintf(buf, len, "%s (provider errno %d%s%s)", fi_strerror(err),
		 prov_errno, prov_str && *prov_str ? ": " : "",
		 prov_str ? prov_str : "");
}

const char *const psc_rxm_agree_env[] = {
	"FI_OFI_RXM_BUFFER_SIZE",
	"FI_OFI_RXM_EAGER_LIMIT",
	"FI_OFI_RXM_SAR_LIMIT",
	NULL,
};

size_t psc_rxm_env_size(const char *name, size_t def)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long n;

	if (!v || !*v)
		return def;
	n = strtoull(v, &end, 0);
	return *end || !n ? def : (size_t)n;
}

/*
 * rxm makes its buffer pools at fi_endpoint, of buffers of
 * FI_OFI_RXM_BUFFER_SIZE (16 KiB) plus a header, and touches all of
 * them: a tcp rank held 91 MiB where Open MPI's held 13. pscomm's eager
 * messages need 8 KiB and a 16-byte header (PSC_FIRST_EAGER); anything
 * larger already goes as a header and chunks by rxm's rendezvous. Half
 * the buffer halves the pools (54 MiB per tcp rank) and made a 4-rank
 * 1 MiB allreduce on tcp faster, not slower. Fewer receives per
 * connection (FI_OFI_RXM_MSG_RX_SIZE=256) would halve them again, but
 * made that allreduce 1.5 times slower (bench/results/2026-12-06-scale).
 */
bool psc_rxm_env_default(size_t i, const char **name, char *value,
			 size_t len, const char **why)
{
	if (i > 0)
		return false;
	*name = "FI_OFI_RXM_BUFFER_SIZE";
	snprintf(value, len, "%d", PSC_RXM_BUFFER);
	*why = "rxm's buffer pools hold thousands of buffers of this size; "
	       "pscomm's eager messages need 8 KiB";
	return true;
}

/* A boolean as libfabric reads it (1/0, yes/no, on/off, true/false). */
static bool rxm_env_bool(const char *name, bool def)
{
	static const char *const yes[] = {"1", "yes", "on", "true"};
	static const char *const no[] = {"0", "no", "off", "false"};
	const char *v = getenv(name);

	for (size_t i = 0; v && i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(v, yes[i]) == 0)
			return true;
		if (strcasecmp(v, no[i]) == 0)
			return false;
	}
	return def;
}

/* rxm's message queue depths per connection (libfabric 1.17 defaults). */
#define RXM_MSG_RXTX_SIZE 128
#define RXM_MSG_SRX_SIZE 4096
/* The largest CQ soft-RoCE (rxe) creates: its max_cqe. */
#define RXE_MAX_CQE 32767

void psc_rxm_explain_open_error(const struct fi_info *info, bool srx_default,
				const char *step, int err, size_t universe,
				char *buf, size_t len)
{
	bool srx = rxm_env_bool("FI_OFI_RXM_USE_SRX", srx_default);
	size_t tx, rx, per_peer, fixed, most;
	char terms[128];

	buf[0] = '\0';
	/* rxm opens its connections' CQ when the endpoint is enabled. */
	if (!strstr(info->fabric_attr->prov_name, "ofi_rxm") ||
	    strcmp(step, "fi_enable") != 0 ||
	    (err != -FI_EINVAL && err != -FI_ENOMEM))
		return;
	tx = psc_rxm_env_size("FI_OFI_RXM_MSG_TX_SIZE", RXM_MSG_RXTX_SIZE);
	rx = psc_rxm_env_size("FI_OFI_RXM_MSG_RX_SIZE",
			      srx ? RXM_MSG_SRX_SIZE : RXM_MSG_RXTX_SIZE);
	/* A shared receive context is counted once, not per connection. */
	per_peer = tx + (srx ? 0 : rx);
	fixed = srx ? rx : 0;
	if (srx)
		snprintf(terms, sizeof(terms), "FI_OFI_RXM_MSG_RX_SIZE %zu + "
			 "FI_OFI_RXM_MSG_TX_SIZE %zu x", rx, tx);
	else
		snprintf(terms, sizeof(terms), "(FI_OFI_RXM_MSG_TX_SIZE %zu + "
			 "FI_OFI_RXM_MSG_RX_SIZE %zu) x", tx, rx);
	most = RXE_MAX_CQE > fixed ? (RXE_MAX_CQE - fixed) / per_peer : 0;
	snprintf(buf, len, "rxm opens the completion queue of its "
		 "connections here, for %s FI_UNIVERSE_SIZE %zu = %zu "
		 "entries, and an RDMA device refuses a CQ larger than its "
		 "max_cqe (`ibv_devinfo -v`; soft-RoCE rxe: %d, which allows "
		 "FI_UNIVERSE_SIZE %zu at most). Set FI_UNIVERSE_SIZE to at "
		 "most (max_cqe - %zu) / %zu on every rank, or lower "
		 "FI_OFI_RXM_MSG_TX_SIZE and FI_OFI_RXM_MSG_RX_SIZE%s",
		 terms, universe, fixed + per_peer * universe, RXE_MAX_CQE,
		 most, fixed, per_peer,
		 srx ? "" : ", or set FI_OFI_RXM_USE_SRX=1 (one receive "
			    "queue for all connections)");
}

const struct psc_provider_ops psc_generic_ops = {
	.size = sizeof(struct psc_provider_ops),
	.name = "generic",
	.fixup_hints = psc_generic_fixup_hints,
	.accept = psc_generic_accept,
	.derive_caps = psc_generic_derive_caps,
	.describe_cq_error = psc_generic_describe_cq_error,
};
