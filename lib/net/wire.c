/*
 * The wire header codec shared by the rendezvous store and the van, and
 * the listener's codec for it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "net/listener.h"
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

long psc_wire_lsn_decode(const uint8_t *buf, size_t len,
			 struct psc_lsn_frame *f, char *why, size_t wlen)
{
	struct psc_wire_hdr h;

	if (len < PSC_WIRE_HDR_LEN)
		return 0;
	if (psc_wire_decode(buf, &h, why, wlen) != 0)
		return -EPROTO;
	f->type = h.type;
	f->kind = h.type == PSC_WIRE_HELLO   ? PSC_LSN_HELLO
		  : h.type == PSC_WIRE_PROOF ? PSC_LSN_PROOF
					     : PSC_LSN_OTHER;
	f->job = h.job;
	f->rank = h.rank;
	f->size = h.size;
	f->pl = buf + PSC_WIRE_HDR_LEN;
	f->plen = h.len;
	return (long)(PSC_WIRE_HDR_LEN + h.len);
}

size_t psc_wire_lsn_chal(const struct psc_lsn_frame *hello,
			 const uint8_t *chal, size_t clen, uint8_t *out,
			 size_t room)
{
	struct psc_wire_hdr h = {PSC_WIRE_MAGIC, PSC_WIRE_VERSION,
				 PSC_WIRE_CHAL, hello->job, 0, 0,
				 (uint32_t)clen};

	if (PSC_WIRE_HDR_LEN + clen > room)
		return 0;
	psc_wire_encode(&h, out);
	memcpy(out + PSC_WIRE_HDR_LEN, chal, clen);
	return PSC_WIRE_HDR_LEN + clen;
}
