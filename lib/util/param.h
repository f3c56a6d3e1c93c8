/*
 * The parameter table (params.def): every PS_COMM_* setting with its
 * type, default and help, loaded once per communicator from the
 * environment.
 */
#ifndef PSC_PARAM_H
#define PSC_PARAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * PSC_PARAM_SECONDS is a duration: a number of seconds from 0 to
 * PSC_PARAM_SECONDS_MAX. PSC_PARAM_DOUBLE is -1 ("automatic") or a
 * number from 0 to PSC_PARAM_DOUBLE_MAX in its own unit.
 */
enum psc_param_type { PSC_PARAM_INT, PSC_PARAM_SIZE, PSC_PARAM_DOUBLE,
		      PSC_PARAM_STR, PSC_PARAM_SECONDS };

/*
 * The longest duration a parameter takes: about 11.6 days. Deadlines are
 * psc_now() plus a duration, and some become int milliseconds (poll) or
 * time_t seconds on the way: bounded here, none of them overflows.
 */
#define PSC_PARAM_SECONDS_MAX 1e6
/* The largest PSC_PARAM_DOUBLE (PS_COMM_SPIN_US: one second). */
#define PSC_PARAM_DOUBLE_MAX 1e6

/* Every parameter, from params.def, as a member of struct psc_params. */
struct psc_params {
#define PSC_PARAM(name, field, type, ctype, def, agree, help) ctype field;
#include "util/params.def"
#undef PSC_PARAM
};

/* Metadata of one parameter, for ps_comm_info -p and the settings hash. */
struct psc_param_desc {
	const char *name;    /* environment variable */
	enum psc_param_type type;
	const char *def;     /* default, as text */
	bool agree;	     /* must be identical on every rank */
	const char *help;
	size_t offset;	     /* into struct psc_params */
};

/* The table, in params.def order, and its length. */
extern const struct psc_param_desc psc_param_table[];
extern const size_t psc_param_count;

/* The longest job key accepted, from PS_COMM_JOB_KEY or its file. */
#define PSC_PARAM_KEY_MAX 1024

/*
 * Fill p with defaults, then values from the environment. Returns 0, or
 * -EINVAL with a message naming the variable in err (len bytes). String
 * fields point into the environment or into static defaults; with
 * PS_COMM_JOB_KEY_FILE, job_key points to the file's text (kept for the
 * life of the process; never printed). Messages never quote the key.
 */
int psc_params_load(struct psc_params *p, char *err, size_t len);

/*
 * Parse one value. Sizes accept K/M/G suffixes (binary); doubles accept
 * -1 for "automatic" or a number from 0 to PSC_PARAM_DOUBLE_MAX; seconds
 * a number from 0 to PSC_PARAM_SECONDS_MAX. Returns 0 or -EINVAL, with
 * *out untouched.
 */
int psc_param_parse_int(const char *s, int *out);
int psc_param_parse_size(const char *s, size_t *out);
int psc_param_parse_double(const char *s, double *out);
int psc_param_parse_seconds(const char *s, double *out);

/*
 * The words string parameter d must be one of (PS_COMM_<COLL>_ALGO), as
 * a NULL-terminated list, or NULL when any text goes. psc_params_load
 * refuses any other value, naming the variable and the words.
 */
const char *const *psc_param_choices(const struct psc_param_desc *d);

/*
 * A port number: decimal digits only (no blank or sign), at most 65535.
 * *end points past the digits. Returns 0 or -EINVAL.
 */
int psc_param_parse_port(const char *s, const char **end, unsigned *out);

/*
 * PS_COMM_PORT_RANGE's "lo-hi": two port numbers, 1 <= lo <= hi, and
 * nothing else. Returns 0, or -EINVAL with lo and hi untouched.
 */
int psc_param_parse_port_range(const char *s, unsigned *lo, unsigned *hi);

/* Print the current value of parameter d in p into buf ("(hidden)" for a set job key). */
void psc_param_format(const struct psc_params *p,
		      const struct psc_param_desc *d, char *buf, size_t len);

/*
 * Write "NAME=value;..." for every parameter that must agree across ranks
 * into buf. The job key appears as "(hidden)": the handshake compares
 * keys, and the text is hashed with a keyed hash (net/auth.h) by the
 * caller. The provider families' variables join it above util
 * (lib/comm appends psc_provider_agree_append's text).
 */
void psc_params_agree_text(const struct psc_params *p, char *buf,
			   size_t len);

/*
 * PS_COMM_WAIT's value mode for a job of ranks ranks, on a process that
 * may use cpus cores (0: unknown): *poll is true when waits should poll
 * instead of blocking on the provider's wait object. "auto" polls only
 * when every rank of the job can have a core of this host's (ranks <=
 * cpus), so a caller that counts no ranks (0) gets the wait object.
 * Returns 0, or -EINVAL with words in err for a value other than fd,
 * poll and auto.
 */
int psc_wait_policy(const char *mode, int ranks, int cpus, bool *poll,
		    char *err, size_t len);

#endif /* PSC_PARAM_H */
