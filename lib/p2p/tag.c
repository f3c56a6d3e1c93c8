/*
 * The tag layout: field widths from the provider's mem_tag_format, and
 * packing and unpacking of tags and receive masks.
 */
#include <errno.h>
#include <string.h>

#include "p2p/tag.h"
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
