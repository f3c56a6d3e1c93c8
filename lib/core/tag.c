/*
 * The tag layout: field widths from the provider's mem_tag_format, and
 * packing and unpacking of tags and receive masks.
 */
#include <errno.h>
#include <string.h>

#include "core/tag.h"
#include "provider.h"
#include "util/util.h"

static uint64_t mask_of(unsigned bits)
{
	return bits >= 64 ? ~0ULL : ((1ULL << bits) - 1);
}

int psc_tag_layout_init(struct psc_tag_layout *l, uint64_t mem_tag_format)
{
	unsigned bits = psc_tag_bits_from_format(mem_tag_format);
	unsigned fixed = PSC_TAG_PROTO_BITS + 1 + PSC_TAG_CTX_BITS +
			 PSC_TAG_RANK_BITS;

	memset(l, 0, sizeof(*l));
	if (bits < fixed + PSC_TAG_MIN_USER_BITS)
		return -ENOSPC;
	l->usable_bits = bits;
	l->user_bits = PSC_MIN(bits - fixed, (unsigned)PSC_TAG_MAX_USER_BITS);
	l->rank_shift = l->user_bits;
	l->ctx_shift = l->rank_shift + PSC_TAG_RANK_BITS;
	l->large_shift = l->ctx_shift + PSC_TAG_CTX_BITS;
	l->proto_shift = l->large_shift + 1;
	l->user_mask = mask_of(l->user_bits);
	l->rank_mask = mask_of(PSC_TAG_RANK_BITS) << l->rank_shift;
	l->ctx_mask = mask_of(PSC_TAG_CTX_BITS) << l->ctx_shift;
	l->large_bit = 1ULL << l->large_shift;
	l->proto_mask = mask_of(PSC_TAG_PROTO_BITS) << l->proto_shift;
	l->tag_ub = (int)l->user_mask;
	return 0;
}

uint64_t psc_tag_make(const struct psc_tag_layout *l, unsigned proto,
		      bool large, uint32_t ctx, uint32_t rank, uint32_t tag)
{
	return ((uint64_t)proto << l->proto_shift & l->proto_mask) |
	       (large ? l->large_bit : 0) |
	       ((uint64_t)ctx << l->ctx_shift & l->ctx_mask) |
	       ((uint64_t)rank << l->rank_shift & l->rank_mask) |
	       (tag & l->user_mask);
}

void psc_tag_match(const struct psc_tag_layout *l, unsigned proto,
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

uint32_t psc_tag_rank(const struct psc_tag_layout *l, uint64_t t)
{
	return (uint32_t)((t & l->rank_mask) >> l->rank_shift);
}

uint32_t psc_tag_user(const struct psc_tag_layout *l, uint64_t t)
{
	return (uint32_t)(t & l->user_mask);
}

unsigned psc_tag_proto(const struct psc_tag_layout *l, uint64_t t)
{
	return (unsigned)((t & l->proto_mask) >> l->proto_shift);
}

bool psc_tag_is_large(const struct psc_tag_layout *l, uint64_t t)
{
	return (t & l->large_bit) != 0;
}
