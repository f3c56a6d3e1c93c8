/*
 * The wire header of pscomm's TCP exchanges (the rendezvous store and
 * the van's address service). Decoding validates everything a stranger
 * can send: magic, version, type and length.
 */
#ifndef PSC_WIRE_H
#define PSC_WIRE_H

#include <stddef.h>
#include <stdint.h>

/*
 * The tcp store's wire format. Every message starts with this header,
 * big-endian on the wire. len counts the payload that follows. job is
 * the communicator's generation in the tcp store (0 in the van): no
 * secret, and nothing derived from one, travels in it.
 */
#define PSC_WIRE_MAGIC 0x50534353u /* "PSCS" */
/* 2: HELLO carries a nonce, and CHAL/PROOF authenticate (net/auth.h). */
#define PSC_WIRE_VERSION 2
#define PSC_WIRE_HDR_LEN 28
#define PSC_WIRE_MAX_PAYLOAD (1u << 20)

enum psc_wire_type {
	PSC_WIRE_HELLO = 1, /* payload: client nonce, then hostname */
	PSC_WIRE_SET,	    /* payload: key '\0' value */
	PSC_WIRE_GET,	    /* payload: key; reply VALUE when set */
	PSC_WIRE_VALUE,	    /* payload: value */
	PSC_WIRE_OK,	    /* empty */
	PSC_WIRE_ERROR,	    /* payload: message text */
	PSC_WIRE_BYE,	    /* empty: this rank is done */
	PSC_WIRE_CHAL,	    /* payload: server nonce, session, server MAC */
	PSC_WIRE_PROOF,	    /* payload: client MAC */
	PSC_WIRE_TYPE_MAX,
};

struct psc_wire_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint64_t job;
	int32_t rank;
	int32_t size;
	uint32_t len;
};

/* Encode h into PSC_WIRE_HDR_LEN bytes at buf. */
void psc_wire_encode(const struct psc_wire_hdr *h, uint8_t *buf);

/*
 * Decode and validate PSC_WIRE_HDR_LEN bytes. Returns 0, or -EPROTO with a
 * reason in err (bad magic, version, type or oversized length).
 */
int psc_wire_decode(const uint8_t *buf, struct psc_wire_hdr *h, char *err,
		    size_t len);

struct psc_lsn_frame;

/*
 * The listener's codec for this format (net/listener.h, ops.decode and
 * ops.encode_chal): HELLO and PROOF are the handshake's, the rest the
 * server's. The CHAL echoes the HELLO's job, with rank and size 0.
 */
long psc_wire_lsn_decode(const uint8_t *buf, size_t len,
			 struct psc_lsn_frame *f, char *why, size_t wlen);
size_t psc_wire_lsn_chal(const struct psc_lsn_frame *hello,
			 const uint8_t *chal, size_t clen, uint8_t *out,
			 size_t room);

#endif /* PSC_WIRE_H */
