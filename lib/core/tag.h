/*
 * The 64-bit tag layout: [protocol | large | context | source rank | user
 * tag], sized from the provider's mem_tag_format. The source rank stays
 * in the tag, so matching never depends on FI_DIRECTED_RECV, and each
 * protocol (user, continuation, collective, van, control) has its own
 * bits, so internal traffic never matches a user receive. Pure functions.
 */
#ifndef PSC_TAG_H
#define PSC_TAG_H

#include <stdbool.h>
#include <stdint.h>

/*
 * The protocols, and the widths of the fixed fields; the user tag takes
 * what is left of the provider's usable bits, up to 28.
 */
enum psc_proto {
	PSC_PROTO_USER = 0, /* user point-to-point */
	PSC_PROTO_CONT = 1, /* continuation chunks of a large message */
	PSC_PROTO_COLL = 2, /* collectives */
	PSC_PROTO_VAN = 3,  /* ps-lite van */
	PSC_PROTO_CTRL = 4, /* control: finalize barrier */
};

#define PSC_TAG_PROTO_BITS 3
#define PSC_TAG_CTX_BITS 12
#define PSC_TAG_RANK_BITS 20
#define PSC_TAG_MIN_USER_BITS 15
#define PSC_TAG_MAX_USER_BITS 28

struct psc_tag_layout {
	unsigned usable_bits; /* from mem_tag_format */
	unsigned user_bits;
	unsigned rank_shift, ctx_shift, large_shift, proto_shift;
	uint64_t user_mask, rank_mask, ctx_mask, large_bit, proto_mask;
	int tag_ub;
};

/*
 * Size the layout from an output mem_tag_format (0 means 64 bits).
 * Returns 0, or -ENOSPC when the provider offers too few bits.
 */
int psc_tag_layout_init(struct psc_tag_layout *l, uint64_t mem_tag_format);

uint64_t psc_tag_make(const struct psc_tag_layout *l, unsigned proto,
		      bool large, uint32_t ctx, uint32_t rank, uint32_t tag);

/*
 * Tag and ignore mask for a receive. src or tag may be -1 (any). The
 * large bit is always ignored so a receive matches both forms.
 */
void psc_tag_match(const struct psc_tag_layout *l, unsigned proto,
		   uint32_t ctx, int src, int64_t tag, uint64_t *tagp,
		   uint64_t *ignore);

uint32_t psc_tag_rank(const struct psc_tag_layout *l, uint64_t t);
uint32_t psc_tag_user(const struct psc_tag_layout *l, uint64_t t);
unsigned psc_tag_proto(const struct psc_tag_layout *l, uint64_t t);
bool psc_tag_is_large(const struct psc_tag_layout *l, uint64_t t);

#endif /* PSC_TAG_H */
