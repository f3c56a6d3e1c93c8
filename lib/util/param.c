/*
 * The parameter table: defaults, parsing from the environment, printing
 * for ps_comm_info -p, and the text and hash of the settings that every
 * rank must share.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/param.h"
#include "util/util.h"

const struct psc_param_desc psc_param_table[] = {
#define PSC_PARAM(name, field, type, ctype, def, agree, help)                  \
	{name, type, def, agree, help, offsetof(struct psc_params, field)},
#include "util/params.def"
#undef PSC_PARAM
};
const size_t psc_param_count = PSC_ARRAY_SIZE(psc_param_table);

uint64_t psc_fnv1a(uint64_t h, const void *data, size_t len)
{
	const uint8_t *p = data;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

int psc_param_parse_int(const char *s, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end != '\0' || v < INT_MIN || v > INT_MAX)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

int psc_param_parse_size(const char *s, size_t *out)
{
	unsigned long long v, mult = 1;
	char *end;

	/* strtoull would skip blanks and accept a sign: digits only. */
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': mult = 1ULL << 10; break;
	case 'm': case 'M': mult = 1ULL << 20; break;
	case 'g': case 'G': mult = 1ULL << 30; break;
	default: break;
	}
	/* A unit may be spelt K, KB or KiB; nothing else may follow. */
	if (mult > 1) {
		end++;
		if (end[0] == 'i' && end[1] == 'B')
			end += 2;
		else if (end[0] == 'B')
			end++;
	}
	if (*end != '\0' || (v && mult > SIZE_MAX / v))
		return -EINVAL;
	*out = (size_t)(v * mult);
	return 0;
}

/* A finite number from lo to hi, or -1 when auto; anything else -EINVAL. */
static int parse_number(const char *s, double lo, double hi, bool autov,
			double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end != '\0' || !isfinite(v) ||
	    ((v < lo || v > hi) && !(autov && v == -1)))
		return -EINVAL;
	*out = v;
	return 0;
}

int psc_param_parse_double(const char *s, double *out)
{
	/* -1 is the one negative value: "automatic". */
	return parse_number(s, 0, PSC_PARAM_DOUBLE_MAX, true, out);
}

int psc_param_parse_seconds(const char *s, double *out)
{
	return parse_number(s, 0, PSC_PARAM_SECONDS_MAX, false, out);
}

int psc_param_parse_port(const char *s, const char **end, unsigned *out)
{
	unsigned long v;
	char *e;

	/* strtoul would skip blanks and accept a sign: digits only. */
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &e, 10);
	if (errno || v > 65535)
		return -EINVAL;
	*end = e;
	*out = (unsigned)v;
	return 0;
}

int psc_param_parse_port_range(const char *s, unsigned *lo, unsigned *hi)
{
	const char *end;
	unsigned l, h;

	if (psc_param_parse_port(s, &end, &l) != 0 || *end != '-' ||
	    psc_param_parse_port(end + 1, &end, &h) != 0 || *end != '\0' ||
	    l == 0 || l > h)
		return -EINVAL;
	*lo = l;
	*hi = h;
	return 0;
}

/* Parse text into the field described by d. */
static int param_set(struct psc_params *p, const struct psc_param_desc *d,
		     const char *text)
{
	void *field = (char *)p + d->offset;

	switch (d->type) {
	case PSC_PARAM_INT:
		return psc_param_parse_int(text, field);
	case PSC_PARAM_SIZE:
		return psc_param_parse_size(text, field);
	case PSC_PARAM_DOUBLE:
		return psc_param_parse_double(text, field);
	case PSC_PARAM_SECONDS:
		return psc_param_parse_seconds(text, field);
	case PSC_PARAM_STR:
		*(const char **)field = text;
		return 0;
	}
	return -EINVAL;
}

/*
 * The words of the string parameters that take one of a few, by field.
 * The algorithm names are lib/coll/coll.c's, which checks that its
 * tables name the same (psc_coll_check_names, tests/unit/check_sched.c).
 */
#define WORDS(field, ...)                                                      \
	{offsetof(struct psc_params, field),                                   \
	 (const char *const[]){"auto", __VA_ARGS__, NULL}}
static const struct {
	size_t offset;
	const char *const *words;
} choices[] = {
	WORDS(barrier_algo, "dissemination", "hier"),
	WORDS(bcast_algo, "binomial", "scatter_ring", "hier"),
	WORDS(reduce_algo, "binomial", "rs_gather", "hier"),
	WORDS(allreduce_algo, "rd", "rabenseifner", "ring", "hier"),
	WORDS(allgather_algo, "ring", "rd", "hier"),
	WORDS(reduce_scatter_algo, "ring", "hier"),
};
#undef WORDS

const char *const *psc_param_choices(const struct psc_param_desc *d)
{
	for (size_t i = 0; i < PSC_ARRAY_SIZE(choices); i++)
		if (choices[i].offset == d->offset)
			return choices[i].words;
	return NULL;
}

/* Whether text is one of d's words (any text when d has none). */
static bool param_allows(const struct psc_param_desc *d, const char *text)
{
	const char *const *w = psc_param_choices(d);

	if (!w)
		return true;
	for (; *w; w++)
		if (strcmp(*w, text) == 0)
			return true;
	return false;
}

/* "NAME="text" is not one of: a, b, c" into err. */
static void choices_error(const struct psc_param_desc *d, const char *text,
			  char *err, size_t len)
{
	size_t used = 0;

	err[0] = '\0';
	PSC_APPEND(err, len, used, "%s=\"%s\" is not one of:", d->name, text);
	for (const char *const *w = psc_param_choices(d); *w; w++)
		PSC_APPEND(err, len, used, "%s %s", w == psc_param_choices(d)
							   ? "" : ",", *w);
}

/* What a valid value of type t looks like, for error messages. */
static const char *type_words(enum psc_param_type t)
{
	switch (t) {
	case PSC_PARAM_INT:
		return "integer";
	case PSC_PARAM_SIZE:
		return "size (e.g. 4096, 64K, 1M)";
	case PSC_PARAM_DOUBLE:
		return "number (-1 for automatic, or 0 to 1000000)";
	case PSC_PARAM_SECONDS:
		return "number of seconds (0 to 1000000)";
	case PSC_PARAM_STR:
		break;
	}
	return "value";
}

/*
 * Limits where 0 would mean "fail at once", and values that would fail
 * only later, at the first listen: refuse them, saying why.
 */
static int check_values(const struct psc_params *p, char *err, size_t len)
{
	unsigned lo, hi;

	if (p->timeout <= 0) {
		snprintf(err, len, "PS_COMM_TIMEOUT=%g: the bootstrap needs a "
			 "positive number of seconds to wait for the other "
			 "ranks (default 120; dead ranks are detected sooner "
			 "anyway)", p->timeout);
		return -EINVAL;
	}
	if (p->peer_timeout <= 0) {
		snprintf(err, len, "PS_COMM_PEER_TIMEOUT=%g: a peer needs a "
			 "positive number of seconds of silence before it "
			 "counts as dead (default 30)", p->peer_timeout);
		return -EINVAL;
	}
	/* -1 (the default) leaves them to the launcher's variables. */
	if (p->rank < -1) {
		snprintf(err, len, "PS_COMM_RANK=%d: a rank is 0 or more",
			 p->rank);
		return -EINVAL;
	}
	if (p->size == 0 || p->size < -1) {
		snprintf(err, len, "PS_COMM_SIZE=%d: a job has at least one "
			 "rank", p->size);
		return -EINVAL;
	}
	if (p->unauth_max < 1) {
		snprintf(err, len, "PS_COMM_UNAUTH_MAX=%d: at least one "
			 "connection must be able to authenticate (default 64)",
			 p->unauth_max);
		return -EINVAL;
	}
	if (*p->port_range &&
	    psc_param_parse_port_range(p->port_range, &lo, &hi) != 0) {
		snprintf(err, len, "PS_COMM_PORT_RANGE=\"%s\" is not lo-hi with "
			 "1 <= lo <= hi <= 65535 (e.g. 50000-50100)",
			 p->port_range);
		return -EINVAL;
	}
	if (p->watchdog != 0 && p->watchdog != 1) {
		snprintf(err, len, "PS_COMM_WATCHDOG=%d is not 0 or 1",
			 p->watchdog);
		return -EINVAL;
	}
	return 0;
}

/*
 * Key texts read from files, kept for the life of the process (params
 * point into them); the same text is stored once.
 */
struct key_text {
	struct key_text *next;
	char text[];
};
static struct key_text *key_texts;
static pthread_mutex_t key_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *key_keep(const char *text)
{
	struct key_text *k;
	size_t n = strlen(text);

	pthread_mutex_lock(&key_lock);
	for (k = key_texts; k; k = k->next)
		if (strcmp(k->text, text) == 0)
			break;
	if (!k && (k = malloc(sizeof(*k) + n + 1)) != NULL) {
		memcpy(k->text, text, n + 1);
		k->next = key_texts;
		key_texts = k;
	}
	pthread_mutex_unlock(&key_lock);
	return k ? k->text : NULL;
}

/*
 * PS_COMM_JOB_KEY_FILE: a regular file of this user's that nobody else
 * may read or write; one line (a final newline is dropped).
 */
static int key_file_read(const char *path, const char **out, char *err,
			 size_t len)
{
	char buf[PSC_PARAM_KEY_MAX + 2];
	struct stat st;
	ssize_t n;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY), rc = 0;

	if (fd < 0) {
		snprintf(err, len, "PS_COMM_JOB_KEY_FILE=%s cannot be opened: "
			 "%s", path, strerror(errno));
		return -EINVAL;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, len, "PS_COMM_JOB_KEY_FILE=%s is not a regular "
			 "file", path);
		rc = -EINVAL;
	} else if (st.st_uid != geteuid()) {
		snprintf(err, len, "PS_COMM_JOB_KEY_FILE=%s belongs to uid %u, "
			 "not to this user (uid %u): refusing a key others "
			 "may have written", path, (unsigned)st.st_uid,
			 (unsigned)geteuid());
		rc = -EINVAL;
	} else if (st.st_mode & 077) {
		snprintf(err, len, "PS_COMM_JOB_KEY_FILE=%s is open to its "
			 "group or others (mode %04o): a key must be readable "
			 "by its owner only; run chmod 600 %s", path,
			 (unsigned)(st.st_mode & 07777), path);
		rc = -EINVAL;
	}
	while (rc == 0 && got < sizeof(buf) &&
	       (n = read(fd, buf + got, sizeof(buf) - got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(err, len, "PS_COMM_JOB_KEY_FILE=%s: %s", path,
				 strerror(errno));
			rc = -EINVAL;
			break;
		}
		got += (size_t)n;
	}
	close(fd);
	if (rc == 0 && got && buf[got - 1] == '\n')
		got--;
	if (rc == 0 && got && buf[got - 1] == '\r')
		got--;
	if (rc == 0 && got > PSC_PARAM_KEY_MAX) {
		snprintf(err, len, "PS_COMM_JOB_KEY_FILE=%s holds more than %d "
			 "bytes: a key is one line", path, PSC_PARAM_KEY_MAX);
		rc = -EINVAL;
	} else if (rc == 0 && (got == 0 || memchr(buf, '\0', got) ||
			       memchr(buf, '\n', got))) {
		snprintf(err, len, "PS_COMM_JOB_KEY_FILE=%s %s", path,
			 got ? "holds more than one line (or a NUL byte)"
			     : "is empty");
		rc = -EINVAL;
	}
	if (rc == 0) {
		buf[got] = '\0';
		*out = key_keep(buf);
		if (!*out) {
			snprintf(err, len, "out of memory");
			rc = -ENOMEM;
		}
	}
	explicit_bzero(buf, sizeof(buf));
	return rc;
}

int psc_params_load(struct psc_params *p, char *err, size_t len)
{
	int rc;

	memset(p, 0, sizeof(*p));
	for (size_t i = 0; i < psc_param_count; i++) {
		const struct psc_param_desc *d = &psc_param_table[i];
		const char *env = getenv(d->name);

		if (param_set(p, d, d->def) != 0) {
			snprintf(err, len, "internal: bad default for %s",
				 d->name);
			return -EINVAL;
		}
		if (env && *env && param_set(p, d, env) != 0) {
			snprintf(err, len, "%s=\"%s\" is not a valid %s",
				 d->name, env, type_words(d->type));
			return -EINVAL;
		}
		if (env && *env && !param_allows(d, env)) {
			choices_error(d, env, err, len);
			return -EINVAL;
		}
	}
	if (*p->job_key_file) {
		if (*p->job_key) {
			snprintf(err, len, "PS_COMM_JOB_KEY and "
				 "PS_COMM_JOB_KEY_FILE are both set: set one");
			return -EINVAL;
		}
		rc = key_file_read(p->job_key_file, &p->job_key, err, len);
		if (rc)
			return rc;
	}
	if (strlen(p->job_key) > PSC_PARAM_KEY_MAX) {
		snprintf(err, len, "PS_COMM_JOB_KEY is longer than %d bytes",
			 PSC_PARAM_KEY_MAX);
		return -EINVAL;
	}
	return check_values(p, err, len);
}

void psc_param_format(const struct psc_params *p,
		      const struct psc_param_desc *d, char *buf, size_t len)
{
	const void *field = (const char *)p + d->offset;

	switch (d->type) {
	case PSC_PARAM_INT:
		snprintf(buf, len, "%d", *(const int *)field);
		break;
	case PSC_PARAM_SIZE:
		snprintf(buf, len, "%zu", *(const size_t *)field);
		break;
	case PSC_PARAM_DOUBLE:
	case PSC_PARAM_SECONDS:
		snprintf(buf, len, "%g", *(const double *)field);
		break;
	case PSC_PARAM_STR:
		/* The job key is never printed, by any caller. */
		if (d->offset == offsetof(struct psc_params, job_key))
			snprintf(buf, len, "%s",
				 **(const char *const *)field ? "(hidden)" : "");
		else
			snprintf(buf, len, "%s", *(const char *const *)field);
		break;
	}
}

void psc_params_agree_text(const struct psc_params *p, char *buf,
			   size_t len)
{
	size_t used = 0;
	char val[256];

	buf[0] = '\0';
	for (size_t i = 0; i < psc_param_count; i++) {
		const struct psc_param_desc *d = &psc_param_table[i];

		if (!d->agree)
			continue;
		psc_param_format(p, d, val, sizeof(val));
		/*
		 * The job key is a secret: not even a plain hash of it goes
		 * out. The handshake compares keys, and the caller hashes
		 * this text with a keyed hash.
		 */
		if (strcmp(d->name, "PS_COMM_JOB_KEY") == 0)
			snprintf(val, sizeof(val), "(hidden)");
		PSC_APPEND(buf, len, used, "%s=%s;", d->name, val);
	}
}

int psc_wait_policy(const char *mode, int ranks, int cpus, bool *poll,
		    char *err, size_t len)
{
	if (strcmp(mode, "fd") == 0) {
		*poll = false;
	} else if (strcmp(mode, "poll") == 0) {
		*poll = true;
	} else if (strcmp(mode, "auto") == 0) {
		*poll = cpus > 0 && ranks > 0 && ranks <= cpus;
	} else {
		snprintf(err, len, "PS_COMM_WAIT: '%s' is not fd, poll or "
			 "auto", mode);
		return -EINVAL;
	}
	return 0;
}
