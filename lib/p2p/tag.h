/*
 * The 64-bit tag layout: [protocol | large | context | source rank | user
 * tag], sized from the provider's mem_tag_format. The source rank stays
 * in the tag, so matching never depends on FI_DIRECTED_RECV, and each
 * protocol (user, continuation, collective, van, control, go-ahead,
 * pre-arranged chunks) has
 * its own bits, so internal traffic never matches a user receive. Pure
 * functions.
 */
#ifndef PSC_P2P_TAG_H
#define PSC_P2P_TAG_H

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
	PSC_PROTO_CTRL = 4, /* control: finalize barrier, connecting */
	PSC_PROTO_CTS = 5,  /* go-ahead for a large message's chunks */
	PSC_PROTO_BULK = 6, /* chunks of a pre-arranged transfer */
	/*
	 * 7 is no protocol: a tag whose every bit is set is the core's own
	 * (PSC_FIRST_CORE_IMM, a shm ring's announcement), and no tag made
	 * here reaches it.
	 */
	PSC_PROTO_LAST = PSC_PROTO_BULK,
};

/*
 * Control tags: the finalize barrier's are its round numbers (below 64);
 * a new world's ranks connect with this one (comm/wire.c).
 */
#define PSC_CTRL_WIRE 0x7fffu

#define PSC_TAG_PROTO_BITS 3
#define PSC_TAG_CTX_BITS 12
#define PSC_TAG_RANK_BITS 20
#define PSC_TAG_MIN_USER_BITS 15
#define PSC_TAG_MAX_USER_BITS 28

_Static_assert(PSC_PROTO_LAST < (1 << PSC_TAG_PROTO_BITS) - 1,
	       "the top protocol value stays free for the core's own tag");

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

/*
 * Packing and unpacking, inline for the message paths. psc_tag_match
 * gives the tag and ignore mask for a receive: src or tag may be -1
 * (any), and the large bit is always ignored so a receive matches both
 * forms.
 */
static inline uint64_t psc_tag_make(const struct psc_tag_layout *l, unsigned proto,
		      bool large, uint32_t ctx, uint32_t rank, uint32_t tag)
{
	return ((uint64_t)proto << l->proto_shift & l->proto_mask) |
	       (large ? l->large_bit : 0) |
	       ((uint64_t)ctx << l->ctx_shift & l->ctx_mask) |
	       ((uint64_t)rank << l->rank_shift & l->rank_mask) |
	       (tag & l->user_mask);
}

static inline void psc_tag_match(const struct psc_tag_layout *l, unsigned proto,
		   uint32_t ctx, int src, int64_t tag, uint64_t *tagp,
		   uint64_t *ignore)
{
	*ignore = l->large_bit;
	if (src < 0)
		*ignore |= l->rank_mask;
	if (tag < 0)
		*ignore |= l->user_mask;
	*tagp = psc_tag_make(l, proto, false, ctx, src < 0 ? 0 : (uint32_t)src,
			     tag < 0 ? 0 : (uint32_t)tag);
}

static inline uint32_t psc_tag_rank(const struct psc_tag_layout *l, uint64_t t)
{
	return (uint32_t)((t & l->rank_mask) >> l->rank_shift);
}

static inline uint32_t psc_tag_ctx(const struct psc_tag_layout *l, uint64_t t)
{
	return (uint32_t)((t & l->ctx_mask) >> l->ctx_shift);
}

static inline uint32_t psc_tag_user(const struct psc_tag_layout *l, uint64_t t)
{
	return (uint32_t)(t & l->user_mask);
}

static inline unsigned psc_tag_proto(const struct psc_tag_layout *l, uint64_t t)
{
	return (unsigned)((t & l->proto_mask) >> l->proto_shift);
}

static inline bool psc_tag_is_large(const struct psc_tag_layout *l, uint64_t t)
{
	return (t & l->large_bit) != 0;
}

#endif /* PSC_P2P_TAG_H */
