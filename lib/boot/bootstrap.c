/*
 * Bootstrap: rank and size from PS_COMM_* or the usual launcher variables,
 * the choice of rendezvous backend and interface, then an allgather of
 * every rank's record (pscomm version, provider, address format, hash of
 * the settings that must agree, host and fabric address) through the
 * store. Every rank checks every record against its own and fails fast,
 * naming the rank that differs; the caller takes each record in rank
 * order.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


#include "boot/boot.h"
#include "boot/store.h"
#include "util/log.h"
#include "util/util.h"

/* Launcher variables, in the order the README documents them. */
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
	const char *alone;

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
		return 0;
	}
	*rank = 0;
	*size = 1;
	/* PS_COMM_SIZE alone: a size, but the rank must come from attr. */
	alone = getenv("PS_COMM_SIZE");
	if (alone && *alone) {
		if (psc_param_parse_int(alone, size) != 0 || *size < 1) {
			snprintf(err, len, "PS_COMM_SIZE=\"%s\" is not a job "
				 "size", alone);
			return -EINVAL;
		}
		*rank = *size == 1 ? 0 : -1;
	}
	return 0;
}

int psc_boot_spec_check(const char *spec, const char *what, char *err,
			size_t len)
{
	if (strcmp(spec, "auto") == 0 || strcmp(spec, "tcp") == 0 ||
	    strcmp(spec, "pmix") == 0 || strcmp(spec, "pmi2") == 0 ||
	    (strncmp(spec, "file:", 5) == 0 && spec[5]))
		return 0;
	snprintf(err, len, "%s=\"%s\" is not a rendezvous: use auto, tcp, "
		 "file:DIR, pmix or pmi2", what, spec);
	return -EINVAL;
}

/* ----------------------------------------------------------- records */

void psc_boot_record_init(struct psc_boot_record *rec,
			  const struct psc_params *p)
{
	memset(rec, 0, sizeof(*rec));
	snprintf(rec->version, sizeof(rec->version), "%s", ps_comm_version());
	psc_params_agree_text(p, rec->agree, sizeof(rec->agree));
	gethostname(rec->host, sizeof(rec->host) - 1);
	psc_node_id(p->node_id, "net", rec->node, sizeof(rec->node));
}

/* Serialise as "key=value\n" lines, a blank line, then the address. */
size_t psc_boot_record_encode(const struct psc_boot_record *rec, uint8_t *buf,
			      size_t len)
{
	int n = snprintf((char *)buf, len, "v=%s\nprov=%s\nfmt=%s\nctx=%s\n"
			 "hash=%016llx\nagree=%s\nhost=%s\nnode=%s\n"
			 "live=%s\naddrlen=%zu\nshmlen=%zu\n\n",
			 rec->version, rec->provider, rec->addr_format, rec->ctx,
			 (unsigned long long)rec->hash, rec->agree, rec->host,
			 rec->node, rec->live, rec->addrlen, rec->shmlen);

	if (n < 0 || (size_t)n + rec->addrlen + rec->shmlen > len)
		return 0;
	memcpy(buf + n, rec->addr, rec->addrlen);
	memcpy(buf + n + rec->addrlen, rec->shm, rec->shmlen);
	return (size_t)n + rec->addrlen + rec->shmlen;
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
bool psc_boot_record_decode(const uint8_t *buf, size_t len,
			    struct psc_boot_record *rec)
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
	    !rec_field(text, "node", rec->node, sizeof(rec->node)) ||
	    !rec_field(text, "live", rec->live, sizeof(rec->live)) ||
	    !rec_field(text, "hash", num, sizeof(num)))
		return false;
	rec->hash = strtoull(num, NULL, 16);
	if (!rec_field(text, "addrlen", num, sizeof(num)))
		return false;
	rec->addrlen = strtoul(num, NULL, 10);
	if (!rec_field(text, "shmlen", num, sizeof(num)))
		return false;
	rec->shmlen = strtoul(num, NULL, 10);
	if (rec->addrlen == 0 || rec->addrlen > sizeof(rec->addr) ||
	    rec->shmlen > sizeof(rec->shm) || !rec->node[0] ||
	    tlen + 1 + rec->addrlen + rec->shmlen != len)
		return false;
	memcpy(rec->addr, sep + 2, rec->addrlen);
	memcpy(rec->shm, sep + 2 + rec->addrlen, rec->shmlen);
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
static bool rec_agree(const struct psc_boot_record *me, const struct psc_boot_record *them,
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

/* ---------------------------------------------------------- backends */

/* Resolve which backend and root address apply. */
void psc_boot_job_root(const struct psc_params *p, char *out, size_t len)
{
	const char *m = getenv("MASTER_ADDR"), *mp = getenv("MASTER_PORT");

	if (*p->root)
		snprintf(out, len, "%s", p->root);
	else if (m && *m && mp && *mp)
		snprintf(out, len, strchr(m, ':') ? "[%s]:%s" : "%s:%s", m, mp);
	else
		out[0] = '\0';
}

static int pick_backend(struct psc_boot_plan *b, const ps_comm_attr_t *attr)
{
	const struct psc_params *p = b->params;

	b->spec = attr && attr->bootstrap ? attr->bootstrap : p->bootstrap;
	if (attr && attr->root)
		snprintf(b->root, sizeof(b->root), "%s", attr->root);
	else
		psc_boot_job_root(p, b->root, sizeof(b->root));
	if (strcmp(b->spec, "auto") != 0)
		return 0;
	if (b->root[0])
		b->spec = "tcp";
	else if (psc_store_pmix_available())
		b->spec = "pmix";
	else if (psc_store_pmi2_available())
		b->spec = "pmi2";
	else if (b->size == 1)
		b->spec = "none";
	else
		return -EINVAL;
	return 0;
}

static int store_open(struct psc_store *s, struct psc_boot_plan *b)
{
	if (strcmp(b->spec, "tcp") == 0) {
		if (!b->root[0]) {
			snprintf(s->err, sizeof(s->err), "the tcp rendezvous "
				 "needs PS_COMM_ROOT=host:port (or "
				 "MASTER_ADDR and MASTER_PORT)");
			return -EINVAL;
		}
		s->grow = b->grow;
		return psc_store_tcp_open(s, b->root, b->params, &b->key);
	}
	if (strncmp(b->spec, "file:", 5) == 0)
		return psc_store_file_open(s, b->spec + 5);
	if (strcmp(b->spec, "pmix") == 0 || strcmp(b->spec, "pmi2") == 0) {
		/* The launcher is trusted: it hands out a key of its own. */
		int rc = strcmp(b->spec, "pmix") == 0
				 ? psc_store_pmix_open(s, !b->key.keyed)
				 : psc_store_pmi2_open(s, !b->key.keyed);

		if (rc == 0 && s->made_key[0]) {
			rc = psc_auth_key_load(&b->key, s->made_key, s->err,
					       sizeof(s->err));
			psc_log(PSC_LOG_INFO, b->rank, "no PS_COMM_JOB_KEY set: "
				"using the random key rank 0 handed out through "
				"%s", strcmp(b->spec, "pmix") == 0 ? "PMIx"
								   : "PMI2");
		}
		explicit_bzero(s->made_key, sizeof(s->made_key));
		return rc;
	}
	snprintf(s->err, sizeof(s->err), "PS_COMM_BOOTSTRAP=\"%s\" is not "
		 "auto, tcp, file:DIR, pmix or pmi2", b->spec);
	return -EINVAL;
}

/* Choose the interface to use; none when none is needed. */
static int pick_iface(struct psc_boot_plan *b, char *err, size_t len)
{
	const char *root = strcmp(b->spec, "tcp") == 0 ? b->root : "";
	struct sockaddr_storage ss;
	struct psc_hostport hp;
	socklen_t sl;
	bool have_root = root[0] && psc_hostport_parse(root, &hp) == 0 &&
			 psc_resolve(&hp, &ss, &sl, err, len) == 0;
	int rc;

	b->have_iface = false;
	/* A singleton with no preference may use anything, loopback too. */
	if (b->size == 1 && !have_root && !*b->params->ifname)
		return 0;
	rc = psc_iface_choose(b->params->ifname,
			      have_root ? (struct sockaddr *)&ss : NULL,
			      AF_UNSPEC, &b->iface, err, len);
	if (rc)
		return rc;
	b->have_iface = true;
	psc_log(PSC_LOG_INFO, b->rank, "using interface %s address %s",
		b->iface.name, b->iface.addrstr);
	return 0;
}

int psc_boot_plan(struct psc_boot_plan *b, const struct psc_params *p,
		  const ps_comm_attr_t *attr, int rank, int size, char *err,
		  size_t len)
{
	memset(b, 0, sizeof(*b));
	b->params = p;
	b->rank = rank;
	b->size = size;
	if (psc_auth_key_load(&b->key, p->job_key, err, len))
		return -EINVAL;
	if (pick_backend(b, attr)) {
		snprintf(err, len, "no rendezvous for a job of %d ranks: set "
			 "PS_COMM_ROOT=host:port (or MASTER_ADDR and "
			 "MASTER_PORT), run under a PMIx or PMI2 launcher "
			 "(mpirun, srun --mpi=pmix or --mpi=pmi2), or set "
			 "PS_COMM_BOOTSTRAP=file:DIR",
			 size);
		return -EINVAL;
	}
	return pick_iface(b, err, len) ? -EINVAL : 0;
}

int psc_boot_join(struct psc_boot_plan *b, char *err, size_t len)
{
	struct psc_store *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return -ENOMEM;
	s->rank = -1;
	s->deadline = psc_now() + b->params->timeout;
	psc_log(PSC_LOG_INFO, -1, "joining the grow at %s", b->root);
	rc = psc_store_tcp_open(s, b->root, b->params, &b->key);
	if (rc) {
		snprintf(err, len, "joining the running job at PS_COMM_JOIN=%s "
			 "failed: %s", b->root, s->err);
		if (s->ops)
			s->ops->close(s);
		free(s);
		return rc;
	}
	b->rank = s->rank;
	b->size = s->size;
	b->grow.grant = s->grow.grant;
	b->joined = s;
	return 0;
}

void psc_boot_unjoin(struct psc_boot_plan *b)
{
	if (!b->joined)
		return;
	b->joined->ops->close(b->joined);
	free(b->joined);
	b->joined = NULL;
}

/* Read, check and hand over every rank's record in rank order. */
static int gather(const struct psc_boot_plan *b, struct psc_store *s,
		  const struct psc_boot_record *me,
		  int (*peer)(void *, int, const struct psc_boot_record *,
			      char *, size_t),
		  void *arg, int *local)
{
	struct psc_boot_record them;
	char err[600];
	int rc;

	*local = 0;
	for (int r = 0; r < b->size; r++) {
		void *val = NULL;
		size_t vlen = 0;

		rc = s->ops->get(s, r, "rec", &val, &vlen);
		if (rc)
			return rc;
		if (vlen < PSC_AUTH_MAC_LEN ||
		    psc_auth_record_check(&b->key, s->session, r, "rec", val,
					  vlen - PSC_AUTH_MAC_LEN,
					  (uint8_t *)val + vlen -
						  PSC_AUTH_MAC_LEN) != 0) {
			free(val);
			snprintf(s->err, sizeof(s->err), "the bootstrap record "
				 "of rank %d does not verify: it was forged, or "
				 "published with another PS_COMM_JOB_KEY or in "
				 "another rendezvous", r);
			return -EACCES;
		}
		vlen -= PSC_AUTH_MAC_LEN;
		if (!psc_boot_record_decode(val, vlen, &them)) {
			free(val);
			snprintf(s->err, sizeof(s->err), "malformed bootstrap "
				 "record from rank %d", r);
			return -EPROTO;
		}
		free(val);
		*local += strcmp(them.node, me->node) == 0;
		if (!rec_agree(me, &them, r, err, sizeof(err))) {
			snprintf(s->err, sizeof(s->err), "%s", err);
			return -EBADE;
		}
		rc = peer(arg, r, &them, s->err, sizeof(s->err));
		if (rc)
			return rc;
	}
	return 0;
}

/* ------------------------------------------------------------- vote */

/* Longest text of a vote or a tally. */
#define VOTE_TEXT (PSC_BOOT_VOTE_NOTE + 32)

/* Publish text as this rank's name, MACed as the records are. */
static int put_signed(const struct psc_boot_plan *b, struct psc_store *s,
		      const char *name, const char *text)
{
	uint8_t buf[VOTE_TEXT + PSC_AUTH_MAC_LEN];
	size_t n = PSC_MIN(strlen(text), (size_t)VOTE_TEXT);

	/* A value of n bytes, no NUL: the store keeps its length. */
	/* NOLINTNEXTLINE(bugprone-not-null-terminated-result) */
	memcpy(buf, text, n);
	psc_auth_record_mac(&b->key, s->session, b->rank, name, buf, n,
			    buf + n);
	return s->ops->put(s, name, buf, n + PSC_AUTH_MAC_LEN);
}

/* Read rank r's name, check its MAC, into text (len bytes, with NUL). */
static int get_signed(const struct psc_boot_plan *b, struct psc_store *s,
		      int r, const char *name, char *text, size_t len)
{
	void *val = NULL;
	size_t vlen = 0;
	int rc = s->ops->get(s, r, name, &val, &vlen);

	if (rc)
		return rc;
	if (vlen < PSC_AUTH_MAC_LEN || vlen - PSC_AUTH_MAC_LEN >= len ||
	    psc_auth_record_check(&b->key, s->session, r, name, val,
				  vlen - PSC_AUTH_MAC_LEN,
				  (uint8_t *)val + vlen - PSC_AUTH_MAC_LEN)) {
		free(val);
		snprintf(s->err, sizeof(s->err), "the %s of rank %d does not "
			 "verify: it was forged, or published with another "
			 "PS_COMM_JOB_KEY or in another rendezvous", name, r);
		return -EACCES;
	}
	vlen -= PSC_AUTH_MAC_LEN;
	memcpy(text, val, vlen);
	text[vlen] = '\0';
	free(val);
	return 0;
}

/* "NUMBER rest": the number into *v, *rest past one blank; false if none. */
static bool parse_lead(const char *text, int *v, const char **rest)
{
	char *end;
	long n = strtol(text, &end, 10);

	if (end == text || (*end && *end != ' ') || n < -1 || n > INT32_MAX)
		return false;
	*v = (int)n;
	*rest = *end ? end + 1 : end;
	return true;
}

/*
 * Rank 0: read round k's votes and publish the tally "DONE FLOOR RANK
 * NOTE": whether all offered the same, the largest offer, and the first
 * note of the vote (its first round with one, lowest rank first) with
 * its rank, or -1 and nothing. v keeps that note across rounds.
 */
static int tally(const struct psc_boot_plan *b, struct psc_store *s,
		 int k, struct psc_boot_vote *v)
{
	char name[24], text[VOTE_TEXT + 1];
	int max = 0, val0 = 0;
	bool same = true;

	snprintf(name, sizeof(name), "vote%d", k);
	for (int r = 0; r < b->size; r++) {
		const char *note;
		int val, rc = get_signed(b, s, r, name, text, sizeof(text));

		if (rc)
			return rc;
		if (!parse_lead(text, &val, &note) || val < 0) {
			snprintf(s->err, sizeof(s->err), "malformed %s from "
				 "rank %d", name, r);
			return -EPROTO;
		}
		if (r == 0)
			val0 = max = val;
		same &= val == val0;
		max = PSC_MAX(max, val);
		if (*note && v->note_rank < 0) {
			v->note_rank = r;
			snprintf(v->note, sizeof(v->note), "%s", note);
		}
	}
	snprintf(text, sizeof(text), "%d %d %d %s", same, max, v->note_rank,
		 v->note);
	snprintf(name, sizeof(name), "tally%d", k);
	return put_signed(b, s, name, text);
}

/* Parse rank 0's tally text into its parts; false when malformed. */
static bool parse_tally(const char *text, int *done, int *floor,
			struct psc_boot_vote *v)
{
	const char *rest, *note;
	int from;

	if (!parse_lead(text, done, &rest) || !parse_lead(rest, floor, &rest) ||
	    !parse_lead(rest, &from, &note) || *floor < 0 || *done < 0 ||
	    *done > 1)
		return false;
	v->note_rank = from;
	snprintf(v->note, sizeof(v->note), "%s", note);
	return true;
}

/* Rounds of v through the open store s until every rank offers alike. */
static int vote_rounds(const struct psc_boot_plan *b, struct psc_store *s,
		       struct psc_boot_vote *v)
{
	char text[VOTE_TEXT + 1], name[24], note[PSC_BOOT_VOTE_NOTE];
	int floor = -1;

	v->note_rank = -1;
	v->note[0] = '\0';
	for (int k = 0; k < PSC_BOOT_VOTE_ROUNDS; k++) {
		int value, done, rc;

		note[0] = '\0';
		rc = v->offer(v->arg, floor, v->note_rank, v->note, &value,
			      note, sizeof(note), s->err, sizeof(s->err));
		if (rc)
			return rc;
		snprintf(text, sizeof(text), "%d %s", value, note);
		snprintf(name, sizeof(name), "vote%d", k);
		rc = put_signed(b, s, name, text);
		if (!rc)
			rc = s->ops->commit(s);
		if (!rc && b->rank == 0)
			rc = tally(b, s, k, v);
		if (!rc)
			rc = s->ops->commit(s);
		snprintf(name, sizeof(name), "tally%d", k);
		if (!rc)
			rc = get_signed(b, s, 0, name, text, sizeof(text));
		if (rc)
			return rc;
		if (!parse_tally(text, &done, &floor, v)) {
			snprintf(s->err, sizeof(s->err), "malformed %s from "
				 "rank 0", name);
			return -EPROTO;
		}
		if (done) {
			v->value = floor;
			return 0;
		}
	}
	snprintf(s->err, sizeof(s->err), "the ranks did not agree within %d "
		 "rounds of the vote", PSC_BOOT_VOTE_ROUNDS);
	return -EBADE;
}

/* ---------------------------------------------------------- exchange */

int psc_boot_exchange(struct psc_boot_plan *b, struct psc_boot_vote *vote,
		      const struct psc_boot_record *me_in,
		      int (*peer)(void *arg, int rank,
				  const struct psc_boot_record *rec,
				  char *err, size_t len),
		      int (*gathered)(void *arg, char *err, size_t len),
		      void *arg, int *local, char *err, size_t len)
{
	struct psc_store s = {0};
	struct psc_boot_record mine, *me = &mine;
	uint8_t buf[2048 + PSC_AUTH_MAC_LEN];
	size_t n;
	int rc;
	bool differ = false;

	s.rank = b->rank;
	s.size = b->size;
	s.deadline = psc_now() + b->params->timeout;
	psc_log(PSC_LOG_INFO, b->rank, "bootstrap %s%s%s, %d ranks", b->spec,
		strcmp(b->spec, "tcp") == 0 ? " at " : "",
		strcmp(b->spec, "tcp") == 0 ? b->root : "", b->size);
	if (b->joined) {
		/* psc_boot_join opened it: this exchange owns it now. */
		s = *b->joined;
		free(b->joined);
		b->joined = NULL;
		rc = 0;
	} else {
		rc = store_open(&s, b);
	}
	/* The key is known now (pmix may have made it). */
	if (!rc && vote)
		rc = vote_rounds(b, &s, vote);
	/* The vote may have changed this rank's record. */
	mine = *me_in;
	mine.hash = psc_auth_settings_hash(&b->key, mine.agree);
	n = psc_boot_record_encode(me, buf, sizeof(buf) - PSC_AUTH_MAC_LEN);
	if (!rc && !n) {
		snprintf(s.err, sizeof(s.err), "this rank's record does not "
			 "fit %zu bytes", sizeof(buf) - PSC_AUTH_MAC_LEN);
		rc = -EOVERFLOW;
	}
	if (!rc) {
		psc_auth_record_mac(&b->key, s.session, b->rank, "rec", buf, n,
				    buf + n);
		rc = s.ops->put(&s, "rec", buf, n + PSC_AUTH_MAC_LEN);
	}
	if (!rc)
		rc = s.ops->commit(&s);
	if (!rc) {
		rc = gather(b, &s, me, peer, arg, local);
		/* Settings that differ, or a peer the provider cannot reach
		 * (shm across nodes): decided from the records alone. */
		differ = rc == -EBADE || rc == -EHOSTUNREACH;
	}
	if (differ) {
		/*
		 * The records decided: every rank sees it in the same records.
		 * Meet the others at the last fence before leaving, so that
		 * none takes this rank's exit for a death before it has read
		 * the difference itself (the rendezvous aborts a store whose
		 * member left). The difference stays the error.
		 */
		char why[sizeof(s.err)];

		memcpy(why, s.err, sizeof(why));
		(void)s.ops->finish(&s);
		memcpy(s.err, why, sizeof(s.err));
	} else if (!rc) {
		if (gathered)
			rc = gathered(arg, s.err, sizeof(s.err));
		if (!rc && b->params->test_bye_delay > 0) {
			struct timespec ts =
				psc_timespec(b->params->test_bye_delay);

			nanosleep(&ts, NULL);
		}
		if (!rc)
			rc = s.ops->finish(&s);
	}
	if (rc)
		snprintf(err, len, "bootstrap (%s) failed: %s",
			 s.ops ? s.ops->name : b->spec, s.err);
	if (s.ops)
		s.ops->close(&s);
	return rc;
}
