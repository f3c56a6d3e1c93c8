/*
 * Replay tests for the provider layer on hardware this machine lacks:
 * every file in tests/data/fi_info/ (recorded `fi_info -v` dumps and
 * attribute sets derived from provider defaults) is parsed into real
 * fi_info lists and run through pscomm's own path: the hints
 * (psc_fab_hints), a fi_getinfo that answers from the file
 * (psc_replay_getinfo, via psc_fab_query with its FI_ORDER_SAS retry),
 * selection (psc_fab_select), the profiles' caps and the tag layout. Each
 * provider's expected caps are written out below, so a profile or
 * selection change that alters them fails here. Also: the parser's
 * errors, NIC choice by locality with a fake distance, the interface
 * variables that pin a family, and the preflight's job UUID.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <check.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include "p2p/tag.h"
#include "fabric/fabric.h"
#include "fabric/preflight.h"
#include "fabric/select.h"
#include "net/net.h"
#include "replay/replay.h"
#include "util/param.h"
#include "provider.h"
#include "ps_comm.h"
#include "util/util.h"

#ifndef PSC_FI_INFO_DIR
#error "PSC_FI_INFO_DIR must name tests/data/fi_info"
#endif

/* What one file must give. */
struct expect {
	const char *file;
	int entries;	   /* parsed */
	int rc;		   /* of psc_fab_query */
	const char *prov;  /* chosen provider */
	const char *domain; /* chosen domain */
	unsigned tag_bits, user_bits;
	bool mr_local, mr_endpoint, mr_prov_key, mr_scalable;
	size_t max_msg, inject;
	bool directed;
	size_t cq_data;
	uint64_t mode;
	bool ordered, manual;
	enum psc_link link;
	bool uuid, fork_unsafe, memlock, async_iov, relaxed, nic_local;
};

static const struct expect expects[] = {
	{"verbs-roce-rxm-derived.txt", 3, 0, "verbs;ofi_rxm", "mlx5_0", 64, 28,
	 true, false, true, false, SIZE_MAX, 16384, true, 4, 0, true, true,
	 PSC_LINK_ROCE, false, true, true, false, false, true},
	{"verbs-ib-rxm-derived.txt", 1, 0, "verbs;ofi_rxm", "mlx5_0", 64, 28,
	 true, false, true, false, SIZE_MAX, 16384, true, 4, 0, true, true,
	 PSC_LINK_IB, false, true, true, false, false, true},
	/* iWARP: messages (and so injects) split at rxm's eager size,
	 * 16384 - 64, so rxm neither reads nor segments (providers/verbs.c). */
	{"verbs-iwarp-rxm-derived.txt", 1, 0, "verbs;ofi_rxm", "irdma0", 64,
	 28, true, false, true, false, 16320, 16320, true, 0, 0, true,
	 true, PSC_LINK_IWARP, false, true, true, false, false, true},
	{"verbs-ib-mlx5.txt", 1, 0, "verbs;ofi_rxd", "mlx5_0-dgram", 64, 28,
	 false, false, false, false, SIZE_MAX, 3840, true, 8, 0, true, true,
	 PSC_LINK_IB, false, true, true, false, false, false},
	{"psm2-derived.txt", 2, 0, "psm2", "hfi1_0", 60, 24, false, false,
	 false, true, 4294963200u, 64, true, 4, FI_CONTEXT, true, true,
	 PSC_LINK_OPA, true, false, false, false, false, false},
	{"psm3-derived.txt", 2, 0, "psm3", "irdma-cvl01", 60, 24, false,
	 false, false, true, 4294963200u, 64, true, 4, FI_CONTEXT, true, true,
	 PSC_LINK_OPA, true, false, true, false, false, true},
	{"opx-derived.txt", 1, 0, "opx", "hfi1_0", 64, 28, false, false,
	 false, true, SIZE_MAX, 16, true, 4, FI_CONTEXT2 | FI_ASYNC_IOV,
	 false, true, PSC_LINK_OPA, true, false, true, true, true, true},
	{"efa-rdm-lequn.txt", 1, 0, "efa", "rdmap79s0-rdm", 64, 28, false,
	 false, true, false, SIZE_MAX, 4096, true, 4, 0, true, false,
	 PSC_LINK_EFA, false, true, true, false, false, true},
	/* The RDM entry asks for FI_MSG_PREFIX; the other is DGRAM. */
	{"efa.txt", 2, -FI_ENODATA, NULL, NULL, 0, 0, false, false, false,
	 false, 0, 0, false, 0, 0, false, false, PSC_LINK_UNKNOWN, false,
	 false, false, false, false, false},
};

static struct fi_info *load(const char *file)
{
	char path[512], err[256] = "";
	struct fi_info *list = NULL;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", PSC_FI_INFO_DIR, file);
	rc = psc_replay_load(path, &list, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s: %s", file, err);
	return list;
}

static int count(const struct fi_info *l)
{
	int n = 0;

	for (; l; l = l->next)
		n++;
	return n;
}

/* ------------------------------------------------------------ per file */

START_TEST(test_replay_file)
{
	const struct expect *x = &expects[_i];
	struct fi_info *recorded = load(x->file), *answer = NULL;
	struct psc_select sel = {.rank = -1};
	struct psc_tag_layout tl;
	const struct psc_caps *c = &sel.caps;
	bool relaxed = false;
	int rc;

	ck_assert_int_eq(count(recorded), x->entries);
	psc_replay_use(recorded);
	rc = psc_fab_query(psc_replay_getinfo, NULL, &answer, &relaxed);
	ck_assert_msg(rc == x->rc, "%s: query gave %d, expected %d", x->file,
		      rc, x->rc);
	if (rc) {
		fi_freeinfo(recorded);
		return;
	}
	ck_assert_int_eq(relaxed, x->relaxed);
	ck_assert_ptr_nonnull(psc_fab_select(answer, &sel));
	ck_assert_str_eq(sel.pick->fabric_attr->prov_name, x->prov);
	ck_assert_str_eq(sel.pick->domain_attr->name, x->domain);
	ck_assert_uint_eq(c->tag_bits, x->tag_bits);
	ck_assert_int_eq(c->mr_local, x->mr_local);
	ck_assert_int_eq(c->mr_endpoint, x->mr_endpoint);
	ck_assert_int_eq(c->mr_prov_key, x->mr_prov_key);
	ck_assert_int_eq(c->mr_scalable, x->mr_scalable);
	ck_assert_uint_eq(c->max_msg_size, x->max_msg);
	ck_assert_uint_eq(c->inject_size, x->inject);
	ck_assert_int_eq(c->directed_recv, x->directed);
	ck_assert_uint_eq(c->cq_data_size, x->cq_data);
	ck_assert_uint_eq(c->mode, x->mode);
	ck_assert_int_eq(c->ordered_sas, x->ordered);
	ck_assert_int_eq(c->manual_progress, x->manual);
	ck_assert_int_eq(c->link, x->link);
	ck_assert_int_eq(c->needs_uuid, x->uuid);
	ck_assert_int_eq(c->fork_unsafe, x->fork_unsafe);
	ck_assert_int_eq(c->needs_memlock, x->memlock);
	ck_assert_int_eq(c->async_iov, x->async_iov);
	ck_assert_int_eq(c->nic_local, x->nic_local);
	/* No software matching where iovs must outlive the call. */
	ck_assert(!(c->sw_match && c->async_iov));
	/* The profile's table has its pitfalls and variables as data. */
	ck_assert_ptr_nonnull(psc_provider_lookup(x->prov)->tunables);
	if (x->uuid)
		ck_assert_ptr_nonnull(psc_provider_lookup(x->prov)->uuid_env);
	if (x->fork_unsafe)
		ck_assert_ptr_nonnull(psc_provider_lookup(x->prov)->fork_env);

	/* The tag layout fits the provider's bits, and round-trips. */
	ck_assert_int_eq(psc_tag_layout_init(&tl, c->mem_tag_format), 0);
	ck_assert_uint_eq(tl.usable_bits, x->tag_bits);
	ck_assert_uint_eq(tl.user_bits, x->user_bits);
	ck_assert_int_eq(tl.tag_ub, (int)((1u << x->user_bits) - 1));
	{
		uint32_t rmax = (1u << PSC_TAG_RANK_BITS) - 1;
		uint32_t cmax = (1u << PSC_TAG_CTX_BITS) - 1;
		uint64_t t = psc_tag_make(&tl, PSC_PROTO_CTRL, true, cmax, rmax,
					  (uint32_t)tl.tag_ub);

		if (x->tag_bits < 64)
			ck_assert_msg((t >> x->tag_bits) == 0,
				      "tag 0x%llx uses reserved bits",
				      (unsigned long long)t);
		ck_assert_uint_eq(psc_tag_rank(&tl, t), rmax);
		ck_assert_uint_eq(psc_tag_user(&tl, t), (uint32_t)tl.tag_ub);
		ck_assert_uint_eq(psc_tag_proto(&tl, t), PSC_PROTO_CTRL);
		ck_assert(psc_tag_is_large(&tl, t));
	}
	fi_freeinfo(answer);
	fi_freeinfo(recorded);
}
END_TEST

/* ------------------------------------------------------------- hints */

static const char *const families[] = {
	"verbs;ofi_rxm", "verbs;ofi_rxd", "psm2", "psm3", "opx", "efa",
	"tcp;ofi_rxm", "shm", "sockets", "udp;ofi_rxd",
};

START_TEST(test_hints)
{
	struct fi_info *h = psc_fab_hints(families[_i]);
	const int mr = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
		       FI_MR_PROV_KEY | FI_MR_ENDPOINT;

	ck_assert_ptr_nonnull(h);
	ck_assert_str_eq(h->fabric_attr->prov_name, families[_i]);
	ck_assert_uint_eq(h->caps, FI_TAGGED | FI_MSG | FI_DIRECTED_RECV);
	/* psm2/psm3 need FI_CONTEXT, opx FI_CONTEXT2 and FI_ASYNC_IOV. */
	ck_assert_uint_eq(h->mode, FI_CONTEXT | FI_CONTEXT2 | FI_ASYNC_IOV);
	ck_assert_int_eq(h->domain_attr->mr_mode, mr);
	ck_assert_int_eq(h->ep_attr->type, FI_EP_RDM);
	ck_assert_int_eq(h->domain_attr->av_type, FI_AV_TABLE);
	ck_assert_int_eq(h->domain_attr->resource_mgmt, FI_RM_ENABLED);
	ck_assert_uint_eq(h->tx_attr->msg_order, FI_ORDER_SAS);
	ck_assert_uint_eq(h->rx_attr->msg_order, FI_ORDER_SAS);
	/* Tags and CQ data are read from the answer, never asked for. */
	ck_assert_uint_eq(h->ep_attr->mem_tag_format, 0);
	ck_assert_uint_eq(h->domain_attr->cq_data_size, 0);
	ck_assert(!(h->caps & (FI_LOCAL_COMM | FI_REMOTE_COMM | FI_RMA)));
	fi_freeinfo(h);
}
END_TEST

/* Without FI_MR_LOCAL offered, entries that need it are not returned. */
START_TEST(test_replay_mr_duties)
{
	struct fi_info *rec = load("verbs-ib-rxm-derived.txt"), *out = NULL;
	struct fi_info *h = psc_fab_hints(NULL);

	psc_replay_use(rec);
	ck_assert_int_eq(psc_replay_getinfo(PSC_FI_VERSION, NULL, NULL, 0, h,
					    &out), 0);
	ck_assert_int_eq(out->domain_attr->mr_mode & FI_MR_LOCAL,
			 FI_MR_LOCAL);
	/* The answer narrows caps to what was asked. */
	ck_assert_uint_eq(out->caps, h->caps);
	fi_freeinfo(out);
	h->domain_attr->mr_mode &= ~FI_MR_LOCAL;
	ck_assert_int_eq(psc_replay_getinfo(PSC_FI_VERSION, NULL, NULL, 0, h,
					    &out), -FI_ENODATA);
	fi_freeinfo(h);
	fi_freeinfo(rec);
}
END_TEST

/* The profile refuses efa's prefix-mode entry and says why. */
START_TEST(test_efa_prefix_refused)
{
	struct fi_info *rec = load("efa.txt");
	char why[256] = "";

	ck_assert(rec->mode & FI_MSG_PREFIX);
	ck_assert(!psc_provider_lookup("efa")->accept(rec, why, sizeof(why)));
	ck_assert_msg(strstr(why, "mode") != NULL, "%s", why);
	/* Its MR bits would still be read right: LOCAL and provider keys. */
	{
		struct psc_caps c;

		psc_provider_lookup("efa")->derive_caps(rec, &c);
		ck_assert(c.mr_local);
		ck_assert(c.mr_prov_key);
		ck_assert(c.needs_memlock);
	}
	fi_freeinfo(rec);
}
END_TEST

/* ------------------------------------------------------ NIC selection */

/* Fake locality: near is the PCI bus the process "runs" next to. */
static int fake_distance(const struct fi_info *i, void *arg)
{
	unsigned near = *(unsigned *)arg;

	if (!i->nic || !i->nic->bus_attr ||
	    i->nic->bus_attr->bus_type != FI_BUS_PCI)
		return -1;
	return i->nic->bus_attr->attr.pci.bus_id == near ? 0 : 2;
}

/* Prefer IPv6 entries: must never win over the first entry's format. */
static int prefer_v6(const struct fi_info *i, void *arg)
{
	(void)arg;
	return i->addr_format == FI_SOCKADDR_IN6 ? 0 : 2;
}

static const struct fi_info *pick(struct fi_info *list,
				  psc_nic_distance_fn fn, void *arg,
				  struct psc_select *sel)
{
	memset(sel, 0, sizeof(*sel));
	sel->rank = -1;
	sel->distance = fn;
	sel->distance_arg = arg;
	return psc_fab_select(list, sel);
}

START_TEST(test_nic_locality)
{
	struct fi_info *list = load("verbs-roce-rxm-derived.txt");
	struct psc_select sel;
	unsigned near = 0x86;

	unsetenv("FI_VERBS_IFACE");
	/* Without locality: libfabric's order. */
	ck_assert_str_eq(pick(list, NULL, NULL, &sel)->domain_attr->name,
			 "mlx5_0");
	ck_assert_int_eq(sel.nic_distance, -1);
	/* The NIC near the process wins. */
	ck_assert_str_eq(pick(list, fake_distance, &near,
			      &sel)->domain_attr->name, "mlx5_1");
	ck_assert_int_eq(sel.nic_distance, 0);
	near = 0x3b;
	ck_assert_str_eq(pick(list, fake_distance, &near,
			      &sel)->domain_attr->name, "mlx5_0");
	/* Address format stays the first entry's on every rank. */
	ck_assert_int_eq(pick(list, prefer_v6, NULL, &sel)->addr_format,
			 FI_SOCKADDR_IN);
	/* FI_VERBS_IFACE pins the NIC: no reordering. */
	near = 0x86;
	setenv("FI_VERBS_IFACE", "ens1f0", 1);
	ck_assert_str_eq(pick(list, fake_distance, &near,
			      &sel)->domain_attr->name, "mlx5_0");
	unsetenv("FI_VERBS_IFACE");
	fi_freeinfo(list);
}
END_TEST

/* Every rank picks provider and format from the first usable entry. */
START_TEST(test_first_usable_fixes_provider)
{
	struct fi_info *efa = load("efa.txt"), *psm2 = load("psm2-derived.txt");
	struct fi_info *tail;
	struct psc_select sel;

	/* efa's prefix entry is refused and named; psm2 is chosen. */
	for (tail = efa; tail->next; tail = tail->next)
		;
	tail->next = psm2;
	ck_assert_str_eq(pick(efa, NULL, NULL, &sel)->fabric_attr->prov_name,
			 "psm2");
	ck_assert_msg(strstr(sel.rejects, "efa (mode") != NULL, "%s",
		      sel.rejects);
	/* tag60 is listed first, so every rank gets 60 bits. */
	ck_assert_uint_eq(sel.caps.tag_bits, 60);
	fi_freeinfo(efa);
}
END_TEST

static const char tcp_two_ifaces[] =
	"fi_info:\n"
	"    caps: [ FI_MSG, FI_TAGGED, FI_RECV, FI_SEND, FI_DIRECTED_RECV ]\n"
	"    mode: [  ]\n"
	"    addr_format: FI_SOCKADDR_IN\n"
	"    src_addrlen: 16\n"
	"    src_addr: fi_sockaddr_in://10.0.0.1:0\n"
	"    fi_ep_attr:\n"
	"        type: FI_EP_RDM\n"
	"        mem_tag_format: 0xaaaaaaaaaaaaaaaa\n"
	"    fi_domain_attr:\n"
	"        name: eth0\n"
	"    fi_fabric_attr:\n"
	"        prov_name: tcp;ofi_rxm\n"
	"fi_info:\n"
	"    caps: [ FI_MSG, FI_TAGGED, FI_RECV, FI_SEND, FI_DIRECTED_RECV ]\n"
	"    addr_format: FI_SOCKADDR_IN\n"
	"    src_addrlen: 16\n"
	"    src_addr: fi_sockaddr_in://10.0.1.1:0\n"
	"    fi_ep_attr:\n"
	"        type: FI_EP_RDM\n"
	"    fi_domain_attr:\n"
	"        name: eth1\n"
	"    fi_fabric_attr:\n"
	"        prov_name: tcp;ofi_rxm\n";

/* A machine with tcp, shm and verbs, in libfabric's order. */
static const char three_fabrics[] =
	"fi_info:\n"
	"    caps: [ FI_MSG, FI_TAGGED, FI_RECV, FI_SEND, FI_DIRECTED_RECV ]\n"
	"    addr_format: FI_SOCKADDR_IN\n"
	"    fi_ep_attr:\n"
	"        type: FI_EP_RDM\n"
	"    fi_domain_attr:\n"
	"        name: eth0\n"
	"    fi_fabric_attr:\n"
	"        prov_name: tcp;ofi_rxm\n"
	"fi_info:\n"
	"    caps: [ FI_MSG, FI_TAGGED, FI_RECV, FI_SEND, FI_DIRECTED_RECV ]\n"
	"    addr_format: FI_ADDR_STR\n"
	"    fi_ep_attr:\n"
	"        type: FI_EP_RDM\n"
	"    fi_domain_attr:\n"
	"        name: shm\n"
	"    fi_fabric_attr:\n"
	"        prov_name: shm\n"
	"fi_info:\n"
	"    caps: [ FI_MSG, FI_TAGGED, FI_RECV, FI_SEND, FI_DIRECTED_RECV ]\n"
	"    addr_format: FI_SOCKADDR_IB\n"
	"    fi_ep_attr:\n"
	"        type: FI_EP_RDM\n"
	"    fi_domain_attr:\n"
	"        name: mlx5_0\n"
	"    fi_fabric_attr:\n"
	"        prov_name: verbs;ofi_rxm\n";

/*
 * Roles: ANY keeps libfabric's first, NET takes the best network provider
 * (hardware before tcp, never shm), SHM only shm; software matching stays
 * on when a pair asks for it.
 */
START_TEST(test_roles)
{
	struct fi_info *list = NULL;
	struct psc_select sel;
	char err[256];

	ck_assert_int_eq(psc_replay_parse(three_fabrics, &list, err,
					  sizeof(err)), 0);
	memset(&sel, 0, sizeof(sel));
	sel.rank = -1;
	ck_assert_str_eq(psc_fab_select(list, &sel)->fabric_attr->prov_name,
			 "tcp;ofi_rxm");
	sel.role = PSC_ROLE_NET;
	ck_assert_str_eq(psc_fab_select(list, &sel)->fabric_attr->prov_name,
			 "verbs;ofi_rxm");
	/* Its profile matches in software (providers/verbs.c says why). */
	ck_assert(sel.caps.sw_match);
	sel.sw_match = true;
	psc_fab_select(list, &sel);
	ck_assert(sel.caps.sw_match);
	sel.role = PSC_ROLE_SHM;
	ck_assert_str_eq(psc_fab_select(list, &sel)->fabric_attr->prov_name,
			 "shm");
	/* Without verbs, NET falls back to tcp; without shm, SHM has none. */
	fi_freeinfo(list->next->next);
	list->next->next = NULL;
	sel.role = PSC_ROLE_NET;
	ck_assert_str_eq(psc_fab_select(list, &sel)->fabric_attr->prov_name,
			 "tcp;ofi_rxm");
	fi_freeinfo(list->next);
	list->next = NULL;
	sel.role = PSC_ROLE_SHM;
	ck_assert_ptr_null(psc_fab_select(list, &sel));
	fi_freeinfo(list);
	/* The documented order. */
	ck_assert_int_eq(psc_provider_net_rank("shm"), -1);
	ck_assert_int_lt(psc_provider_net_rank("efa"),
			 psc_provider_net_rank("psm2"));
	ck_assert_int_lt(psc_provider_net_rank("psm2"),
			 psc_provider_net_rank("verbs;ofi_rxm"));
	ck_assert_int_lt(psc_provider_net_rank("verbs;ofi_rxm"),
			 psc_provider_net_rank("tcp;ofi_rxm"));
	ck_assert_int_lt(psc_provider_net_rank("verbs;ofi_rxm"),
			 psc_provider_net_rank("net"));
	ck_assert_int_lt(psc_provider_net_rank("net"),
			 psc_provider_net_rank("tcp;ofi_rxm"));
	/* libfabric 1.18 and later: net's code is the native "tcp" RDM. */
	ck_assert_int_lt(psc_provider_net_rank("tcp"),
			 psc_provider_net_rank("tcp;ofi_rxm"));
	ck_assert_int_lt(psc_provider_net_rank("tcp;ofi_rxm"),
			 psc_provider_net_rank("udp;ofi_rxd"));
}
END_TEST

/* libfabric 1.17's order here: tcp;ofi_rxm, then net (xnet). */
static const char two_ip_fabrics[] =
	"fi_info:\n"
	"    caps: [ FI_MSG, FI_TAGGED, FI_RECV, FI_SEND, FI_DIRECTED_RECV ]\n"
	"    addr_format: FI_SOCKADDR_IN\n"
	"    fi_ep_attr:\n"
	"        type: FI_EP_RDM\n"
	"    fi_domain_attr:\n"
	"        name: eth0\n"
	"        cq_data_size: 8\n"
	"    fi_fabric_attr:\n"
	"        prov_name: tcp;ofi_rxm\n"
	"fi_info:\n"
	"    caps: [ FI_MSG, FI_TAGGED, FI_RECV, FI_SEND, FI_DIRECTED_RECV ]\n"
	"    addr_format: FI_SOCKADDR_IN\n"
	"    fi_ep_attr:\n"
	"        type: FI_EP_RDM\n"
	"    fi_domain_attr:\n"
	"        name: eth0\n"
	"        cq_data_size: 8\n"
	"    fi_fabric_attr:\n"
	"        prov_name: net\n";

/*
 * Between nodes over IP, net wins over tcp;ofi_rxm, with software
 * matching and chunks of at most 256 KiB that wait for the go-ahead (it
 * stalls a connection behind an unexpected message); tcp;ofi_rxm needs
 * no go-ahead and splits into 128 KiB to 1 MiB chunks.
 */
START_TEST(test_net_preferred)
{
	struct fi_info *list = NULL;
	struct psc_select sel;
	char err[256];

	ck_assert_int_eq(psc_replay_parse(two_ip_fabrics, &list, err,
					  sizeof(err)), 0);
	memset(&sel, 0, sizeof(sel));
	sel.rank = -1;
	sel.role = PSC_ROLE_NET;
	ck_assert_str_eq(psc_fab_select(list, &sel)->fabric_attr->prov_name,
			 "net");
	ck_assert(sel.caps.sw_match);
	ck_assert(sel.caps.sw_tag_in_data);
	ck_assert(sel.caps.chunks_wait);
	ck_assert(sel.caps.wait_fd);
	ck_assert(sel.caps.wait_set);
	ck_assert_uint_eq(sel.caps.max_msg_size, 256 << 10);
	fi_freeinfo(list->next);
	list->next = NULL;
	ck_assert_str_eq(psc_fab_select(list, &sel)->fabric_attr->prov_name,
			 "tcp;ofi_rxm");
	ck_assert(!sel.caps.chunks_wait);
	ck_assert(!sel.caps.wait_set);
	ck_assert_uint_eq(sel.caps.max_msg_size, 512 << 10);
	fi_freeinfo(list);
}
END_TEST

/* Query the replayed list rec as pscomm would, and select for role. */
static const char *pick_from(struct fi_info *rec, enum psc_fab_role role,
			     struct psc_select *sel)
{
	struct fi_info *answer = NULL;
	const struct fi_info *pick;
	bool relaxed = false;
	static char name[64];

	memset(sel, 0, sizeof(*sel));
	sel->rank = -1;
	sel->role = role;
	psc_replay_use(rec);
	ck_assert_int_eq(psc_fab_query(psc_replay_getinfo, NULL, &answer,
				       &relaxed), 0);
	ck_assert(!relaxed);
	pick = psc_fab_select(answer, sel);
	ck_assert_ptr_nonnull(pick);
	snprintf(name, sizeof(name), "%s", pick->fabric_attr->prov_name);
	fi_freeinfo(answer);
	return name;
}

/*
 * libfabric 2.x, as recorded from 2.6.0 (tests/data/fi_info): net is
 * gone and its code is the tcp provider's own RDM endpoint, which pscomm
 * takes between nodes with net's profile minus the wait set; without
 * those entries, tcp;ofi_rxm. The shm dump serves inside a node.
 */
START_TEST(test_libfabric2_dumps)
{
	struct fi_info *rec = load("tcp-2.6.txt"), **pp = &rec;
	struct psc_select sel;

	ck_assert_int_eq(count(rec), 20);
	ck_assert_str_eq(pick_from(rec, PSC_ROLE_NET, &sel), "tcp");
	ck_assert(sel.caps.sw_match && sel.caps.chunks_wait);
	ck_assert(sel.caps.wait_fd && !sel.caps.wait_set);
	ck_assert_uint_eq(sel.caps.max_msg_size, 256 << 10);
	ck_assert_int_eq(sel.caps.link, PSC_LINK_IP);
	while (*pp) {
		struct fi_info *e = *pp;

		if (strcmp(e->fabric_attr->prov_name, "tcp") != 0) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		e->next = NULL;
		fi_freeinfo(e);
	}
	ck_assert_int_eq(count(rec), 15);
	ck_assert_str_eq(pick_from(rec, PSC_ROLE_NET, &sel), "tcp;ofi_rxm");
	ck_assert(!sel.caps.chunks_wait && !sel.caps.wait_set);
	ck_assert_uint_eq(sel.caps.max_msg_size, 512 << 10);
	fi_freeinfo(rec);

	rec = load("shm-2.6.txt");
	ck_assert_int_eq(count(rec), 2);
	ck_assert_str_eq(pick_from(rec, PSC_ROLE_ANY, &sel), "shm");
	ck_assert_int_eq(sel.caps.link, PSC_LINK_SHM);
	fi_freeinfo(rec);
}
END_TEST

/*
 * A fallback skips the providers ranked before min_rank (those that
 * failed to open): net first, then tcp;ofi_rxm past net, then nothing.
 * Other roles ignore it.
 */
START_TEST(test_min_rank)
{
	struct fi_info *list = NULL;
	struct psc_select sel;
	char err[256];
	int net = psc_provider_net_rank("net");

	ck_assert_int_eq(psc_replay_parse(two_ip_fabrics, &list, err,
					  sizeof(err)), 0);
	ck_assert_int_lt(net, psc_provider_net_rank("tcp;ofi_rxm"));
	memset(&sel, 0, sizeof(sel));
	sel.rank = -1;
	sel.role = PSC_ROLE_NET;
	sel.min_rank = net;
	ck_assert_str_eq(psc_fab_select(list, &sel)->fabric_attr->prov_name,
			 "net");
	sel.min_rank = net + 1;
	ck_assert_str_eq(psc_fab_select(list, &sel)->fabric_attr->prov_name,
			 "tcp;ofi_rxm");
	sel.min_rank = psc_provider_net_rank("tcp;ofi_rxm") + 1;
	ck_assert_ptr_null(psc_fab_select(list, &sel));
	sel.role = PSC_ROLE_ANY;
	ck_assert_ptr_nonnull(psc_fab_select(list, &sel));
	fi_freeinfo(list);
}
END_TEST

/* IP providers follow the bootstrap interface unless FI_TCP_IFACE is set. */
START_TEST(test_ip_iface)
{
	struct fi_info *list = NULL;
	struct psc_iface ifc;
	struct psc_select sel;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifc.addr;
	char err[256];

	ck_assert_int_eq(psc_replay_parse(tcp_two_ifaces, &list, err,
					  sizeof(err)), 0);
	memset(&ifc, 0, sizeof(ifc));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(0x0a000101); /* 10.0.1.1 */
	unsetenv("FI_TCP_IFACE");
	memset(&sel, 0, sizeof(sel));
	sel.iface = &ifc;
	ck_assert_str_eq(psc_fab_select(list, &sel)->domain_attr->name,
			 "eth1");
	ck_assert(sel.caps.ip_addressed);
	setenv("FI_TCP_IFACE", "eth0", 1);
	ck_assert_str_eq(psc_fab_select(list, &sel)->domain_attr->name,
			 "eth0");
	unsetenv("FI_TCP_IFACE");
	sin->sin_addr.s_addr = htonl(0x0a000909);
	ck_assert_ptr_null(psc_fab_select(list, &sel));
	fi_freeinfo(list);
}
END_TEST

/* Parameters shape the selected caps as the endpoint will use them. */
START_TEST(test_params_applied)
{
	struct fi_info *list = load("opx-derived.txt");
	struct psc_params p;
	struct psc_select sel;
	char err[256];

	ck_assert_int_eq(psc_params_load(&p, err, sizeof(err)), 0);
	p.max_msg_size = 8;
	p.sw_match = 1;
	memset(&sel, 0, sizeof(sel));
	sel.params = &p;
	ck_assert_ptr_nonnull(psc_fab_select(list, &sel));
	ck_assert_uint_eq(sel.caps.max_msg_size, 8);
	ck_assert_uint_eq(sel.caps.inject_size, 8);
	/* FI_ASYNC_IOV wins over PS_COMM_SW_MATCH=1. */
	ck_assert(!sel.caps.sw_match);
	fi_freeinfo(list);
}
END_TEST

/* ------------------------------------------------------------ parser */

static const struct {
	const char *text;
	const char *word; /* in the error */
} bad_texts[] = {
	{"fi_info:\n    caps: [ FI_MSG, FI_NOSUCH ]\n", "line 2"},
	{"fi_info:\n    caps: [ FI_MSG, FI_NOSUCH ]\n", "FI_NOSUCH"},
	{"    fi_domain_attr:\n        name: x\n", "before any fi_info"},
	{"    caps: [ FI_MSG ]\n", "before any fi_info"},
	{"fi_info:\n    fi_ep_attr:\n        max_msg_size: 12x\n", "12x"},
	{"fi_info:\n    fi_ep_attr:\n        type: FI_EP_BOGUS\n", "BOGUS"},
	{"fi_info:\n    no colon here\n", "line 2"},
	{"# only a comment\n", "no fi_info"},
	{"fi_info:\n    fi_fabric_attr:\n        api_version: one\n",
	 "version"},
	/* sscanf("%u.%u") took these. */
	{"fi_info:\n    fi_fabric_attr:\n        api_version: 1.17x\n",
	 "bad version \"1.17x\""},
	{"fi_info:\n    fi_fabric_attr:\n        prov_version: 65536.0\n",
	 "bad version"},
	{"fi_info:\n    fi_fabric_attr:\n        prov_version: -1.0\n",
	 "bad version"},
	/* Found by tests/fuzz/fuzz_replay: the first address leaked. */
	{"fi_info:\n    addr_format: FI_SOCKADDR_IN\n"
	 "    src_addr: fi_sockaddr_in://10.0.0.1:5\n"
	 "    src_addr: fi_sockaddr_in://10.0.0.2:6\n", "second address"},
	/* fi_dupinfo would copy 4096 bytes of a 16-byte address. */
	{"fi_info:\n    addr_format: FI_SOCKADDR_IN\n"
	 "    src_addr: fi_sockaddr_in://10.0.0.1:5\n"
	 "    src_addrlen: 4096\n", "src_addrlen after src_addr"},
	{"fi_info:\n    addr_format: FI_ADDR_PSMX2\n"
	 "    src_addrlen: 1099511627776\n", "longer than any address"},
};

START_TEST(test_parse_errors)
{
	struct fi_info *list = (struct fi_info *)1;
	char err[256] = "";

	ck_assert_int_lt(psc_replay_parse(bad_texts[_i].text, &list, err,
					  sizeof(err)), 0);
	ck_assert_ptr_null(list);
	ck_assert_msg(strstr(err, bad_texts[_i].word) != NULL,
		      "error \"%s\" lacks \"%s\"", err, bad_texts[_i].word);
}
END_TEST

/* Partial published dumps: one parses (quote marker), one cannot. */
START_TEST(test_parse_partials)
{
	char path[512], err[256] = "";
	struct fi_info *list = NULL;

	list = load("psm2-partial.txt");
	ck_assert_int_eq(count(list), 1);
	ck_assert_uint_eq(list->mode, FI_CONTEXT);
	ck_assert_uint_eq(list->tx_attr->inject_size, 64);
	ck_assert_uint_eq(list->tx_attr->iov_limit, 13);
	ck_assert_int_eq(list->addr_format, FI_ADDR_PSMX2);
	fi_freeinfo(list);
	snprintf(path, sizeof(path), "%s/verbs-rxm-mlx4-partial.txt",
		 PSC_FI_INFO_DIR);
	ck_assert_int_lt(psc_replay_load(path, &list, err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "line 1") != NULL, "%s", err);
}
END_TEST

/* Parsed values land in the right fields, NIC included, and survive dup. */
START_TEST(test_parse_fields)
{
	struct fi_info *l = load("verbs-ib-mlx5.txt"), *d;

	ck_assert_uint_eq(l->ep_attr->mem_tag_format, 0xaaaaaaaaaaaaaaaaULL);
	ck_assert_int_eq(l->ep_attr->protocol, FI_PROTO_RXD);
	ck_assert_int_eq(l->domain_attr->data_progress, FI_PROGRESS_MANUAL);
	ck_assert_int_eq(l->domain_attr->threading, FI_THREAD_SAFE);
	ck_assert_uint_eq(l->domain_attr->cq_data_size, 8);
	ck_assert_uint_eq(l->fabric_attr->prov_version, FI_VERSION(116, 0));
	ck_assert_uint_eq(l->tx_attr->msg_order & FI_ORDER_SAS, FI_ORDER_SAS);
	ck_assert_ptr_nonnull(l->nic);
	ck_assert_str_eq(l->nic->device_attr->name, "mlx5_0");
	ck_assert_str_eq(l->nic->device_attr->firmware, "20.33.1048");
	ck_assert_ptr_null(l->nic->device_attr->driver);
	ck_assert_str_eq(l->nic->link_attr->network_type, "InfiniBand");
	ck_assert_uint_eq(l->nic->link_attr->mtu, 4096);
	d = fi_dupinfo(l);
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(d->nic);
	ck_assert_ptr_ne(d->nic, l->nic);
	ck_assert_str_eq(d->nic->device_attr->firmware, "20.33.1048");
	fi_freeinfo(d);
	fi_freeinfo(l);
	/* libfabric 2.x: one "progress" sets both; PCI address. */
	l = load("efa-rdm-lequn.txt");
	ck_assert_int_eq(l->domain_attr->data_progress, FI_PROGRESS_AUTO);
	ck_assert_int_eq(l->domain_attr->control_progress, FI_PROGRESS_AUTO);
	ck_assert_int_eq(l->nic->bus_attr->bus_type, FI_BUS_PCI);
	ck_assert_uint_eq(l->nic->bus_attr->attr.pci.bus_id, 79);
	ck_assert_int_eq(l->domain_attr->mr_mode,
			 FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |
				 FI_MR_HMEM);
	fi_freeinfo(l);
}
END_TEST

/* --------------------------------------------------------- preflight */

START_TEST(test_job_uuid)
{
	char a[40], b[40], c[40];

	setenv("PS_COMM_ROOT", "10.0.0.1:29500", 1);
	unsetenv("SLURM_JOB_ID");
	psc_preflight_job_uuid(NULL, a, sizeof(a));
	psc_preflight_job_uuid(NULL, b, sizeof(b));
	ck_assert_str_eq(a, b);
	ck_assert_uint_eq(strlen(a), 36);
	ck_assert(a[8] == '-' && a[13] == '-' && a[18] == '-' &&
		  a[23] == '-');
	setenv("PS_COMM_ROOT", "10.0.0.1:29501", 1);
	psc_preflight_job_uuid(NULL, c, sizeof(c));
	ck_assert_str_ne(a, c);
	setenv("PS_COMM_ROOT", "10.0.0.1:29500", 1);
	setenv("SLURM_JOB_ID", "4242", 1);
	psc_preflight_job_uuid(NULL, c, sizeof(c));
	ck_assert_str_ne(a, c);
	unsetenv("SLURM_JOB_ID");
}
END_TEST

/* The variables are set before fi_getinfo, and a user's value wins. */
START_TEST(test_preflight_env)
{
	char want[40];

	unsetenv("FI_PSM2_UUID");
	unsetenv("FI_EFA_FORK_SAFE");
	setenv("FI_PSM3_UUID", "11111111-2222-3333-4444-555555555555", 1);
	setenv("RDMAV_FORK_SAFE", "0", 1);
	psc_preflight_job_uuid(NULL, want, sizeof(want));
	psc_preflight_env(NULL, -1, 0);
	ck_assert_ptr_nonnull(getenv("FI_PSM2_UUID"));
	ck_assert_str_eq(getenv("FI_PSM2_UUID"), want);
	ck_assert_str_eq(getenv("FI_OPX_UUID"), want);
	ck_assert_str_eq(getenv("FI_PSM3_UUID"),
			 "11111111-2222-3333-4444-555555555555");
	ck_assert_str_eq(getenv("FI_EFA_FORK_SAFE"), "1");
	ck_assert_str_eq(getenv("RDMAV_FORK_SAFE"), "0");
}
END_TEST

/*
 * FI_UNIVERSE_SIZE follows the job's size, at most libfabric's default
 * of 1024, and a user's value wins. Once per process: each case runs in
 * a process of its own (Check forks).
 */
static const struct {
	const char *user; /* FI_UNIVERSE_SIZE before, or NULL */
	int ranks;
	const char *want; /* after, or NULL: unset */
	size_t universe;
	enum psc_universe_from from;
} universes[] = {
	{NULL, 8, "8", 8, PSC_UNIVERSE_JOB},
	{NULL, 5000, "1024", 1024, PSC_UNIVERSE_JOB},
	{NULL, 0, NULL, 1024, PSC_UNIVERSE_DEFAULT},
	{"64", 8, "64", 64, PSC_UNIVERSE_USER},
};

START_TEST(test_universe)
{
	enum psc_universe_from from;
	const char *fork = getenv("CK_FORK");

	/* Without a process per test, an earlier test decided already. */
	if (fork && strcmp(fork, "no") == 0)
		return;
	if (universes[_i].user)
		setenv("FI_UNIVERSE_SIZE", universes[_i].user, 1);
	else
		unsetenv("FI_UNIVERSE_SIZE");
	psc_preflight_env(NULL, -1, universes[_i].ranks);
	if (universes[_i].want)
		ck_assert_str_eq(getenv("FI_UNIVERSE_SIZE"),
				 universes[_i].want);
	else
		ck_assert_ptr_null(getenv("FI_UNIVERSE_SIZE"));
	ck_assert_uint_eq(psc_preflight_universe(&from),
			  universes[_i].universe);
	ck_assert_int_eq(from, universes[_i].from);
	unsetenv("FI_UNIVERSE_SIZE");
}
END_TEST

/* ------------------------------------------------------- RoCE GIDs */

/*
 * A fake sysfs (and configfs) tree of one RoCE device, rxe0 on eth0 with
 * 10.0.0.5, laid out as the kernel lists GIDs: link-local v1 and v2, the
 * address's v1 and v2, then an empty entry.
 */
static char gid_root[64];

static void put_file(const char *rel, const char *text)
{
	char path[256], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", gid_root, rel);
	for (slash = strchr(path + strlen(gid_root) + 1, '/'); slash;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0700);
		*slash = '/';
	}
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%s\n", text);
	fclose(f);
}

static void put_gid(int idx, const char *gid, const char *type)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "sys/class/infiniband/rxe0/ports/1/gids/%d",
		 idx);
	put_file(rel, gid);
	if (!type)
		return;
	snprintf(rel, sizeof(rel), "sys/class/infiniband/rxe0/ports/1/"
		 "gid_attrs/types/%d", idx);
	put_file(rel, type);
	snprintf(rel, sizeof(rel), "sys/class/infiniband/rxe0/ports/1/"
		 "gid_attrs/ndevs/%d", idx);
	put_file(rel, "eth0");
}

#define LL_GID "fe80:0000:0000:0000:5054:00ff:fe12:3456"
#define V4_GID "0000:0000:0000:0000:0000:ffff:0a00:0005"
#define NO_GID "0000:0000:0000:0000:0000:0000:0000:0000"

static void gid_tree(bool with_v4)
{
	snprintf(gid_root, sizeof(gid_root), "/tmp/psc-gid-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(gid_root));
	put_gid(0, LL_GID, "IB/RoCE v1");
	put_gid(1, LL_GID, "RoCE v2");
	if (with_v4) {
		put_gid(2, V4_GID, "IB/RoCE v1");
		put_gid(3, V4_GID, "RoCE v2");
	}
	put_gid(4, NO_GID, NULL);
}

static void gid_tree_remove(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", gid_root);
	ck_assert_int_eq(system(cmd), 0);
}

static struct sockaddr_in ipv4(const char *ip)
{
	struct sockaddr_in in;

	memset(&in, 0, sizeof(in));
	in.sin_family = AF_INET;
	ck_assert_int_eq(inet_pton(AF_INET, ip, &in.sin_addr), 1);
	return in;
}

/*
 * rdma_cm (verbs;ofi_rxm) connects from the endpoint's address with its
 * RoCE v2 GID: index 3, no warning, whatever FI_VERBS_GID_IDX says; an
 * address the device has no GID of is a problem; a configfs default of
 * RoCE v1 picks index 2.
 */
START_TEST(test_roce_gid_cm)
{
	const struct psc_provider_ops *verbs = psc_provider_lookup("verbs");
	struct sockaddr_in in = ipv4("10.0.0.5");
	struct psc_roce_gid g;

	gid_tree(true);
	unsetenv("FI_VERBS_GID_IDX");
	psc_preflight_roce_gid(gid_root, "rxe0", (struct sockaddr *)&in, true,
			       verbs, &g);
	ck_assert_int_eq(g.index, 3);
	ck_assert_int_eq(g.level, PSC_GID_OK);
	setenv("FI_VERBS_GID_IDX", "1", 1);
	psc_preflight_roce_gid(gid_root, "rxe0", (struct sockaddr *)&in, true,
			       verbs, &g);
	ck_assert_int_eq(g.index, 3);
	ck_assert_int_eq(g.level, PSC_GID_OK);
	unsetenv("FI_VERBS_GID_IDX");
	in = ipv4("10.0.0.9");
	psc_preflight_roce_gid(gid_root, "rxe0", (struct sockaddr *)&in, true,
			       verbs, &g);
	ck_assert_int_eq(g.index, -1);
	ck_assert_int_eq(g.level, PSC_GID_PROBLEM);
	ck_assert_msg(strstr(g.why, "10.0.0.9"), "%s", g.why);
	in = ipv4("10.0.0.5");
	put_file("sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_mode",
		 "IB/RoCE v1");
	psc_preflight_roce_gid(gid_root, "rxe0", (struct sockaddr *)&in, true,
			       verbs, &g);
	ck_assert_int_eq(g.index, 2);
	ck_assert_int_eq(g.level, PSC_GID_OK);
	gid_tree_remove();
	/* Only the link-local GIDs: the address has none. */
	gid_tree(false);
	psc_preflight_roce_gid(gid_root, "rxe0", (struct sockaddr *)&in, true,
			       verbs, &g);
	ck_assert_int_eq(g.level, PSC_GID_PROBLEM);
	gid_tree_remove();
}
END_TEST

/*
 * Datagram endpoints (verbs;ofi_rxd) use FI_VERBS_GID_IDX, 0 by default:
 * link-local RoCE v1 there is advice to use index 3; a chosen index is
 * the user's; an empty one is a problem; nothing readable, no finding.
 */
START_TEST(test_roce_gid_index)
{
	const struct psc_provider_ops *verbs = psc_provider_lookup("verbs");
	struct psc_roce_gid g;

	gid_tree(true);
	unsetenv("FI_VERBS_GID_IDX");
	psc_preflight_roce_gid(gid_root, "rxe0", NULL, false,
			       verbs, &g);
	ck_assert_int_eq(g.index, 0);
	ck_assert_int_eq(g.level, PSC_GID_ADVICE);
	ck_assert_int_eq(g.suggest, 3);
	setenv("FI_VERBS_GID_IDX", "3", 1);
	psc_preflight_roce_gid(gid_root, "rxe0", NULL, false,
			       verbs, &g);
	ck_assert_int_eq(g.index, 3);
	ck_assert_int_eq(g.level, PSC_GID_OK);
	setenv("FI_VERBS_GID_IDX", "0", 1);
	psc_preflight_roce_gid(gid_root, "rxe0", NULL, false,
			       verbs, &g);
	ck_assert_int_eq(g.index, 0);
	ck_assert_int_eq(g.level, PSC_GID_OK);
	setenv("FI_VERBS_GID_IDX", "4", 1);
	psc_preflight_roce_gid(gid_root, "rxe0", NULL, false,
			       verbs, &g);
	ck_assert_int_eq(g.index, -1);
	ck_assert_int_eq(g.level, PSC_GID_PROBLEM);
	ck_assert_int_eq(g.suggest, 3);
	unsetenv("FI_VERBS_GID_IDX");
	gid_tree_remove();
	psc_preflight_roce_gid(gid_root, "rxe0", NULL, false,
			       verbs, &g);
	ck_assert_int_eq(g.index, -1);
	ck_assert_int_eq(g.level, PSC_GID_OK);
}
END_TEST

/* The verbs profile tells connections (rdma_cm) from datagrams. */
START_TEST(test_roce_gid_caps)
{
	struct psc_caps c;
	struct fi_info *i = fi_allocinfo();

	ck_assert_ptr_nonnull(i);
	i->fabric_attr->prov_name = strdup("verbs;ofi_rxm");
	psc_provider_lookup("verbs")->derive_caps(i, &c);
	ck_assert(c.gid_from_addr);
	free(i->fabric_attr->prov_name);
	i->fabric_attr->prov_name = strdup("verbs;ofi_rxd");
	psc_provider_lookup("verbs")->derive_caps(i, &c);
	ck_assert(!c.gid_from_addr);
	fi_freeinfo(i);
}
END_TEST

static Suite *replay_suite(void)
{
	Suite *s = suite_create("replay");
	TCase *tc = tcase_create("files");

	tcase_add_loop_test(tc, test_replay_file, 0,
			    (int)PSC_ARRAY_SIZE(expects));
	tcase_add_test(tc, test_replay_mr_duties);
	tcase_add_test(tc, test_efa_prefix_refused);
	suite_add_tcase(s, tc);

	tc = tcase_create("hints");
	tcase_add_loop_test(tc, test_hints, 0, (int)PSC_ARRAY_SIZE(families));
	suite_add_tcase(s, tc);

	tc = tcase_create("select");
	tcase_add_test(tc, test_nic_locality);
	tcase_add_test(tc, test_first_usable_fixes_provider);
	tcase_add_test(tc, test_ip_iface);
	tcase_add_test(tc, test_roles);
	tcase_add_test(tc, test_net_preferred);
	tcase_add_test(tc, test_libfabric2_dumps);
	tcase_add_test(tc, test_min_rank);
	tcase_add_test(tc, test_params_applied);
	suite_add_tcase(s, tc);

	tc = tcase_create("parser");
	tcase_add_loop_test(tc, test_parse_errors, 0,
			    (int)PSC_ARRAY_SIZE(bad_texts));
	tcase_add_test(tc, test_parse_partials);
	tcase_add_test(tc, test_parse_fields);
	suite_add_tcase(s, tc);

	tc = tcase_create("preflight");
	tcase_add_test(tc, test_job_uuid);
	tcase_add_test(tc, test_preflight_env);
	tcase_add_loop_test(tc, test_universe, 0,
			    (int)PSC_ARRAY_SIZE(universes));
	tcase_add_test(tc, test_roce_gid_cm);
	tcase_add_test(tc, test_roce_gid_index);
	tcase_add_test(tc, test_roce_gid_caps);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(replay_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
