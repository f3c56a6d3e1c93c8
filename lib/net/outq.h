/*
 * An output queue for a non-blocking stream socket: what the socket
 * buffer did not take waits here, in order, until the caller's poll says
 * the socket is writable (POLLOUT) and psc_outq_flush sends it. Frames
 * are never split across a failure: bytes are either sent or queued, so
 * the stream stays whole. Not thread-safe: the owner serialises calls.
 */
#ifndef PSC_OUTQ_H
#define PSC_OUTQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct psc_outq {
	uint8_t *buf;
	size_t len, cap;
	size_t max;	/* most bytes queued (0: PSC_OUTQ_MAX) */
};

#define PSC_OUTQ_MAX (4u << 20)

/*
 * Send len bytes on fd after what is queued, queueing what the socket
 * does not take now. Returns 0, -ENOBUFS (the queue would exceed its
 * max: the peer has read nothing for that long; nothing was queued), or
 * the socket's error (the connection is broken).
 */
int psc_outq_send(struct psc_outq *q, int fd, const void *buf, size_t len);

/* Send what is queued, as far as the socket takes it: 0 or its error. */
int psc_outq_flush(struct psc_outq *q, int fd);

/* Whether bytes wait: poll fd for POLLOUT too. */
static inline bool psc_outq_pending(const struct psc_outq *q)
{
	return q->len > 0;
}

/* Drop what is queued and free the buffer. */
void psc_outq_free(struct psc_outq *q);

#endif /* PSC_OUTQ_H */
