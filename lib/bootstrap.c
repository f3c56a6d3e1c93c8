/*
 * Bootstrap: rank and size from PS_COMM_* or the usual launcher variables,
 * the choice of rendezvous backend and interface, then an allgather of
 * every rank's record (pscomm version, provider, address format, hash of
 * the settings that must agree, host and fabric address) through the
 * store. Every rank checks every record against its own and fails fast,
 * naming the rank that differs; addresses go into the AV in rank order.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "psc.h"

/* Launcher variables, in the order DESIGN.md gives them. */
static const struct {
	const char *rank, *size;
} launchers[] = {
	{"PS_COMM_RANK", "PS_COMM_SIZE"},
	{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
	{"PMIX_RANK", NULL},
	{"PMI_RANK", "PMI_SIZE"},
	{"SLURM_PROCID", "SLURM_NTASKS"},
	{"RANK", "WORLD_SIZE"},
};

int psc_env_rank_size(int *rank, int *size, char *err, size_t len)
{
	for (size_t i = 0; i < PSC_ARRAY_SIZE(launchers); i++) {
		const char *r = getenv(launchers[i].rank);
		const char *s = launchers[i].size ? getenv(launchers[i].size)
						  : NULL;

		if (!r || !*r)
			continue;
		if (psc_param_parse_int(r, rank) != 0 || *rank < 0) {
			snprintf(err, len, "%s=\"%s\" is not a rank",
				 launchers[i].rank, r);
			return -EINVAL;
		}
		if (!launchers[i].size) {
			int pr;

			if (psc_store_pmix_rank_size(&pr, size) != 0) {
				snprintf(err, len, "%s is set but the job "
					 "size is unknown: set PS_COMM_SIZE",
					 launchers[i].rank);
				return -EINVAL;
			}
		} else if (!s || psc_param_parse_int(s, size) != 0 ||
			   *size < 1) {
			snprintf(err, len, "%s is set but %s=\"%s\" is not a "
				 "job size", launchers[i].rank,
				 launchers[i].size, s ? s : "");
			return -EINVAL;
		}
		if (*rank >= *size) {
			snprintf(err, len, "rank %d is not below size %d (from "
				 "%s/%s)", *rank, *size, launchers[i].rank,
				 launchers[i].size ? launchers[i].size : "PMIx");
			return -EINVAL;
		}
		if (*size > (1 << PSC_TAG_RANK_BITS)) {
			snprintf(err, len, "size %d exceeds pscomm's limit of "
				 "%d ranks", *size, 1 << PSC_TAG_RANK_BITS);
			return -EINVAL;
		}
		return 0;
	}
	*rank = 0;
	*size = 1;
	return 0;
}

/* ----------------------------------------------------------- records */

/* What a rank publishes; text fields are NUL-terminated. */
struct record {
	char version[32];
	char provider[64];
	char addr_format[32];
	char ctx[16];
	char agree[1024];
	uint64_t hash;
	char host[64];
	uint8_t addr[256];
	size_t addrlen;
};

static void rec_fill(struct record *rec, const struct ps_comm *c)
{
	memset(rec, 0, sizeof(*rec));
	snprintf(rec->version, sizeof(rec->version), "%s", ps_comm_version());
	snprintf(rec->provider, sizeof(rec->provider), "%s",
		 c->ep->info->fabric_attr->prov_name);
	snprintf(rec->addr_format, sizeof(rec->addr_format), "%u",
		 c->ep->info->addr_format);
	snprintf(rec->ctx, sizeof(rec->ctx), "%u", c->ctx);
	rec->hash = psc_params_agree_text(&c->params, rec->agree,
					  sizeof(rec->agree));
	gethostname(rec->host, sizeof(rec->host) - 1);
	rec->addrlen = c->ep->namelen;
	memcpy(rec->addr, c->ep->name, rec->addrlen);
}

/* Serialise as "key=value\n" lines, a blank line, then the address. */
static size_t rec_encode(const struct record *rec, uint8_t *buf, size_t len)
{
	int n = snprintf((char *)buf, len, "v=%s\nprov=%s\nfmt=%s\nctx=%s\n"
			 "hash=%016llx\nagree=%s\nhost=%s\naddrlen=%zu\n\n",
			 rec->version, rec->provider, rec->addr_format, rec->ctx,
			 (unsigned long long)rec->hash, rec->agree, rec->host,
			 rec->addrlen);

	if (n < 0 || (size_t)n + rec->addrlen > len)
		return 0;
	memcpy(buf + n, rec->addr, rec->addrlen);
	return (size_t)n + rec->addrlen;
}

/* Copy the value of "key=" from the header text into out. */
static bool rec_field(const char *text, const char *key, char *out,
		      size_t len)
{
	size_t klen = strlen(key);

	for (const char *line = text; *line;) {
		const char *nl = strchr(line, '\n');
		size_t l = nl ? (size_t)(nl - line) : strlen(line);

		if (l > klen && strncmp(line, key, klen) == 0 &&
		    line[klen] == '=') {
			size_t vlen = l - klen - 1;

			if (vlen >= len)
				return false;
			memcpy(out, line + klen + 1, vlen);
			out[vlen] = '\0';
			return true;
		}
		if (!nl)
			break;
		line = nl + 1;
	}
	return false;
}

/* Parse a record received from the store; false if malformed. */
static bool rec_decode(const uint8_t *buf, size_t len, struct record *rec)
{
	char text[2048], num[32];
	const uint8_t *sep;
	size_t tlen;

	memset(rec, 0, sizeof(*rec));
	sep = memmem(buf, len, "\n\n", 2);
	if (!sep || (size_t)(sep - buf) + 2 > sizeof(text))
		return false;
	tlen = (size_t)(sep - buf) + 1;
	memcpy(text, buf, tlen);
	text[tlen] = '\0';
	if (!rec_field(text, "v", rec->version, sizeof(rec->version)) ||
	    !rec_field(text, "prov", rec->provider, sizeof(rec->provider)) ||
	    !rec_field(text, "fmt", rec->addr_format,
		       sizeof(rec->addr_format)) ||
	    !rec_field(text, "ctx", rec->ctx, sizeof(rec->ctx)) ||
	    !rec_field(text, "agree", rec->agree, sizeof(rec->agree)) ||
	    !rec_field(text, "host", rec->host, sizeof(rec->host)) ||
	    !rec_field(text, "hash", num, sizeof(num)))
		return false;
	rec->hash = strtoull(num, NULL, 16);
	if (!rec_field(text, "addrlen", num, sizeof(num)))
		return false;
	rec->addrlen = strtoul(num, NULL, 10);
	if (rec->addrlen == 0 || rec->addrlen > sizeof(rec->addr) ||
	    tlen + 1 + rec->addrlen != len)
		return false;
	memcpy(rec->addr, sep + 2, rec->addrlen);
	return true;
}

/* The first "NAME=value;" item that differs between two agree texts. */
static void first_difference(const char *a, const char *b, char *out,
			     size_t len)
{
	while (*a || *b) {
		const char *ea = strchr(a, ';'), *eb = strchr(b, ';');
		size_t la = ea ? (size_t)(ea - a) : strlen(a);
		size_t lb = eb ? (size_t)(eb - b) : strlen(b);

		if (la != lb || strncmp(a, b, la) != 0) {
			snprintf(out, len, "%.*s here vs %.*s there", (int)la,
				 a, (int)lb, b);
			return;
		}
		a += la + (ea ? 1 : 0);
		b += lb + (eb ? 1 : 0);
	}
	snprintf(out, len, "settings hash differs");
}

/* Compare rank r's record with ours; fill err and return false on a mismatch. */
static bool rec_agree(const struct record *me, const struct record *them,
		      int r, char *err, size_t len)
{
	char diff[400];

	if (strcmp(me->version, them->version) != 0)
		snprintf(diff, sizeof(diff), "pscomm %s here vs %s there",
			 me->version, them->version);
	else if (strcmp(me->provider, them->provider) != 0)
		snprintf(diff, sizeof(diff), "provider %s here vs %s there "
			 "(set the same FI_PROVIDER on every rank)",
			 me->provider, them->provider);
	else if (strcmp(me->addr_format, them->addr_format) != 0)
		snprintf(diff, sizeof(diff), "address format %s here vs %s "
			 "there (mixed IPv4/IPv6?)", me->addr_format,
			 them->addr_format);
	else if (strcmp(me->ctx, them->ctx) != 0)
		snprintf(diff, sizeof(diff), "communicator context %s here vs "
			 "%s there (ranks must create communicators in the "
			 "same order with the same settings)", me->ctx,
			 them->ctx);
	else if (me->hash != them->hash)
		first_difference(me->agree, them->agree, diff, sizeof(diff));
	else
		return true;
	snprintf(err, len, "rank %d (%s) differs from this rank: %s", r,
		 them->host, diff);
	return false;
}

/* ---------------------------------------------------------- backends */

/* Resolve which backend and root address apply. */
static int pick_backend(const struct ps_comm *c, const ps_comm_attr_t *attr,
			const char **spec, char *root, size_t rlen)
{
	const char *m = getenv("MASTER_ADDR"), *mp = getenv("MASTER_PORT");

	*spec = attr && attr->bootstrap ? attr->bootstrap : c->params.bootstrap;
	if (attr && attr->root)
		snprintf(root, rlen, "%s", attr->root);
	else if (*c->params.root)
		snprintf(root, rlen, "%s", c->params.root);
	else if (m && *m && mp && *mp)
		snprintf(root, rlen, strchr(m, ':') ? "[%s]:%s" : "%s:%s", m,
			 mp);
	else
		root[0] = '\0';
	if (strcmp(*spec, "auto") != 0)
		return 0;
	if (root[0])
		*spec = "tcp";
	else if (psc_store_pmix_available())
		*spec = "pmix";
	else if (c->size == 1)
		*spec = "none";
	else
		return -EINVAL;
	return 0;
}

static int store_open(struct psc_store *s, const char *spec,
		      const char *root, const struct psc_params *p)
{
	if (strcmp(spec, "tcp") == 0) {
		if (!root[0]) {
			snprintf(s->err, sizeof(s->err), "the tcp rendezvous "
				 "needs PS_COMM_ROOT=host:port (or "
				 "MASTER_ADDR and MASTER_PORT)");
			return -EINVAL;
		}
		return psc_store_tcp_open(s, root, p);
	}
	if (strncmp(spec, "file:", 5) == 0)
		return psc_store_file_open(s, spec + 5);
	if (strcmp(spec, "pmix") == 0)
		return psc_store_pmix_open(s);
	snprintf(s->err, sizeof(s->err), "PS_COMM_BOOTSTRAP=\"%s\" is not "
		 "auto, tcp, file:DIR or pmix", spec);
	return -EINVAL;
}

/* Choose the interface to use; NULL iface when none is needed. */
static int pick_iface(struct ps_comm *c, const char *root,
		      struct psc_iface *iface, bool *have)
{
	struct sockaddr_storage ss;
	struct psc_hostport hp;
	socklen_t sl;
	char err[512];
	bool have_root = root[0] && psc_hostport_parse(root, &hp) == 0 &&
			 psc_resolve(&hp, &ss, &sl, err, sizeof(err)) == 0;
	int rc;

	*have = false;
	/* A singleton with no preference may use anything, loopback too. */
	if (c->size == 1 && !have_root && !*c->params.ifname)
		return 0;
	rc = psc_iface_choose(c->params.ifname,
			      have_root ? (struct sockaddr *)&ss : NULL,
			      AF_UNSPEC, iface, err, sizeof(err));
	if (rc) {
		psc_comm_set_error(c, "%s", err);
		return rc;
	}
	*have = true;
	psc_log(PSC_LOG_INFO, c->rank, "using interface %s address %s",
		iface->name, iface->addrstr);
	return 0;
}

/* Publish our record, gather everyone's, check them, fill the AV. */
/*
 * Busy-polling only pays when every rank has a core. Like MPI's
 * yield-when-idle, PS_COMM_SPIN_US=-1 spins 200 us, or not at all when
 * this host runs more ranks (local) than the cores this process may use.
 */
static void spin_policy(struct ps_comm *c, int local)
{
	cpu_set_t set;
	int cpus = 0;

	if (c->params.spin_us >= 0)
		return;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		cpus = CPU_COUNT(&set);
	c->ep->spin_us = cpus > 0 && local > cpus ? 0 : 200;
	psc_log(PSC_LOG_INFO, c->rank, "%d ranks on this host, %d cores: "
		"blocking calls %s", local, cpus,
		c->ep->spin_us ? "spin 200 us, then yield" : "yield at once");
}

static int exchange(struct ps_comm *c, struct psc_store *s)
{
	struct record me, them;
	uint8_t buf[2048];
	size_t len = 0;
	char err[600];
	int rc, local = 0;

	rec_fill(&me, c);
	len = rec_encode(&me, buf, sizeof(buf));
	if (!len) {
		snprintf(s->err, sizeof(s->err), "this rank's record does not "
			 "fit %zu bytes", sizeof(buf));
		return -EOVERFLOW;
	}
	rc = s->ops->put(s, "rec", buf, len);
	if (!rc)
		rc = s->ops->commit(s);
	if (rc)
		return rc;
	for (int r = 0; r < c->size; r++) {
		void *val = NULL;
		size_t vlen = 0;

		rc = s->ops->get(s, r, "rec", &val, &vlen);
		if (rc)
			return rc;
		if (!rec_decode(val, vlen, &them)) {
			free(val);
			snprintf(s->err, sizeof(s->err), "malformed bootstrap "
				 "record from rank %d", r);
			return -EPROTO;
		}
		free(val);
		local += strcmp(them.host, me.host) == 0;
		if (!rec_agree(&me, &them, r, err, sizeof(err))) {
			snprintf(s->err, sizeof(s->err), "%s", err);
			return -EBADE;
		}
		rc = psc_ep_av_insert(c->ep, them.addr, &c->peers[r]);
		psc_log(PSC_LOG_DEBUG, c->rank, "rank %d on %s: fi_addr %llu",
			r, them.host, (unsigned long long)c->peers[r]);
		if (rc) {
			snprintf(s->err, sizeof(s->err), "fi_av_insert of rank "
				 "%d (%s) failed: %s", r, them.host,
				 fi_strerror(-rc));
			return rc;
		}
	}
	spin_policy(c, local);
	return 0;
}

/* Map a store errno to the public code for bootstrap failures. */
static int bootstrap_err(int rc)
{
	switch (rc) {
	case -ETIMEDOUT:
		return PS_COMM_ERR_TIMEOUT;
	case -EBADE:
		return PS_COMM_ERR_MISMATCH;
	case -EPROTO:
		return PS_COMM_ERR_PROTO;
	case -EINVAL:
	case -ENOTDIR:
		return PS_COMM_ERR_CONFIG;
	case -ENOSYS:
		return PS_COMM_ERR_NOTSUP;
	default:
		return PS_COMM_ERR_BOOTSTRAP;
	}
}

static int rank_size(struct ps_comm *c, const ps_comm_attr_t *attr)
{
	char err[256];
	int rc = psc_env_rank_size(&c->rank, &c->size, err, sizeof(err));

	if (rc) {
		psc_comm_set_error(c, "%s", err);
		return PS_COMM_ERR_CONFIG;
	}
	if (attr && attr->size >= 1)
		c->size = attr->size;
	if (attr && attr->rank >= 0)
		c->rank = attr->rank;
	if (c->rank >= c->size) {
		psc_comm_set_error(c, "rank %d is not below size %d", c->rank,
				   c->size);
		return PS_COMM_ERR_CONFIG;
	}
	return 0;
}

int psc_bootstrap(struct ps_comm *c, const ps_comm_attr_t *attr)
{
	struct psc_store s = {0};
	struct psc_ep_config cfg = {&c->params, NULL, 0};
	struct psc_iface iface;
	const char *spec;
	char root[300], err[1024];
	bool have_iface;
	int rc;

	rc = rank_size(c, attr);
	if (rc)
		return rc;
	cfg.rank = c->rank;
	if (pick_backend(c, attr, &spec, root, sizeof(root))) {
		psc_comm_set_error(c, "no rendezvous for a job of %d ranks: set "
				   "PS_COMM_ROOT=host:port (or MASTER_ADDR and "
				   "MASTER_PORT), run under a PMIx launcher "
				   "(mpirun, srun --mpi=pmix), or set "
				   "PS_COMM_BOOTSTRAP=file:DIR", c->size);
		return PS_COMM_ERR_CONFIG;
	}
	if (pick_iface(c, strcmp(spec, "tcp") == 0 ? root : "", &iface,
		       &have_iface))
		return PS_COMM_ERR_CONFIG;
	cfg.iface = have_iface ? &iface : NULL;
	c->peers = calloc((size_t)c->size, sizeof(*c->peers));
	if (!c->peers)
		return PS_COMM_ERR_NOMEM;
	rc = psc_ep_acquire(&c->ep, &cfg, &c->ctx, err, sizeof(err));
	if (rc) {
		psc_comm_set_error(c, "%s", err);
		return rc == -ENOMEM ? PS_COMM_ERR_NOMEM : PS_COMM_ERR_PROVIDER;
	}
	snprintf(c->provider, sizeof(c->provider), "%s",
		 c->ep->info->fabric_attr->prov_name);
	if (strcmp(spec, "none") == 0)
		return psc_ep_av_insert(c->ep, c->ep->name, &c->peers[0])
			       ? PS_COMM_ERR_PROVIDER
			       : 0;
	s.rank = c->rank;
	s.size = c->size;
	s.deadline = psc_now() + c->params.timeout;
	psc_log(PSC_LOG_INFO, c->rank, "bootstrap %s%s%s, %d ranks", spec,
		root[0] && strcmp(spec, "tcp") == 0 ? " at " : "",
		strcmp(spec, "tcp") == 0 ? root : "", c->size);
	rc = store_open(&s, spec, root, &c->params);
	if (!rc)
		rc = exchange(c, &s);
	if (!rc)
		rc = s.ops->finish(&s);
	if (rc)
		psc_comm_set_error(c, "bootstrap (%s) failed: %s",
				   s.ops ? s.ops->name : spec, s.err);
	if (s.ops)
		s.ops->close(&s);
	return rc ? bootstrap_err(rc) : 0;
}
