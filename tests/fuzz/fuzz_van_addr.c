/*
 * The van's address answer (lib/van/addr.c): what a fetch reads back
 * from whatever listens at a ps-lite node's host:port. The input is the
 * message as read: a wire header, then its payload. The harness reads it
 * as psc_van_fetch does (header checked by psc_wire_decode, payload of at
 * most 512 bytes) and hands it to psc_van_answer_parse. An accepted
 * answer yields a slot in range and an address that fits the room given
 * and is a copy of the bytes after the provider name.
 */
#include <errno.h>

#include "fuzz.h"
#include "van/van_int.h"

/* psc_van_fetch's payload room (REPLY_MAX in addr.c). */
#define ANSWER_MAX 512

static const char provider[] = "tcp;ofi_rxm";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct psc_wire_hdr h;
	uint8_t name[64], *in;
	size_t namelen = sizeof(name);
	uint32_t slot = 0;
	char err[256];
	int rc;

	if (size < PSC_WIRE_HDR_LEN)
		return 0;
	if (psc_wire_decode(data, &h, err, sizeof(err)) != 0)
		return 0;
	if (h.len > ANSWER_MAX || h.len != size - PSC_WIRE_HDR_LEN)
		return 0;
	/* Exactly h.len bytes, so a read past them is caught. */
	in = malloc(h.len ? h.len : 1);
	if (!in)
		abort();
	memcpy(in, data + PSC_WIRE_HDR_LEN, h.len);
	rc = psc_van_answer_parse(&h, in, provider, &slot, name, &namelen, err,
				  sizeof(err));
	if (rc == 0) {
		PSC_FUZZ_ASSERT(h.type == PSC_WIRE_VALUE);
		PSC_FUZZ_ASSERT(slot >= 1 && slot <= PSC_VAN_SLOT_MAX);
		PSC_FUZZ_ASSERT(namelen >= 1 && namelen <= sizeof(name));
		PSC_FUZZ_ASSERT(h.len == sizeof(provider) + namelen);
		PSC_FUZZ_ASSERT(memcmp(in, provider, sizeof(provider)) == 0);
		PSC_FUZZ_ASSERT(memcmp(name, in + sizeof(provider), namelen) ==
				0);
	} else {
		PSC_FUZZ_ASSERT(rc == -EPROTO || rc == -EBADE);
		PSC_FUZZ_ASSERT(err[0]);
	}
	free(in);
	return 0;
}
