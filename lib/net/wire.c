/*
 * The wire header codec shared by the rendezvous store and the van.
 */
#include <errno.h>
#include <stdio.h>

#include "net/wire.h"
#include "util/util.h"

void psc_wire_encode(const struct psc_wire_hdr *h, uint8_t *buf)
{
	psc_be_put(buf, h->magic, 4);
	psc_be_put(buf + 4, h->version, 2);
	psc_be_put(buf + 6, h->type, 2);
	psc_be_put(buf + 8, h->job, 8);
	psc_be_put(buf + 16, (uint32_t)h->rank, 4);
	psc_be_put(buf + 20, (uint32_t)h->size, 4);
	psc_be_put(buf + 24, h->len, 4);
}

int psc_wire_decode(const uint8_t *buf, struct psc_wire_hdr *h, char *err,
		    size_t len)
{
	h->magic = (uint32_t)psc_be_get(buf, 4);
	h->version = (uint16_t)psc_be_get(buf + 4, 2);
	h->type = (uint16_t)psc_be_get(buf + 6, 2);
	h->job = psc_be_get(buf + 8, 8);
	h->rank = (int32_t)(uint32_t)psc_be_get(buf + 16, 4);
	h->size = (int32_t)(uint32_t)psc_be_get(buf + 20, 4);
	h->len = (uint32_t)psc_be_get(buf + 24, 4);
	if (h->magic != PSC_WIRE_MAGIC) {
		snprintf(err, len, "bad magic 0x%08x (not a pscomm peer)",
			 h->magic);
		return -EPROTO;
	}
	if (h->version != PSC_WIRE_VERSION) {
		snprintf(err, len, "protocol version %u, expected %u",
			 h->version, (unsigned)PSC_WIRE_VERSION);
		return -EPROTO;
	}
	if (h->type == 0 || h->type >= PSC_WIRE_TYPE_MAX) {
		snprintf(err, len, "unknown message type %u", h->type);
		return -EPROTO;
	}
	if (h->len > PSC_WIRE_MAX_PAYLOAD) {
		snprintf(err, len, "oversized message: %u bytes (limit %u)",
			 h->len, PSC_WIRE_MAX_PAYLOAD);
		return -EPROTO;
	}
	return 0;
}
