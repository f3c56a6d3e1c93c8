/*
 * The van's frame codec (lib/van/frame.c): the first fabric message of
 * every van message, received from any van that fetched this one's
 * address. The input is one received frame. A frame the decoder accepts
 * must describe exactly its bytes (the segment lengths, the inline meta
 * and the inline segments lie inside them), and encoding what it
 * describes must decode to the same message; where the encoder makes
 * the same inline choices as the input, it gives back the same bytes.
 */
#include <errno.h>

#include "fuzz.h"
#include "van/van_int.h"

/* Stands in for segments the input did not carry in the frame. */
static uint8_t zeros[PSC_VAN_SEG_INLINE_MAX];

/* Same message: sender, meta, segment lengths, inline segment bytes. */
static void same_message(const struct psc_van_frame *a,
			 const struct psc_van_frame *b)
{
	const uint8_t *da = a->segdata, *db = b->segdata;

	PSC_FUZZ_ASSERT(a->sender == b->sender && a->nseg == b->nseg &&
			a->meta_len == b->meta_len);
	PSC_FUZZ_ASSERT((a->meta != NULL) == (b->meta != NULL));
	if (a->meta && a->meta_len)
		PSC_FUZZ_ASSERT(memcmp(a->meta, b->meta, a->meta_len) == 0);
	for (uint32_t i = 0; i < a->nseg; i++) {
		uint64_t n = psc_van_frame_seg_len(a, i);
		bool ia = psc_van_frame_seg_inline(a, i);
		bool ib = psc_van_frame_seg_inline(b, i);

		PSC_FUZZ_ASSERT(n == psc_van_frame_seg_len(b, i));
		if (ia && ib)
			PSC_FUZZ_ASSERT(memcmp(da, db, (size_t)n) == 0);
		if (ia)
			da += n;
		if (ib)
			db += n;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct psc_van_frame f, g;
	ps_comm_van_seg_t *segs;
	const uint8_t *in;
	size_t want;
	uint8_t *again;
	bool inl, same_layout = true;
	char err[256];
	int rc = psc_van_frame_decode(data, size, &f, err, sizeof(err));

	if (rc) {
		PSC_FUZZ_ASSERT(rc == -EPROTO && err[0]);
		return 0;
	}
	PSC_FUZZ_ASSERT(f.nseg <= PSC_VAN_MAX_SEGS);
	PSC_FUZZ_ASSERT(f.lens == data + PSC_VAN_HDR);
	PSC_FUZZ_ASSERT(f.sender >= -1);
	/* A grant is whole or absent. */
	PSC_FUZZ_ASSERT(f.grant_id ? f.grant_slot && f.grant_chunk &&
					     f.grant_len
				   : !f.grant_slot && !f.grant_chunk &&
					     !f.grant_len);
	segs = calloc(f.nseg + 1, sizeof(*segs));
	if (!segs)
		abort();
	in = f.segdata;
	for (uint32_t i = 0; i < f.nseg; i++) {
		uint64_t n = psc_van_frame_seg_len(&f, i);

		PSC_FUZZ_ASSERT(n <= PTRDIFF_MAX);
		/* On credit: never inline, never empty. */
		if (psc_van_frame_seg_credit(&f, i))
			PSC_FUZZ_ASSERT(n && !psc_van_frame_seg_inline(&f, i));
		segs[i].len = (size_t)n;
		if (psc_van_frame_seg_inline(&f, i)) {
			PSC_FUZZ_ASSERT(in && in + n <= data + size);
			segs[i].data = (void *)in;
			in += n;
		} else {
			segs[i].data = n <= sizeof(zeros) ? zeros : NULL;
		}
	}
	if (f.meta) {
		PSC_FUZZ_ASSERT(f.flags & PSC_VAN_F_META_INLINE);
		PSC_FUZZ_ASSERT(f.meta + f.meta_len == f.segdata);
		PSC_FUZZ_ASSERT(in == data + size);
	}
	/* The encoder inlines the meta exactly when it fits a frame. */
	want = psc_van_frame_size(f.meta_len, segs, f.nseg,
				  PSC_VAN_FRAME_MAX, &inl);
	if (inl == (f.meta != NULL)) {
		again = malloc(want);
		if (!again)
			abort();
		psc_van_frame_encode(again, f.sender, f.meta, f.meta_len, inl,
				     segs, f.nseg, PSC_VAN_FRAME_MAX);
		/* A goodbye is an empty message's frame with its flag. */
		if (f.flags & PSC_VAN_F_BYE) {
			PSC_FUZZ_ASSERT(f.meta_len == 0 && f.nseg == 0);
			psc_van_frame_set_bye(again);
		}
		PSC_FUZZ_ASSERT(psc_van_frame_decode(again, want, &g, err,
						     sizeof(err)) == 0);
		same_message(&f, &g);
		for (uint32_t i = 0; i < f.nseg; i++)
			same_layout &= psc_van_frame_seg_inline(&f, i) ==
				       psc_van_frame_seg_inline(&g, i);
		if (same_layout) {
			/* The credit marks go on after encoding, as the van
			 * does. */
			if (f.grant_id)
				psc_van_frame_set_grant(again, f.grant_id,
							f.grant_slot,
							f.grant_chunk,
							f.grant_len);
			if (f.flags & PSC_VAN_F_RETURN)
				psc_van_frame_set_return(again);
			for (uint32_t i = 0; i < f.nseg; i++)
				if (psc_van_frame_seg_credit(&f, i))
					psc_van_frame_set_credit(again, i);
			PSC_FUZZ_ASSERT(want == size &&
					memcmp(again, data, size) == 0);
		}
		free(again);
	}
	free(segs);
	return 0;
}
