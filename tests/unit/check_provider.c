/*
 * Unit tests for the provider layer (providers/): profile lookup by family
 * prefix with the generic fallback, psc_provider_is, tag bits from
 * mem_tag_format, and the generic accept and derive_caps judged on fi_info
 * entries built by hand with fi_allocinfo(), together with the quirks the
 * tcp, shm, sockets and udp profiles add on top.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include "p2p/tag.h"
#include "provider.h"
#include "ps_comm.h"
#include "util/util.h"

/* ------------------------------------------------------------- lookup */

static const struct {
	const char *prov;
	const char *profile;
} lookups[] = {
	{"tcp;ofi_rxm", "tcp"},	  {"tcp", "tcp"},
	{"shm", "shm"},		  {"udp;ofi_rxd", "udp"},
	{"udp", "udp"},		  {"sockets", "sockets"},
	{"verbs;ofi_rxm", "verbs"}, {"nosuch", "generic"},
	{"tcpx", "generic"},	  {"ofi_rxm", "generic"},
	{"", "generic"},	  {"psm2", "psm2"},
	{"psm3", "psm3"},	  {"opx", "opx"},
	{"efa", "efa"},		  {"verbs;ofi_rxd", "verbs"},
	{"psm", "generic"},
};

START_TEST(test_lookup)
{
	const struct psc_provider_ops *o =
		psc_provider_lookup(lookups[_i].prov);

	ck_assert_ptr_nonnull(o);
	ck_assert_msg(strcmp(o->name, lookups[_i].profile) == 0,
		      "\"%s\" gave profile %s, expected %s", lookups[_i].prov,
		      o->name, lookups[_i].profile);
	ck_assert_uint_eq(o->size, sizeof(struct psc_provider_ops));
	/* The contract: the returned table has every member set. */
	ck_assert_ptr_nonnull(o->accept);
	ck_assert_ptr_nonnull(o->derive_caps);
	ck_assert_ptr_nonnull(o->describe_cq_error);
}
END_TEST

/*
 * provider.h promises "The returned table has every member set", so a
 * caller may call fixup_hints unconditionally.
 */
START_TEST(test_lookup_fixup_hints)
{
	for (size_t i = 0; i < PSC_ARRAY_SIZE(lookups); i++) {
		const struct psc_provider_ops *o =
			psc_provider_lookup(lookups[i].prov);

		ck_assert_msg(o->fixup_hints != NULL,
			      "lookup(\"%s\"): profile %s has fixup_hints "
			      "NULL", lookups[i].prov, o->name);
	}
}
END_TEST

START_TEST(test_lookup_null)
{
	ck_assert_ptr_eq(psc_provider_lookup(NULL), &psc_generic_ops);
	ck_assert_ptr_eq(psc_provider_lookup("nosuch"), &psc_generic_ops);
	/* Lookups are stable. */
	ck_assert_ptr_eq(psc_provider_lookup("tcp;ofi_rxm"),
			 psc_provider_lookup("tcp"));
}
END_TEST

static const struct {
	const char *prov;
	const char *family;
	bool is;
} families[] = {
	{"tcp;ofi_rxm", "tcp", true},	{"tcp", "tcp", true},
	{"tcpx", "tcp", false},		{"udp;ofi_rxd", "udp", true},
	{"verbs;ofi_rxm", "verbs", true}, {"verbs;ofi_rxm", "ofi_rxm", false},
	{"tc", "tcp", false},		{"", "tcp", false},
	{NULL, "tcp", false},		{"shm", "sockets", false},
};

START_TEST(test_provider_is)
{
	ck_assert_msg(psc_provider_is(families[_i].prov,
				      families[_i].family) == families[_i].is,
		      "psc_provider_is(\"%s\", \"%s\")",
		      families[_i].prov ? families[_i].prov : "(null)",
		      families[_i].family);
}
END_TEST

START_TEST(test_tag_bits)
{
	ck_assert_uint_eq(psc_tag_bits_from_format(0), 64);
	ck_assert_uint_eq(psc_tag_bits_from_format(0xAAAAAAAAAAAAAAAAULL), 64);
	ck_assert_uint_eq(psc_tag_bits_from_format(0x0AAAAAAAAAAAAAAAULL), 60);
	ck_assert_uint_eq(psc_tag_bits_from_format(0x0000FFFFFFFFFFFFULL), 48);
	ck_assert_uint_eq(psc_tag_bits_from_format(0x000000FFFFFFFFFFULL), 40);
	ck_assert_uint_eq(psc_tag_bits_from_format(1), 1);
	ck_assert_uint_eq(psc_tag_bits_from_format(1ULL << 50), 51);
}
END_TEST

/* ------------------------------------------------------ accept, caps */

/* A sane tcp;ofi_rxm-like entry; free with fi_freeinfo(). */
static struct fi_info *sane_info(const char *prov)
{
	struct fi_info *i = fi_allocinfo();

	ck_assert_ptr_nonnull(i);
	i->caps = FI_TAGGED | FI_MSG | FI_DIRECTED_RECV;
	i->mode = FI_CONTEXT;
	i->ep_attr->type = FI_EP_RDM;
	i->ep_attr->mem_tag_format = 0xAAAAAAAAAAAAAAAAULL;
	i->ep_attr->max_msg_size = 1ULL << 30;
	i->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	i->domain_attr->cq_data_size = 8;
	i->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	i->tx_attr->inject_size = 64;
	i->tx_attr->msg_order = FI_ORDER_SAS;
	i->tx_attr->size = 1024;
	i->rx_attr->msg_order = FI_ORDER_SAS;
	i->rx_attr->size = 512;
	i->fabric_attr->prov_name = strdup(prov);
	return i;
}

START_TEST(test_accept_sane)
{
	struct fi_info *i = sane_info("tcp;ofi_rxm");
	char why[256] = "stale";

	ck_assert(psc_generic_accept(i, why, sizeof(why)));
	ck_assert_str_eq(why, "");
	i->domain_attr->mr_mode = 0;
	ck_assert(psc_generic_accept(i, why, sizeof(why)));
	i->domain_attr->mr_mode = FI_MR_ENDPOINT | FI_MR_LOCAL;
	ck_assert(psc_generic_accept(i, why, sizeof(why)));
	/* Every profile judges the entry the same way. */
	ck_assert(psc_provider_lookup("tcp;ofi_rxm")->accept(i, why,
							     sizeof(why)));
	ck_assert(psc_provider_lookup("udp;ofi_rxd")->accept(i, why,
							     sizeof(why)));
	fi_freeinfo(i);
}
END_TEST

/* One way to spoil the sane entry, and a word the reason must contain. */
static void spoil(struct fi_info *i, int how)
{
	switch (how) {
	case 0:
		i->caps = FI_MSG;
		break;
	case 1:
		i->ep_attr->type = FI_EP_MSG;
		break;
	case 2:
		i->ep_attr->mem_tag_format = 0x000000FFFFFFFFFFULL; /* 40 */
		break;
	case 3:
		i->domain_attr->mr_mode |= FI_MR_RAW;
		break;
	case 4:
		i->domain_attr->mr_mode |= FI_MR_RMA_EVENT;
		break;
	case 5:
		i->ep_attr->type = FI_EP_DGRAM;
		break;
	case 6:
		i->ep_attr->mem_tag_format = (1ULL << 49) | 1; /* 50 bits */
		break;
	}
}

static const char *const spoil_words[] = {
	"FI_TAGGED", "FI_EP_RDM", "40", "mr_mode", "mr_mode", "FI_EP_RDM",
	"50",
};

START_TEST(test_accept_refuses)
{
	struct fi_info *i = sane_info("tcp;ofi_rxm");
	char why[256] = "";

	spoil(i, _i);
	ck_assert(!psc_generic_accept(i, why, sizeof(why)));
	ck_assert_msg(strstr(why, spoil_words[_i]) != NULL,
		      "reason \"%s\" lacks \"%s\"", why, spoil_words[_i]);
	fi_freeinfo(i);
}
END_TEST

/* accept() takes exactly the tag widths that a tag layout fits in. */
START_TEST(test_accept_matches_layout)
{
	struct fi_info *i = sane_info("tcp;ofi_rxm");
	unsigned bits = (unsigned)_i;
	uint64_t fmt = bits == 64 ? ~0ULL : (1ULL << bits) - 1;
	struct psc_tag_layout l;
	char why[256];

	i->ep_attr->mem_tag_format = fmt;
	ck_assert_msg(psc_generic_accept(i, why, sizeof(why)) ==
			      (psc_tag_layout_init(&l, fmt) == 0),
		      "%u bits: accept and tag layout disagree", bits);
	fi_freeinfo(i);
}
END_TEST

/*
 * On iWARP, verbs;ofi_rxm messages are split at rxm's eager size (less
 * pscomm's header room), so rxm never posts an RDMA read (siw completes a
 * later send first, and libfabric's verbs then corrupts its send list)
 * nor sends a segmented message (rxm_close_conn loops for ever on a half
 * received one when the peer's connection shuts down); RoCE keeps the
 * provider's limit. A new world on iWARP connects its ranks pairwise
 * first (connect_race); on RoCE and InfiniBand rxm connects on demand.
 */
START_TEST(test_verbs_iwarp_eager)
{
	const struct psc_provider_ops *ops = psc_provider_lookup("verbs;ofi_rxm");
	struct fi_info *i = sane_info("verbs;ofi_rxm");
	struct psc_caps c;

	unsetenv("FI_OFI_RXM_BUFFER_SIZE");
	unsetenv("FI_OFI_RXM_SAR_LIMIT");
	i->fabric_attr->name = strdup("iWARP-10.77.0.0/24");
	ops->derive_caps(i, &c);
	ck_assert_int_eq(c.link, PSC_LINK_IWARP);
	ck_assert_uint_eq(c.max_msg_size, 16384 - 64);
	ck_assert_uint_eq(c.cq_data_size, 0);
	/* Connections come up at one end only: a new world wires first. */
	ck_assert(c.connect_race);
	setenv("FI_OFI_RXM_SAR_LIMIT", "262144", 1);
	ops->derive_caps(i, &c);
	ck_assert_uint_eq(c.max_msg_size, 16384 - 64);
	setenv("FI_OFI_RXM_BUFFER_SIZE", "100000", 1);
	ops->derive_caps(i, &c);
	ck_assert_uint_eq(c.max_msg_size, 100000 - 64);
	unsetenv("FI_OFI_RXM_BUFFER_SIZE");
	unsetenv("FI_OFI_RXM_SAR_LIMIT");
	free(i->fabric_attr->name);
	i->fabric_attr->name = strdup("IB-0xfe80000000000000");
	ops->derive_caps(i, &c);
	ck_assert_uint_eq(c.max_msg_size, 1ULL << 30);
	ck_assert(!c.connect_race);
	fi_freeinfo(i);
}
END_TEST

/*
 * The rxm families (tcp;ofi_rxm, verbs;ofi_rxm) ask for rxm's buffer size
 * (entry 0, the same for both, so the order the families run in does not
 * matter); verbs then asks for
 * FI_OFI_RXM_SAR_LIMIT at rxm's eager limit (segmentation off:
 * rxm_close_conn loops for ever on a half-received segmented message),
 * following FI_OFI_RXM_BUFFER_SIZE as rxm reads it; the other families
 * ask for nothing.
 */
static void sar_limit_is(const struct psc_provider_ops *ops, const char *v)
{
	const char *name = NULL, *why = NULL;
	char value[64];

	ck_assert(ops->env_default(1, &name, value, sizeof(value), &why));
	ck_assert_str_eq(name, "FI_OFI_RXM_SAR_LIMIT");
	ck_assert_str_eq(value, v);
	ck_assert_ptr_nonnull(why);
}

START_TEST(test_verbs_env_default)
{
	const struct psc_provider_ops *ops = psc_provider_lookup("verbs;ofi_rxm");
	const struct psc_provider_ops *tcp = psc_provider_lookup("tcp;ofi_rxm");
	const char *name = NULL, *why = NULL, *n2 = NULL;
	char value[64], v2[64];

	unsetenv("FI_OFI_RXM_BUFFER_SIZE");
	ck_assert_ptr_nonnull(ops->env_default);
	ck_assert_ptr_nonnull(tcp->env_default);
	ck_assert(ops->env_default(0, &name, value, sizeof(value), &why));
	ck_assert_str_eq(name, "FI_OFI_RXM_BUFFER_SIZE");
	ck_assert_str_eq(value, "8448");
	ck_assert(tcp->env_default(0, &n2, v2, sizeof(v2), &why));
	ck_assert_str_eq(n2, name);
	ck_assert_str_eq(v2, value);
	ck_assert(!tcp->env_default(1, &n2, v2, sizeof(v2), &why));
	/* Unset (the user's choice is kept by the caller): rxm's 16 KiB. */
	sar_limit_is(ops, "16384");
	ck_assert(!ops->env_default(2, &name, value, sizeof(value), &why));
	setenv("FI_OFI_RXM_BUFFER_SIZE", "8448", 1);
	sar_limit_is(ops, "8448");
	setenv("FI_OFI_RXM_BUFFER_SIZE", "65536", 1);
	sar_limit_is(ops, "65536");
	/* Read as libfabric reads sizes (strtol base 0): hex and octal. */
	setenv("FI_OFI_RXM_BUFFER_SIZE", "0x10000", 1);
	sar_limit_is(ops, "65536");
	setenv("FI_OFI_RXM_BUFFER_SIZE", "040000", 1);
	sar_limit_is(ops, "16384");
	unsetenv("FI_OFI_RXM_BUFFER_SIZE");
	ck_assert_ptr_null(psc_provider_lookup("shm")->env_default);
	ck_assert_ptr_null(psc_provider_lookup("net")->env_default);
}
END_TEST

START_TEST(test_generic_caps)
{
	struct fi_info *i = sane_info("verbs;ofi_rxm");
	struct psc_caps c;

	memset(&c, 0xff, sizeof(c));
	psc_provider_lookup("verbs;ofi_rxm")->derive_caps(i, &c);
	ck_assert_uint_eq(c.tag_bits, 64);
	ck_assert_uint_eq(c.mem_tag_format, 0xAAAAAAAAAAAAAAAAULL);
	ck_assert(c.mr_local);
	ck_assert(!c.mr_endpoint);
	ck_assert(c.mr_prov_key);
	ck_assert_uint_eq(c.max_msg_size, 1ULL << 30);
	ck_assert_uint_eq(c.inject_size, 64);
	ck_assert(c.directed_recv);
	ck_assert_uint_eq(c.cq_data_size, 8);
	ck_assert_uint_eq(c.mode, FI_CONTEXT);
	ck_assert(c.ordered_sas);
	ck_assert(c.manual_progress);
	ck_assert(!c.wait_fd);
	ck_assert(!c.wait_sread);
	ck_assert(!c.len_in_cq_data);
	ck_assert(!c.ip_addressed);
	ck_assert_uint_eq(c.tx_size, 1024);
	ck_assert_uint_eq(c.rx_size, 512);

	/* Ordering needs both sides; progress and MR bits follow the entry. */
	i->rx_attr->msg_order = 0;
	i->domain_attr->data_progress = FI_PROGRESS_AUTO;
	i->domain_attr->mr_mode = FI_MR_ENDPOINT;
	i->caps &= ~FI_DIRECTED_RECV;
	i->ep_attr->mem_tag_format = 0x0AAAAAAAAAAAAAAAULL;
	psc_generic_derive_caps(i, &c);
	ck_assert(!c.ordered_sas);
	ck_assert(!c.manual_progress);
	ck_assert(!c.mr_local);
	ck_assert(c.mr_endpoint);
	ck_assert(!c.mr_prov_key);
	ck_assert(!c.directed_recv);
	ck_assert_uint_eq(c.tag_bits, 60);
	fi_freeinfo(i);
}
END_TEST

static void derive(const char *prov, struct fi_info *i, struct psc_caps *c)
{
	memset(c, 0xff, sizeof(*c));
	psc_provider_lookup(prov)->derive_caps(i, c);
}

START_TEST(test_udp_caps)
{
	struct fi_info *i = sane_info("udp;ofi_rxd");
	struct psc_caps c;

	i->ep_attr->max_msg_size = (size_t)1 << 40;
	i->domain_attr->cq_data_size = 8;
	derive("udp;ofi_rxd", i, &c);
	ck_assert(c.len_in_cq_data);
	ck_assert_uint_eq(c.max_msg_size, UINT32_MAX);
	ck_assert(c.wait_sread);
	ck_assert(!c.wait_fd);
	ck_assert(c.ip_addressed);

	i->domain_attr->cq_data_size = 4;
	derive("udp;ofi_rxd", i, &c);
	ck_assert(c.len_in_cq_data);
	ck_assert_uint_eq(c.max_msg_size, UINT32_MAX);

	/* A small max_msg_size is kept. */
	i->ep_attr->max_msg_size = 65536;
	derive("udp;ofi_rxd", i, &c);
	ck_assert_uint_eq(c.max_msg_size, 65536);

	/* Without room for the length in CQ data, nothing is capped. */
	i->ep_attr->max_msg_size = (size_t)1 << 40;
	i->domain_attr->cq_data_size = 2;
	derive("udp;ofi_rxd", i, &c);
	ck_assert(!c.len_in_cq_data);
	ck_assert_uint_eq(c.max_msg_size, (size_t)1 << 40);
	fi_freeinfo(i);
}
END_TEST

/*
 * Chunk sizes: tcp;ofi_rxm's are 512 KiB and net's 256 KiB at any message
 * size; a provider without a cap sends its own max_msg_size.
 */
START_TEST(test_chunk_sizes)
{
	struct fi_info *i = sane_info("tcp;ofi_rxm");
	struct psc_caps c;

	i->ep_attr->max_msg_size = (size_t)1 << 40;
	derive("tcp;ofi_rxm", i, &c);
	ck_assert_uint_eq(c.max_msg_size, 512 << 10);
	derive("net", i, &c);
	ck_assert_uint_eq(c.max_msg_size, 256 << 10);
	derive("sockets", i, &c);
	ck_assert_uint_eq(c.max_msg_size, (size_t)1 << 40);
	fi_freeinfo(i);
}
END_TEST

/*
 * libfabric's native RDM over TCP: net (1.17) and, from 1.18, the tcp
 * provider's own "tcp" entries get the same profile (software matching,
 * chunks that wait for the go-ahead, 256 KiB chunks, 64 KiB eager);
 * only 1.17's net needs a wait set, since its fi_trywait never clears
 * the CQ's fd. "tcp;ofi_rxm" keeps rxm's profile.
 */
START_TEST(test_native_tcp_caps)
{
	const char *const native[] = {"net", "tcp"};
	struct psc_caps c;

	for (size_t k = 0; k < 2; k++) {
		struct fi_info *i = sane_info(native[k]);

		i->ep_attr->max_msg_size = (size_t)1 << 40;
		derive(native[k], i, &c);
		ck_assert(c.sw_match && c.chunks_wait && c.rx_unbounded);
		ck_assert(c.resend_on_reset && c.manual_progress);
		ck_assert(!c.same_eager_limit);
		ck_assert_uint_eq(c.max_msg_size, 256 << 10);
		ck_assert_uint_eq(c.sw_eager, 65536);
		ck_assert(c.wait_fd);
		ck_assert(c.wait_set == (k == 0));
		fi_freeinfo(i);
	}
	struct fi_info *i = sane_info("tcp;ofi_rxm");

	i->ep_attr->max_msg_size = (size_t)1 << 40;
	derive("tcp;ofi_rxm", i, &c);
	ck_assert(c.same_eager_limit && !c.chunks_wait && !c.wait_set);
	ck_assert_uint_eq(c.max_msg_size, 512 << 10);
	fi_freeinfo(i);
}
END_TEST

START_TEST(test_tcp_shm_sockets_caps)
{
	struct fi_info *i = sane_info("tcp;ofi_rxm");
	struct psc_caps c;

	i->ep_attr->max_msg_size = (size_t)1 << 40;
	derive("tcp;ofi_rxm", i, &c);
	ck_assert(c.wait_fd);
	ck_assert(c.ip_addressed);
	ck_assert(!c.wait_sread);
	ck_assert(!c.len_in_cq_data);
	/* rxm's limit is far above any message: chunks of 512 KiB. */
	ck_assert_uint_eq(c.max_msg_size, 512 << 10);
	i->ep_attr->max_msg_size = 4096;
	derive("tcp;ofi_rxm", i, &c);
	ck_assert_uint_eq(c.max_msg_size, 4096);
	i->ep_attr->max_msg_size = (size_t)1 << 40;

	derive("shm", i, &c);
	ck_assert(!c.wait_fd);
	ck_assert(!c.ip_addressed);
	ck_assert(!c.wait_sread);
	ck_assert(!c.len_in_cq_data);
	ck_assert(c.manual_progress);

	derive("sockets", i, &c);
	ck_assert(c.wait_fd);
	ck_assert(c.ip_addressed);
	fi_freeinfo(i);
}
END_TEST

START_TEST(test_describe_cq_error)
{
	char buf[256];

	psc_provider_lookup("tcp")->describe_cq_error(FI_ETRUNC, 17, "boom",
						      buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "17") && strstr(buf, "boom"), "%s", buf);
	psc_generic_describe_cq_error(FI_ECANCELED, 0, NULL, buf, sizeof(buf));
	ck_assert_int_gt(strlen(buf), 0);
}
END_TEST

/*
 * rxm's connection CQ (opened at fi_enable) is sized by FI_UNIVERSE_SIZE:
 * the explanation gives the entry count the device was asked for and the
 * largest universe soft-RoCE (max_cqe 32767) takes; other steps, errors
 * and families explain nothing.
 */
START_TEST(test_explain_open_error)
{
	struct fi_info *v = sane_info("verbs;ofi_rxm");
	struct fi_info *t = sane_info("tcp;ofi_rxm");
	char buf[1024];

	unsetenv("FI_OFI_RXM_USE_SRX");
	unsetenv("FI_OFI_RXM_MSG_TX_SIZE");
	unsetenv("FI_OFI_RXM_MSG_RX_SIZE");
	/* verbs: a receive queue per connection, (128 + 128) x universe. */
	psc_provider_lookup("verbs;ofi_rxm")->explain_open_error(
		v, "fi_enable", -FI_EINVAL, 1024, buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "262144 entries"), "%s", buf);
	ck_assert_msg(strstr(buf, "FI_UNIVERSE_SIZE 127 at most"), "%s", buf);
	ck_assert_msg(strstr(buf, "FI_OFI_RXM_USE_SRX=1"), "%s", buf);
	/* With a shared receive queue the receive side counts once. */
	setenv("FI_OFI_RXM_USE_SRX", "yes", 1);
	psc_provider_lookup("verbs;ofi_rxm")->explain_open_error(
		v, "fi_enable", -FI_EINVAL, 64, buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "12288 entries"), "%s", buf);
	ck_assert_msg(strstr(buf, "FI_UNIVERSE_SIZE 223 at most"), "%s", buf);
	unsetenv("FI_OFI_RXM_USE_SRX");
	/* tcp shares one by default; the message sizes follow the env. */
	setenv("FI_OFI_RXM_MSG_TX_SIZE", "64", 1);
	psc_provider_lookup("tcp;ofi_rxm")->explain_open_error(
		t, "fi_enable", -FI_ENOMEM, 1024, buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "69632 entries"), "%s", buf);
	unsetenv("FI_OFI_RXM_MSG_TX_SIZE");
	psc_provider_lookup("verbs;ofi_rxm")->explain_open_error(
		v, "fi_domain", -FI_EINVAL, 1024, buf, sizeof(buf));
	ck_assert_str_eq(buf, "");
	psc_provider_lookup("verbs;ofi_rxm")->explain_open_error(
		v, "fi_enable", -FI_EAGAIN, 1024, buf, sizeof(buf));
	ck_assert_str_eq(buf, "");
	ck_assert_ptr_null(psc_provider_lookup("net")->explain_open_error);
	fi_freeinfo(v);
	fi_freeinfo(t);
}
END_TEST

/* The data lib/van and lib/comm take from the registry. */
START_TEST(test_registry_data)
{
	char buf[512] = "PS_COMM_X=1;";

	ck_assert(psc_provider_signal_lib("/usr/lib/libinfinipath.so.4"));
	ck_assert(psc_provider_signal_lib("/usr/lib/x/libpsm2.so.2"));
	ck_assert(!psc_provider_signal_lib("/usr/lib/libfabric.so.1"));
	ck_assert(!psc_provider_signal_lib(NULL));
	/* Where libfabric (1.18+) has no net, ps_comm_info says where it went. */
	ck_assert_ptr_nonnull(psc_provider_lookup("net")->renamed);
	ck_assert_ptr_null(psc_provider_lookup("tcp")->renamed);

	setenv("FI_OFI_RXM_EAGER_LIMIT", "4096", 1);
	psc_provider_agree_append(buf, sizeof(buf));
	unsetenv("FI_OFI_RXM_EAGER_LIMIT");
	ck_assert_msg(strncmp(buf, "PS_COMM_X=1;", 12) == 0, "%s", buf);
	ck_assert_msg(strstr(buf, ";FI_OFI_RXM_EAGER_LIMIT=4096;"), "%s", buf);
	/* Cut, still terminated, when the room runs out. */
	memset(buf, 0, sizeof(buf));
	psc_provider_agree_append(buf, 8);
	ck_assert_uint_lt(strlen(buf), 8);
}
END_TEST

/*
 * How peers are reached, from FI_PROVIDER and PS_COMM_INTRA: one named
 * provider wins (and overrides intra=shm unless it is shm), a list or an
 * exclusion leaves pscomm's node-aware choice, intra=net the network for
 * all; any other intra is refused, naming the variable.
 */
START_TEST(test_fabrics)
{
	static const struct {
		const char *filter, *intra;
		enum psc_fabrics want;
		bool ignored;
	} cases[] = {
		{NULL, "auto", PSC_FABRICS_NODE, false},
		{"", "shm", PSC_FABRICS_NODE, false},
		{"tcp", "auto", PSC_FABRICS_ONE, false},
		{"tcp;ofi_rxm", "shm", PSC_FABRICS_ONE, true},
		{"shm", "shm", PSC_FABRICS_ONE, false},
		{"verbs", "net", PSC_FABRICS_ONE, false},
		{"tcp,shm", "auto", PSC_FABRICS_NODE, false},
		{"^udp", "net", PSC_FABRICS_NET, false},
		{NULL, "net", PSC_FABRICS_NET, false},
	};
	enum psc_fabrics f;
	bool ignored;
	char err[128];

	for (size_t i = 0; i < PSC_ARRAY_SIZE(cases); i++) {
		ck_assert_int_eq(psc_provider_fabrics(cases[i].filter,
						      cases[i].intra, &f,
						      &ignored, err,
						      sizeof(err)), 0);
		ck_assert_msg(f == cases[i].want && ignored == cases[i].ignored,
			      "FI_PROVIDER=%s PS_COMM_INTRA=%s: %d %d",
			      cases[i].filter ? cases[i].filter : "(unset)",
			      cases[i].intra, (int)f, (int)ignored);
	}
	ck_assert_int_eq(psc_provider_fabrics(NULL, "nvlink", &f, &ignored,
					      err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "PS_COMM_INTRA=nvlink"), "%s", err);
}
END_TEST

static Suite *provider_suite(void)
{
	Suite *s = suite_create("provider");
	TCase *tc = tcase_create("lookup");

	tcase_add_loop_test(tc, test_lookup, 0, (int)PSC_ARRAY_SIZE(lookups));
	tcase_add_test(tc, test_lookup_fixup_hints);
	tcase_add_test(tc, test_lookup_null);
	tcase_add_loop_test(tc, test_provider_is, 0,
			    (int)PSC_ARRAY_SIZE(families));
	tcase_add_test(tc, test_tag_bits);
	tcase_add_test(tc, test_registry_data);
	tcase_add_test(tc, test_fabrics);
	suite_add_tcase(s, tc);

	tc = tcase_create("accept");
	tcase_add_test(tc, test_accept_sane);
	tcase_add_loop_test(tc, test_accept_refuses, 0,
			    (int)PSC_ARRAY_SIZE(spoil_words));
	tcase_add_loop_test(tc, test_accept_matches_layout, 1, 65);
	suite_add_tcase(s, tc);

	tc = tcase_create("caps");
	tcase_add_test(tc, test_generic_caps);
	tcase_add_test(tc, test_verbs_iwarp_eager);
	tcase_add_test(tc, test_verbs_env_default);
	tcase_add_test(tc, test_udp_caps);
	tcase_add_test(tc, test_tcp_shm_sockets_caps);
	tcase_add_test(tc, test_native_tcp_caps);
	tcase_add_test(tc, test_chunk_sizes);
	tcase_add_test(tc, test_describe_cq_error);
	tcase_add_test(tc, test_explain_open_error);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(provider_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
