/*
 * The van's address answer (lib/van/addr.c): what a fetch reads back
 * from whatever listens at a ps-lite node's host:port. The input is the
 * message as read: a wire header, then its payload. The harness reads it
 * as psc_van_fetch does (header checked by psc_wire_decode, payload of at
 * most 768 bytes) and hands it to psc_van_answer_parse. An accepted
 * answer yields a slot in range, a network address of 1..
 * PSC_NODE_NAME_MAX bytes copied from after the provider name and its
 * length, and either no shared-memory part or a node identity and an
 * address that are copies of the bytes that follow, to the end.
 */
#include <errno.h>

#include "fuzz.h"
#include "van/van_int.h"

/* psc_van_fetch's payload room (REPLY_MAX in addr.c). */
#define ANSWER_MAX 768

static const char provider[] = "tcp;ofi_rxm";

/* The checks on an answer accepted as *a; in holds its h->len bytes. */
static void check_accepted(const struct psc_wire_hdr *h, const uint8_t *in,
			   const struct psc_van_addr *a)
{
	const uint8_t *p = in + sizeof(provider);
	size_t nodelen = strlen(a->node);

	PSC_FUZZ_ASSERT(h->type == PSC_WIRE_VALUE);
	PSC_FUZZ_ASSERT(a->slot >= 1 && a->slot <= PSC_VAN_SLOT_MAX);
	PSC_FUZZ_ASSERT(memcmp(in, provider, sizeof(provider)) == 0);
	PSC_FUZZ_ASSERT(a->namelen >= 1 && a->namelen <= PSC_NODE_NAME_MAX);
	PSC_FUZZ_ASSERT(((size_t)p[0] << 8 | p[1]) == a->namelen);
	PSC_FUZZ_ASSERT(memcmp(a->name, p + 2, a->namelen) == 0);
	p += 2 + a->namelen;
	if (a->shmlen == 0) {
		PSC_FUZZ_ASSERT(nodelen == 0);
		PSC_FUZZ_ASSERT(p == in + h->len);
		return;
	}
	PSC_FUZZ_ASSERT(nodelen >= 1 && nodelen < PSC_NODE_ID_MAX);
	PSC_FUZZ_ASSERT(a->shmlen <= PSC_NODE_NAME_MAX);
	PSC_FUZZ_ASSERT(memcmp(a->node, p, nodelen + 1) == 0);
	PSC_FUZZ_ASSERT(memcmp(a->shm, p + nodelen + 1, a->shmlen) == 0);
	PSC_FUZZ_ASSERT(p + nodelen + 1 + a->shmlen == in + h->len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct psc_wire_hdr h;
	struct psc_van_addr a;
	uint8_t *in;
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
	rc = psc_van_answer_parse(&h, in, provider, &a, err, sizeof(err));
	if (rc == 0) {
		check_accepted(&h, in, &a);
	} else {
		PSC_FUZZ_ASSERT(rc == -EPROTO || rc == -EBADE);
		PSC_FUZZ_ASSERT(err[0]);
	}
	free(in);
	return 0;
}
