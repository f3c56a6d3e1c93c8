/*
 * The progress engine: posting with EAGAIN queues, reading the CQ in
 * batches, turning completions and CQ errors into request results, and
 * blocking waits that never spin forever. Data progress is manual on most
 * providers, so every wait drives it; CQ errors fail only the request they
 * name. A blocked thread busy-polls for PS_COMM_SPIN_US, then yields the
 * core and blocks on the CQ's wait fd or sleeps with backoff, so that
 * oversubscribed ranks let their peers run.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fi_errno.h>

#include "core/ep_int.h"
#include "util/copy.h"
#include "util/log.h"
#include "util/util.h"

#define CQ_BATCH 16
/* Yields of a lean wait before it blocks (psc_ep_set_lean_wait). */
#define LEAN_YIELDS 4
/*
 * How long a blocking call's spin (PS_COMM_SPIN_US) polls before it
 * yields between polls: a reply from a peer on another core mostly comes
 * within it (shm's 8 B round trip is about 0.35 us).
 */
#define SPIN_ALONE_SEC 2e-6

/*
 * A first message through libfabric: the immediate (r->tag) as CQ data,
 * or the prefix the layer above wrote in r->scratch before the payload.
 */
static ssize_t post_untagged_fab(struct psc_ep *ep, struct ps_comm_request *r,
				 bool *injected)
{
	struct iovec iov[2] = {{r->scratch, PSC_EP_FIRST_HDR},
			       {r->buf, r->len}};
	uint8_t flat[PSC_EP_FIRST_HDR + PSC_FIRST_EAGER];
	bool small;

	if (ep->first_imm) {
		void *buf = r->buf, *desc = NULL;
		int rc;

		small = !r->no_inject && r->len <= ep->fab.caps.inject_size;
		*injected = small;
		if (small)
			return fi_injectdata(ep->fab.ep, r->buf, r->len, r->tag,
					     r->addr);
		if (ep->fab.mr_local &&
		    (rc = psc_reqmr_prepare(ep, r, &buf, &desc)) != 0)
			return rc;
		return fi_senddata(ep->fab.ep, buf, r->len, desc, r->tag, r->addr,
				   &r->fctx);
	}
	small = !r->no_inject &&
		PSC_EP_FIRST_HDR + r->len <= ep->fab.caps.inject_size &&
		PSC_EP_FIRST_HDR + r->len <= sizeof(flat);
	if (small) {
		memcpy(flat, r->scratch, PSC_EP_FIRST_HDR);
		memcpy(flat + PSC_EP_FIRST_HDR, r->buf, r->len);
		*injected = true;
		return fi_inject(ep->fab.ep, flat, PSC_EP_FIRST_HDR + r->len,
				 r->addr);
	}
	if (ep->fab.mr_local) {
		void *desc[2];
		size_t n;
		int rc = psc_reqmr_prepare_hdr(ep, r, r->scratch,
						PSC_EP_FIRST_HDR,
						iov, desc, &n);

		return rc ? rc : fi_sendv(ep->fab.ep, iov, desc, n, r->addr,
					  &r->fctx);
	}
	return fi_sendv(ep->fab.ep, iov, NULL, r->len ? 2 : 1, r->addr, &r->fctx);
}

/* A first message: through the peer's shm ring where there is one. */
static ssize_t post_untagged(struct psc_ep *ep, struct ps_comm_request *r,
			     bool *injected)
{
	ssize_t rc;

	if (ep->shmring && (rc = psc_shmring_send(ep, r)) != 1) {
		*injected = rc == 0;
		return rc;
	}
	rc = post_untagged_fab(ep, r, injected);
	if (rc == 0 && ep->shmring)
		psc_shmring_offer(ep, r->addr);
	return rc;
}

/*
 * Hand one request to libfabric. Returns 0, -FI_EAGAIN or an error. With
 * registration, every buffer but an injected one goes with a descriptor
 * (core/reqmr.c), possibly from a pre-registered copy (buf).
 */
static ssize_t post_one(struct psc_ep *ep, struct ps_comm_request *r,
			bool *injected)
{
	void *buf = r->buf, *desc = NULL;
	int rc;

	*injected = false;
	if (r->untagged)
		return post_untagged(ep, r, injected);
	if (r->kind == PSC_REQ_SEND && !r->no_inject &&
	    r->len <= ep->fab.caps.inject_size) {
		*injected = true;
		return ep->fab.caps.len_in_cq_data
			       ? fi_tinjectdata(ep->fab.ep, r->buf, r->len,
						r->data, r->addr, r->tag)
			       : fi_tinject(ep->fab.ep, r->buf, r->len, r->addr,
					    r->tag);
	}
	if (ep->fab.mr_local && (rc = psc_reqmr_prepare(ep, r, &buf, &desc)) != 0)
		return rc;
	if (r->kind == PSC_REQ_BOUNCE)
		return fi_recv(ep->fab.ep, buf, r->len, desc, r->addr, &r->fctx);
	if (r->kind == PSC_REQ_RECV)
		return fi_trecv(ep->fab.ep, buf, r->len, desc, r->addr, r->tag,
				r->ignore, &r->fctx);
	if (ep->fab.caps.len_in_cq_data)
		return fi_tsenddata(ep->fab.ep, buf, r->len, desc, r->data,
				    r->addr, r->tag, &r->fctx);
	return fi_tsend(ep->fab.ep, buf, r->len, desc, r->addr, r->tag, &r->fctx);
}

/* Index into ep->posted: 0 for sends, 1 for receives and bounces. */
static int dir_of(const struct ps_comm_request *r)
{
	return r->kind != PSC_REQ_SEND;
}

/* Count r in (by +1) or out of (by -1) what libfabric holds. Lock held. */
static void count_posted(struct psc_ep *ep, const struct ps_comm_request *r,
			 int by)
{
	ep->posted[dir_of(r)] += (size_t)by;
	if (r->kind == PSC_REQ_BOUNCE)
		ep->posted_bounces += (size_t)by;
}

/*
 * Post r now; on success mark it posted (or done, if injected). Beyond the
 * provider's queue depth it answers EAGAIN itself: some providers (shm)
 * fail with ENOMEM instead, and their pool also holds unexpected messages.
 */
static ssize_t post_now(struct psc_ep *ep, struct ps_comm_request *r)
{
	int d = dir_of(r);
	bool injected;
	ssize_t rc;

	/*
	 * Nothing enters the provider for a failed owner: the pieces a
	 * completion would post next go to a dead peer, and rxm (1.17) can
	 * crash posting a receive for a connection it tore down.
	 */
	if (psc_ep_poisoned(ep) || psc_ep_owner_failed(ep, r->owner, NULL, 0))
		return -ECONNRESET;
	if (ep->post_limit[d] && ep->posted[d] >= ep->post_limit[d])
		return -FI_EAGAIN;
	psc_prov_enter(ep, d ? "a receive post" : "a send post", r->addr);
	rc = post_one(ep, r, &injected);
	psc_prov_exit(ep);
	/* Registrations wait with a request that waits for its post. */
	if (rc && rc != -FI_EAGAIN)
		psc_reqmr_done(ep, r, 0);
	if (rc)
		return rc;
	if (injected) {
		psc_req_complete(r, 0);
	} else {
		r->state = PSC_REQ_POSTED;
		count_posted(ep, r, 1);
	}
	return 0;
}

/* Receives and bounce buffers wait in the receive queue. */
static struct psc_req_queue *queue_of(struct psc_ep *ep,
				      const struct ps_comm_request *r)
{
	return r->kind == PSC_REQ_SEND ? &ep->txq : &ep->rxq;
}

int psc_ep_post(struct psc_ep *ep, struct ps_comm_request *r)
{
	struct psc_req_queue *q = queue_of(ep, r);
	ssize_t rc;

	/* Behind a queued operation, wait in line: order must hold. */
	if (q->head) {
		psc_queue_push(q, r);
		return 0;
	}
	rc = post_now(ep, r);
	if (rc == -FI_EAGAIN) {
		r->state = PSC_REQ_QUEUED;
		psc_queue_push(q, r);
		/*
		 * rxm needs CQ reads to make the EAGAIN go away. Not from
		 * inside a CQ read (a reposted bounce buffer): handling later
		 * completions first would reorder arrivals.
		 */
		if (!ep->in_progress)
			psc_progress(ep);
		return 0;
	}
	return (int)rc;
}

/* Retry queued posts in order until one still gets EAGAIN. */
static void retry_queue(struct psc_ep *ep, struct psc_req_queue *q)
{
	struct ps_comm_request *r;

	while ((r = q->head) != NULL) {
		ssize_t rc = post_now(ep, r);

		if (rc == -FI_EAGAIN)
			return;
		psc_queue_pop(q);
		if (rc) {
			psc_req_set_errmsg(r, "deferred post failed: %s",
					   fi_strerror((int)-rc));
			psc_req_complete(r, (int)rc);
		}
	}
}

static struct ps_comm_request *req_of(void *op_context)
{
	return psc_container_of(op_context, struct ps_comm_request, fctx);
}

void psc_req_dispatch(struct ps_comm_request *r,
		      const struct fi_cq_tagged_entry *ev)
{
	int rc = 0;

	if (r->ops && r->ops->complete) {
		rc = r->ops->complete(r, ev);
		if (rc == 1)
			return;
	} else if (r->kind == PSC_REQ_RECV) {
		r->status.len = ev->len;
		/* A chunk received whole into a buffer of its own. */
		if (r->owns_buf && r->user_len)
			psc_copy(r->user_buf, r->buf, r->user_len);
		if (r->ep->fab.caps.len_in_cq_data &&
		    (ev->flags & FI_REMOTE_CQ_DATA) &&
		    (uint32_t)ev->data != (uint32_t)ev->len)
			rc = -FI_ETRUNC;
	}
	psc_req_complete(r, rc);
}

/*
 * Whether the provider just completed r although r is not in its hands
 * (queued, or done already: a second completion for one operation, which
 * net in libfabric 1.17 was seen to report for a run of receives whose
 * messages had arrived first). Whatever it wrote may belong to another
 * operation and another will never complete, so r's owner fails, with
 * words that say so, rather than take data that may be wrong or wait
 * for ever. Lock held.
 */
static bool stray(struct psc_ep *ep, struct ps_comm_request *r)
{
	char w[256];

	if (r->state == PSC_REQ_POSTED)
		return false;
	snprintf(w, sizeof(w), "provider %s reported a completion for an "
		 "operation it no longer held (a %s of %zu bytes): its data "
		 "may have gone to the wrong buffer", psc_ep_provider(ep),
		 r->kind == PSC_REQ_SEND ? "send" : "receive", r->len);
	psc_log(PSC_LOG_ERROR, ep->fab.rank, "%s", w);
	if (r->owner)
		psc_ep_fail_owner(ep, r->owner, -ENODATA, w);
	return true;
}

static void handle_completion(struct psc_ep *ep,
			      const struct fi_cq_tagged_entry *ev)
{
	struct ps_comm_request *r;

	if (!ev->op_context)
		return;
	r = req_of(ev->op_context);
	if (stray(ep, r))
		return;
	count_posted(ep, r, -1);
	/* Copy a small receive out of its slot before anyone reads it. */
	psc_reqmr_done(ep, r, ev->len);
	if (r->kind == PSC_REQ_BOUNCE)
		psc_first_arrival(ep, r, ev);
	else
		psc_req_dispatch(r, ev);
}

/* Times a send is posted again after its connection closed under it. */
#define RESENDS 8

/*
 * Post send r again if its error says the connection it was queued on
 * closed before it went out, where the provider does that to live peers
 * (caps.resend_on_reset). A dead peer refuses the connection, which is
 * no such error, and a send pscomm cancelled stays cancelled. Errors are
 * read in the order of the sends, under the lock, so their order holds.
 * Returns true if r is taken care of. Lock held.
 */
static bool resend(struct psc_ep *ep, struct ps_comm_request *r, int err)
{
	int rc;

	if (r->kind != PSC_REQ_SEND || !ep->fab.caps.resend_on_reset ||
	    r->cancel_asked || r->resends >= RESENDS)
		return false;
	if (err != FI_ECANCELED && err != FI_ENOTCONN &&
	    err != FI_ECONNRESET && err != FI_ECONNABORTED)
		return false;
	r->resends++;
	psc_log(PSC_LOG_INFO, ep->fab.rank, "sending to fi_addr %llu again: "
		"its connection closed before the message went out (%s)",
		(unsigned long long)r->addr, fi_strerror(err));
	r->state = PSC_REQ_QUEUED;
	rc = psc_ep_post(ep, r);
	if (rc) {
		psc_req_set_errmsg(r, "sending again failed: %s",
				   fi_strerror(-rc));
		psc_req_complete(r, rc);
	}
	return true;
}

/* A CQ error entry: fail the one request it names. */
static void handle_cq_error(struct psc_ep *ep)
{
	struct fi_cq_err_entry e;
	struct ps_comm_request *r;
	char detail[256], pbuf[128] = "";
	const char *pstr;
	ssize_t n;
	int err;

	memset(&e, 0, sizeof(e));
	psc_prov_enter(ep, "fi_cq_readerr", FI_ADDR_UNSPEC);
	n = fi_cq_readerr(ep->fab.cq, &e, 0);
	psc_prov_exit(ep);
	if (n < 0 || !e.op_context)
		return;
	r = req_of(e.op_context);
	if (stray(ep, r))
		return;
	count_posted(ep, r, -1);
	err = abs(e.err); /* shm reports a negative value */
	/* A truncated receive filled its buffer; nothing else arrived. */
	psc_reqmr_done(ep, r, err == FI_ETRUNC ? r->len : 0);
	if (r->kind == PSC_REQ_BOUNCE) {
		/* Cancelled at close, or an oversized message: keep serving. */
		if (err != FI_ECANCELED) {
			psc_log(PSC_LOG_WARN, ep->fab.rank, "dropping a bad message "
				"(%s)", fi_strerror(err));
			r->state = PSC_REQ_QUEUED;
			psc_ep_post(ep, r);
		}
		return;
	}
	if (err == FI_ETRUNC && r->kind == PSC_REQ_RECV) {
		/* rxm reports len = olen = 0: the buffer was filled. */
		if (r->ops && r->ops->truncated) {
			int rc = r->ops->truncated(r, e.tag);

			/* 1: r goes on, as from its complete op. */
			if (rc != 1)
				psc_req_complete(r, rc);
			return;
		}
		r->status.len = r->len;
		psc_req_complete(r, -FI_ETRUNC);
		return;
	}
	if (resend(ep, r, err))
		return;
	if (err == FI_ECANCELED) {
		psc_req_complete(r, -FI_ECANCELED);
		return;
	}
	pstr = fi_cq_strerror(ep->fab.cq, e.prov_errno, e.err_data, pbuf,
			      sizeof(pbuf));
	ep->fab.prov->describe_cq_error(err, e.prov_errno, pstr, detail,
				    sizeof(detail));
	psc_req_set_errmsg(r, "%s failed on provider %s: %s",
			   r->kind == PSC_REQ_RECV ? "receive" : "send",
			   ep->fab.info->fabric_attr->prov_name, detail);
	psc_log(PSC_LOG_WARN, ep->fab.rank, "%s", r->errmsg ? r->errmsg : detail);
	psc_req_complete(r, -err);
}

/* psc_progress on one endpoint of a pair. Lock held. */
static int progress_one(struct psc_ep *ep)
{
	struct fi_cq_tagged_entry ev[CQ_BATCH];
	int total = 0;

	if (psc_ep_poisoned(ep))
		return 0;
	ep->in_progress = true;
	for (;;) {
		ssize_t n;

		psc_prov_enter(ep, "fi_cq_read", FI_ADDR_UNSPEC);
		n = fi_cq_read(ep->fab.cq, ev, CQ_BATCH);
		psc_prov_exit(ep);

		if (n > 0) {
			for (ssize_t i = 0; i < n; i++)
				handle_completion(ep, &ev[i]);
			total += (int)n;
			if (n < CQ_BATCH)
				break;
		} else if (n == -FI_EAVAIL) {
			handle_cq_error(ep);
			total++;
		} else if (n == -FI_EAGAIN) {
			break;
		} else {
			psc_log(PSC_LOG_ERROR, ep->fab.rank, "fi_cq_read: %s",
				fi_strerror((int)-n));
			ep->in_progress = false;
			return (int)n;
		}
	}
	/* After the CQ: a ring announced in it may already hold messages. */
	if (ep->shmring)
		total += psc_shmring_poll(ep);
	if (ep->sh->first_due)
		psc_first_poll(ep);
	ep->in_progress = false;
	retry_queue(ep, &ep->txq);
	retry_queue(ep, &ep->rxq);
	return total;
}

/*
 * How often a pair's half with no peer in its AV is progressed. It can
 * still receive (a node that joined it before it joined that node: the
 * van's), so it is not skipped, but progress of a network provider costs
 * a system call every pass (rxm polls its wait set), which a van whose
 * nodes all share its node would pay on every message for nothing.
 */
#define QUIET_PROGRESS_SEC 1e-3

/* Progress one half of a pair, a quiet one at most once a millisecond. */
static int progress_half(struct psc_ep *ep)
{
	if (!__atomic_load_n(&ep->av_count, __ATOMIC_RELAXED)) {
		double now = psc_now();

		if (now - ep->quiet_progress < QUIET_PROGRESS_SEC)
			return 0;
		ep->quiet_progress = now;
	}
	return progress_one(ep);
}

int psc_progress(struct psc_ep *ep)
{
	int n, m;

	if (!ep->pair)
		return progress_one(ep);
	n = progress_half(ep);
	m = progress_half(ep->pair);
	return n < 0 ? n : m < 0 ? m : n + m;
}

void psc_ep_cancel(struct psc_ep *ep, struct ps_comm_request *r)
{
	struct psc_req_queue *q = queue_of(ep, r);

	if (psc_first_withdraw(ep, r))
		return;
	if (r->state == PSC_REQ_PARKED) {
		psc_req_complete(r, -FI_ECANCELED);
		return;
	}
	if (r->state == PSC_REQ_QUEUED) {
		if (psc_queue_remove(q, r))
			psc_req_complete(r, -FI_ECANCELED);
		return;
	}
	if (r->state == PSC_REQ_POSTED && !psc_ep_poisoned(ep)) {
		r->cancel_asked = true;
		psc_prov_enter(ep, "fi_cancel", r->addr);
		fi_cancel(&ep->fab.ep->fid, &r->fctx);
		psc_prov_exit(ep);
	}
}

/* Back off after `idle` fruitless rounds: yield 16 times, then sleep. */
static void backoff(unsigned idle)
{
	if (idle < 16)
		sched_yield();
	else
		psc_backoff_sleep(1e-6, 1e-3, idle - 16, false, 0);
}

static int run_sources(struct psc_ep *ep);

/*
 * Whether ep's wait fd may be slept on: nothing is pending, and the fd
 * will turn readable when something is. fi_trywait says so and arms the
 * fd; a CQ on a wait set of pscomm's (caps.wait_set) asks fi_wait with
 * no timeout instead, which also clears the completions' signal that
 * the provider's fi_trywait leaves set. Call with ep->lock held.
 */
static bool may_sleep(struct psc_ep *ep)
{
	struct fid *f = &ep->fab.cq->fid;
	int rc;

	if (ep->fab.wait_set) {
		psc_prov_enter(ep, "fi_wait", FI_ADDR_UNSPEC);
		rc = psc_fab_wait_set_try(&ep->fab);
		psc_prov_exit(ep);
		return rc == -FI_ETIMEDOUT;
	}
	psc_prov_enter(ep, "fi_trywait", FI_ADDR_UNSPEC);
	rc = fi_trywait(ep->fab.fabric, &f, 1);
	psc_prov_exit(ep);
	return rc == 0;
}

/*
 * Block on ep's wait fd for at most secs, once may_sleep says nothing
 * is pending (else return at once, to read it). Takes the lock around
 * may_sleep only.
 */
static void wait_fd(struct psc_ep *ep, double secs)
{
	bool sleep;

	pthread_mutex_lock(ep->lock);
	sleep = may_sleep(ep);
	pthread_mutex_unlock(ep->lock);
	if (sleep) {
		struct pollfd p = {.fd = ep->fab.wait_fd, .events = POLLIN};
		struct timespec ts = psc_timespec(secs);

		ppoll(&p, 1, &ts, NULL);
	}
}

/* Whether ep has sends in flight or waiting. Lock not needed. */
static bool sending(const struct psc_ep *ep)
{
	return ep->posted[0] || ep->txq.head;
}

/* Sleep of backoff step `step` on a wait object: 1 us doubling to 1 ms. */
static double step_secs(unsigned step)
{
	return 1e-6 * (double)(1u << PSC_MIN(step, 10u));
}

/*
 * Whether only a ring's bell can bring ep's next event: no send in
 * flight and no exact receive posted (a large message's chunks arrive
 * through libfabric and ring no bell), just the bounce buffers.
 */
static bool only_bells(const struct psc_ep *ep)
{
	return ep->shmring && !sending(ep) &&
	       ep->posted[1] == ep->posted_bounces;
}

/*
 * Sleep on shm's ring bells (ep has rings), so that a ring message
 * wakes this thread at once, for as long as the backoff would sleep at
 * step (1 us doubling to 1 ms). Once the steps reached 1 ms and only a
 * bell can bring the next event, sleep ms milliseconds (10 alone, 1
 * beside other endpoints). A first message from a peer whose ring is not
 * mapped yet still comes through libfabric and waits for it. Waking
 * every millisecond made page faults of the processes beside it 3 to 6
 * times slower on a VM (doc/fabrics.md, shm). False when ep maps no
 * ring to sleep on.
 */
static bool ring_sleep(struct psc_ep *ep, unsigned step, int ms)
{
	double t = step_secs(step);

	if (step > 10 && only_bells(ep))
		t = ms * 1e-3;
	return psc_shmring_sleep(ep, t);
}

/* Block briefly on the CQ's wait object, or back off. */
static void block_briefly(struct psc_ep *ep, unsigned idle, double deadline)
{
	double left = deadline > 0 ? deadline - psc_now() : 1.0;
	/* With other endpoints to drive, never sleep long on this one. */
	double cap = psc_ep_count() > 1 ? 1 : 10;
	int ms = (int)PSC_MIN(left * 1000.0, cap);

	if (ms < 1)
		ms = 1;
	/*
	 * Sends in flight need this side's progress to push their data:
	 * yield, do not sleep. A lean wait goes on as if none were: on the
	 * wait fd, which fi_trywait arms for the sockets that have data to
	 * send (tcp), with the short poll below bounding a wake-up that
	 * never comes; without one, yields then sleeps.
	 */
	if ((sending(ep) || (ep->pair && sending(ep->pair))) &&
	    !ep->lean_wait) {
		sched_yield();
		return;
	}
	if (psc_ep_poisoned(ep)) {
		backoff(idle);
		return;
	}
	/*
	 * A few yields first: a peer on this core answers within a time
	 * slice, and waking from poll costs more than yielding to it. A lean
	 * wait yields less.
	 */
	if (idle < (ep->lean_wait ? LEAN_YIELDS : 16)) {
		sched_yield();
		return;
	}
	/*
	 * A pair has two CQs: block on the one with a wait fd (the network),
	 * for no longer than the backoff would sleep, so that the other one
	 * (shm, which has none) is still read that often. While the network
	 * endpoint has no peer at all (a van whose nodes are all on its
	 * node, so far), sleep on shm's ring bells instead: a message there
	 * would otherwise wait for the fd's timeout.
	 */
	if (ep->pair) {
		bool fd = ep->fab.wait_mode == PSC_WAIT_FD;
		struct psc_ep *w = fd ? ep : ep->pair, *shm = fd ? ep->pair : ep;
		unsigned step = idle - (ep->lean_wait ? LEAN_YIELDS : 16);

		if (!__atomic_load_n(&w->av_count, __ATOMIC_RELAXED) &&
		    shm->shmring && ring_sleep(shm, step, ms))
			return;
		if (w->fab.wait_mode == PSC_WAIT_FD && !psc_ep_poisoned(w))
			wait_fd(w, PSC_MIN(step_secs(step), 1e-3));
		else
			backoff(idle);
		return;
	}
	if (ep->fab.wait_mode == PSC_WAIT_FD) {
		/* Short timeout: another thread may reap our event. */
		wait_fd(ep, ms * 1e-3);
		return;
	}
	if (ep->fab.wait_mode == PSC_WAIT_SREAD) {
		struct fi_cq_tagged_entry ev;
		ssize_t n;

		pthread_mutex_lock(ep->lock);
		psc_prov_enter(ep, "fi_cq_sread", FI_ADDR_UNSPEC);
		n = fi_cq_sread(ep->fab.cq, &ev, 1, NULL, 1);
		psc_prov_exit(ep);
		if (n > 0)
			handle_completion(ep, &ev);
		else if (n == -FI_EAVAIL)
			handle_cq_error(ep);
		pthread_mutex_unlock(ep->lock);
		return;
	}
	/*
	 * shm with rings: sleep on their bells; a lean wait starts after its
	 * LEAN_YIELDS yields instead of 16, since a bell, not a yield, now
	 * brings ring messages.
	 */
	if (ep->shmring &&
	    ring_sleep(ep, idle - (ep->lean_wait ? LEAN_YIELDS : 16), ms))
		return;
	backoff(idle);
}

/* Progress another endpoint; skip it when another thread holds it. */
static void progress_other(struct psc_ep *e)
{
	psc_ep_try_progress(e);
	psc_ep_run_sources(e);
}

int psc_ep_progress(struct psc_ep *ep)
{
	int n;

	pthread_mutex_lock(ep->lock);
	n = psc_progress(ep);
	pthread_mutex_unlock(ep->lock);
	return (n > 0 ? n : 0) + run_sources(ep);
}

void psc_ep_try_progress(struct psc_ep *ep)
{
	if (pthread_mutex_trylock(ep->lock) == 0) {
		psc_progress(ep);
		pthread_mutex_unlock(ep->lock);
	}
}

/* ------------------------------------------------- progress sources */

void psc_ep_add_source(struct psc_ep *ep, struct psc_prog_src *src)
{
	struct psc_prog_src **pp;

	src->finished = false;
	src->next = NULL;
	pthread_mutex_lock(&ep->src_lock);
	for (pp = &ep->src_head; *pp; pp = &(*pp)->next)
		;
	*pp = src;
	__atomic_add_fetch(&ep->src_count, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ep->src_lock);
}

/* Poll every source; unlink the finished ones onto *done. */
static int poll_sources(struct psc_ep *ep, struct psc_prog_src **done)
{
	struct psc_prog_src **pp = &ep->src_head;
	int moved = 0;

	while (*pp) {
		struct psc_prog_src *s = *pp;

		moved += s->poll(s);
		if (s->finished) {
			*pp = s->next;
			s->next = *done;
			*done = s;
			__atomic_sub_fetch(&ep->src_count, 1, __ATOMIC_RELAXED);
		} else {
			pp = &s->next;
		}
	}
	return moved;
}

/* Call finish on sources that left the list, oldest first. */
static void finish_sources(struct psc_prog_src *done)
{
	struct psc_prog_src *rev = NULL;

	while (done) {
		struct psc_prog_src *s = done;

		done = s->next;
		s->next = rev;
		rev = s;
	}
	while (rev) {
		struct psc_prog_src *s = rev;

		rev = s->next;
		s->finish(s);
	}
}

int psc_ep_run_sources(struct psc_ep *ep)
{
	struct psc_prog_src *done = NULL;
	int moved;

	/* A thread that finds another one polling leaves the work to it. */
	if (!__atomic_load_n(&ep->src_count, __ATOMIC_RELAXED) ||
	    pthread_mutex_trylock(&ep->src_lock) != 0)
		return 0;
	moved = poll_sources(ep, &done);
	pthread_mutex_unlock(&ep->src_lock);
	finish_sources(done);
	return moved;
}

/* The sources of ep and of its partner. */
static int run_sources(struct psc_ep *ep)
{
	struct psc_ep *pair = __atomic_load_n(&ep->pair, __ATOMIC_ACQUIRE);

	return psc_ep_run_sources(ep) + (pair ? psc_ep_run_sources(pair) : 0);
}

void psc_ep_with_sources(struct psc_ep *ep, void (*fn)(void *), void *arg)
{
	pthread_mutex_lock(&ep->src_lock);
	fn(arg);
	pthread_mutex_unlock(&ep->src_lock);
	psc_ep_run_sources(ep);
}

/*
 * Whether a spin past its first SPIN_ALONE_SEC should yield between
 * polls. A node-local peer that last waited on this thread's CPU (a busy
 * host's scheduler put both ranks on one core) runs only when this one
 * lets it; a peer on another core does not need it, and a yield would
 * only hand this core to the host's other work for a whole time slice.
 * ep's shm rings (and its pair's) carry each side's CPU; without a ring
 * to tell (tcp between local ranks), yield. Takes the lock.
 */
static bool peer_on_my_cpu(struct psc_ep *ep)
{
	int cpu = sched_getcpu();
	int shared = -1;

	if (cpu < 0)
		return true;
	pthread_mutex_lock(ep->lock);
	if (ep->shmring)
		shared = psc_shmring_cpu_shared(ep, cpu);
	if (shared < 1 && ep->pair && ep->pair->shmring)
		shared = PSC_MAX(shared,
				 psc_shmring_cpu_shared(ep->pair, cpu));
	pthread_mutex_unlock(ep->lock);
	return shared != 0;
}

/* Passes of a spin between two looks at where the peers run. */
#define CPU_LOOK_EVERY 16

int psc_ep_wait(struct psc_ep *ep, bool (*done)(void *), void *arg,
		double deadline)
{
	double start = psc_now();
	double spin_end = start + ep->spin_us * 1e-6;
	double yield_from = start + SPIN_ALONE_SEC;
	unsigned idle = 0, spins = 0;
	bool yield = false;

	/* Over already (a failed owner): do not enter the provider. */
	if (done(arg))
		return 0;
	for (;;) {
		double t;
		int n;

		pthread_mutex_lock(ep->lock);
		n = psc_progress(ep);
		pthread_mutex_unlock(ep->lock);
		n += run_sources(ep);
		if (done(arg))
			return 0;
		psc_ep_each_other(ep, progress_other);
		t = psc_now();
		if (deadline > 0 && t >= deadline)
			return -ETIMEDOUT;
		if (n > 0) {
			idle = 0;
			continue;
		}
		if (t < spin_end) {
			/*
			 * Past its first SPIN_ALONE_SEC, the spin yields on
			 * every pass while a peer shares this core: it then
			 * runs at once instead of after the whole spin.
			 */
			if (t < yield_from)
				continue;
			if (spins++ % CPU_LOOK_EVERY == 0)
				yield = peer_on_my_cpu(ep);
			if (yield)
				sched_yield();
			continue;
		}
		block_briefly(ep, idle, deadline);
		if (idle < 1000)
			idle++;
	}
}
