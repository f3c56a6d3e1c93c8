/*
 * Communicators bootstrapped anew from a running one (comm/view.h): a
 * grow, whose old ranks and the processes that join build the grown
 * communicator like a world, and a shrink's rebuild, where the
 * survivors of a node-local death build theirs on fresh endpoints the
 * same way (comm/create.c does the bootstrap). Rank 0 of the new
 * communicator serves its rendezvous.
 */
#include <stdio.h>
#include <stdlib.h>

#include "boot/boot.h"
#include "comm/comm.h"
#include "live/live.h"
#include "net/net.h"
#include "util/log.h"
#include "util/util.h"

void psc_comm_grow_root(const struct ps_comm *c, int r0, char *root,
			size_t len)
{
	char job[300], host[96];
	struct psc_hostport hp;

	if (*c->params.grow_root) {
		snprintf(root, len, "%s", c->params.grow_root);
		return;
	}
	if (*c->root)
		snprintf(job, sizeof(job), "%s", c->root);
	else
		psc_boot_job_root(&c->params, job, sizeof(job));
	root[0] = '\0';
	if (!job[0] || psc_hostport_parse(job, &hp) != 0)
		return;
	/*
	 * World rank 0 served c's world's rendezvous there (the job's, a
	 * grow's or a rebuild's), so the address is its own; another rank
	 * serves on its own host, at the same port.
	 */
	if (!c->live || c->world[r0] == 0)
		snprintf(root, len, "%s", job);
	else if (psc_live_host_of(c->live, c->world[r0], host,
				  sizeof(host)) == 0)
		snprintf(root, len, "%s:%u", host, (unsigned)hp.port);
}

/*
 * The rendezvous's checks (comm.h, struct psc_comm_grow), from its own
 * thread (both thread-safe). A grow: whether the communicator that grows
 * failed. A rebuild: whether a rank of c outside its agreed failed set
 * is known dead.
 */
static bool old_dead(void *arg, char *why, size_t len)
{
	struct ps_comm *c = arg;
	char words[400];

	if (!psc_ep_owner_failed(c->ch.ep, &c->ch, words, sizeof(words)))
		return false;
	snprintf(why, len, "the communicator that grows failed: %s", words);
	return true;
}

static bool survivor_dead(void *arg, char *why, size_t len)
{
	struct ps_comm *c = arg;
	char words[400];

	for (int r = 0; r < c->ch.size; r++)
		if (!(c->agreed_failed && c->agreed_failed[r]) &&
		    psc_live_dead(c->live, c->world[r], words, sizeof(words))) {
			snprintf(why, len, "rank %d died during ps_comm_shrink: "
				 "%s", r, words);
			return true;
		}
	return false;
}

/*
 * Bootstrap the communicator g describes into *newcomm, with c's
 * settings. Returns 0 or the bootstrap's PS_COMM_ERR_* value, with c's
 * error set to the bootstrap's words headed by what.
 */
static int bootstrap_from(struct ps_comm *c, const struct psc_comm_grow *g,
			  const char *what, struct ps_comm **newcomm)
{
	struct ps_comm *nc = calloc(1, sizeof(*nc));
	struct psc_chan ch;
	int rc;

	if (!nc)
		return PS_COMM_ERR_NOMEM;
	nc->magic = PSC_COMM_MAGIC;
	nc->ch.rank = -1;
	nc->params = c->params;
	nc->op_timeout = c->op_timeout;
	rc = psc_comm_bootstrap(nc, NULL, g);
	if (rc == 0) {
		*newcomm = nc;
		return 0;
	}
	psc_comm_set_error(c, "%s: %s", what, nc->last_error);
	ch = nc->ch;
	psc_comm_free(nc);
	psc_chan_release(&ch);
	return rc;
}

int psc_comm_grow_to(struct ps_comm *c, const char *root, int n_new,
		     uint32_t ctx, struct ps_comm **newcomm)
{
	struct psc_comm_grow g = {.rank = c->ch.rank,
				  .size = c->ch.size + n_new,
				  .old_size = c->ch.size,
				  .ctx = ctx,
				  .root = root,
				  .dead = old_dead,
				  .dead_arg = c};
	int rc, failed;

	if (c->ch.rank == 0)
		psc_log(PSC_LOG_INFO, 0, "ps_comm_grow: %d new processes may "
			"join at %s (PS_COMM_JOIN)", n_new, root);
	rc = bootstrap_from(c, &g, "ps_comm_grow", newcomm);
	/* A rank of c died: that is the failure, as for any collective. */
	failed = rc ? psc_ep_owner_failed(c->ch.ep, &c->ch, NULL, 0) : 0;
	return failed ? psc_comm_failure(c, failed) : rc;
}

/*
 * Whether a failed rebuild lost a survivor (why says which). A survivor
 * that dies during it, the rendezvous's host above all, can fail this
 * rank's bootstrap (its connection reset) before the liveness monitor
 * tells its death: that is waited for, up to PS_COMM_PEER_TIMEOUT, so
 * that every survivor reports the death alike (PS_COMM_ERR_PEER) and
 * shrinks again, and not this rank alone a bootstrap failure.
 */
static bool rebuild_lost_survivor(struct ps_comm *c, char *why, size_t len)
{
	double end = psc_now() + c->params.peer_timeout;
	unsigned step = 0;

	while (!survivor_dead(c, why, len)) {
		if (psc_now() >= end)
			return false;
		psc_backoff_sleep(0.001, 0.05, step++, false, end);
	}
	return true;
}

int psc_comm_rebuild(struct ps_comm *c, uint32_t ctx,
		     struct ps_comm **newcomm)
{
	struct psc_comm_grow g = {.ctx = ctx,
				  .dead = survivor_dead,
				  .dead_arg = c};
	char root[300], why[512];
	int first = -1, rc;

	for (int r = 0; r < c->ch.size; r++) {
		if (c->agreed_failed && c->agreed_failed[r])
			continue;
		if (first < 0)
			first = r;
		if (r == c->ch.rank)
			g.rank = g.size;
		g.size++;
	}
	g.old_size = g.size;
	psc_comm_grow_root(c, first, root, sizeof(root));
	if (!root[0]) {
		psc_comm_set_error(c, "ps_comm_shrink: a rank on a node of "
				   "this communicator died on shared memory, "
				   "whose queues cannot be used after that, "
				   "and the survivors have no rendezvous to "
				   "rebuild at: set PS_COMM_GROW_ROOT=host:port "
				   "(or PS_COMM_ROOT)");
		return PS_COMM_ERR_NOTSUP;
	}
	g.root = root;
	psc_log(first == c->ch.rank ? PSC_LOG_INFO : PSC_LOG_DEBUG,
		c->ch.rank, "ps_comm_shrink: the %d survivors rebuild on fresh "
		"endpoints at %s (a node-local death on shared memory)",
		g.size, root);
	rc = bootstrap_from(c, &g, "ps_comm_shrink", newcomm);
	c->rebuilt = rc == 0;
	if (rc && rebuild_lost_survivor(c, why, sizeof(why))) {
		psc_comm_set_error(c, "ps_comm_shrink: %s", why);
		rc = PS_COMM_ERR_PEER;
	}
	return rc;
}
