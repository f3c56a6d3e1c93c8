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

#include "psc.h"

#define CQ_BATCH 16

/*
 * Every open endpoint of the process. Data progress is manual on most
 * providers, so a thread blocked on one endpoint also drives the others:
 * otherwise two communicators in one process can wait on each other.
 */
static pthread_mutex_t eps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct psc_ep *eps_head;
static int eps_count;

struct psc_ep *psc_ep_find_shared(const char *key)
{
	struct psc_ep *e;

	pthread_mutex_lock(&eps_lock);
	for (e = eps_head; e; e = e->next_ep)
		if (strcmp(e->key, key) == 0) {
			e->refs++;
			break;
		}
	pthread_mutex_unlock(&eps_lock);
	return e;
}

void psc_ep_register(struct psc_ep *ep)
{
	pthread_mutex_lock(&eps_lock);
	ep->refs = 1;
	ep->next_ep = eps_head;
	eps_head = ep;
	__atomic_add_fetch(&eps_count, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&eps_lock);
}

void psc_ep_hold(struct psc_ep *ep)
{
	pthread_mutex_lock(&eps_lock);
	ep->refs++;
	pthread_mutex_unlock(&eps_lock);
}

static int (*progress_hook)(void);

void psc_progress_set_hook(int (*hook)(void))
{
	__atomic_store_n(&progress_hook, hook, __ATOMIC_RELEASE);
}

int psc_progress_hooks(void)
{
	int (*hook)(void) = __atomic_load_n(&progress_hook, __ATOMIC_ACQUIRE);

	return hook ? hook() : 0;
}

bool psc_ep_unregister(struct psc_ep *ep)
{
	bool last;

	pthread_mutex_lock(&eps_lock);
	last = --ep->refs == 0;
	for (struct psc_ep **p = &eps_head; last && *p; p = &(*p)->next_ep)
		if (*p == ep) {
			*p = ep->next_ep;
			__atomic_sub_fetch(&eps_count, 1, __ATOMIC_RELAXED);
			break;
		}
	pthread_mutex_unlock(&eps_lock);
	return last;
}

/* Progress the other endpoints; skip any that another thread holds. */
static void progress_others(struct psc_ep *self)
{
	if (__atomic_load_n(&eps_count, __ATOMIC_RELAXED) < 2)
		return;
	pthread_mutex_lock(&eps_lock);
	for (struct psc_ep *e = eps_head; e; e = e->next_ep)
		if (e != self && pthread_mutex_trylock(&e->lock) == 0) {
			psc_progress(e);
			pthread_mutex_unlock(&e->lock);
		}
	pthread_mutex_unlock(&eps_lock);
}

/*
 * A software-matched first message: the tag as CQ data, or a header in
 * front of the payload.
 */
static ssize_t post_untagged(struct psc_ep *ep, struct ps_comm_request *r,
			     bool *injected)
{
	struct iovec iov[2] = {{r->scratch, PSC_SW_HDR}, {r->buf, r->len}};
	uint8_t flat[PSC_SW_HDR + PSC_SW_EAGER];
	bool small;

	if (ep->sw_tag_in_data) {
		void *buf = r->buf, *desc = NULL;
		int rc;

		small = !r->no_inject && r->len <= ep->caps.inject_size;
		*injected = small;
		if (small)
			return fi_injectdata(ep->ep, r->buf, r->len, r->tag,
					     r->addr);
		if (ep->mr_local &&
		    (rc = psc_mr_req_prepare(ep, r, &buf, &desc)) != 0)
			return rc;
		return fi_senddata(ep->ep, buf, r->len, desc, r->tag, r->addr,
				   &r->fctx);
	}
	small = !r->no_inject && PSC_SW_HDR + r->len <= ep->caps.inject_size;
	if (small) {
		memcpy(flat, r->scratch, PSC_SW_HDR);
		memcpy(flat + PSC_SW_HDR, r->buf, r->len);
		*injected = true;
		return fi_inject(ep->ep, flat, PSC_SW_HDR + r->len, r->addr);
	}
	if (ep->mr_local) {
		void *desc[2];
		size_t n;
		int rc = psc_mr_req_prepare_hdr(ep, r, r->scratch, PSC_SW_HDR,
						iov, desc, &n);

		return rc ? rc : fi_sendv(ep->ep, iov, desc, n, r->addr,
					  &r->fctx);
	}
	return fi_sendv(ep->ep, iov, NULL, r->len ? 2 : 1, r->addr, &r->fctx);
}

/*
 * Hand one request to libfabric. Returns 0, -FI_EAGAIN or an error. With
 * registration, every buffer but an injected one goes with a descriptor
 * (lib/mr.c), possibly from a pre-registered copy (buf).
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
	    r->len <= ep->caps.inject_size) {
		*injected = true;
		return ep->caps.len_in_cq_data
			       ? fi_tinjectdata(ep->ep, r->buf, r->len,
						r->data, r->addr, r->tag)
			       : fi_tinject(ep->ep, r->buf, r->len, r->addr,
					    r->tag);
	}
	if (ep->mr_local && (rc = psc_mr_req_prepare(ep, r, &buf, &desc)) != 0)
		return rc;
	if (r->kind == PSC_REQ_BOUNCE)
		return fi_recv(ep->ep, buf, r->len, desc, r->addr, &r->fctx);
	if (r->kind == PSC_REQ_RECV)
		return fi_trecv(ep->ep, buf, r->len, desc, r->addr, r->tag,
				r->ignore, &r->fctx);
	if (ep->caps.len_in_cq_data)
		return fi_tsenddata(ep->ep, buf, r->len, desc, r->data,
				    r->addr, r->tag, &r->fctx);
	return fi_tsend(ep->ep, buf, r->len, desc, r->addr, r->tag, &r->fctx);
}

/* Index into ep->posted: 0 for sends, 1 for receives and bounces. */
static int dir_of(const struct ps_comm_request *r)
{
	return r->kind != PSC_REQ_SEND;
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

	if (ep->post_limit[d] && ep->posted[d] >= ep->post_limit[d])
		return -FI_EAGAIN;
	rc = post_one(ep, r, &injected);
	/* Registrations wait with a request that waits for its post. */
	if (rc && rc != -FI_EAGAIN)
		psc_mr_req_done(ep, r, 0);
	if (rc)
		return rc;
	if (injected) {
		psc_req_complete(r, 0);
	} else {
		r->state = PSC_REQ_POSTED;
		ep->posted[d]++;
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
			psc_comm_set_error(r->comm, "deferred post failed: %s",
					   fi_strerror((int)-rc));
			psc_req_complete(r, psc_err_from_fi((int)rc));
		}
	}
}

static struct ps_comm_request *req_of(void *op_context)
{
	return psc_container_of(op_context, struct ps_comm_request, fctx);
}

static void handle_completion(struct psc_ep *ep,
			      const struct fi_cq_tagged_entry *ev)
{
	struct ps_comm_request *r;
	int rc = 0;

	if (!ev->op_context)
		return;
	r = req_of(ev->op_context);
	ep->posted[dir_of(r)]--;
	/* Copy a small receive out of its slot before anyone reads it. */
	psc_mr_req_done(ep, r, ev->len);
	if (r->kind == PSC_REQ_BOUNCE) {
		psc_sw_arrival(ep, r, ev);
		return;
	}
	if (r->kind == PSC_REQ_RECV && r->first) {
		rc = psc_p2p_first_recv(r, ev);
		if (rc == 1)
			return;
	} else if (r->kind == PSC_REQ_RECV) {
		r->status.len = ev->len;
		/* A chunk received whole into a buffer of its own. */
		if (r->owns_buf && r->user_len)
			memcpy(r->user_buf, r->buf, r->user_len);
		if (ep->caps.len_in_cq_data &&
		    (ev->flags & FI_REMOTE_CQ_DATA) &&
		    (uint32_t)ev->data != (uint32_t)ev->len)
			rc = PS_COMM_ERR_TRUNCATE;
	}
	psc_req_complete(r, rc);
}

/* A CQ error entry: fail the one request it names. */
static void handle_cq_error(struct psc_ep *ep)
{
	struct fi_cq_err_entry e;
	struct ps_comm_request *r;
	char detail[256], pbuf[128] = "";
	const char *pstr;
	int err;

	memset(&e, 0, sizeof(e));
	if (fi_cq_readerr(ep->cq, &e, 0) < 0 || !e.op_context)
		return;
	r = req_of(e.op_context);
	ep->posted[dir_of(r)]--;
	err = abs(e.err); /* shm reports a negative value */
	/* A truncated receive filled its buffer; nothing else arrived. */
	psc_mr_req_done(ep, r, err == FI_ETRUNC ? r->len : 0);
	if (r->kind == PSC_REQ_BOUNCE) {
		/* Cancelled at close, or an oversized message: keep serving. */
		if (err != FI_ECANCELED) {
			psc_log(PSC_LOG_WARN, ep->rank, "dropping a bad message "
				"(%s)", fi_strerror(err));
			r->state = PSC_REQ_QUEUED;
			psc_ep_post(ep, r);
		}
		return;
	}
	if (err == FI_ETRUNC && r->kind == PSC_REQ_RECV) {
		/* rxm reports len = olen = 0: the buffer was filled. */
		if (r->first) {
			r->first = false;
			if (e.tag) {
				r->status.source =
					(int)psc_tag_rank(&ep->tl, e.tag);
				r->status.tag = (int)psc_tag_user(&ep->tl, e.tag);
			}
			if (r->buf == r->scratch && r->user_len)
				memcpy(r->user_buf, r->scratch, r->user_len);
			r->status.len = r->user_len;
		} else {
			r->status.len = r->len;
		}
		psc_req_complete(r, PS_COMM_ERR_TRUNCATE);
		return;
	}
	if (err == FI_ECANCELED) {
		psc_req_complete(r, PS_COMM_ERR_CANCELED);
		return;
	}
	pstr = fi_cq_strerror(ep->cq, e.prov_errno, e.err_data, pbuf,
			      sizeof(pbuf));
	ep->prov->describe_cq_error(err, e.prov_errno, pstr, detail,
				    sizeof(detail));
	psc_comm_set_error(r->comm, "%s failed on provider %s: %s",
			   r->kind == PSC_REQ_RECV ? "receive" : "send",
			   ep->info->fabric_attr->prov_name, detail);
	psc_log(PSC_LOG_WARN, ep->rank, "%s", r->comm->last_error);
	psc_req_complete(r, psc_err_from_fi(-err));
}

int psc_progress(struct psc_ep *ep)
{
	struct fi_cq_tagged_entry ev[CQ_BATCH];
	int total = 0;

	ep->in_progress = true;
	for (;;) {
		ssize_t n = fi_cq_read(ep->cq, ev, CQ_BATCH);

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
			psc_log(PSC_LOG_ERROR, ep->rank, "fi_cq_read: %s",
				fi_strerror((int)-n));
			ep->in_progress = false;
			return (int)n;
		}
	}
	ep->in_progress = false;
	retry_queue(ep, &ep->txq);
	retry_queue(ep, &ep->rxq);
	return total;
}

void psc_ep_cancel(struct psc_ep *ep, struct ps_comm_request *r)
{
	struct psc_req_queue *q = queue_of(ep, r);

	if (psc_sw_cancel(ep, r))
		return;
	if (r->state == PSC_REQ_QUEUED) {
		if (psc_queue_remove(q, r))
			psc_req_complete(r, PS_COMM_ERR_CANCELED);
		return;
	}
	if (r->state == PSC_REQ_POSTED)
		fi_cancel(&ep->ep->fid, &r->fctx);
}

/* Sleep for the backoff step that follows `idle` fruitless rounds. */
static void backoff(unsigned idle)
{
	struct timespec ts = {0, 0};

	if (idle < 16) {
		sched_yield();
		return;
	}
	ts.tv_nsec = PSC_MIN(1000L << PSC_MIN(idle - 16, 10u), 1000000L);
	nanosleep(&ts, NULL);
}

/* Block briefly on the CQ's wait object, or back off. */
static void block_briefly(struct psc_ep *ep, unsigned idle, double deadline)
{
	double left = deadline > 0 ? deadline - psc_now() : 1.0;
	/* With other endpoints to drive, never sleep long on this one. */
	double cap = __atomic_load_n(&eps_count, __ATOMIC_RELAXED) > 1 ? 1 : 10;
	int ms = (int)PSC_MIN(left * 1000.0, cap);

	if (ms < 1)
		ms = 1;
	/*
	 * Sends in flight need this side's progress to push their data (the
	 * wait fd does not wake for a writable socket): yield, do not sleep.
	 */
	if (ep->posted[0] || ep->txq.head) {
		sched_yield();
		return;
	}
	/*
	 * A few yields first: a peer on this core answers within a time
	 * slice, and waking from poll costs more than yielding to it.
	 */
	if (idle < 16) {
		sched_yield();
		return;
	}
	if (ep->wait_mode == PSC_WAIT_FD) {
		struct fid *f = &ep->cq->fid;
		int rc;

		pthread_mutex_lock(&ep->lock);
		rc = fi_trywait(ep->fabric, &f, 1);
		pthread_mutex_unlock(&ep->lock);
		if (rc == 0) {
			struct pollfd p = {.fd = ep->wait_fd, .events = POLLIN};

			/* Short timeout: another thread may reap our event. */
			poll(&p, 1, ms);
		}
		return;
	}
	if (ep->wait_mode == PSC_WAIT_SREAD && idle >= 16) {
		struct fi_cq_tagged_entry ev;
		ssize_t n;

		pthread_mutex_lock(&ep->lock);
		n = fi_cq_sread(ep->cq, &ev, 1, NULL, 1);
		if (n > 0)
			handle_completion(ep, &ev);
		else if (n == -FI_EAVAIL)
			handle_cq_error(ep);
		pthread_mutex_unlock(&ep->lock);
		return;
	}
	backoff(idle);
}

int psc_ep_wait(struct psc_ep *ep, bool (*done)(void *), void *arg,
		double deadline)
{
	double spin_end = psc_now() + ep->spin_us * 1e-6;
	unsigned idle = 0;

	for (;;) {
		double t;
		int n;

		pthread_mutex_lock(&ep->lock);
		n = psc_progress(ep);
		pthread_mutex_unlock(&ep->lock);
		n += psc_progress_hooks();
		if (done(arg))
			return 0;
		progress_others(ep);
		t = psc_now();
		if (deadline > 0 && t >= deadline)
			return -ETIMEDOUT;
		if (n > 0) {
			idle = 0;
			continue;
		}
		if (t < spin_end)
			continue;
		block_briefly(ep, idle, deadline);
		if (idle < 1000)
			idle++;
	}
}
