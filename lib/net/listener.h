/*
 * The one authenticated listener every pscomm TCP server plugs into (the
 * rendezvous store, the liveness star at rank 0, the van's address
 * server). It accepts, frames, runs the job key's handshake (net/auth.h),
 * caps and expires strangers, survives descriptor exhaustion and logs
 * about strangers at a bounded rate. A server fills a psc_lsn_ops table
 * (its wire codec and its callbacks) in nng's transport style, and sees
 * nothing a connection sent before it proved the job key but its HELLO
 * claim.
 *
 * Life of a connection:
 *   accepted         a stranger: at most cfg.unauth_max at once (the
 *                    oldest goes when another comes, or when descriptors
 *                    run out), cfg.pre_deadline seconds to authenticate,
 *                    and frames of at most ops.pre_max bytes
 *   HELLO            ops.on_hello vets the claim and names the binding;
 *                    the listener answers CHAL (ops.encode_chal)
 *   PROOF            the same claim (job, rank, size) and a MAC that
 *                    verifies, else ops.on_refuse and a silent drop
 *   admitted         ops.on_authenticated; then ops.on_frame per frame
 *                    (at most ops.frame_max bytes); ops.on_close once
 *                    when the listener closes it
 *
 * Threading. A listener runs in one of two modes. Thread mode
 * (psc_lsn_start): the listener's own thread polls and calls every op;
 * only ops may call the listener then, besides psc_lsn_stop from another
 * thread. Polled mode: the owner puts the listener's descriptors in its
 * own poll set (psc_lsn_pollfds) and hands back the results
 * (psc_lsn_service), and must serialise every call into the listener (a
 * lock of its own, held across both). In both modes ops run on the
 * thread that serves, and may call psc_lsn_send, psc_lsn_close,
 * psc_lsn_read, psc_lsn_next and the accessors, but never psc_lsn_stop,
 * psc_lsn_free or psc_lsn_service. Nothing here blocks, except
 * psc_lsn_send with cfg.send_s > 0 (bounded by it).
 *
 * Errors are negative errnos. A connection's memory stays valid until
 * the next psc_lsn_pollfds (or round of the thread) after it closed, so
 * callbacks may keep pointers to connections for one round.
 */
#ifndef PSC_NET_LISTENER_H
#define PSC_NET_LISTENER_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/auth.h"

struct psc_lsn;
struct psc_lsn_conn;

/* What a decoded frame is to the listener. */
enum psc_lsn_kind {
	PSC_LSN_OTHER = 0, /* for the server, once admitted */
	PSC_LSN_HELLO,	   /* payload starts with the client's nonce */
	PSC_LSN_PROOF,	   /* payload is the client's MAC */
};

/*
 * One frame as the server's codec decoded it. pl points into the
 * listener's buffer and is valid during the callback only. job, rank
 * and size are what the header says (0 where the format has none).
 */
struct psc_lsn_frame {
	enum psc_lsn_kind kind;
	int type; /* the protocol's own type */
	uint64_t job;
	int32_t rank, size;
	const uint8_t *pl;
	size_t plen;
};

struct psc_lsn_ops {
	size_t size;	  /* sizeof(struct psc_lsn_ops) */
	const char *name; /* log lines start with it: "rendezvous" */
	enum psc_auth_purpose purpose;
	size_t conn_priv; /* zeroed bytes for the server per connection */
	size_t pre_max;	  /* longest frame (header included) of a stranger */
	size_t frame_max; /* longest frame once admitted */

	/*
	 * Codec, required. Decode the frame at the start of buf (len bytes
	 * so far): return its whole length once its header is in, even if
	 * larger than len (then f is filled only when it is <= len), 0 when
	 * the header is incomplete, or -EPROTO with a reason in why. Must
	 * never read outside buf. Pure: called on hostile bytes.
	 */
	long (*decode)(const uint8_t *buf, size_t len, struct psc_lsn_frame *f,
		       char *why, size_t wlen);

	/*
	 * Codec, required. Frame the CHAL (chal, clen bytes) answering
	 * hello into out (room bytes): its length, or 0 when it does not fit.
	 */
	size_t (*encode_chal)(const struct psc_lsn_frame *hello,
			      const uint8_t *chal, size_t clen, uint8_t *out,
			      size_t room);

	/*
	 * A stranger's HELLO, required: vet its claim (f's job, rank, size,
	 * the payload after the nonce) and write the handshake's binding
	 * (at most PSC_AUTH_BIND_MAX bytes) to bind (its length to *bindlen), and the
	 * session to hand out to session (PSC_AUTH_SESSION_LEN bytes,
	 * zeroed; leave it for none). Return 0, or a negative errno to drop
	 * the stranger without a word. The connection is not admitted: it
	 * may not be sent to; psc_lsn_priv is its own, for the claim.
	 */
	int (*on_hello)(void *arg, struct psc_lsn_conn *c,
			const struct psc_lsn_frame *f, uint8_t *bind,
			size_t *bindlen, uint8_t *session);

	/*
	 * The connection proved the job key with proof, required: it is
	 * one of ours from here on, and may be sent to. Return 0 to admit
	 * it, or a negative errno to close it (the server may send its last
	 * words first); then on_close is not called.
	 */
	int (*on_authenticated)(void *arg, struct psc_lsn_conn *c,
				const struct psc_lsn_frame *proof);

	/*
	 * A frame from an admitted connection, required. Return 0, or a
	 * negative errno to have the listener close it (on_close follows,
	 * with that errno).
	 */
	int (*on_frame)(void *arg, struct psc_lsn_conn *c,
			const struct psc_lsn_frame *f);

	/*
	 * Optional: the listener refuses c, err -EPROTO (a malformed or
	 * oversized frame, from a stranger or an admitted connection; why
	 * says which) or -EACCES (a stranger's proof does not verify). The
	 * server may psc_lsn_send one last frame, even to a stranger (the
	 * one case where it may); the listener closes c after, and calls
	 * on_close for an admitted one.
	 */
	void (*on_refuse)(void *arg, struct psc_lsn_conn *c, int err,
			  const char *why);

	/*
	 * An admitted connection was closed by the listener, optional: err
	 * -ECONNRESET (the peer closed or reset it), -EPROTO (a malformed
	 * frame) or on_frame's errno. Called once, never for a connection
	 * the server closed itself (psc_lsn_close) nor at psc_lsn_free.
	 */
	void (*on_close)(void *arg, struct psc_lsn_conn *c, int err);

	/*
	 * Thread mode, optional: called after every round (at least every
	 * cfg.tick_s seconds). Return true to end the thread.
	 */
	bool (*on_tick)(void *arg, double now);
};

struct psc_lsn_config {
	int fd;		      /* a listening socket, taken over */
	struct psc_auth_key key;
	int unauth_max;	      /* PS_COMM_UNAUTH_MAX; < 1 means 1 */
	double pre_deadline;  /* seconds a stranger has to authenticate */
	double send_s;	      /* psc_lsn_send's bound; 0: never wait */
	double tick_s;	      /* thread mode: the longest poll */
	int log_rank;	      /* the rank log lines name, or -1 */
};

/*
 * A listener on cfg->fd (taken over even on failure) serving ops with
 * arg. Nothing runs until psc_lsn_start, or the owner's polling.
 * Returns 0, -ENOMEM, or another errno with words in err.
 */
int psc_lsn_open(struct psc_lsn **out, const struct psc_lsn_config *cfg,
		 const struct psc_lsn_ops *ops, void *arg, char *err,
		 size_t len);

/* Thread mode: start the thread. 0 or a negative errno. */
int psc_lsn_start(struct psc_lsn *l);

/* Thread mode: end the thread (if running) and wait for it. */
void psc_lsn_stop(struct psc_lsn *l);

/* Thread mode: wait for the thread to end by itself (ops.on_tick). */
void psc_lsn_wait(struct psc_lsn *l);

/* Close every connection and the socket, and free l (stopped first). */
void psc_lsn_free(struct psc_lsn *l);

/* The most descriptors psc_lsn_pollfds may write. */
size_t psc_lsn_npoll(const struct psc_lsn *l);

/*
 * Polled mode: free what closed, then write l's descriptors to pf (at
 * most max; psc_lsn_npoll is enough) and return how many.
 */
int psc_lsn_pollfds(struct psc_lsn *l, struct pollfd *pf, size_t max);

/*
 * Polled mode: handle what poll() found in pf (n entries as written by
 * psc_lsn_pollfds; n may be 0 when poll timed out), then expire
 * strangers. Calls the ops.
 */
void psc_lsn_service(struct psc_lsn *l, const struct pollfd *pf, int n);

/*
 * Send len bytes to c (admitted, or a stranger from on_refuse): whole,
 * within cfg.send_s. With send_s 0 it never waits: what the socket
 * buffer does not take is queued and sent as the socket drains
 * (psc_lsn_service), up to PSC_OUTQ_MAX bytes; -EAGAIN when the queue is
 * that full and nothing was sent. Returns 0, -ENOTCONN (closed), -EPIPE
 * (the stream is garbled) or another negative errno. The caller decides
 * whether to close.
 */
int psc_lsn_send(struct psc_lsn_conn *c, const void *buf, size_t len);

/* Close c now; on_close is not called. Idempotent. */
void psc_lsn_close(struct psc_lsn_conn *c);

/*
 * Handle what c has received so far (frames that came before what the
 * caller is handling); a no-op for c being read up the stack, or closed.
 */
void psc_lsn_read(struct psc_lsn_conn *c);

/* The admitted, open connection after prev (NULL: the first), or NULL. */
struct psc_lsn_conn *psc_lsn_next(struct psc_lsn *l,
				  const struct psc_lsn_conn *prev);

/* ops.conn_priv bytes for the server. */
void *psc_lsn_priv(struct psc_lsn_conn *c);

/* "addr:port" of the peer, for messages. */
const char *psc_lsn_peer(const struct psc_lsn_conn *c);

/* Whether c is open; when c's last bytes arrived (psc_now()). */
bool psc_lsn_open_p(const struct psc_lsn_conn *c);
double psc_lsn_last_rx(const struct psc_lsn_conn *c);

/* The port l listens on. */
int psc_lsn_port(const struct psc_lsn *l);

/* Strangers (unauthenticated, open connections) at this moment. */
size_t psc_lsn_strangers(const struct psc_lsn *l);

#endif /* PSC_NET_LISTENER_H */
