/* Output queue of a non-blocking stream socket (contract in outq.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "net/outq.h"
#include "util/util.h"

/* send() what it takes now: bytes written, or a negative errno. */
static ssize_t try_send(int fd, const uint8_t *buf, size_t len)
{
	ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	return n < 0 ? -errno : n;
}

int psc_outq_flush(struct psc_outq *q, int fd)
{
	ssize_t n;

	if (q->len == 0)
		return 0;
	n = try_send(fd, q->buf, q->len);
	if (n < 0)
		return (int)n;
	memmove(q->buf, q->buf + n, q->len - (size_t)n);
	q->len -= (size_t)n;
	return 0;
}

int psc_outq_send(struct psc_outq *q, int fd, const void *buf, size_t len)
{
	size_t max = q->max ? q->max : PSC_OUTQ_MAX, done = 0;
	int rc = psc_outq_flush(q, fd);

	if (rc)
		return rc;
	if (q->len == 0) {
		ssize_t n = try_send(fd, buf, len);

		if (n < 0)
			return (int)n;
		done = (size_t)n;
	}
	if (done == len)
		return 0;
	if (q->len + len - done > max)
		return done ? -EPIPE : -ENOBUFS;
	if (q->len + len - done > q->cap) {
		size_t cap = PSC_MAX(q->len + len - done, 2 * q->cap);
		uint8_t *b = realloc(q->buf, PSC_MIN(cap, max));

		if (!b)
			return done ? -EPIPE : -ENOBUFS;
		q->buf = b;
		q->cap = PSC_MIN(cap, max);
	}
	memcpy(q->buf + q->len, (const uint8_t *)buf + done, len - done);
	q->len += len - done;
	return 0;
}

void psc_outq_free(struct psc_outq *q)
{
	free(q->buf);
	memset(q, 0, sizeof(*q));
}
