/*
 * Replay of recorded `fi_info -v` output: a parser that turns the text
 * into real struct fi_info lists (fi_allocinfo plus fields, with a NIC
 * object libfabric can duplicate and close), and a stand-in for
 * fi_getinfo that filters such a list by pscomm's hints the way
 * libfabric's attribute checks do. With it, the provider profiles,
 * selection and tag layout run on verbs, psm2, psm3, opx and efa entries
 * on machines without those NICs (tests/unit/check_replay,
 * `ps_comm_info --replay`). Flag and enum names are looked up through
 * fi_tostr, so they are spelled exactly as fi_info prints them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "replay/replay.h"
#include "util/util.h"

/* ------------------------------------------------------------- NIC */

/*
 * A NIC object of our own: fi_dupinfo duplicates it with FI_DUP and
 * fi_freeinfo closes it, so replayed entries behave like real ones.
 */
static int nic_close(struct fid *fid);
static int nic_control(struct fid *fid, int cmd, void *arg);

static int nic_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid;
	(void)bfid;
	(void)flags;
	return -FI_ENOSYS;
}

static int nic_ops_open(struct fid *fid, const char *name, uint64_t flags,
			void **ops, void *context)
{
	(void)fid;
	(void)name;
	(void)flags;
	(void)ops;
	(void)context;
	return -FI_ENOSYS;
}

static struct fi_ops nic_ops = {
	.size = sizeof(struct fi_ops),
	.close = nic_close,
	.bind = nic_bind,
	.control = nic_control,
	.ops_open = nic_ops_open,
};

static struct fid_nic *nic_alloc(void)
{
	struct fid_nic *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->fid.fclass = FI_CLASS_NIC;
	n->fid.ops = &nic_ops;
	n->device_attr = calloc(1, sizeof(*n->device_attr));
	n->bus_attr = calloc(1, sizeof(*n->bus_attr));
	n->link_attr = calloc(1, sizeof(*n->link_attr));
	if (!n->device_attr || !n->bus_attr || !n->link_attr) {
		nic_close(&n->fid);
		return NULL;
	}
	return n;
}

static int nic_close(struct fid *fid)
{
	struct fid_nic *n = (struct fid_nic *)fid;

	if (n->device_attr) {
		free(n->device_attr->name);
		free(n->device_attr->device_id);
		free(n->device_attr->device_version);
		free(n->device_attr->vendor_id);
		free(n->device_attr->driver);
		free(n->device_attr->firmware);
	}
	if (n->link_attr) {
		free(n->link_attr->address);
		free(n->link_attr->network_type);
	}
	free(n->device_attr);
	free(n->bus_attr);
	free(n->link_attr);
	free(n);
	return 0;
}

/* strdup that keeps NULL and reports failure through *ok. */
static char *dup_or_null(const char *s, bool *ok)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*ok = false;
	return d;
}

static int nic_control(struct fid *fid, int cmd, void *arg)
{
	const struct fid_nic *n = (const struct fid_nic *)fid;
	struct fid_nic *d;
	bool ok = true;

	if (cmd != FI_DUP)
		return -FI_ENOSYS;
	d = nic_alloc();
	if (!d)
		return -FI_ENOMEM;
	*d->bus_attr = *n->bus_attr;
	*d->link_attr = *n->link_attr;
	d->link_attr->address = dup_or_null(n->link_attr->address, &ok);
	d->link_attr->network_type =
		dup_or_null(n->link_attr->network_type, &ok);
	d->device_attr->name = dup_or_null(n->device_attr->name, &ok);
	d->device_attr->device_id = dup_or_null(n->device_attr->device_id, &ok);
	d->device_attr->device_version =
		dup_or_null(n->device_attr->device_version, &ok);
	d->device_attr->vendor_id = dup_or_null(n->device_attr->vendor_id, &ok);
	d->device_attr->driver = dup_or_null(n->device_attr->driver, &ok);
	d->device_attr->firmware = dup_or_null(n->device_attr->firmware, &ok);
	if (!ok) {
		nic_close(&d->fid);
		return -FI_ENOMEM;
	}
	*(struct fid_nic **)arg = d;
	return 0;
}

/* ----------------------------------------------------------- parser */

enum section {
	S_NONE, S_INFO, S_TX, S_RX, S_EP, S_DOMAIN, S_FABRIC, S_NIC,
	S_DEVICE, S_BUS, S_PCI, S_LINK,
};

static const struct {
	const char *header;
	enum section sec;
} headers[] = {
	{"fi_info", S_INFO},	     {"fi_tx_attr", S_TX},
	{"fi_rx_attr", S_RX},	     {"fi_ep_attr", S_EP},
	{"fi_domain_attr", S_DOMAIN}, {"fi_fabric_attr", S_FABRIC},
	{"nic", S_NIC},		     {"fi_device_attr", S_DEVICE},
	{"fi_bus_attr", S_BUS},	     {"fi_pci_attr", S_PCI},
	{"fi_link_attr", S_LINK},
};

enum kind {
	K_U8, K_U16, K_U32, K_U64, K_SIZE,
	K_FLAGS,     /* uint64_t bits named by fi_tostr(type) */
	K_FLAGS_INT, /* int bits (mr_mode) */
	K_ENUM,	     /* enum (int) named by fi_tostr(type) */
	K_ENUM_U32,  /* uint32_t named by fi_tostr(type) (protocol) */
	K_RM, K_BUS, K_LINK_STATE, /* enums fi_tostr cannot name */
	K_STR, K_VERSION, K_SRC_ADDR, K_SRC_ADDRLEN, K_PROGRESS,
};

/* No fabric address is longer; a larger src_addrlen is a typo. */
#define ADDRLEN_MAX 4096

#define F(sec, key, kind, type, strct, field)                                  \
	{sec, key, kind, type, offsetof(strct, field)}

static const struct field {
	enum section sec;
	const char *key;
	enum kind kind;
	enum fi_type type;
	size_t off;
} fields[] = {
	F(S_INFO, "caps", K_FLAGS, FI_TYPE_CAPS, struct fi_info, caps),
	F(S_INFO, "mode", K_FLAGS, FI_TYPE_MODE, struct fi_info, mode),
	F(S_INFO, "addr_format", K_ENUM_U32, FI_TYPE_ADDR_FORMAT,
	  struct fi_info, addr_format),
	F(S_INFO, "src_addrlen", K_SRC_ADDRLEN, 0, struct fi_info,
	  src_addrlen),
	F(S_INFO, "src_addr", K_SRC_ADDR, 0, struct fi_info, src_addr),
	F(S_TX, "caps", K_FLAGS, FI_TYPE_CAPS, struct fi_tx_attr, caps),
	F(S_TX, "mode", K_FLAGS, FI_TYPE_MODE, struct fi_tx_attr, mode),
	F(S_TX, "op_flags", K_FLAGS, FI_TYPE_OP_FLAGS, struct fi_tx_attr,
	  op_flags),
	F(S_TX, "msg_order", K_FLAGS, FI_TYPE_MSG_ORDER, struct fi_tx_attr,
	  msg_order),
	F(S_TX, "inject_size", K_SIZE, 0, struct fi_tx_attr, inject_size),
	F(S_TX, "size", K_SIZE, 0, struct fi_tx_attr, size),
	F(S_TX, "iov_limit", K_SIZE, 0, struct fi_tx_attr, iov_limit),
	F(S_TX, "rma_iov_limit", K_SIZE, 0, struct fi_tx_attr,
	  rma_iov_limit),
	F(S_RX, "caps", K_FLAGS, FI_TYPE_CAPS, struct fi_rx_attr, caps),
	F(S_RX, "mode", K_FLAGS, FI_TYPE_MODE, struct fi_rx_attr, mode),
	F(S_RX, "op_flags", K_FLAGS, FI_TYPE_OP_FLAGS, struct fi_rx_attr,
	  op_flags),
	F(S_RX, "msg_order", K_FLAGS, FI_TYPE_MSG_ORDER, struct fi_rx_attr,
	  msg_order),
	F(S_RX, "total_buffered_recv", K_SIZE, 0, struct fi_rx_attr,
	  total_buffered_recv),
	F(S_RX, "size", K_SIZE, 0, struct fi_rx_attr, size),
	F(S_RX, "iov_limit", K_SIZE, 0, struct fi_rx_attr, iov_limit),
	F(S_EP, "type", K_ENUM, FI_TYPE_EP_TYPE, struct fi_ep_attr, type),
	F(S_EP, "protocol", K_ENUM_U32, FI_TYPE_PROTOCOL, struct fi_ep_attr,
	  protocol),
	F(S_EP, "protocol_version", K_U32, 0, struct fi_ep_attr,
	  protocol_version),
	F(S_EP, "max_msg_size", K_SIZE, 0, struct fi_ep_attr, max_msg_size),
	F(S_EP, "msg_prefix_size", K_SIZE, 0, struct fi_ep_attr,
	  msg_prefix_size),
	F(S_EP, "max_order_raw_size", K_SIZE, 0, struct fi_ep_attr,
	  max_order_raw_size),
	F(S_EP, "max_order_war_size", K_SIZE, 0, struct fi_ep_attr,
	  max_order_war_size),
	F(S_EP, "max_order_waw_size", K_SIZE, 0, struct fi_ep_attr,
	  max_order_waw_size),
	F(S_EP, "mem_tag_format", K_U64, 0, struct fi_ep_attr,
	  mem_tag_format),
	F(S_EP, "tx_ctx_cnt", K_SIZE, 0, struct fi_ep_attr, tx_ctx_cnt),
	F(S_EP, "rx_ctx_cnt", K_SIZE, 0, struct fi_ep_attr, rx_ctx_cnt),
	F(S_DOMAIN, "name", K_STR, 0, struct fi_domain_attr, name),
	F(S_DOMAIN, "threading", K_ENUM, FI_TYPE_THREADING,
	  struct fi_domain_attr, threading),
	F(S_DOMAIN, "control_progress", K_ENUM, FI_TYPE_PROGRESS,
	  struct fi_domain_attr, control_progress),
	F(S_DOMAIN, "data_progress", K_ENUM, FI_TYPE_PROGRESS,
	  struct fi_domain_attr, data_progress),
	/* libfabric 2.x prints one "progress" for both. */
	F(S_DOMAIN, "progress", K_PROGRESS, FI_TYPE_PROGRESS,
	  struct fi_domain_attr, data_progress),
	F(S_DOMAIN, "resource_mgmt", K_RM, 0, struct fi_domain_attr,
	  resource_mgmt),
	F(S_DOMAIN, "av_type", K_ENUM, FI_TYPE_AV_TYPE,
	  struct fi_domain_attr, av_type),
	F(S_DOMAIN, "mr_mode", K_FLAGS_INT, FI_TYPE_MR_MODE,
	  struct fi_domain_attr, mr_mode),
	F(S_DOMAIN, "mr_key_size", K_SIZE, 0, struct fi_domain_attr,
	  mr_key_size),
	F(S_DOMAIN, "cq_data_size", K_SIZE, 0, struct fi_domain_attr,
	  cq_data_size),
	F(S_DOMAIN, "cq_cnt", K_SIZE, 0, struct fi_domain_attr, cq_cnt),
	F(S_DOMAIN, "ep_cnt", K_SIZE, 0, struct fi_domain_attr, ep_cnt),
	F(S_DOMAIN, "tx_ctx_cnt", K_SIZE, 0, struct fi_domain_attr,
	  tx_ctx_cnt),
	F(S_DOMAIN, "rx_ctx_cnt", K_SIZE, 0, struct fi_domain_attr,
	  rx_ctx_cnt),
	F(S_DOMAIN, "max_ep_tx_ctx", K_SIZE, 0, struct fi_domain_attr,
	  max_ep_tx_ctx),
	F(S_DOMAIN, "max_ep_rx_ctx", K_SIZE, 0, struct fi_domain_attr,
	  max_ep_rx_ctx),
	F(S_DOMAIN, "mr_iov_limit", K_SIZE, 0, struct fi_domain_attr,
	  mr_iov_limit),
	F(S_DOMAIN, "caps", K_FLAGS, FI_TYPE_CAPS, struct fi_domain_attr,
	  caps),
	F(S_DOMAIN, "mode", K_FLAGS, FI_TYPE_MODE, struct fi_domain_attr,
	  mode),
	F(S_DOMAIN, "mr_cnt", K_SIZE, 0, struct fi_domain_attr, mr_cnt),
	F(S_FABRIC, "name", K_STR, 0, struct fi_fabric_attr, name),
	F(S_FABRIC, "prov_name", K_STR, 0, struct fi_fabric_attr, prov_name),
	F(S_FABRIC, "prov_version", K_VERSION, 0, struct fi_fabric_attr,
	  prov_version),
	F(S_FABRIC, "api_version", K_VERSION, 0, struct fi_fabric_attr,
	  api_version),
	F(S_DEVICE, "name", K_STR, 0, struct fi_device_attr, name),
	F(S_DEVICE, "device_id", K_STR, 0, struct fi_device_attr, device_id),
	F(S_DEVICE, "device_version", K_STR, 0, struct fi_device_attr,
	  device_version),
	F(S_DEVICE, "vendor_id", K_STR, 0, struct fi_device_attr, vendor_id),
	F(S_DEVICE, "driver", K_STR, 0, struct fi_device_attr, driver),
	F(S_DEVICE, "firmware", K_STR, 0, struct fi_device_attr, firmware),
	F(S_BUS, "bus_type", K_BUS, 0, struct fi_bus_attr, bus_type),
	F(S_PCI, "domain_id", K_U16, 0, struct fi_pci_attr, domain_id),
	F(S_PCI, "bus_id", K_U8, 0, struct fi_pci_attr, bus_id),
	F(S_PCI, "device_id", K_U8, 0, struct fi_pci_attr, device_id),
	F(S_PCI, "function_id", K_U8, 0, struct fi_pci_attr, function_id),
	F(S_LINK, "address", K_STR, 0, struct fi_link_attr, address),
	F(S_LINK, "mtu", K_SIZE, 0, struct fi_link_attr, mtu),
	F(S_LINK, "speed", K_SIZE, 0, struct fi_link_attr, speed),
	F(S_LINK, "state", K_LINK_STATE, 0, struct fi_link_attr, state),
	F(S_LINK, "network_type", K_STR, 0, struct fi_link_attr,
	  network_type),
};

/* The struct a section's fields live in, or NULL when absent. */
static void *section_base(struct fi_info *i, enum section s)
{
	switch (s) {
	case S_INFO:
		return i;
	case S_TX:
		return i->tx_attr;
	case S_RX:
		return i->rx_attr;
	case S_EP:
		return i->ep_attr;
	case S_DOMAIN:
		return i->domain_attr;
	case S_FABRIC:
		return i->fabric_attr;
	case S_DEVICE:
		return i->nic ? i->nic->device_attr : NULL;
	case S_BUS:
		return i->nic ? i->nic->bus_attr : NULL;
	case S_PCI:
		return i->nic ? &i->nic->bus_attr->attr.pci : NULL;
	case S_LINK:
		return i->nic ? i->nic->link_attr : NULL;
	default:
		return NULL;
	}
}

/*
 * Capability bits that fi_tostr of an older libfabric cannot name,
 * although its headers define them: dumps from a newer libfabric carry
 * them (libfabric 2.x prints FI_AV_USER_ID and FI_PEER for tcp).
 */
static const struct {
	const char *name;
	uint64_t bit;
} later_caps[] = {
	{"FI_AV_USER_ID", FI_AV_USER_ID},
	{"FI_PEER", FI_PEER},
};

/* The single bit (0..bits-1) fi_tostr names `name` for type, or -1. */
static int bit_by_name(enum fi_type type, const char *name, int bits)
{
	if (type == FI_TYPE_CAPS)
		for (size_t i = 0; i < PSC_ARRAY_SIZE(later_caps); i++)
			if (strcmp(later_caps[i].name, name) == 0)
				return __builtin_ctzll(later_caps[i].bit);
	for (int b = 0; b < bits; b++) {
		uint64_t v64 = 1ULL << b;
		int vint = (int)(1U << (b & 31));
		const char *s = bits == 64 ? fi_tostr(&v64, type)
					   : fi_tostr(&vint, type);

		if (s && strcmp(s, name) == 0)
			return b;
	}
	return -1;
}

/* The value (0..255) fi_tostr names `name` for an enum type, or -1. */
static int enum_by_name(enum fi_type type, const char *name)
{
	for (int v = 0; v < 256; v++) {
		const char *s = fi_tostr(&v, type);

		if (s && strcmp(s, name) == 0)
			return v;
	}
	return -1;
}

/* Parse "[ A, B ]" into bits; returns 0 or -EINVAL naming the bad one. */
static int parse_flags(const char *val, enum fi_type type, int bits,
		       uint64_t *out, char *err, size_t len)
{
	char buf[1024], *save = NULL;

	*out = 0;
	snprintf(buf, sizeof(buf), "%s", val);
	for (char *t = strtok_r(buf, "[], ", &save); t;
	     t = strtok_r(NULL, "[], ", &save)) {
		int b;

		/* Names for "nothing" in order and progress lists. */
		if (strcmp(t, "FI_ORDER_NONE") == 0)
			continue;
		b = bit_by_name(type, t, bits);
		if (b < 0) {
			snprintf(err, len, "unknown flag %s", t);
			return -EINVAL;
		}
		*out |= 1ULL << b;
	}
	return 0;
}

/* An IP source address as fi_info prints it, into a malloc'd sockaddr. */
static int parse_sockaddr(const char *val, struct fi_info *i)
{
	const char *p;
	char host[128];

	if ((p = strstr(val, "://")) == NULL)
		return -EINVAL;
	p += 3;
	if (*p == '[') {
		struct sockaddr_in6 *s6 = calloc(1, sizeof(*s6));
		const char *e = strchr(p, ']');

		if (!s6 || !e || (size_t)(e - p - 1) >= sizeof(host)) {
			free(s6);
			return -EINVAL;
		}
		snprintf(host, sizeof(host), "%.*s", (int)(e - p - 1), p + 1);
		s6->sin6_family = AF_INET6;
		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1) {
			free(s6);
			return -EINVAL;
		}
		i->src_addr = s6;
		i->src_addrlen = sizeof(*s6);
		return 0;
	}
	{
		struct sockaddr_in *s4 = calloc(1, sizeof(*s4));

		snprintf(host, sizeof(host), "%.*s", (int)strcspn(p, ":"), p);
		if (!s4 || inet_pton(AF_INET, host, &s4->sin_addr) != 1) {
			free(s4);
			return -EINVAL;
		}
		s4->sin_family = AF_INET;
		i->src_addr = s4;
		i->src_addrlen = sizeof(*s4);
	}
	return 0;
}

/*
 * src_addr, once per entry: fi_dupinfo copies src_addrlen bytes of it,
 * so the two must stay consistent (see K_SRC_ADDRLEN).
 */
static int parse_src_addr(const char *val, struct fi_info *i)
{
	if (i->src_addr)
		return -EINVAL;
	if (strcmp(val, "(null)") == 0)
		return 0;
	if (i->addr_format == FI_SOCKADDR_IN ||
	    i->addr_format == FI_SOCKADDR_IN6 ||
	    i->addr_format == FI_SOCKADDR)
		return parse_sockaddr(val, i);
	/* Opaque formats: only the length matters to pscomm. */
	if (i->src_addrlen) {
		i->src_addr = calloc(1, i->src_addrlen);
		return i->src_addr ? 0 : -ENOMEM;
	}
	return 0;
}

/* Small enums fi_tostr has no type for. */
static int small_enum(enum kind k, const char *v)
{
	static const struct {
		enum kind k;
		const char *name;
		int val;
	} t[] = {
		{K_RM, "FI_RM_UNSPEC", FI_RM_UNSPEC},
		{K_RM, "FI_RM_DISABLED", FI_RM_DISABLED},
		{K_RM, "FI_RM_ENABLED", FI_RM_ENABLED},
		{K_BUS, "FI_BUS_UNKNOWN", FI_BUS_UNKNOWN},
		{K_BUS, "FI_BUS_PCI", FI_BUS_PCI},
		{K_LINK_STATE, "FI_LINK_UNKNOWN", FI_LINK_UNKNOWN},
		{K_LINK_STATE, "FI_LINK_DOWN", FI_LINK_DOWN},
		{K_LINK_STATE, "FI_LINK_UP", FI_LINK_UP},
	};

	for (size_t n = 0; n < PSC_ARRAY_SIZE(t); n++)
		if (t[n].k == k && strcmp(t[n].name, v) == 0)
			return t[n].val;
	return -1;
}

/*
 * "major.minor", each 0..65535 as FI_VERSION packs them (sscanf's %u
 * took any overflow, a sign and trailing words).
 */
static int parse_version(const char *v, uint32_t *out, char *err, size_t len)
{
	unsigned long part[2];
	const char *s = v;
	char *end;

	for (int k = 0; k < 2; k++) {
		if (*s < '0' || *s > '9')
			break;
		errno = 0;
		part[k] = strtoul(s, &end, 10);
		if (errno || part[k] > 0xffff || *end != (k ? '\0' : '.'))
			break;
		if (k) {
			*out = FI_VERSION(part[0], part[1]);
			return 0;
		}
		s = end + 1;
	}
	snprintf(err, len, "bad version \"%s\"", v);
	return -EINVAL;
}

/* Store one value; returns 0 or -EINVAL with the reason in err. */
static int store(const struct field *f, void *base, struct fi_info *i,
		 const char *v, char *err, size_t len)
{
	char *p = (char *)base + f->off, *end;
	unsigned long long n = 0;
	uint64_t bits;
	int e, rc;

	switch (f->kind) {
	case K_U8: case K_U16: case K_U32: case K_U64: case K_SIZE:
	case K_SRC_ADDRLEN:
		errno = 0;
		n = strtoull(v, &end, 0);
		if (errno || end == v || *end) {
			snprintf(err, len, "bad number \"%s\"", v);
			return -EINVAL;
		}
		if (f->kind == K_U8)
			*(uint8_t *)p = (uint8_t)n;
		else if (f->kind == K_U16)
			*(uint16_t *)p = (uint16_t)n;
		else if (f->kind == K_U32)
			*(uint32_t *)p = (uint32_t)n;
		else if (f->kind == K_U64)
			*(uint64_t *)p = n;
		else if (f->kind == K_SIZE)
			*(size_t *)p = (size_t)n;
		else if (i->src_addr || n > ADDRLEN_MAX) {
			/* After src_addr it would no longer describe it. */
			snprintf(err, len, "%s", i->src_addr
				 ? "src_addrlen after src_addr"
				 : "longer than any address");
			return -EINVAL;
		} else {
			i->src_addrlen = (size_t)n;
		}
		return 0;
	case K_FLAGS:
	case K_FLAGS_INT:
		rc = parse_flags(v, f->type, f->kind == K_FLAGS ? 64 : 32,
				 &bits, err, len);
		if (rc)
			return rc;
		if (f->kind == K_FLAGS)
			*(uint64_t *)p = bits;
		else
			*(int *)p = (int)bits;
		return 0;
	case K_ENUM:
	case K_ENUM_U32:
	case K_PROGRESS:
	case K_RM:
	case K_BUS:
	case K_LINK_STATE:
		e = f->kind == K_ENUM || f->kind == K_ENUM_U32 ||
				    f->kind == K_PROGRESS
			    ? enum_by_name(f->type, v)
			    : small_enum(f->kind, v);
		if (e < 0) {
			snprintf(err, len, "unknown value %s", v);
			return -EINVAL;
		}
		if (f->kind == K_ENUM_U32)
			*(uint32_t *)p = (uint32_t)e;
		else
			*(int *)p = e;
		if (f->kind == K_PROGRESS)
			i->domain_attr->control_progress = e;
		return 0;
	case K_STR:
		if (strcmp(v, "(null)") == 0)
			return 0;
		free(*(char **)p);
		*(char **)p = strdup(v);
		return *(char **)p ? 0 : -ENOMEM;
	case K_VERSION:
		return parse_version(v, (uint32_t *)p, err, len);
	case K_SRC_ADDR:
		rc = parse_src_addr(v, i);
		if (rc)
			snprintf(err, len, "bad or second address \"%s\"", v);
		return rc;
	}
	return -EINVAL;
}

/* Parser state over the lines of one text. */
struct parser {
	struct fi_info *head, *tail;
	enum section sec;
	int line;
};

/* Handle a "name:" header line; returns 0, 1 if not a header, or <0. */
static int header(struct parser *ps, const char *key)
{
	for (size_t h = 0; h < PSC_ARRAY_SIZE(headers); h++) {
		if (strcmp(headers[h].header, key) != 0)
			continue;
		if (headers[h].sec == S_INFO) {
			struct fi_info *i = fi_allocinfo();

			if (!i)
				return -ENOMEM;
			if (ps->tail)
				ps->tail->next = i;
			else
				ps->head = i;
			ps->tail = i;
		} else if (!ps->tail) {
			return -EINVAL;
		} else if (headers[h].sec == S_NIC && !ps->tail->nic) {
			ps->tail->nic = nic_alloc();
			if (!ps->tail->nic)
				return -ENOMEM;
		}
		ps->sec = headers[h].sec;
		return 0;
	}
	return 1;
}

static int parse_line(struct parser *ps, char *s, char *err, size_t len)
{
	char *colon, *val;
	int rc;

	/* Published copies may carry a markdown quote marker. */
	if (s[0] == '>' && s[1] == ' ')
		s += 2;
	s += strspn(s, " \t");
	s[strcspn(s, "\r\n")] = '\0';
	for (size_t n = strlen(s); n && (s[n - 1] == ' ' || s[n - 1] == '\t');)
		s[--n] = '\0';
	if (!*s || *s == '#' || strcmp(s, "---") == 0)
		return 0;
	colon = strchr(s, ':');
	if (!colon) {
		snprintf(err, len, "line %d: no \"key: value\"", ps->line);
		return -EINVAL;
	}
	*colon = '\0';
	val = colon + 1 + strspn(colon + 1, " ");
	if (!*val) {
		rc = header(ps, s);
		if (rc < 0)
			snprintf(err, len, "line %d: section %s %s", ps->line,
				 s, rc == -EINVAL ? "before any fi_info:"
						  : "failed");
		return rc < 0 ? rc : 0;
	}
	if (!ps->tail) {
		snprintf(err, len, "line %d: %s before any fi_info:", ps->line,
			 s);
		return -EINVAL;
	}
	for (size_t k = 0; k < PSC_ARRAY_SIZE(fields); k++) {
		char why[160];
		void *base;

		if (fields[k].sec != ps->sec || strcmp(fields[k].key, s) != 0)
			continue;
		base = section_base(ps->tail, ps->sec);
		if (!base)
			return 0;
		rc = store(&fields[k], base, ps->tail, val, why, sizeof(why));
		if (rc)
			snprintf(err, len, "line %d: %s: %s", ps->line, s, why);
		return rc;
	}
	/* Keys pscomm does not read (handle, tclass, counts...). */
	return 0;
}

int psc_replay_parse(const char *text, struct fi_info **list, char *err,
		     size_t len)
{
	struct parser ps = {.sec = S_NONE};
	const char *p = text;
	int rc = 0;

	*list = NULL;
	while (*p && !rc) {
		size_t n = strcspn(p, "\n");
		char line[1024];

		ps.line++;
		snprintf(line, sizeof(line), "%.*s",
			 (int)PSC_MIN(n, sizeof(line) - 1), p);
		rc = parse_line(&ps, line, err, len);
		p += n + (p[n] == '\n');
	}
	if (!rc && !ps.head) {
		snprintf(err, len, "no fi_info: entry");
		rc = -ENODATA;
	}
	if (rc) {
		fi_freeinfo(ps.head);
		return rc;
	}
	*list = ps.head;
	return 0;
}

int psc_replay_load(const char *path, struct fi_info **list, char *err,
		    size_t len)
{
	FILE *f = fopen(path, "r");
	char *text;
	long n;
	int rc;

	*list = NULL;
	if (!f) {
		snprintf(err, len, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0 || !(text = malloc((size_t)n + 1))) {
		fclose(f);
		snprintf(err, len, "%s: cannot read", path);
		return -EIO;
	}
	text[fread(text, 1, (size_t)n, f)] = '\0';
	fclose(f);
	rc = psc_replay_parse(text, list, err, len);
	free(text);
	return rc;
}

void psc_replay_free(struct fi_info *list)
{
	fi_freeinfo(list);
}

/* ----------------------------------------------------- fi_getinfo */

static const struct fi_info *replay_list;

void psc_replay_use(const struct fi_info *list)
{
	replay_list = list;
}

/* mr_mode bits that ask something of the application. */
#define MR_DUTIES                                                              \
	(FI_MR_LOCAL | FI_MR_RAW | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |         \
	 FI_MR_PROV_KEY | FI_MR_MMU_NOTIFY | FI_MR_RMA_EVENT | FI_MR_ENDPOINT)

/*
 * libfabric's legacy mr_mode values in bits 0 and 1 (FI_MR_BASIC,
 * FI_MR_SCALABLE), which 2.x headers deprecate; the bits are ABI.
 */
#define LEGACY_MR_BASIC (1 << 0)
#define LEGACY_MR_SCALABLE (1 << 1)

/* What an entry's mr_mode asks of the application, legacy values mapped. */
static int mr_duties(int mr)
{
	int d = mr & MR_DUTIES;

	if ((mr & LEGACY_MR_BASIC) && !(mr & LEGACY_MR_SCALABLE))
		d |= FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	return d;
}

/*
 * Whether hints naming provider want select an entry of provider name,
 * as libfabric matches prov_name: the entry's full name ("tcp;ofi_rxm"),
 * or the core name it is layered over ("tcp").
 */
static bool prov_name_fits(const char *name, const char *want)
{
	size_t n = strlen(want);

	return name && strncmp(name, want, n) == 0 &&
	       (name[n] == '\0' || name[n] == ';');
}

/* Whether entry e satisfies hints h, as libfabric's attribute checks. */
static bool replay_fits(const struct fi_info *e, const struct fi_info *h)
{
	const char *want = h->fabric_attr ? h->fabric_attr->prov_name : NULL;
	uint64_t mode = e->mode | e->tx_attr->mode | e->rx_attr->mode;

	if (want && !prov_name_fits(e->fabric_attr->prov_name, want))
		return false;
	if (h->ep_attr->type != FI_EP_UNSPEC &&
	    h->ep_attr->type != e->ep_attr->type)
		return false;
	if ((h->caps & e->caps) != h->caps)
		return false;
	/* Modes the provider needs must all be offered. */
	if ((mode & h->mode) != mode)
		return false;
	if ((mr_duties(e->domain_attr->mr_mode) &
	     h->domain_attr->mr_mode) != mr_duties(e->domain_attr->mr_mode))
		return false;
	if ((h->tx_attr->msg_order & e->tx_attr->msg_order) !=
		    h->tx_attr->msg_order ||
	    (h->rx_attr->msg_order & e->rx_attr->msg_order) !=
		    h->rx_attr->msg_order)
		return false;
	if (h->domain_attr->av_type != FI_AV_UNSPEC &&
	    e->domain_attr->av_type != FI_AV_UNSPEC &&
	    e->domain_attr->av_type != h->domain_attr->av_type)
		return false;
	return h->domain_attr->cq_data_size <= e->domain_attr->cq_data_size;
}

int psc_replay_getinfo(uint32_t version, const char *node,
		       const char *service, uint64_t flags,
		       const struct fi_info *hints, struct fi_info **info)
{
	struct fi_info *head = NULL, **tail = &head;

	(void)version;
	(void)node;
	(void)service;
	(void)flags;
	for (const struct fi_info *e = replay_list; e; e = e->next) {
		struct fi_info *d;

		if (hints && !replay_fits(e, hints))
			continue;
		d = fi_dupinfo(e);
		if (!d) {
			fi_freeinfo(head);
			return -FI_ENOMEM;
		}
		/* The output narrows to what was asked, as providers do. */
		if (hints) {
			d->caps = hints->caps;
			d->domain_attr->mr_mode &=
				hints->domain_attr->mr_mode |
				LEGACY_MR_BASIC | LEGACY_MR_SCALABLE;
			if (hints->domain_attr->av_type != FI_AV_UNSPEC)
				d->domain_attr->av_type =
					hints->domain_attr->av_type;
		}
		d->next = NULL;
		*tail = d;
		tail = &d->next;
	}
	*info = head;
	return head ? 0 : -FI_ENODATA;
}
