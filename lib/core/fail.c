/*
 * Failed owners and the watchdog's view of an endpoint. A communicator
 * whose peer died is failed from whatever thread learnt it (the liveness
 * monitor, usually), so recording a failure touches only fail_lock,
 * which is never held across a libfabric call: a thread stuck inside
 * the provider with the endpoint lock cannot block it. Waits and posts
 * look the failure up and end with it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/ep_int.h"
#include "fabric/sig.h"

struct psc_owner_fail {
	const void *owner;
	int err;
	char *words;
	struct psc_owner_fail *next;
};

/* owner's record, or NULL. fail_lock held. */
static struct psc_owner_fail *find(struct psc_ep *ep, const void *owner)
{
	for (struct psc_owner_fail *f = ep->fail_head; f; f = f->next)
		if (f->owner == owner)
			return f;
	return NULL;
}

/* Add a record for owner. fail_lock held. */
static void add(struct psc_ep *ep, const void *owner, int err,
		const char *words)
{
	struct psc_owner_fail *f = calloc(1, sizeof(*f));

	if (!f)
		return;
	f->owner = owner;
	f->err = err;
	f->words = strdup(words ? words : "");
	f->next = ep->fail_head;
	ep->fail_head = f;
	__atomic_add_fetch(&ep->fail_count, 1, __ATOMIC_RELEASE);
}

/* psc_ep_fail_owner on one endpoint of a pair. */
static void fail_one(struct psc_ep *ep, const void *owner, int err,
		     const char *words)
{
	struct psc_owner_fail *f;
	char *w;

	pthread_mutex_lock(&ep->fail_lock);
	f = find(ep, owner);
	if (!f) {
		add(ep, owner, err, words);
	} else if (err == -EKEYREVOKED && f->err != err &&
		   (w = strdup(words ? words : "")) != NULL) {
		/* A revoke outranks what failed it before: every rank says
		 * the same from then on. */
		free(f->words);
		f->words = w;
		f->err = err;
	}
	pthread_mutex_unlock(&ep->fail_lock);
}

void psc_ep_fail_owner(struct psc_ep *ep, const void *owner, int err,
		       const char *words)
{
	struct psc_ep *pair = __atomic_load_n(&ep->pair, __ATOMIC_ACQUIRE);

	/* An owner on a pair fails on both: its requests live on either. */
	fail_one(ep, owner, err, words);
	if (pair)
		fail_one(pair, owner, err, words);
}

void psc_ep_poison(struct psc_ep *ep)
{
	__atomic_store_n(&ep->poisoned, true, __ATOMIC_RELEASE);
}

bool psc_ep_poisoned(struct psc_ep *ep)
{
	return __atomic_load_n(&ep->poisoned, __ATOMIC_ACQUIRE);
}

int psc_ep_owner_failed(struct psc_ep *ep, const void *owner, char *words,
			size_t len)
{
	struct psc_owner_fail *f;
	int err = 0;

	if (!__atomic_load_n(&ep->fail_count, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&ep->fail_lock);
	f = find(ep, owner);
	if (f) {
		err = f->err;
		if (len)
			snprintf(words, len, "%s", f->words ? f->words : "");
	}
	pthread_mutex_unlock(&ep->fail_lock);
	return err;
}

void psc_ep_forget_owner(struct psc_ep *ep, const void *owner)
{
	struct psc_owner_fail **pp, *f = NULL;

	if (!__atomic_load_n(&ep->fail_count, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&ep->fail_lock);
	for (pp = &ep->fail_head; *pp; pp = &(*pp)->next)
		if ((*pp)->owner == owner) {
			f = *pp;
			*pp = f->next;
			__atomic_sub_fetch(&ep->fail_count, 1,
					   __ATOMIC_RELEASE);
			break;
		}
	pthread_mutex_unlock(&ep->fail_lock);
	if (f) {
		free(f->words);
		free(f);
	}
}

void psc_fail_close(struct psc_ep *ep)
{
	while (ep->fail_head) {
		struct psc_owner_fail *f = ep->fail_head;

		ep->fail_head = f->next;
		free(f->words);
		free(f);
	}
	ep->fail_count = 0;
}

void psc_ep_probe(struct psc_ep *ep, struct psc_ep_probe *p)
{
	p->seq = __atomic_load_n(&ep->prov_seq, __ATOMIC_ACQUIRE);
	p->call = __atomic_load_n(&ep->prov_call, __ATOMIC_RELAXED);
	p->addr = __atomic_load_n(&ep->prov_addr, __ATOMIC_RELAXED);
}

double psc_ep_stuck_for(struct psc_ep *ep, struct psc_ep_stuck *s, double now,
			struct psc_ep_probe *p)
{
	psc_ep_probe(ep, p);
	if (!(p->seq & 1) || p->seq != s->last.seq) {
		s->last = *p;
		s->since = now;
		return 0;
	}
	return now - s->since;
}

void psc_ep_abandon(struct psc_ep *ep, int status)
{
	/*
	 * ep, its pair and the process's other endpoints will never be
	 * closed: every file of the process goes now (fab.c listed the
	 * prefix of each endpoint's files as it enabled it).
	 */
	(void)ep;
	psc_sig_remove_files();
	_exit(status);
}
