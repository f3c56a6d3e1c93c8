/*
 * The examples' argument parsing (args.h): the walk over argv, the value
 * helpers, and the one place that words and prints a usage error. A value
 * is accepted only if all of it parses, so "12x" or "" is never read as
 * 12 or 0, and a number too large for its type is refused rather than
 * wrapped.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

void ex_args_init(struct ex_args *a, const char *prog, void (*usage)(FILE *),
		  int argc, char **argv)
{
	*a = (struct ex_args){prog, usage, argc, argv, 1, NULL, 0};
}

void ex_usage_error(const struct ex_args *a, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", a->prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\ntry '%s -h'\n", a->prog);
	exit(2);
}

const char *ex_args_next(struct ex_args *a)
{
	const char *w;

	if (a->next >= a->argc)
		return a->cur = NULL;
	w = a->argv[a->next++];
	if (!a->end_of_opts && strcmp(w, "--") == 0) {
		a->end_of_opts = 1;
		return ex_args_next(a);
	}
	if (a->end_of_opts || w[0] != '-' || w[1] == '\0')
		ex_usage_error(a, "%s: unexpected argument (%s takes only "
			       "options)", w[0] ? w : "''", a->prog);
	if (strcmp(w, "-h") == 0 || strcmp(w, "--help") == 0) {
		a->usage(stdout);
		exit(0);
	}
	return a->cur = w;
}

int ex_flag(const struct ex_args *a, const char *opt)
{
	return strcmp(a->cur, opt) == 0;
}

const char *ex_value(struct ex_args *a, const char *opt)
{
	size_t n = strlen(opt);

	if (strcmp(a->cur, opt) == 0) {
		if (a->next >= a->argc)
			ex_usage_error(a, "%s needs a value", opt);
		return a->argv[a->next++];
	}
	/* Only "-x" options take a joined value: "--csv" is not "--" "csv". */
	if (n == 2 && opt[1] != '-' && strncmp(a->cur, opt, 2) == 0)
		return a->cur + 2;
	return NULL;
}

void ex_unknown(const struct ex_args *a)
{
	ex_usage_error(a, "%s: unknown option", a->cur);
}

/* "-i 5" for an option, "NAME=5" for a variable; '' shows an empty value. */
static const char *label(const char *name, const char *val, char *buf,
			 size_t len)
{
	snprintf(buf, len, "%s%s%s", name, name[0] == '-' ? " " : "=",
		 val[0] ? val : "''");
	return buf;
}

/* What an integer from lo to hi is, in words. */
static const char *range_text(int lo, int hi, char *buf, size_t len)
{
	if (hi == INT_MAX && lo == 1)
		return "a positive integer";
	if (hi == INT_MAX && lo == 0)
		return "a non-negative integer";
	if (hi == INT_MAX)
		snprintf(buf, len, "an integer of at least %d", lo);
	else
		snprintf(buf, len, "an integer from %d to %d", lo, hi);
	return buf;
}

int ex_int(const struct ex_args *a, const char *name, const char *val,
	   int lo, int hi, const char *what)
{
	char lb[256], rb[64];
	const char *d = val + (val[0] == '-' || val[0] == '+');
	char *end;
	long long v;

	errno = 0;
	v = isdigit((unsigned char)*d) ? strtoll(val, &end, 10) : 0;
	if (!isdigit((unsigned char)*d) || *end) {
		ex_usage_error(a, "%s: %s must be %s",
			       label(name, val, lb, sizeof(lb)), what,
			       range_text(lo, hi, rb, sizeof(rb)));
	}
	if ((errno == ERANGE || v > hi) && val[0] != '-' && hi == INT_MAX)
		ex_usage_error(a, "%s: too large for %s (at most %d)",
			       label(name, val, lb, sizeof(lb)), what, hi);
	if (errno == ERANGE || v < lo || v > hi)
		ex_usage_error(a, "%s: %s must be %s",
			       label(name, val, lb, sizeof(lb)), what,
			       range_text(lo, hi, rb, sizeof(rb)));
	return (int)v;
}

size_t ex_size(const struct ex_args *a, const char *name, const char *val)
{
	char lb[256];
	char *end;
	unsigned long long v;
	int shift = 0;

	if (!isdigit((unsigned char)val[0]))
		goto not_a_size;
	errno = 0;
	v = strtoull(val, &end, 10);
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (*end)
		goto not_a_size;
	if (errno == ERANGE || v > (unsigned long long)SIZE_MAX >> shift)
		ex_usage_error(a, "%s: size too large (at most %zu bytes)",
			       label(name, val, lb, sizeof(lb)), SIZE_MAX);
	return (size_t)v << shift;
not_a_size:
	ex_usage_error(a, "%s: not a size (bytes, with an optional K, M or G "
		       "suffix)", label(name, val, lb, sizeof(lb)));
}

int ex_choice(const struct ex_args *a, const char *name, const char *val,
	      const char *const *names, int n, const char *what)
{
	char lb[256], list[512] = "";
	size_t off = 0;

	for (int i = 0; i < n; i++)
		if (strcmp(val, names[i]) == 0)
			return i;
	for (int i = 0; i < n && off < sizeof(list); i++)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s",
					i ? ", " : "", names[i]);
	ex_usage_error(a, "%s: unknown %s (%s)",
		       label(name, val, lb, sizeof(lb)), what, list);
}

const char *ex_size_text(size_t size, char *buf, size_t len)
{
	static const char units[] = "GMK";
	int shift = 30;

	for (const char *u = units; *u; u++, shift -= 10)
		if (size && size % ((size_t)1 << shift) == 0) {
			snprintf(buf, len, "%zu%c", size >> shift, *u);
			return buf;
		}
	snprintf(buf, len, "%zu", size);
	return buf;
}

void ex_size_order(const struct ex_args *a, size_t min, const char *min_arg,
		   size_t max, const char *max_arg)
{
	char mb[32], xb[32];

	if (min <= max)
		return;
	if (max_arg)
		ex_usage_error(a, "-M %s is smaller than -m %s%s", max_arg,
			       min_arg ? min_arg
				       : ex_size_text(min, mb, sizeof(mb)),
			       min_arg ? "" : " (the default)");
	ex_usage_error(a, "-m %s is larger than -M %s (the default)", min_arg,
		       ex_size_text(max, xb, sizeof(xb)));
}
