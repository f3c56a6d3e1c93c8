/*
 * The van's frame codec: the first fabric message of every van message,
 * which names the sender and gives the meta and segment lengths so the
 * receiver can post a receive of the right size for each piece. Decoding
 * trusts nothing: every field is checked against the bytes received.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ps_comm/van.h"
#include "van_int.h"
#include "util/copy.h"

/*
 * Whether a segment of len bytes rides in the frame, with room bytes of
 * the frame left (taken from room when it does).
 */
static bool seg_inline(size_t len, size_t *room)
{
	if (len == 0 || len > PSC_VAN_SEG_INLINE_MAX || len > *room)
		return false;
	*room -= len;
	return true;
}

size_t psc_van_frame_size(size_t meta_len, const ps_comm_van_seg_t *segs,
			  size_t nseg, size_t limit, bool *inline_meta)
{
	size_t size = PSC_VAN_HDR + 8 * nseg, room;

	*inline_meta = size + meta_len <= limit;
	if (!*inline_meta)
		return size;
	size += meta_len;
	room = limit - size;
	for (size_t i = 0; i < nseg; i++)
		if (seg_inline(segs[i].len, &room))
			size += segs[i].len;
	return size;
}

void psc_van_frame_encode(uint8_t *buf, int sender, const void *meta,
			  size_t meta_len, bool inline_meta,
			  const ps_comm_van_seg_t *segs, size_t nseg,
			  size_t limit)
{
	uint8_t *p = buf + PSC_VAN_HDR, *data;
	size_t room;

	psc_be_put(buf, PSC_VAN_MAGIC, 4);
	buf[4] = PSC_VAN_VERSION;
	buf[5] = inline_meta ? PSC_VAN_F_META_INLINE : 0;
	psc_be_put(buf + 6, 0, 2);
	psc_be_put(buf + 8, sender < 0 ? PSC_VAN_WIRE_NO_ID : (uint32_t)sender,
		   4);
	psc_be_put(buf + 12, meta_len, 4);
	psc_be_put(buf + 16, nseg, 4);
	memset(buf + 20, 0, PSC_VAN_HDR - 20);
	data = p + 8 * nseg;
	if (inline_meta && meta_len)
		memcpy(data, meta, meta_len);
	data += inline_meta ? meta_len : 0;
	room = inline_meta ? limit - (size_t)(data - buf) : 0;
	for (size_t i = 0; i < nseg; i++, p += 8) {
		bool in = inline_meta && seg_inline(segs[i].len, &room);

		psc_be_put(p, segs[i].len | (in ? PSC_VAN_SEG_IN_FRAME : 0), 8);
		if (in) {
			psc_copy(data, segs[i].data, segs[i].len);
			data += segs[i].len;
		}
	}
}

void psc_van_frame_set_bye(uint8_t *buf)
{
	buf[5] |= PSC_VAN_F_BYE;
}

void psc_van_frame_set_grant(uint8_t *buf, uint32_t id, uint32_t slot,
			     uint32_t chunk, uint64_t len)
{
	psc_be_put(buf + 20, id, 4);
	psc_be_put(buf + 24, slot, 4);
	psc_be_put(buf + 28, chunk, 4);
	psc_be_put(buf + 32, len, 8);
}

void psc_van_frame_set_credit(uint8_t *buf, uint32_t i)
{
	uint8_t *w = buf + PSC_VAN_HDR + 8 * (size_t)i;

	psc_be_put(w, psc_be_get(w, 8) | PSC_VAN_SEG_CREDIT, 8);
}

void psc_van_frame_set_return(uint8_t *buf)
{
	buf[5] |= PSC_VAN_F_RETURN;
}

/* Decode the grant of header buf into f: 0, or -EPROTO with err. */
static int decode_grant(const uint8_t *buf, struct psc_van_frame *f,
			char *err, size_t errlen)
{
	f->grant_id = (uint32_t)psc_be_get(buf + 20, 4);
	f->grant_slot = (uint32_t)psc_be_get(buf + 24, 4);
	f->grant_chunk = (uint32_t)psc_be_get(buf + 28, 4);
	f->grant_len = psc_be_get(buf + 32, 8);
	if (f->grant_id == 0 && !f->grant_slot && !f->grant_chunk &&
	    !f->grant_len)
		return 0;
	if (f->grant_id == 0 || f->grant_slot == 0 ||
	    f->grant_slot > PSC_VAN_SLOT_MAX || f->grant_chunk == 0 ||
	    f->grant_len == 0 || f->grant_len > (uint64_t)PTRDIFF_MAX) {
		snprintf(err, errlen, "a credit with a zero or out-of-range "
			 "field (id %u, slot %u, chunk %u, %llu bytes)",
			 f->grant_id, f->grant_slot, f->grant_chunk,
			 (unsigned long long)f->grant_len);
		return -EPROTO;
	}
	return 0;
}

int psc_van_frame_decode(const uint8_t *buf, size_t len,
			 struct psc_van_frame *f, char *err, size_t errlen)
{
	uint32_t sender;
	size_t want;

	memset(f, 0, sizeof(*f));
	if (len < PSC_VAN_HDR) {
		snprintf(err, errlen, "frame of %zu bytes is shorter than "
			 "its %d-byte header", len, PSC_VAN_HDR);
		return -EPROTO;
	}
	if (psc_be_get(buf, 4) != PSC_VAN_MAGIC || buf[4] != PSC_VAN_VERSION) {
		snprintf(err, errlen, "bad magic or version (%08llx v%u)",
			 (unsigned long long)psc_be_get(buf, 4), buf[4]);
		return -EPROTO;
	}
	f->flags = buf[5];
	sender = (uint32_t)psc_be_get(buf + 8, 4);
	f->meta_len = (uint32_t)psc_be_get(buf + 12, 4);
	f->nseg = (uint32_t)psc_be_get(buf + 16, 4);
	if ((f->flags & ~(PSC_VAN_F_META_INLINE | PSC_VAN_F_BYE |
			  PSC_VAN_F_RETURN)) ||
	    psc_be_get(buf + 6, 2)) {
		snprintf(err, errlen, "unknown flags or nonzero reserved "
			 "fields");
		return -EPROTO;
	}
	if (decode_grant(buf, f, err, errlen) != 0)
		return -EPROTO;
	if ((f->flags & PSC_VAN_F_BYE) && (f->meta_len || f->nseg)) {
		snprintf(err, errlen, "a goodbye frame that carries a message");
		return -EPROTO;
	}
	if (sender != PSC_VAN_WIRE_NO_ID && sender > INT32_MAX) {
		snprintf(err, errlen, "sender id %u out of range", sender);
		return -EPROTO;
	}
	f->sender = sender == PSC_VAN_WIRE_NO_ID ? PS_COMM_VAN_NO_ID
						  : (int)sender;
	if (f->nseg > PSC_VAN_MAX_SEGS) {
		snprintf(err, errlen, "%u segments, more than %d", f->nseg,
			 PSC_VAN_MAX_SEGS);
		return -EPROTO;
	}
	want = PSC_VAN_HDR + 8 * (size_t)f->nseg;
	if (len < want) {
		snprintf(err, errlen, "frame of %zu bytes is shorter than its "
			 "%u segment lengths", len, f->nseg);
		return -EPROTO;
	}
	if (f->flags & PSC_VAN_F_META_INLINE)
		want += f->meta_len;
	for (uint32_t i = 0, credits = 0; i < f->nseg; i++) {
		uint64_t w = psc_be_get(buf + PSC_VAN_HDR + 8 * (size_t)i, 8);
		uint64_t n = w & ~(PSC_VAN_SEG_IN_FRAME | PSC_VAN_SEG_CREDIT);
		bool in = w & PSC_VAN_SEG_IN_FRAME;
		bool credit = w & PSC_VAN_SEG_CREDIT;

		/* Inline data follows an inline meta, in small pieces. */
		if (n > (uint64_t)PTRDIFF_MAX ||
		    (in && (!(f->flags & PSC_VAN_F_META_INLINE) || n == 0 ||
			    n > PSC_VAN_SEG_INLINE_MAX))) {
			snprintf(err, errlen, "segment %u is too long or cannot "
				 "be in the frame", i);
			return -EPROTO;
		}
		if (credit && (in || n == 0 || ++credits > 1)) {
			snprintf(err, errlen, "segment %u cannot go on a "
				 "credit", i);
			return -EPROTO;
		}
		if (in)
			want += (size_t)n;
	}
	if (want != len) {
		snprintf(err, errlen, "frame of %zu bytes announces %zu", len,
			 want);
		return -EPROTO;
	}
	f->lens = buf + PSC_VAN_HDR;
	if (f->flags & PSC_VAN_F_META_INLINE) {
		f->meta = buf + PSC_VAN_HDR + 8 * (size_t)f->nseg;
		f->segdata = f->meta + f->meta_len;
	}
	return 0;
}

uint64_t psc_van_frame_seg_len(const struct psc_van_frame *f, uint32_t i)
{
	return psc_be_get(f->lens + 8 * (size_t)i, 8) &
	       ~(PSC_VAN_SEG_IN_FRAME | PSC_VAN_SEG_CREDIT);
}

bool psc_van_frame_seg_inline(const struct psc_van_frame *f, uint32_t i)
{
	return psc_be_get(f->lens + 8 * (size_t)i, 8) & PSC_VAN_SEG_IN_FRAME;
}

bool psc_van_frame_seg_credit(const struct psc_van_frame *f, uint32_t i)
{
	return psc_be_get(f->lens + 8 * (size_t)i, 8) & PSC_VAN_SEG_CREDIT;
}
