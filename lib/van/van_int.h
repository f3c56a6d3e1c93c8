/*
 * Internal contracts of the van (lib/van/): the frame that opens every
 * message, and the TCP exchange that hands out a van's fabric address.
 *
 * On the fabric, a message is a frame (tag user field PSC_VAN_TAG_FRAME)
 * followed by its pieces (PSC_VAN_TAG_PIECE): the meta when it did not fit
 * the frame, then each data segment. Every piece carries, in the tag's
 * rank field, the "slot" that the receiver handed to the sender when the
 * sender fetched its address; slots are unique per receiver, so pieces of
 * different senders never mix, also between senders that have no node id
 * yet. Pieces of one sender arrive in order (pscomm never lets messages of
 * one source and tag overtake each other), so the receiver posts, after a
 * frame, one receive per piece from that slot.
 */
#ifndef PSC_VAN_INT_H
#define PSC_VAN_INT_H

#include <stddef.h>
#include <stdint.h>

#include "ps_comm/van.h"
#include "net/auth.h"
#include "net/net.h"
#include "net/wire.h"
#include "p2p/node.h"
#include "util/err.h"
#include "util/log.h"
#include "util/util.h"

#define PSC_VAN_TAG_FRAME 0
#define PSC_VAN_TAG_PIECE 1

/* Frame layout, big-endian: see psc_van_frame_encode. */
#define PSC_VAN_MAGIC 0x50534356u /* "PSCV" */
#define PSC_VAN_VERSION 3
#define PSC_VAN_HDR 40
/*
 * Frames are at most PSC_VAN_FRAME_MAX bytes (the receiver's frame
 * buffer). A sender fills its frames up to the endpoint's largest single
 * message (psc_ep_single_limit), kept within FRAME_MIN..FRAME_MAX, so a
 * small message is one fabric message wherever the provider allows.
 */
#define PSC_VAN_FRAME_MIN 8192
#define PSC_VAN_FRAME_MAX 65536
/* At most this many segments: their lengths must fit the smallest frame. */
#define PSC_VAN_MAX_SEGS ((PSC_VAN_FRAME_MIN - PSC_VAN_HDR) / 8)
#define PSC_VAN_F_META_INLINE 0x1
/*
 * A van that stops sends each node it knows an empty frame with this
 * flag (and no pieces), so that they stop probing it: a node that left
 * cleanly is not a failure (see psc_van_frame_set_bye).
 */
#define PSC_VAN_F_BYE 0x2
/*
 * The sender gives back the credit this van's frames granted it (see
 * PSC_VAN_SEG_CREDIT): it will not use it, so its chunk receives may go.
 */
#define PSC_VAN_F_RETURN 0x4
#define PSC_VAN_WIRE_NO_ID 0xffffffffu
/*
 * Segments of at most this many bytes ride in the frame after an inline
 * meta, while it has room: their length word has PSC_VAN_SEG_IN_FRAME
 * set, and no piece of their own follows. Copying them costs less than a
 * fabric message of their own (ps-lite's 4 KiB pushes take one message
 * instead of two).
 */
#define PSC_VAN_SEG_INLINE_MAX 16384
#define PSC_VAN_SEG_IN_FRAME (UINT64_C(1) << 63)
/*
 * Credit (credit.c). A frame may grant its receiver a credit: the chunk
 * receives of one transfer of exactly len bytes, in chunks of chunk,
 * from the receiver's slot at the sender (p2p/node.h, pre-arranged
 * transfers), already posted. The receiver's next segment of that length
 * to the granting node then goes at once, without the go-ahead's round
 * trip: its length word has PSC_VAN_SEG_CREDIT set, at most one per
 * frame, and it travels as that transfer instead of a piece.
 */
#define PSC_VAN_SEG_CREDIT (UINT64_C(1) << 62)

/* Slots are 1 .. PSC_VAN_SLOT_MAX; 0 is never handed out. */
#define PSC_VAN_SLOT_MAX ((1u << PSC_TAG_RANK_BITS) - 1)

/* A decoded frame; pointers point into the bytes it was decoded from. */
struct psc_van_frame {
	int sender;	     /* node id or PS_COMM_VAN_NO_ID (-1) */
	unsigned flags;
	uint32_t meta_len;
	uint32_t nseg;
	const uint8_t *lens; /* nseg big-endian u64 */
	const uint8_t *meta; /* inline meta, or NULL */
	const uint8_t *segdata; /* inline segments, in order, or NULL */
	uint32_t grant_id;	/* 0: no credit granted */
	uint32_t grant_slot, grant_chunk;
	uint64_t grant_len;
};

/*
 * Bytes of the frame for a message of meta_len bytes of meta and nseg
 * segments, in a frame of at most limit bytes (PSC_VAN_FRAME_MIN ..
 * PSC_VAN_FRAME_MAX); *inline_meta tells whether the meta rides in it
 * (small segments then may too).
 */
size_t psc_van_frame_size(size_t meta_len, const ps_comm_van_seg_t *segs,
			  size_t nseg, size_t limit, bool *inline_meta);

/*
 * Write the frame into buf (psc_van_frame_size bytes for the same limit):
 * magic u32, version u8, flags u8, zero u16, sender u32
 * (PSC_VAN_WIRE_NO_ID for none), meta_len u32, nseg u32, the grant (id
 * u32, 0 for none; slot u32, chunk u32, len u64: zero here, see
 * psc_van_frame_set_grant), nseg lengths u64 (PSC_VAN_SEG_IN_FRAME set
 * for an inline segment), inline meta, inline segments.
 */
void psc_van_frame_encode(uint8_t *buf, int sender, const void *meta,
			  size_t meta_len, bool inline_meta,
			  const ps_comm_van_seg_t *segs, size_t nseg,
			  size_t limit);

/*
 * Turn an encoded frame of an empty message (no meta, no segments) into
 * the one a stopping van sends to say goodbye.
 */
void psc_van_frame_set_bye(uint8_t *buf);

/*
 * Mark an encoded frame: it grants a credit (id nonzero, slot, chunk
 * and len nonzero); its segment i goes on the credit granted to its
 * sender (not inline, not empty); it gives back the credit its sender
 * held.
 */
void psc_van_frame_set_grant(uint8_t *buf, uint32_t id, uint32_t slot,
			     uint32_t chunk, uint64_t len);
void psc_van_frame_set_credit(uint8_t *buf, uint32_t i);
void psc_van_frame_set_return(uint8_t *buf);

/*
 * Validate len bytes as a frame: magic, version, flags (PSC_VAN_F_BYE
 * only on an empty message), sender, the grant (all zero without an id),
 * segment count, at most one credit segment (neither inline nor empty),
 * and a total length that matches exactly. Returns 0, or -EPROTO
 * with the reason in err. Never reads outside buf.
 */
int psc_van_frame_decode(const uint8_t *buf, size_t len,
			 struct psc_van_frame *f, char *err, size_t errlen);

/*
 * Length of segment i of a decoded frame, whether it is inline, and
 * whether it goes on the credit granted to its sender.
 */
uint64_t psc_van_frame_seg_len(const struct psc_van_frame *f, uint32_t i);
bool psc_van_frame_seg_inline(const struct psc_van_frame *f, uint32_t i);
bool psc_van_frame_seg_credit(const struct psc_van_frame *f, uint32_t i);

/*
 * A buffer of len bytes (64-byte aligned) for ps_comm_van_recv to hand
 * out; released with ps_comm_van_free, which keeps large ones for reuse.
 * Thread-safe. NULL when out of memory.
 */
void *psc_van_buf_alloc(size_t len);

/* The address server: one thread answering fetches on a listening fd. */
struct psc_van_server;

/* What a served van answers with. */
struct psc_van_served {
	const struct psc_auth_key *key; /* fetchers must know the job key */
	struct psc_node_names names;	/* its channel's (p2p/node.h) */
	struct psc_node_chan *chan;	/* binds fetchers' slots */
	uint32_t *next_slot;	/* the van's slot counter (atomic) */
	int unauth_max;		/* PS_COMM_UNAUTH_MAX */
};

/* What a fetch learns of a van (psc_van_served, as the fetcher sees it). */
struct psc_van_addr {
	uint32_t slot;			/* to send to it with */
	uint8_t name[PSC_NODE_NAME_MAX]; /* its network (or only) endpoint */
	size_t namelen;
	char node[PSC_NODE_ID_MAX];	/* "" when shmlen is 0 */
	uint8_t shm[PSC_NODE_NAME_MAX];	/* its shared-memory endpoint */
	size_t shmlen;			/* 0: none */
};

/* The names a of a van point into, as its channel takes them. */
void psc_van_addr_names(const struct psc_van_addr *a, const char *provider,
			struct psc_node_names *out);

/*
 * Listen on at (an address of this machine, or the wildcard when that was
 * asked for; its port is ignored) with port, and start the listener
 * (net/listener.h) whose thread answers each fetch with a new slot and
 * the fabric address. port 0, or a taken port with retry: a port from
 * range, else any. *bound receives the port. Returns 0 or a negative
 * errno (-EADDRNOTAVAIL: at is not this machine's) with err filled. what
 * must outlive the server.
 */
int psc_van_serve(struct psc_van_server **out,
		  const struct sockaddr_storage *at, socklen_t atlen, int port,
		  bool retry, const char *range,
		  const struct psc_van_served *what, int *bound, char *err,
		  size_t errlen);

/* Stop the thread and close the socket. NULL is ignored. */
void psc_van_unserve(struct psc_van_server *s);

/*
 * Fetch the address served at host:port before deadline into *a. Both
 * sides prove they know the job key first (net/auth.h); the answer must
 * come from the same provider. A fetcher that will send to the van gives
 * self, what its own channel serves, and the van binds the slot to it;
 * a probe gives NULL. A connection the van closed before it answered
 * (a stranger too many) is tried again until deadline. Returns 0,
 * -ETIMEDOUT, -EBADE (another key or provider), -EPROTO, -EMSGSIZE (self
 * does not fit), -ECONNRESET or -EPIPE (the van kept closing it), or
 * another negative errno, with err filled.
 */
int psc_van_fetch(const char *host, int port, const struct psc_auth_key *key,
		  const struct psc_node_names *self, const char *provider,
		  double deadline, struct psc_van_addr *a, char *err,
		  size_t errlen);

/*
 * Check and unpack addresses as an answer's payload (below) carries
 * them: len bytes at in, a stranger's (nothing is trusted). Fills *a but
 * its slot. Returns 0, -EBADE (another provider) or -EPROTO, with err
 * filled. Never reads past in + len.
 */
int psc_van_names_parse(const uint8_t *in, size_t len, const char *provider,
			struct psc_van_addr *a, char *err, size_t errlen);

/*
 * Check and unpack the answer to a fetch: h is its header, decoded and
 * validated by psc_wire_decode and from the right job, and in its h->len
 * payload bytes (bytes of a stranger: nothing else is trusted). A VALUE
 * carries a slot in 1..PSC_VAN_SLOT_MAX as rank and the payload
 * "provider\0", a big-endian u16 n, n bytes of address (1..
 * PSC_NODE_NAME_MAX), then either nothing or "node\0" (1..
 * PSC_NODE_ID_MAX - 1 characters) followed by the shared-memory address
 * (1..PSC_NODE_NAME_MAX bytes, to the end); the provider must be this
 * node's. Fills *a. Returns 0, -EBADE (an ERROR answer, another
 * provider) or -EPROTO (malformed), with err filled. Never reads past
 * in + h->len.
 */
int psc_van_answer_parse(const struct psc_wire_hdr *h, const uint8_t *in,
			 const char *provider, struct psc_van_addr *a,
			 char *err, size_t errlen);

/*
 * The endpoint that carries v's messages to node id (shm's, or the
 * network's), or NULL when v has not connected it; for tests. Takes v's
 * locks.
 */
struct psc_ep *psc_van_peer_ep(ps_comm_van_t v, int id);

#endif /* PSC_VAN_INT_H */
