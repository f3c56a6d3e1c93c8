/*
 * The van's frame codec (lib/van/frame.c): the first fabric message of
 * every van message, received from any van that fetched this one's
 * address. The input is one received frame. A frame the decoder accepts
 * must describe exactly its bytes (the segment lengths and the inline
 * meta lie inside them) and encode back to the same bytes.
 */
#include <errno.h>

#include "fuzz.h"
#include "van/van_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct psc_van_frame f;
	size_t *lens, want;
	uint8_t *again;
	bool inl;
	char err[256];
	int rc = psc_van_frame_decode(data, size, &f, err, sizeof(err));

	if (rc) {
		PSC_FUZZ_ASSERT(rc == -EPROTO && err[0]);
		return 0;
	}
	PSC_FUZZ_ASSERT(f.nseg <= PSC_VAN_MAX_SEGS);
	PSC_FUZZ_ASSERT(f.lens == data + PSC_VAN_HDR);
	PSC_FUZZ_ASSERT(f.sender >= -1);
	lens = calloc(f.nseg + 1, sizeof(*lens));
	if (!lens)
		abort();
	for (uint32_t i = 0; i < f.nseg; i++) {
		uint64_t n = psc_van_frame_seg_len(&f, i);

		PSC_FUZZ_ASSERT(n <= PTRDIFF_MAX);
		lens[i] = (size_t)n;
	}
	if (f.meta) {
		PSC_FUZZ_ASSERT(f.flags & PSC_VAN_F_META_INLINE);
		PSC_FUZZ_ASSERT(f.meta + f.meta_len == data + size);
	}
	/* The encoder inlines the meta exactly when it fits a frame. */
	want = psc_van_frame_size(f.meta_len, f.nseg, &inl);
	if (inl == (f.meta != NULL)) {
		PSC_FUZZ_ASSERT(want == size);
		again = malloc(want);
		if (!again)
			abort();
		psc_van_frame_encode(again, f.sender, f.meta, f.meta_len, inl,
				     lens, f.nseg);
		PSC_FUZZ_ASSERT(memcmp(again, data, size) == 0);
		free(again);
	}
	free(lens);
	return 0;
}
