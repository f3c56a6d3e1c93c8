/*
 * Logging. One process-wide sink (stderr or PS_COMM_LOG_FILE with %h/%p
 * expanded) and level (PS_COMM_LOG_LEVEL), configured once. Every line
 * names the host, pid and, where known, the rank, and is written with a
 * single write(2) so lines from threads and ranks do not interleave.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "util/log.h"
#include "util/util.h"

static const char *const level_names[] = {"error", "warn", "info", "debug",
					  "trace"};
static int log_level = PSC_LOG_WARN;
static int log_fd = STDERR_FILENO;
static char log_host[64] = "?";
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

int psc_log_level_parse(const char *name)
{
	for (size_t i = 0; i < PSC_ARRAY_SIZE(level_names); i++)
		if (strcasecmp(name, level_names[i]) == 0)
			return (int)i;
	if (strcasecmp(name, "warning") == 0)
		return PSC_LOG_WARN;
	return -1;
}

void psc_log_path_expand(const char *pattern, char *out, size_t len)
{
	size_t o = 0;

	for (const char *s = pattern; *s && o + 1 < len; s++) {
		int n = 0;

		if (s[0] == '%' && s[1] == 'h')
			n = snprintf(out + o, len - o, "%s", log_host);
		else if (s[0] == '%' && s[1] == 'p')
			n = snprintf(out + o, len - o, "%ld", (long)getpid());
		else {
			out[o++] = *s;
			continue;
		}
		o += (size_t)n < len - o ? (size_t)n : len - o - 1;
		s++;
	}
	out[o] = '\0';
}

static void log_setup_once(void)
{
	const char *lvl = getenv("PS_COMM_LOG_LEVEL");
	const char *file = getenv("PS_COMM_LOG_FILE");

	if (gethostname(log_host, sizeof(log_host)) != 0)
		strcpy(log_host, "?");
	log_host[sizeof(log_host) - 1] = '\0';
	if (lvl && *lvl) {
		int l = psc_log_level_parse(lvl);

		if (l < 0)
			psc_log(PSC_LOG_WARN, -1,
				"PS_COMM_LOG_LEVEL=\"%s\" is unknown (use "
				"error, warn, info, debug or trace); using warn",
				lvl);
		else
			log_level = l;
	}
	if (file && *file) {
		char path[4096];
		int fd;

		psc_log_path_expand(file, path, sizeof(path));
		fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
			  0644);
		if (fd < 0)
			psc_log(PSC_LOG_WARN, -1,
				"cannot open PS_COMM_LOG_FILE %s: %s; logging "
				"to stderr", path, strerror(errno));
		else
			log_fd = fd;
	}
}

void psc_log_setup(void)
{
	pthread_once(&log_once, log_setup_once);
}

bool psc_log_enabled(int level)
{
	return level <= log_level;
}

void psc_log(int level, int rank, const char *fmt, ...)
{
	char line[2048];
	int n, errsave = errno;
	va_list ap;

	if (level > log_level)
		return;
	if (rank >= 0)
		n = snprintf(line, sizeof(line), "pscomm[%s:%ld] rank %d %s: ",
			     log_host, (long)getpid(), rank,
			     level_names[level]);
	else
		n = snprintf(line, sizeof(line), "pscomm[%s:%ld] %s: ",
			     log_host, (long)getpid(), level_names[level]);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(log_fd, line, (size_t)n) < 0) {
		/* Nowhere left to report a failed log write. */
	}
	errno = errsave;
}
