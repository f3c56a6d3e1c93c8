/*
 * The parameter table: defaults, parsing from the environment, printing
 * for ps_comm_info -p, and the text and hash of the settings that every
 * rank must share.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "provider.h"
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

int psc_param_parse_double(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	/* -1 is the one negative value: "automatic". */
	if (errno || end == s || *end != '\0' || !isfinite(v) ||
	    (v < 0 && v != -1))
		return -EINVAL;
	*out = v;
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
	case PSC_PARAM_STR:
		*(const char **)field = text;
		return 0;
	}
	return -EINVAL;
}

/* Limits where 0 would mean "fail at once": refuse them, saying why. */
static int check_positive(const struct psc_params *p, char *err, size_t len)
{
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
	if (p->watchdog != 0 && p->watchdog != 1) {
		snprintf(err, len, "PS_COMM_WATCHDOG=%d is not 0 or 1",
			 p->watchdog);
		return -EINVAL;
	}
	return 0;
}

int psc_params_load(struct psc_params *p, char *err, size_t len)
{
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
				 d->name, env,
				 d->type == PSC_PARAM_INT ? "integer"
				 : d->type == PSC_PARAM_SIZE
					 ? "size (e.g. 4096, 64K, 1M)"
					 : "non-negative number of seconds");
			return -EINVAL;
		}
	}
	return check_positive(p, err, len);
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
		snprintf(buf, len, "%g", *(const double *)field);
		break;
	case PSC_PARAM_STR:
		snprintf(buf, len, "%s", *(const char *const *)field);
		break;
	}
}

uint64_t psc_params_agree_text(const struct psc_params *p, char *buf,
			       size_t len)
{
	const char *const *agree_env;
	size_t used = 0, n;
	char val[256];

	buf[0] = '\0';
	for (size_t i = 0; i < psc_param_count; i++) {
		const struct psc_param_desc *d = &psc_param_table[i];

		if (!d->agree)
			continue;
		psc_param_format(p, d, val, sizeof(val));
		/* The job key is a secret: agree on its hash, not its text. */
		if (strcmp(d->name, "PS_COMM_JOB_KEY") == 0)
			snprintf(val, sizeof(val), "#%016llx",
				 (unsigned long long)psc_fnv1a(
					 PSC_FNV_INIT, p->job_key,
					 strlen(p->job_key)));
		PSC_APPEND(buf, len, used, "%s=%s;", d->name, val);
	}
	agree_env = psc_provider_agree_env(&n);
	for (size_t i = 0; i < n; i++) {
		const char *v = getenv(agree_env[i]);

		PSC_APPEND(buf, len, used, "%s=%s;", agree_env[i], v ? v : "");
	}
	return psc_fnv1a(PSC_FNV_INIT, buf, strlen(buf));
}
