/*
 * Parameter and environment parsing: the PS_COMM_* table
 * (lib/util/param.c) with its integer, size, double and PORT_RANGE
 * parsers, the launchers' rank and size variables (psc_env_rank_size),
 * host:port (PS_COMM_ROOT), PS_COMM_IFNAME's NCCL_SOCKET_IFNAME syntax,
 * FI_PROVIDER filters, PS_COMM_LOG_LEVEL and the PS_COMM_LOG_FILE
 * pattern. The input is lines of text. Every line goes to each
 * single-value parser; each pair of lines is a (spec, name) pair for the
 * interface and provider filters; a line NAME=VALUE whose NAME is one of
 * the variables pscomm reads is set in the environment before the whole
 * table is loaded (tests/fuzz/dict/param.dict lists the names). Nothing here
 * touches the network: PMIX_RANK, which would ask a PMIx server, is
 * never set.
 */
#include <errno.h>
#include <math.h>

#include "boot/boot.h"
#include "fuzz.h"
#include "net/net.h"
#include "provider.h"
#include "util/log.h"
#include "util/param.h"

static const char *const launcher_vars[] = {
	"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK",
	"PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "RANK", "WORLD_SIZE",
};

/* Whether name (len bytes) is a variable this harness may set. */
static const char *known_var(const char *name, size_t len)
{
	const char *const *agree;
	size_t n;

	for (size_t i = 0; i < psc_param_count; i++)
		if (strlen(psc_param_table[i].name) == len &&
		    memcmp(psc_param_table[i].name, name, len) == 0)
			return psc_param_table[i].name;
	for (size_t i = 0; i < sizeof(launcher_vars) / sizeof(*launcher_vars);
	     i++)
		if (strlen(launcher_vars[i]) == len &&
		    memcmp(launcher_vars[i], name, len) == 0)
			return launcher_vars[i];
	agree = psc_provider_agree_env(&n);
	for (size_t i = 0; i < n; i++)
		if (strlen(agree[i]) == len && memcmp(agree[i], name, len) == 0)
			return agree[i];
	return NULL;
}

static void clear_env(void)
{
	const char *const *agree;
	size_t n;

	for (size_t i = 0; i < psc_param_count; i++)
		unsetenv(psc_param_table[i].name);
	for (size_t i = 0; i < sizeof(launcher_vars) / sizeof(*launcher_vars);
	     i++)
		unsetenv(launcher_vars[i]);
	agree = psc_provider_agree_env(&n);
	for (size_t i = 0; i < n; i++)
		unsetenv(agree[i]);
	unsetenv("PMIX_RANK");
}

/* Every single-value parser on s, with what each promises. */
static void one_value(const char *s)
{
	struct psc_hostport hp;
	unsigned lo = 7, hi = 7;
	char out[48];
	size_t sz;
	double d;
	int i;

	(void)psc_param_parse_int(s, &i);
	if (psc_param_parse_size(s, &sz) == 0)
		PSC_FUZZ_ASSERT(s[0] >= '0' && s[0] <= '9');
	if (psc_param_parse_double(s, &d) == 0)
		PSC_FUZZ_ASSERT(isfinite(d) && (d == -1 || (d >= 0 &&
				d <= PSC_PARAM_DOUBLE_MAX)));
	if (psc_param_parse_seconds(s, &d) == 0)
		PSC_FUZZ_ASSERT(isfinite(d) && d >= 0 &&
				d <= PSC_PARAM_SECONDS_MAX);
	if (psc_param_parse_port_range(s, &lo, &hi) == 0)
		PSC_FUZZ_ASSERT(lo >= 1 && lo <= hi && hi <= 65535);
	else
		PSC_FUZZ_ASSERT(lo == 7 && hi == 7);
	if (psc_hostport_parse(s, &hp) == 0) {
		PSC_FUZZ_ASSERT(hp.host[0]);
		PSC_FUZZ_ASSERT(strlen(hp.host) < sizeof(hp.host));
		PSC_FUZZ_ASSERT(strlen(hp.host) <= strlen(s));
	}
	i = psc_log_level_parse(s);
	PSC_FUZZ_ASSERT(i >= -1 && i <= PSC_LOG_TRACE);
	/* Every room from 1 byte up: never past it, always terminated. */
	sz = strlen(s) % sizeof(out) + 1;
	memset(out, 'x', sizeof(out));
	psc_log_path_expand(s, out, sz);
	PSC_FUZZ_ASSERT(strlen(out) < sz);
}

/* Set NAME=VALUE in the environment when NAME is a known variable. */
static void maybe_set(const char *line)
{
	const char *eq = strchr(line, '=');
	const char *name = eq ? known_var(line, (size_t)(eq - line)) : NULL;

	if (name)
		setenv(name, eq + 1, 1);
}

static void load_all(void)
{
	struct psc_params p;
	char err[512], text[256];
	int rank = -2, size = -2;

	if (psc_params_load(&p, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < psc_param_count; i++) {
			if (psc_param_table[i].type != PSC_PARAM_STR)
				continue;
			PSC_FUZZ_ASSERT(*(const char *const *)((const char *)&p +
					 psc_param_table[i].offset));
		}
		PSC_FUZZ_ASSERT(p.timeout > 0 && p.peer_timeout > 0);
		PSC_FUZZ_ASSERT(p.op_timeout >= 0 &&
				p.peer_timeout <= PSC_PARAM_SECONDS_MAX);
		/* A room too small for the text must still be safe. */
		psc_params_agree_text(&p, text, sizeof(text));
		PSC_FUZZ_ASSERT(strlen(text) < sizeof(text));
	} else {
		PSC_FUZZ_ASSERT(err[0]);
	}
	if (psc_env_rank_size(&rank, &size, err, sizeof(err)) == 0 &&
	    rank != -2)
		PSC_FUZZ_ASSERT(rank >= -1 && size >= 1 && rank < size &&
				(rank >= 0 || size > 1));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = psc_fuzz_str(data, size), *save = NULL, *prev = NULL;

	clear_env();
	for (char *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		one_value(line);
		if (prev) {
			(void)psc_ifname_match(prev, line);
			(void)psc_provider_filter_hides(prev, line);
		}
		maybe_set(line);
		prev = line;
	}
	load_all();
	clear_env();
	free(text);
	return 0;
}
