/*
 * The van's receives, pipelined: every frame that has arrived gets its
 * piece receives posted at once (so transfers of several messages
 * overlap), and messages are handed out in the order their frames
 * arrived, with the failures of the nodes the receiver waits on.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state_int.h"
#include "util/copy.h"

bool psc_van_inflight_done(const struct van_inflight *f)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->reqs[i] && !psc_req_done(f->reqs[i]))
			return false;
	return true;
}

static int post_frame_recv(struct ps_comm_van *v)
{
	return psc_van_recv(v, v->frame_buf,
			 sizeof(v->frame_buf), -1, PSC_VAN_TAG_FRAME,
			 &v->frame_req);
}

/* Whether this van handed out slot (to someone who fetched its address). */
static bool slot_known(const struct ps_comm_van *v, uint32_t slot)
{
	uint32_t next = __atomic_load_n(&v->next_slot, __ATOMIC_RELAXED);

	/* Once the counter wrapped, every nonzero slot has been issued. */
	return slot != 0 && slot <= PSC_VAN_SLOT_MAX &&
	       (next > PSC_VAN_SLOT_MAX + 1 || slot < next);
}

/* The entry of sender id, created when new; NULL when out of memory. */
static struct van_sender *sender_get(struct ps_comm_van *v, int id)
{
	struct van_sender *s;

	for (size_t i = 0; i < v->nsenders; i++)
		if (v->senders[i].id == id)
			return &v->senders[i];
	if (!psc_van_room_for_one((void **)&v->senders, &v->senders_cap,
				  v->nsenders, sizeof(*v->senders)))
		return NULL;
	s = &v->senders[v->nsenders++];
	s->id = id;
	s->slot = 0;
	s->seen = 0;
	return s;
}

/*
 * Whether a frame from slot that names sender id may pass. Slots grow
 * with every fetch of this van's address, so once an id has sent from a
 * newer slot (it connected again, or another process took the id over),
 * frames from its older slots come from a connection that is gone.
 */
static bool sender_admit(struct ps_comm_van *v, uint32_t slot, int id)
{
	struct van_sender *s;

	if (id == PS_COMM_VAN_NO_ID)
		return true;
	s = sender_get(v, id);
	if (!s)
		return true;
	/* Once the slots wrapped, their order says nothing. */
	if (slot < s->slot && __atomic_load_n(&v->next_slot, __ATOMIC_RELAXED) <=
				      PSC_VAN_SLOT_MAX + 1) {
		psc_log(PSC_LOG_WARN, -1, "van: dropping a frame from node %d "
			"on slot %u: that id sends from slot %u since it "
			"connected again", id, slot, s->slot);
		return false;
	}
	if (s->slot && slot > s->slot)
		psc_log(PSC_LOG_INFO, -1, "van: node %d now sends from slot %u "
			"(was %u)", id, slot, s->slot);
	s->slot = slot;
	s->seen = psc_now();
	return true;
}

double psc_van_sender_seen(struct ps_comm_van *v, int id)
{
	for (size_t i = 0; i < v->nsenders; i++)
		if (v->senders[i].id == id)
			return v->senders[i].seen;
	return 0;
}

/*
 * Give msg (zeroed) its sender, a meta buffer of meta_len bytes and room
 * for nseg segments, which msg_add_seg then fills in order. Returns 0 or
 * PS_COMM_ERR_NOMEM; ps_comm_van_msg_release frees what it got either
 * way.
 */
static int msg_start(ps_comm_van_msg_t *msg, int sender, size_t meta_len,
		     size_t nseg)
{
	msg->sender = sender;
	msg->meta = psc_van_buf_alloc(meta_len);
	msg->segs = nseg ? psc_van_buf_alloc(nseg * sizeof(*msg->segs)) : NULL;
	if (!msg->meta || (nseg && !msg->segs))
		return PS_COMM_ERR_NOMEM;
	msg->meta_len = meta_len;
	if (nseg)
		memset(msg->segs, 0, nseg * sizeof(*msg->segs));
	return 0;
}

/*
 * Add msg's next segment: a buffer of len bytes in *buf (NULL when len is
 * 0), or with have, *buf itself. Returns 0 or PS_COMM_ERR_NOMEM.
 */
static int msg_add_seg(ps_comm_van_msg_t *msg, size_t len, void **buf,
		       bool have)
{
	if (!have)
		*buf = len ? psc_van_buf_alloc(len) : NULL;
	if (len && !*buf)
		return PS_COMM_ERR_NOMEM;
	msg->segs[msg->nseg].data = *buf;
	msg->segs[msg->nseg].len = len;
	msg->nseg++;
	return 0;
}

/* Post one receive per piece of frame f from slot into msg's buffers. */
static int post_pieces_recv(struct ps_comm_van *v, uint32_t slot,
			    const struct psc_van_frame *f,
			    struct van_inflight *in)
{
	ps_comm_van_msg_t *msg = &in->msg;
	const uint8_t *data = f->segdata;
	int rc = msg_start(msg, f->sender, f->meta_len, f->nseg);

	if (rc)
		return rc;
	if (f->meta)
		memcpy(msg->meta, f->meta, f->meta_len);
	else
		rc = psc_van_recv(v, msg->meta, f->meta_len,
			       (int)slot, PSC_VAN_TAG_PIECE, &in->reqs[in->n++]);
	for (uint32_t i = 0; !rc && i < f->nseg; i++) {
		size_t len = (size_t)psc_van_frame_seg_len(f, i);
		void *buf = NULL;

		if (psc_van_frame_seg_credit(f, i)) {
			/* Its chunks come, or came, into the credit's buffer. */
			rc = psc_van_credit_take(v, slot, f, i,
						 &in->reqs[in->n], &buf);
			if (rc)
				return rc;
			in->n++;
			rc = msg_add_seg(msg, len, &buf, true);
			continue;
		}
		rc = msg_add_seg(msg, len, &buf, false);
		if (rc)
			return rc;
		/* An inline segment is never empty (the decoder checks). */
		if (buf && psc_van_frame_seg_inline(f, i)) {
			psc_copy(buf, data, len);
			data += len;
			continue;
		}
		rc = psc_van_recv(v, buf, len, (int)slot,
			       PSC_VAN_TAG_PIECE, &in->reqs[in->n++]);
	}
	return rc;
}

/* Put in behind the messages being received (receiving thread). */
static void queue_inflight(struct ps_comm_van *v, struct van_inflight *in)
{
	if (v->in_tail)
		v->in_tail->next = in;
	else
		v->in_head = in;
	v->in_tail = in;
	v->in_count++;
}

int psc_van_deliver_local(struct ps_comm_van *v, const void *meta,
			  size_t meta_len, const ps_comm_van_seg_t *segs,
			  size_t nseg)
{
	struct van_inflight *in = calloc(1, sizeof(*in));
	int rc;

	if (!in)
		return PS_COMM_ERR_NOMEM;
	rc = msg_start(&in->msg, __atomic_load_n(&v->my_id, __ATOMIC_RELAXED),
		       meta_len, nseg);
	if (!rc && meta_len)
		memcpy(in->msg.meta, meta, meta_len);
	for (size_t i = 0; !rc && i < nseg; i++) {
		void *buf;

		rc = msg_add_seg(&in->msg, segs[i].len, &buf, false);
		if (!rc && buf)
			psc_copy(buf, segs[i].data, segs[i].len);
	}
	if (rc) {
		ps_comm_van_msg_release(&in->msg);
		free(in);
		return rc;
	}
	pthread_mutex_lock(&v->lock);
	if (v->local_tail)
		v->local_tail->next = in;
	else
		v->local_head = in;
	v->local_tail = in;
	__atomic_add_fetch(&v->local_n, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&v->lock);
	return 0;
}

void psc_van_take_local(struct ps_comm_van *v)
{
	struct van_inflight *in;

	if (!__atomic_load_n(&v->local_n, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&v->lock);
	in = v->local_head;
	v->local_head = NULL;
	v->local_tail = NULL;
	__atomic_store_n(&v->local_n, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&v->lock);
	while (in) {
		struct van_inflight *next = in->next;

		in->next = NULL;
		queue_inflight(v, in);
		in = next;
	}
}

/*
 * Node id said goodbye: it stopped cleanly, so its silence is no
 * failure any more and it is not probed again until it is connected
 * again; sends to it fail at once. Receiving thread.
 */
static void mark_left(struct ps_comm_van *v, int id)
{
	struct van_peer *p;

	pthread_mutex_lock(&v->lock);
	p = id == PS_COMM_VAN_NO_ID ? NULL : psc_van_peer_find(v, id);
	pthread_mutex_unlock(&v->lock);
	if (!p) {
		psc_log(PSC_LOG_DEBUG, -1, "van: goodbye from node %d, which "
			"this van never connected", id);
		return;
	}
	__atomic_store_n(&p->left, true, __ATOMIC_RELEASE);
	psc_log(PSC_LOG_INFO, -1, "van: node %d at %s:%d stopped", id,
		p->host, p->port);
}

/* Queue a message whose frame (len bytes at fb) came from slot. */
static void start_message(struct ps_comm_van *v, uint32_t slot,
			  const uint8_t *fb, size_t len)
{
	struct van_inflight *in;
	struct psc_van_frame f;
	char err[256];

	if (psc_van_frame_decode(fb, len, &f, err, sizeof(err)) != 0) {
		psc_log(PSC_LOG_WARN, -1, "van: dropping a malformed frame from "
			"slot %u: %s", slot, err);
		return;
	}
	if (!sender_admit(v, slot, f.sender))
		return;
	if (f.flags & PSC_VAN_F_BYE) {
		mark_left(v, f.sender);
		return;
	}
	in = calloc(1, sizeof(*in) +
			       (f.nseg + 1) * sizeof(ps_comm_request_t));
	if (!in) {
		psc_log(PSC_LOG_ERROR, -1, "van: out of memory: dropping a "
			"message from node %d", f.sender);
		return;
	}
	in->deadline = psc_deadline(v->params.op_timeout);
	psc_van_credit_frame(v, slot, &f);
	in->err = post_pieces_recv(v, slot, &f, in);
	queue_inflight(v, in);
	if (!in->err)
		psc_van_credit_grant(v, slot, &f);
}

/* Take the arrived frame and post the next frame receive. */
static void take_frame(struct ps_comm_van *v)
{
	ps_comm_status_t st;
	int rc = psc_van_wait(&v->frame_req, &st, 0);

	if (rc)
		psc_log(PSC_LOG_WARN, -1, "van: dropping a frame: %s",
			ps_comm_strerror(rc));
	else if (!slot_known(v, (uint32_t)st.source))
		psc_log(PSC_LOG_WARN, -1, "van: dropping a frame from unknown "
			"sender slot %d", st.source);
	else
		start_message(v, (uint32_t)st.source, v->frame_buf, st.len);
	if (post_frame_recv(v) != 0)
		psc_log(PSC_LOG_ERROR, -1, "van: cannot post a receive");
}

void psc_van_take_frames(struct ps_comm_van *v)
{
	while (v->frame_req && psc_req_done(v->frame_req) &&
	       v->in_count < PSC_VAN_MAX_INFLIGHT)
		take_frame(v);
}

/*
 * Unlink the oldest message and settle its requests: those not done are
 * withdrawn. Returns 0 or the error that spoils it; *held tells that the
 * provider may still write into its buffers.
 */
static int finish_oldest(struct ps_comm_van *v, struct van_inflight **out,
			 bool *held)
{
	struct van_inflight *in = v->in_head;
	int rc = in->err;

	v->in_head = in->next;
	if (!v->in_head)
		v->in_tail = NULL;
	v->in_count--;
	*held = false;
	for (size_t i = 0; i < in->n; i++) {
		int e = PS_COMM_ERR_TIMEOUT;

		if (!in->reqs[i])
			continue;
		if (psc_req_done(in->reqs[i]))
			e = psc_van_wait(&in->reqs[i], NULL, 0);
		else
			*held |= psc_req_cancel(&in->reqs[i]) != 0;
		if (!rc && e)
			rc = e;
	}
	*out = in;
	return rc;
}

/* Drop a spoilt message; buffers the provider may still write leak. */
static void drop_message(struct van_inflight *in, int err, bool held)
{
	if (err)
		psc_log(PSC_LOG_WARN, -1, "van: dropping a message from node "
			"%d: %s", in->msg.sender, ps_comm_strerror(err));
	if (!held)
		ps_comm_van_msg_release(&in->msg);
	free(in);
}

struct recv_wait {
	struct ps_comm_van *v;
};

bool psc_van_stopping(struct ps_comm_van *v)
{
	return __atomic_load_n(&v->stopping, __ATOMIC_SEQ_CST);
}

/*
 * Something to do: a frame to take, a message this van sent itself, the
 * oldest message complete, or stop waiting for this thread.
 */
static bool recv_ready(void *arg)
{
	struct ps_comm_van *v = ((struct recv_wait *)arg)->v;

	return (v->frame_req && psc_req_done(v->frame_req) &&
		v->in_count < PSC_VAN_MAX_INFLIGHT) ||
	       __atomic_load_n(&v->local_n, __ATOMIC_ACQUIRE) ||
	       (v->in_head && psc_van_inflight_done(v->in_head)) ||
	       psc_van_stopping(v);
}

/*
 * A failed node not yet reported: its id in *id, and true once. The
 * receiving thread reports each failure once.
 */
static bool take_failure(struct ps_comm_van *v, int *id)
{
	unsigned gen = __atomic_load_n(&v->fail_gen, __ATOMIC_ACQUIRE);
	bool found = false;

	/* Nothing failed since the last look: no scan, no lock. */
	if (gen == v->fail_seen)
		return false;
	pthread_mutex_lock(&v->lock);
	for (size_t i = 0; !found && i < v->npeers; i++) {
		struct van_peer *p = v->peers[i];

		if (p->failed && !p->reported) {
			p->reported = true;
			*id = p->id;
			found = true;
		}
	}
	/* Look again next time until a scan finds nothing to report. */
	if (!found)
		v->fail_seen = gen;
	pthread_mutex_unlock(&v->lock);
	return found;
}

/* A message from node id failed (err): so did the node, if connected. */
static void sender_failed(struct ps_comm_van *v, int id, int err)
{
	struct van_peer *p;
	char why[160];

	if (id == PS_COMM_VAN_NO_ID)
		return;
	pthread_mutex_lock(&v->lock);
	p = psc_van_peer_find(v, id);
	pthread_mutex_unlock(&v->lock);
	if (!p)
		return;
	snprintf(why, sizeof(why), "a message from it failed: %s",
		 ps_comm_strerror(err));
	psc_van_peer_fail(v, p, err, why);
}

/* ps_comm_van_recv's loop, with the caller counted in v->in_recv. */
static int recv_loop(struct ps_comm_van *v, ps_comm_van_msg_t *msg)
{
	struct recv_wait w = {v};
	struct van_inflight *in;
	double last_probe = 0;
	bool held;
	int rc, id;

	for (;;) {
		if (psc_van_stopping(v))
			return PS_COMM_ERR_CANCELED;
		if (take_failure(v, &id)) {
			msg->sender = id;
			return PS_COMM_ERR_PEER;
		}
		/* The van's channel failed as a whole (today only when the
		 * provider broke its contract, progress.c's stray): no
		 * message can be trusted or will finish any more. */
		rc = psc_node_chan_failed(v->chan, NULL, 0);
		if (rc)
			return psc_err_from_fi(rc);
		if (!v->frame_req) {
			rc = post_frame_recv(v);
			if (rc)
				return rc;
		}
		psc_van_take_local(v);
		psc_van_take_frames(v);
		if (v->in_head && (psc_van_inflight_done(v->in_head) ||
				   (v->in_head->deadline > 0 &&
				    psc_now() >= v->in_head->deadline))) {
			rc = finish_oldest(v, &in, &held);
			if (!rc) {
				*msg = in->msg;
				free(in);
				return 0;
			}
			sender_failed(v, in->msg.sender, rc);
			drop_message(in, rc, held);
			continue;
		}
		psc_node_chan_wait(v->chan, recv_ready, &w,
				   psc_now() + REAP_SEC);
		psc_van_reap(v);
		if (psc_now() - last_probe >= PROBE_SEC / 4) {
			last_probe = psc_now();
			psc_van_probe_silent(v, false);
		}
	}
}

int ps_comm_van_recv(ps_comm_van_t v, ps_comm_van_msg_t *msg)
{
	int rc;

	if (!psc_van_ok(v) || !msg)
		return PS_COMM_ERR_ARG;
	memset(msg, 0, sizeof(*msg));
	msg->sender = PS_COMM_VAN_NO_ID;
	__atomic_add_fetch(&v->in_recv, 1, __ATOMIC_SEQ_CST);
	rc = __atomic_load_n(&v->bound, __ATOMIC_ACQUIRE) ? recv_loop(v, msg)
							  : PS_COMM_ERR_ARG;
	__atomic_sub_fetch(&v->in_recv, 1, __ATOMIC_SEQ_CST);
	return rc;
}

void psc_van_drop_inflight(struct ps_comm_van *v)
{
	struct van_inflight *in;
	bool held;

	while (v->in_head) {
		finish_oldest(v, &in, &held);
		drop_message(in, 0, held);
	}
}

