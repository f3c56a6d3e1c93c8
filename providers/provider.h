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
void psc_generic_describe_cq_error(int err, int prov_errno,
				   const char *prov_str, char *buf, size_t len);

/* True if prov_name starts with the family prefix (before any ';'). */
bool psc_provider_is(const char *prov_name, const char *family);

/* Usable tag bits for an output mem_tag_format (0 means 64). */
unsigned psc_tag_bits_from_format(uint64_t fmt);

extern const struct psc_provider_ops psc_generic_ops;
extern const struct psc_provider_ops psc_tcp_ops;
extern const struct psc_provider_ops psc_shm_ops;
extern const struct psc_provider_ops psc_sockets_ops;
extern const struct psc_provider_ops psc_udp_ops;

#endif /* PSC_PROVIDER_H */
