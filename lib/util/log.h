/*
 * Logging: one process-wide sink configured from PS_COMM_LOG_LEVEL and
 * PS_COMM_LOG_FILE. Every call is thread-safe.
 */
#ifndef PSC_LOG_H
#define PSC_LOG_H

#include <stdbool.h>

enum psc_log_level {
	PSC_LOG_ERROR,
	PSC_LOG_WARN,
	PSC_LOG_INFO,
	PSC_LOG_DEBUG,
	PSC_LOG_TRACE,
};

/*
 * Configure the process-wide log sink from PS_COMM_LOG_LEVEL and
 * PS_COMM_LOG_FILE. Idempotent and thread-safe; called by ps_comm_init.
 * A bad level or an unopenable file falls back to warn/stderr with a
 * warning rather than failing.
 */
void psc_log_setup(void);

/* Whether a message at this level would be printed. */
bool psc_log_enabled(int level);

/*
 * Print one line "pscomm[host:pid] rank R LEVEL: message". rank < 0 omits
 * the rank. Thread-safe: a line is written with one write(2).
 */
void psc_log(int level, int rank, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Parse a level name; returns -1 if unknown. */
int psc_log_level_parse(const char *name);

/*
 * PS_COMM_LOG_FILE's pattern into out (len > 0 bytes, always
 * NUL-terminated, truncated when too long): %h becomes the host name
 * (once psc_log_setup ran), %p the pid, anything else stays as it is.
 */
void psc_log_path_expand(const char *pattern, char *out, size_t len);

#endif /* PSC_LOG_H */
