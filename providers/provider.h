/*
 * The provider layer: one profile per libfabric provider family turns the
 * attributes of a fi_info entry into struct psc_caps, records the
 * family's quirks, and judges whether pscomm can use the entry. The core
 * branches on caps only; provider names are compared here and nowhere else.
 */
#ifndef PSC_PROVIDER_H
#define PSC_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>

/*
 * libfabric's legacy mr_mode values, whole modes in bits 0 and 1 that
 * providers may still report: FI_MR_BASIC (provider keys, virtual
 * addresses, allocated memory) and FI_MR_SCALABLE (nothing to
 * register). libfabric 2.x headers deprecate the macros (using them
 * warns); the bits are part of the ABI.
 */
#define PSC_MR_BASIC (1 << 0)
#define PSC_MR_SCALABLE (1 << 1)

/*
 * The mode bits pscomm honours: a fi_context2 in every request
 * (FI_CONTEXT, FI_CONTEXT2), iov arrays that outlive the call when the
 * entry says FI_ASYNC_IOV (caps.async_iov: no untagged vector sends), and
 * FI_RX_CQ_DATA, which concerns RMA writes only.
 */
#define PSC_MODES_HONOURED                                                     \
	(FI_CONTEXT | FI_CONTEXT2 | FI_ASYNC_IOV | FI_RX_CQ_DATA)

/* The fabric family behind an entry, as far as its attributes tell. */
enum psc_link {
	PSC_LINK_UNKNOWN = 0,
	PSC_LINK_IP,	  /* tcp, sockets, udp: kernel sockets */
	PSC_LINK_SHM,	  /* same node only */
	PSC_LINK_IB,	  /* InfiniBand */
	PSC_LINK_ROCE,	  /* RDMA over Converged Ethernet */
	PSC_LINK_IWARP,	  /* iWARP (RDMA over TCP) */
	PSC_LINK_OPA,	  /* Omni-Path (psm2, opx) and psm3 NICs */
	PSC_LINK_EFA,	  /* AWS Elastic Fabric Adapter */
};

/*
 * One tunable or pitfall of a provider family, as data: the variable a
 * user sets (NULL for a pitfall with no variable) and what it is for.
 */
struct psc_tunable {
	const char *env;
	const char *what;
};

/* What the core needs to know about a provider entry. */
struct psc_caps {
	unsigned tag_bits;	/* usable tag bits (from mem_tag_format) */
	uint64_t mem_tag_format;
	bool mr_local;		/* FI_MR_LOCAL: register and pass desc */
	bool mr_endpoint;	/* FI_MR_ENDPOINT: bind and enable MRs */
	bool mr_prov_key;	/* FI_MR_PROV_KEY */
	size_t max_msg_size;	/* split larger messages */
	size_t inject_size;	/* fi_tinject up to this size (0 = never) */
	bool directed_recv;	/* FI_DIRECTED_RECV granted */
	size_t cq_data_size;	/* bytes of remote CQ data */
	uint64_t mode;		/* mode bits we must honour */
	bool ordered_sas;	/* send-after-send ordering */
	bool manual_progress;	/* data progress needs CQ reads */
	bool wait_fd;		/* CQ wait fd works (fi_trywait + poll) */
	bool wait_sread;	/* fi_cq_sread honours its timeout */
	bool len_in_cq_data;	/* provider truncates silently: carry len */
	bool ip_addressed;	/* one entry per IP interface */
	bool sw_match;		/* match first messages in software */
	bool sw_tag_in_data;	/* untagged CQ data arrives intact */
	size_t tx_size, rx_size;
	/* ---- appended fields ---- */
	enum psc_link link;	/* fabric family, for logs and preflight */
	bool mr_scalable;	/* legacy FI_MR_SCALABLE: nothing to register */
	bool needs_memlock;	/* pins pages: RLIMIT_MEMLOCK must be high */
	bool fork_unsafe;	/* fork() after open corrupts or aborts */
	bool needs_uuid;	/* ranks must share a job UUID (psm2/3, opx) */
	bool same_eager_limit;	/* rxm: eager limits must agree on all ranks */
	bool nic_local;		/* entries name a NIC: prefer the nearest */
	bool async_iov;		/* FI_ASYNC_IOV: no stack iov, so no sw_match */
	bool peer_locks;	/* queues in memory shared with node-local
				 * peers, under their locks: a peer that dies
				 * may leave the endpoint locked for good */
	bool chunks_wait;	/* keeps few unexpected messages and stalls
				 * the connection behind the next (net): a
				 * large message's chunks wait for the
				 * receiver's go-ahead */
	bool chunks_credit;	/* unexpected messages take entries of the
				 * receive pool, and a receive finds none
				 * once they fill it (shm: ENOMEM): the
				 * go-ahead lets a large message's chunks
				 * go only as far as its receiver has posted
				 * receives for them (needs chunks_wait) */
	size_t ahead_min;	/* chunks_credit: a message sent as one
				 * chunk of at least this many bytes
				 * completes at its sender only once its
				 * receiver matched it (shm reads it by
				 * cross-memory attach or in segments), so
				 * a few may go without the go-ahead
				 * (psc_ep_ahead_take); 0: never */
	bool connect_race;	/* connections open on the first send and a
				 * crossing connect can replace a live one,
				 * losing what was sent on it (net), or come
				 * up at its accepting end only (rxm on
				 * iWARP): a new world connects its ranks
				 * pairwise first (comm/wire.c) */
	bool resend_on_reset;	/* a send whose connection closed under it
				 * (crossing connects, net) never went out:
				 * post it again, a few times at most */
	bool rx_unbounded;	/* posted receives are not limited by
				 * rx_size (net allocates them as needed):
				 * pscomm posts every one at once */
	size_t sw_eager;	/* largest payload of a software-matched
				 * first message (0: pscomm's 8 KiB); larger
				 * ones send a header, then their data */
	bool wait_set;		/* fi_trywait leaves the CQ's wait fd
				 * readable once any completion signalled it
				 * (net: its trywait does nothing): the CQ
				 * gets a wait set of pscomm's, tried with
				 * fi_wait(set, 0), which clears it */
	bool gid_from_addr;	/* RoCE: connections go through rdma_cm,
				 * which takes the GID of the entry's IP
				 * address (verbs;ofi_rxm); else the GID is
				 * the one gid_env indexes (datagrams) */
	bool stop_unclosed;	/* closing an endpoint can crash inside
				 * the provider (verbs;ofi_rxm's fi_close
				 * in libfabric 1.17): the last release
				 * leaves it to the process's exit */
};

/*
 * A profile. Every member may be NULL; registry lookups return a table
 * whose NULL members were filled from the generic profile. Members take
 * a fi_info entry as returned by fi_getinfo and never modify it.
 */
struct psc_provider_ops {
	size_t size;	  /* sizeof(struct psc_provider_ops) */
	const char *name; /* family prefix: "tcp" matches "tcp;ofi_rxm" */
	/* Adjust the hints before fi_getinfo (e.g. fork safety). */
	void (*fixup_hints)(struct fi_info *hints);
	/* Return true if usable; else false with the reason in why. */
	bool (*accept)(const struct fi_info *info, char *why, size_t len);
	/* Fill caps from info; called after accept() said yes. */
	void (*derive_caps)(const struct fi_info *info, struct psc_caps *caps);
	/*
	 * Explain a CQ error entry in words for the log; may add a hint.
	 * Writes a NUL-terminated string into buf.
	 */
	void (*describe_cq_error)(int err, int prov_errno, const char *prov_str,
				  char *buf, size_t len);
	/* ---- data members; NULL when not applicable ---- */
	/* Tunables and pitfalls, ended by an entry with what == NULL. */
	const struct psc_tunable *tunables;
	/*
	 * The variable that pins this family to a network interface
	 * (FI_TCP_IFACE, FI_VERBS_IFACE). When the user sets it, libfabric
	 * has already filtered the entries, so pscomm neither requires the
	 * bootstrap interface nor reorders entries by NIC locality.
	 */
	const char *iface_env;
	/* The job UUID variable (FI_PSM2_UUID ...), set before fi_getinfo. */
	const char *uuid_env;
	/* The fork-safety variable, set before fi_getinfo. */
	const char *fork_env;
	/* Why fi_getinfo finds no entry of this family, with the fix. */
	const char *missing_hint;
	/*
	 * Where a libfabric without this family has it under another name
	 * (net: the tcp provider from libfabric 1.18): said instead of
	 * "not in this libfabric build".
	 */
	const char *renamed;
	/*
	 * Variables that must be identical on every rank (rxm's eager and
	 * rendezvous limits), ended by NULL; they join the settings ranks
	 * compare at bootstrap.
	 */
	const char *const *agree_env;
	/*
	 * The family may offer no send-after-send ordering (opx): when
	 * fi_getinfo finds nothing, ask again without FI_ORDER_SAS.
	 */
	bool order_optional;
	/*
	 * The variable that makes the family copy through its own buffers
	 * when cross-memory attach (process_vm_readv) is blocked, set to 1
	 * before fi_getinfo in that case (shm).
	 */
	const char *no_cma_env;
	/*
	 * The variable that selects a RoCE port's GID index (verbs): for
	 * datagram endpoints only (caps.gid_from_addr false); rdma_cm picks
	 * the GID of connected ones from their IP address.
	 */
	const char *gid_env;
	/*
	 * Remove the files that back shared-memory queues nobody will close:
	 * the endpoint named addr (addrlen bytes, as fi_getname gave it),
	 * when its owner must leave it unclosed, and, for pid > 0, every
	 * one of that dead process. They would otherwise fill /dev/shm, and
	 * a new process with the same pid could not open its endpoint. NULL
	 * for families without such files (left NULL by the lookup too).
	 */
	void (*remove_regions)(const void *addr, size_t addrlen, int pid);
	/*
	 * The start of the name under /dev/shm of every such file of
	 * process pid, into buf of n bytes (NUL-terminated): what
	 * remove_regions removes for pid, and what a termination signal
	 * removes (fabric/sig.h). NULL with remove_regions.
	 */
	void (*region_prefix)(int pid, char *buf, size_t n);
	/*
	 * Give back to /dev/shm what the new endpoint named addr (addrlen
	 * bytes, as fi_getname gave it) holds in its file without need.
	 * Called once fi_enable made the file and before the name is
	 * published, so no other process writes the file yet. NULL for
	 * families with nothing to give back (left NULL by the lookup too).
	 */
	void (*trim_region)(const void *addr, size_t addrlen);
	/*
	 * Explain, with the fix, why opening an endpoint of entry info
	 * failed with err (a negative FI_E* code) at step, the libfabric
	 * call that failed ("fi_enable" ...); universe is the
	 * FI_UNIVERSE_SIZE in effect. Writes a NUL-terminated string into
	 * buf, empty when the family knows nothing more than err says.
	 * NULL for families without such knowledge (left NULL by the lookup
	 * too).
	 */
	void (*explain_open_error)(const struct fi_info *info,
				   const char *step, int err, size_t universe,
				   char *buf, size_t len);
	/*
	 * A variable the family needs set before fi_getinfo unless the user
	 * set it: for i from 0, fills *name, value (a NUL-terminated string
	 * in len bytes) and *why (a sentence part) and returns true; false
	 * past the last. NULL for families with none (left NULL by the
	 * lookup too).
	 */
	bool (*env_default)(size_t i, const char **name, char *value,
			    size_t len, const char **why);
};

/*
 * The profile for a provider name such as "tcp;ofi_rxm" (matched by
 * prefix against each family), or the generic profile. Never NULL. The
 * returned table has every member set.
 */
const struct psc_provider_ops *psc_provider_lookup(const char *prov_name);

/* The generic implementations, for profiles to call and extend. */
void psc_generic_fixup_hints(struct fi_info *hints);
bool psc_generic_accept(const struct fi_info *info, char *why, size_t len);
void psc_generic_derive_caps(const struct fi_info *info, struct psc_caps *caps);
/*
 * libfabric's native RDM over TCP sockets (xnet): the net provider up to
 * libfabric 1.17, the tcp provider's "tcp" entries (not "tcp;ofi_rxm")
 * from 1.18 (net.c).
 */
void psc_xnet_derive_caps(const struct fi_info *info, struct psc_caps *caps);
/*
 * Split large messages into chunks of at most max bytes (also when the
 * provider reports no limit, 0): for providers whose large-message path
 * is slower than a stream of chunks of that size.
 */
void psc_caps_chunk_max(struct psc_caps *c, size_t max);
void psc_generic_describe_cq_error(int err, int prov_errno,
				   const char *prov_str, char *buf, size_t len);

/* True if prov_name starts with the family prefix (before any ';'). */
bool psc_provider_is(const char *prov_name, const char *family);

/*
 * True for utility and hook providers (ofi_rxm, ofi_rxd, ofi_mrail ...),
 * which are layered over a core provider and never chosen alone.
 */
bool psc_provider_layered(const char *prov_name);

/*
 * Whether FI_PROVIDER (filter) hides core provider name, by libfabric
 * 1.17's init filter: "^a,b" hides those named; "a,b" hides all others,
 * where "a;x" also keeps a. Names compare without case.
 */
bool psc_provider_filter_hides(const char *filter, const char *name);

/*
 * Whether FI_PROVIDER (filter, NULL: unset) names exactly one provider,
 * which then serves every peer; a list or an exclusion ("^udp") only
 * filters pscomm's node-aware choice.
 */
bool psc_provider_filter_single(const char *filter);

/*
 * How a process reaches its peers: FI_PROVIDER (filter, NULL: unset)
 * naming one provider sends everything over it, as asked (ONE);
 * PS_COMM_INTRA (intra) "net" sends everything over the best network
 * provider (NET); otherwise node-local peers use shm and the others the
 * network (NODE). *shm_ignored tells that intra asked for shm, which a
 * single provider other than shm overrides. Returns 0, or -EINVAL with
 * words in err for an intra other than auto, shm or net.
 */
enum psc_fabrics { PSC_FABRICS_ONE, PSC_FABRICS_NET, PSC_FABRICS_NODE };
int psc_provider_fabrics(const char *filter, const char *intra,
			 enum psc_fabrics *out, bool *shm_ignored, char *err,
			 size_t len);

/*
 * Whether the FI_PROVIDER item of len characters (up to any ';') names
 * provider name, compared as libfabric does: whole, without case.
 */
bool psc_provider_filter_names(const char *item, size_t len,
			       const char *name);

/*
 * Why fi_getinfo finds no entry of provider name, with the fix: its
 * profile's missing_hint, or a hint for a family pscomm has no profile
 * for; NULL when there is none.
 */
const char *psc_provider_missing_hint(const char *name);

/*
 * Whether the shared object at path (as dladdr names it) is a library
 * that a provider family loads and that installs handlers for SIGINT,
 * SIGTERM and the crash signals as it is loaded (psm's libinfinipath and
 * libpsm*): a program that owns its shutdown gives those signals their
 * default action back. False for NULL.
 */
bool psc_provider_signal_lib(const char *path);

/* libfabric's shared-memory provider, for node-local peers. */
#define PSC_SHM_PROVIDER "shm"

/*
 * Rank of a provider for traffic between nodes, lower is better:
 * hardware providers (efa, opx, psm3, psm2, cxi, verbs) in that order,
 * then the native RDM over TCP (net up to libfabric 1.17, "tcp" from
 * 1.18), tcp;ofi_rxm, sockets and udp, then any other (not yet
 * validated by pscomm's suite). -1 for shm and sm2, which never serve
 * between nodes.
 */
int psc_provider_net_rank(const char *prov_name);

/*
 * Whether a query for prov_name (NULL: any provider) that found nothing
 * should be asked again without FI_ORDER_SAS (some family may lack it).
 */
bool psc_provider_order_optional(const char *prov_name);

/*
 * The variables of every family that must agree across ranks, each once,
 * in registry order; *n receives the count. The array is static.
 */
const char *const *psc_provider_agree_env(size_t *n);

/*
 * Append "NAME=value;" for each variable of psc_provider_agree_env, as
 * the environment sets it (empty when unset), to the NUL-terminated text
 * in buf (len bytes in all). Text that does not fit is cut, still
 * NUL-terminated.
 */
void psc_provider_agree_append(char *buf, size_t len);

/* Usable tag bits for an output mem_tag_format (0 means 64). */
unsigned psc_tag_bits_from_format(uint64_t fmt);

/*
 * rxm's limits, which every family layered under ofi_rxm lists in
 * agree_env: ranks must split messages alike.
 */
extern const char *const psc_rxm_agree_env[];

/*
 * One of rxm's size variables (FI_OFI_RXM_*) as rxm reads it (decimal,
 * 0x hex or 0 octal), or def when unset, empty, 0 or not a number.
 */
size_t psc_rxm_env_size(const char *name, size_t def);

/*
 * env_default for families layered under ofi_rxm, entry 0:
 * FI_OFI_RXM_BUFFER_SIZE at PSC_RXM_BUFFER (generic.c says why); false
 * from 1. Every such family sets the same value, so the order they run
 * in does not matter, and the ranks agree.
 */
#define PSC_RXM_BUFFER 8448
bool psc_rxm_env_default(size_t i, const char **name, char *value,
			 size_t len, const char **why);

/*
 * explain_open_error for families layered under ofi_rxm: rxm opens the
 * completion queue of its connections at fi_enable, sized by
 * FI_UNIVERSE_SIZE, and a device may refuse one that large (soft-RoCE
 * rxe holds 32,767 entries). srx_default says whether rxm shares one
 * receive context among connections on this family unless
 * FI_OFI_RXM_USE_SRX says otherwise (tcp: yes, verbs: no).
 */
void psc_rxm_explain_open_error(const struct fi_info *info, bool srx_default,
				const char *step, int err, size_t universe,
				char *buf, size_t len);

extern const struct psc_provider_ops psc_generic_ops;
extern const struct psc_provider_ops psc_tcp_ops;
extern const struct psc_provider_ops psc_net_ops;
extern const struct psc_provider_ops psc_shm_ops;
extern const struct psc_provider_ops psc_sockets_ops;
extern const struct psc_provider_ops psc_udp_ops;
extern const struct psc_provider_ops psc_verbs_ops;
extern const struct psc_provider_ops psc_psm2_ops;
extern const struct psc_provider_ops psc_psm3_ops;
extern const struct psc_provider_ops psc_opx_ops;
extern const struct psc_provider_ops psc_efa_ops;

/*
 * Every registered profile (not the generic one), completed as
 * psc_provider_lookup returns them; *n receives the count. For code that
 * walks all families (preflight, ps_comm_info). Never NULL.
 */
const struct psc_provider_ops *psc_provider_all(size_t *n);

/*
 * The link family of an entry from its attributes: fabric name
 * ("Ethernet-iWARP"), NIC link network_type and address format. Helper
 * for profiles; returns PSC_LINK_UNKNOWN when nothing tells.
 */
enum psc_link psc_link_from_info(const struct fi_info *info);

/* A short name for a link family ("RoCE", "InfiniBand" ...). */
const char *psc_link_name(enum psc_link link);

#endif /* PSC_PROVIDER_H */
