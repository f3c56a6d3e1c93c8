/*
 * Agreement over the liveness star (contract in live.h, protocol in
 * live_int.h): what ps_comm_agree and ps_comm_shrink decide uniformly,
 * whichever ranks die meanwhile.
 *
 * Each context's agreement has one slot (struct agreement) that serves
 * both roles: a member's own contribution and the last decision it
 * knows, and, at the root, what each member sent. A slot with a
 * contribution still waiting is never reused. The root decides seq S of
 * a context when every member it does not know dead or gone has sent S;
 * members that died are counted failed, so nobody waits for them. The
 * root sends a member its decision again whenever that member asks for a
 * seq already decided (it joined a new root after the old one decided).
 * Every function expects l->lock held unless it says otherwise.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live/live_int.h"
#include "util/util.h"

struct agreement {
	bool used;
	uint32_t ctx;
	uint32_t group;		/* its lowest world rank: the communicators
				   of one split share ctx, never a rank */
	double touched;		/* last use, to pick a slot to reuse */
	uint8_t *members;	/* bitmap of world ranks (all 0: not known) */
	bool mine;		/* this rank waits for the decision of my_seq */
	uint32_t my_seq, my_flag, my_next;
	uint32_t dec_seq;	/* the last decision known (0: none) */
	uint32_t asked;		/* the root asked for this seq's decision */
	uint32_t queried;	/* as the root: the last seq asked about */
	uint32_t dec_flag, dec_next;
	uint8_t *dec_failed;	/* its failed members (bitmap) */
	/* The root's collection: per world rank, its last contribution. */
	uint32_t *got_seq, *got_flag, *got_next;
};

/* Bytes of a bitmap of the world's ranks. */
static size_t nbytes(const struct psc_live *l)
{
	return ((size_t)l->cfg.size + 7) / 8;
}

static bool bit(const uint8_t *b, int r)
{
	return (b[r / 8] >> (r % 8)) & 1;
}

static void set_bit(uint8_t *b, int r)
{
	b[r / 8] = (uint8_t)(b[r / 8] | (1u << (r % 8)));
}

static bool is_root(const struct psc_live *l)
{
	return l->root == l->cfg.rank;
}

static void slot_clear(struct agreement *a)
{
	free(a->members);
	free(a->dec_failed);
	free(a->got_seq);
	free(a->got_flag);
	free(a->got_next);
	memset(a, 0, sizeof(*a));
}

/* Whether a member's contribution to a still undecided seq is held. */
static bool collecting(const struct psc_live *l, const struct agreement *a)
{
	for (int r = 0; a->got_seq && r < l->cfg.size; r++)
		if (a->got_seq[r] > a->dec_seq)
			return true;
	return false;
}

/*
 * The slot of (ctx, group); with create, a new one when there is none,
 * reusing the least recently used slot nobody waits on. NULL when out
 * of memory or every slot is in use.
 */
static struct agreement *slot_of(struct psc_live *l, uint32_t ctx,
				 uint32_t group, bool create)
{
	struct agreement *a = NULL;

	if (!l->agree && create)
		l->agree = calloc(AGREE_MAX, sizeof(*l->agree));
	if (!l->agree)
		return NULL;
	for (int i = 0; i < AGREE_MAX; i++)
		if (l->agree[i].used && l->agree[i].ctx == ctx &&
		    l->agree[i].group == group) {
			l->agree[i].touched = psc_now();
			return &l->agree[i];
		}
	if (!create)
		return NULL;
	for (int i = 0; i < AGREE_MAX; i++) {
		struct agreement *b = &l->agree[i];

		if (!b->used) {
			a = b;
			break;
		}
		if (!b->mine && !collecting(l, b) &&
		    (!a || b->touched < a->touched))
			a = b;
	}
	if (!a)
		return NULL;
	slot_clear(a);
	a->members = calloc(nbytes(l), 1);
	a->dec_failed = calloc(nbytes(l), 1);
	if (!a->members || !a->dec_failed) {
		slot_clear(a);
		return NULL;
	}
	a->used = true;
	a->ctx = ctx;
	a->group = group;
	a->touched = psc_now();
	return a;
}

/*
 * The slot of the communicator with context ctx whose n ranks are world
 * ranks world[i] (its group: the lowest of them), created if needed,
 * with them as its members. NULL as slot_of.
 */
static struct agreement *member_slot(struct psc_live *l, uint32_t ctx,
				     const int *world, int n)
{
	struct agreement *a;
	int group = l->cfg.size;

	for (int i = 0; i < n; i++)
		group = PSC_MIN(group, world[i]);
	if (!(a = slot_of(l, ctx, (uint32_t)group, true)))
		return NULL;
	for (int i = 0; i < n; i++)
		set_bit(a->members, world[i]);
	return a;
}

/* Send one AGREE, DECIDE or QUERY frame over k. */
static void send_one(struct psc_live *l, struct link *k, int type,
		     const struct agreement *a, uint32_t seq, uint32_t flag,
		     uint32_t next, const uint8_t *map)
{
	uint8_t pl[FRAME_MAX];

	psc_be_put(pl, a->ctx, 4);
	psc_be_put(pl + 4, a->group, 4);
	psc_be_put(pl + 8, seq, 4);
	psc_be_put(pl + 12, flag, 4);
	psc_be_put(pl + 16, next, 4);
	memcpy(pl + AGREE_HDR, map, nbytes(l));
	psc_live_send(k, type, l->cfg.rank, pl, AGREE_HDR + nbytes(l));
}

static void send_decision(struct psc_live *l, struct link *k,
			  const struct agreement *a)
{
	send_one(l, k, F_DECIDE, a, a->dec_seq, a->dec_flag, a->dec_next,
		 a->dec_failed);
}

/*
 * Seq's decision is known (decided here, or heard): keep it, end this
 * rank's wait for it and, at the root, send it to every member that
 * waits for it (one that asks later is answered as it asks).
 */
static void decide(struct psc_live *l, struct agreement *a, uint32_t seq,
		   uint32_t flag, uint32_t next, const uint8_t *failed)
{
	if (seq <= a->dec_seq)
		return;
	a->dec_seq = seq;
	a->dec_flag = flag;
	a->dec_next = next;
	memcpy(a->dec_failed, failed, nbytes(l));
	if (a->mine && a->my_seq <= seq)
		a->mine = false;
	for (int i = 0; is_root(l) && a->got_seq && i < l->nlinks; i++) {
		struct link *k = &l->links[i];

		if (psc_live_link_up(k) && k->rank >= 0 &&
		    a->got_seq[k->rank] >= seq)
			send_decision(l, k, a);
	}
	pthread_cond_broadcast(&l->cond);
}

/* As the root: decide a's next seq if every live member sent it. */
static void check_one(struct psc_live *l, struct agreement *a)
{
	uint32_t s = a->dec_seq + 1, flag = ~0u, next = 0;
	uint8_t failed[FRAME_MAX];
	int alive = 0;

	memset(failed, 0, sizeof(failed));
	for (int r = 0; r < l->cfg.size; r++) {
		enum peer_state st = l->peers[r].state;
		bool sent = a->got_seq && a->got_seq[r] == s;

		if (!bit(a->members, r))
			continue;
		if (r == l->cfg.rank) {
			if (!a->mine || a->my_seq != s)
				return;
			flag &= a->my_flag;
			next = PSC_MAX(next, a->my_next);
			alive++;
		} else if (st == P_DEAD || st == P_LEFT) {
			/* Failed: not waited for; its context id still counts. */
			set_bit(failed, r);
			if (sent)
				next = PSC_MAX(next, a->got_next[r]);
		} else if (!a->got_seq || a->got_seq[r] < s) {
			return;
		} else if (sent) {
			flag &= a->got_flag[r];
			next = PSC_MAX(next, a->got_next[r]);
			alive++;
		}
	}
	if (alive > 0)
		decide(l, a, s, flag, next, failed);
}

void psc_live_agree_check(struct psc_live *l)
{
	for (int i = 0; is_root(l) && l->agree && i < AGREE_MAX; i++)
		if (l->agree[i].used)
			check_one(l, &l->agree[i]);
}

/*
 * As the root, collecting seq: ask the members that have not sent it
 * whether they decided it on the fabric (once per seq).
 */
static void query(struct psc_live *l, struct agreement *a, uint32_t seq)
{
	uint8_t none[FRAME_MAX];

	if (a->queried >= seq)
		return;
	a->queried = seq;
	memset(none, 0, nbytes(l));
	for (int i = 0; i < l->nlinks; i++) {
		struct link *k = &l->links[i];

		if (psc_live_link_up(k) && k->rank >= 0 &&
		    bit(a->members, k->rank) && a->got_seq[k->rank] < seq)
			send_one(l, k, F_QUERY, a, seq, 0, 0, none);
	}
}

/* A member's contribution reached the root. */
static void contribution(struct psc_live *l, struct link *k,
			 struct agreement *a, uint32_t seq, uint32_t flag,
			 uint32_t next)
{
	size_t n = (size_t)l->cfg.size;
	int r = k->rank;

	if (seq <= a->dec_seq) {
		/* Decided before it asked (under an old root, or again). */
		if (seq == a->dec_seq)
			send_decision(l, k, a);
		return;
	}
	if (!a->got_seq) {
		a->got_seq = calloc(n, sizeof(*a->got_seq));
		a->got_flag = calloc(n, sizeof(*a->got_flag));
		a->got_next = calloc(n, sizeof(*a->got_next));
		if (!a->got_seq || !a->got_flag || !a->got_next) {
			free(a->got_seq);
			free(a->got_flag);
			free(a->got_next);
			a->got_seq = a->got_flag = a->got_next = NULL;
			return;
		}
	}
	if (seq > a->got_seq[r]) {
		a->got_seq[r] = seq;
		a->got_flag[r] = flag;
		a->got_next[r] = next;
	}
	query(l, a, seq);
	check_one(l, a);
}

void psc_live_agree_frame(struct psc_live *l, struct link *k, int type,
			  const uint8_t *pl, size_t plen)
{
	const uint8_t *map = pl + AGREE_HDR;
	uint32_t ctx, group, seq, flag, next;
	struct agreement *a;

	if (plen != AGREE_HDR + nbytes(l) || k->rank < 0)
		return;
	ctx = (uint32_t)psc_be_get(pl, 4);
	group = (uint32_t)psc_be_get(pl + 4, 4);
	seq = (uint32_t)psc_be_get(pl + 8, 4);
	flag = (uint32_t)psc_be_get(pl + 12, 4);
	next = (uint32_t)psc_be_get(pl + 16, 4);
	/* A member sends to its root; a member hears only its root. */
	if (seq == 0 || (type == F_AGREE && !is_root(l)) ||
	    (type != F_AGREE && !is_root(l) && k->rank != l->root))
		return;
	if (group >= (uint32_t)l->cfg.size ||
	    !(a = slot_of(l, ctx, group, true)))
		return;
	if (type == F_AGREE) {
		for (size_t i = 0; i < nbytes(l); i++)
			a->members[i] |= map[i];
		contribution(l, k, a, seq, flag, next);
		return;
	}
	if (type == F_QUERY) {
		/* Decided on the fabric: say so; else say so once it is. */
		if (a->dec_seq >= seq)
			send_decision(l, k, a);
		else
			a->asked = PSC_MAX(a->asked, seq);
		return;
	}
	/* A decision: the root's, or at a new root one reported. */
	decide(l, a, seq, flag, next, map);
	if (is_root(l))
		check_one(l, a);
}

void psc_live_agree_tell(struct psc_live *l, struct link *k, bool to_root)
{
	for (int i = 0; l->agree && i < AGREE_MAX; i++) {
		struct agreement *a = &l->agree[i];

		if (!a->used)
			continue;
		if (a->dec_seq && (to_root || bit(a->members, k->rank)))
			send_decision(l, k, a);
		if (to_root && a->mine)
			send_one(l, k, F_AGREE, a, a->my_seq, a->my_flag,
				 a->my_next, a->members);
	}
}

void psc_live_agree_free(struct psc_live *l)
{
	for (int i = 0; l->agree && i < AGREE_MAX; i++)
		slot_clear(&l->agree[i]);
	free(l->agree);
	l->agree = NULL;
}

/* Whether ctx was aborted (F_ABORT heard or sent). */
static bool ctx_aborted(const struct psc_live *l, uint32_t ctx)
{
	for (int i = 0; i < l->naborts; i++)
		if (l->aborts[i].type == F_ABORT &&
		    (uint32_t)psc_be_get(l->aborts[i].pl, 4) == ctx)
			return true;
	return false;
}

/* Why this rank's wait for a decision must end (0: it need not). */
static int wait_ends(struct psc_live *l, uint32_t ctx, double deadline,
		     char *err, size_t len)
{
	if (l->cut_off) {
		snprintf(err, len, "agreement: rank %d, the liveness root, "
			 "gave this rank up", l->root);
		return -ECONNRESET;
	}
	if (ctx_aborted(l, ctx)) {
		snprintf(err, len, "agreement: the communicator was aborted");
		return -ESHUTDOWN;
	}
	if (l->left || l->stop) {
		snprintf(err, len, "agreement: this rank is leaving");
		return -ESHUTDOWN;
	}
	if (deadline > 0 && psc_now() >= deadline) {
		snprintf(err, len, "agreement: no decision before the "
			 "operation deadline (PS_COMM_OP_TIMEOUT)");
		return -ETIMEDOUT;
	}
	return 0;
}

int psc_live_agree(struct psc_live *l, uint32_t ctx, uint32_t seq,
		   const int *world, int n, double deadline, uint32_t *flag,
		   uint32_t *next, bool *failed, char *err, size_t len)
{
	struct agreement *a;
	struct link *k;
	int rc = 0;

	if (l->cfg.size > PSC_LIVE_AGREE_RANKS) {
		snprintf(err, len, "agreement: the world has %d ranks, more "
			 "than the %d an agreement takes", l->cfg.size,
			 PSC_LIVE_AGREE_RANKS);
		return -EOPNOTSUPP;
	}
	pthread_mutex_lock(&l->lock);
	if (!(a = member_slot(l, ctx, world, n))) {
		pthread_mutex_unlock(&l->lock);
		snprintf(err, len, "agreement: out of memory, or %d "
			 "agreements already in progress", AGREE_MAX);
		return -ENOMEM;
	}
	a->mine = true;
	a->my_seq = seq;
	a->my_flag = *flag;
	a->my_next = *next;
	if (is_root(l)) {
		check_one(l, a);
	} else if ((k = psc_live_link_of(l, l->root)) != NULL) {
		/* The last decision first: the root may not have it. */
		if (a->dec_seq)
			send_decision(l, k, a);
		send_one(l, k, F_AGREE, a, seq, *flag, *next, a->members);
	}
	/* Without a link, it goes to the new root once joined. */
	while (a->mine && !(rc = wait_ends(l, ctx, deadline, err, len)))
		psc_live_wait_for(l, 0.1);
	if (rc == 0 && a->dec_seq != seq) {
		snprintf(err, len, "agreement: decision %u came for call %u",
			 a->dec_seq, seq);
		rc = -EPROTO;
	}
	a->mine = false;
	if (rc == 0) {
		*flag = a->dec_flag;
		*next = a->dec_next;
		for (int i = 0; i < n; i++)
			failed[i] = bit(a->dec_failed, world[i]);
	}
	pthread_mutex_unlock(&l->lock);
	return rc;
}

int psc_live_agree_decided(struct psc_live *l, uint32_t ctx, uint32_t seq,
			   const int *world, int n, uint32_t flag,
			   uint32_t next)
{
	uint8_t none[FRAME_MAX];
	struct agreement *a;
	struct link *k;

	memset(none, 0, sizeof(none));
	pthread_mutex_lock(&l->lock);
	if (!(a = member_slot(l, ctx, world, n))) {
		pthread_mutex_unlock(&l->lock);
		return -ENOMEM;
	}
	/* At the root, members that went to the star get it now. */
	decide(l, a, seq, flag, next, none);
	/* The root asked while this rank was still in the allreduce. */
	if (a->asked && a->asked <= seq && !is_root(l) &&
	    (k = psc_live_link_of(l, l->root)) != NULL)
		send_decision(l, k, a);
	pthread_mutex_unlock(&l->lock);
	return 0;
}
