/*
 * Unit tests for the parameter table (lib/util/param.c, lib/util/params.def): the
 * int, size and double parsers with their suffixes and rejections,
 * loading defaults and environment values (an invalid value fails with
 * the variable named), printing values, and the agree text whose hash
 * ranks compare at bootstrap: it holds exactly the agree=true parameters
 * and the rxm variables, the job key only as a hash, and its hash moves
 * with agreed settings only.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "net/auth.h"
#include "provider.h"
#include "util/param.h"
#include "util/util.h"

/* libfabric variables that the settings text must include. */
static const char *const rxm_vars[] = {
	"FI_OFI_RXM_BUFFER_SIZE",
	"FI_OFI_RXM_EAGER_LIMIT",
	"FI_OFI_RXM_SAR_LIMIT",
};

/* Start every test from an environment without pscomm settings. */
static void clear_env(void)
{
	for (size_t i = 0; i < psc_param_count; i++)
		unsetenv(psc_param_table[i].name);
	for (size_t i = 0; i < PSC_ARRAY_SIZE(rxm_vars); i++)
		unsetenv(rxm_vars[i]);
}

/* ------------------------------------------------------------ parsing */

static const struct {
	const char *text;
	size_t value;
} sizes_ok[] = {
	{"0", 0},
	{"1", 1},
	{"4096", 4096},
	{"1k", 1024},
	{"64K", 64 * 1024},
	{"1m", 1024 * 1024},
	{"3M", 3 * 1024 * 1024},
	{"2G", (size_t)2 << 30},
	{"16g", (size_t)16 << 30},
	{"1KiB", 1024},
	{"18446744073709551615", SIZE_MAX},
	{"17179869183G", (size_t)17179869183 << 30},
};

START_TEST(test_parse_size_ok)
{
	size_t v = 12345;

	ck_assert_msg(psc_param_parse_size(sizes_ok[_i].text, &v) == 0,
		      "\"%s\" rejected", sizes_ok[_i].text);
	ck_assert_msg(v == sizes_ok[_i].value, "\"%s\" gave %zu, not %zu",
		      sizes_ok[_i].text, v, sizes_ok[_i].value);
}
END_TEST

static const char *const sizes_bad[] = {
	"",	 "-1",	"-0",  " -1", "-1K", "abc",   "12abc", "K",
	"1T",	 "1KK", "1 K", "1.5M", "0x10", "4i",  "4Bi",   "1K ",
	"18446744073709551616", /* 2^64 */
	"17179869184G",		/* 2^64 */
	"16777216T",
	"99999999999999999999999",
};

START_TEST(test_parse_size_bad)
{
	size_t v = 777;

	ck_assert_msg(psc_param_parse_size(sizes_bad[_i], &v) == -EINVAL,
		      "\"%s\" accepted as %zu", sizes_bad[_i], v);
	ck_assert_uint_eq(v, 777);
}
END_TEST

static const struct {
	const char *text;
	int value;
} ints_ok[] = {
	{"0", 0},	     {"-1", -1},	       {"42", 42},
	{"2147483647", 2147483647}, {"-2147483648", -2147483647 - 1},
};

START_TEST(test_parse_int_ok)
{
	int v = 12345;

	ck_assert_int_eq(psc_param_parse_int(ints_ok[_i].text, &v), 0);
	ck_assert_int_eq(v, ints_ok[_i].value);
}
END_TEST

static const char *const ints_bad[] = {
	"", "abc", "1x", "1.0", "1K", "2147483648", "-2147483649",
	"99999999999999999999",
};

START_TEST(test_parse_int_bad)
{
	int v = 777;

	ck_assert_msg(psc_param_parse_int(ints_bad[_i], &v) == -EINVAL,
		      "\"%s\" accepted as %d", ints_bad[_i], v);
	ck_assert_int_eq(v, 777);
}
END_TEST

static const struct {
	const char *text;
	double value;
} doubles_ok[] = {
	{"0", 0.0}, {"120", 120.0}, {"2.5", 2.5}, {"0.001", 0.001},
	{"1e3", 1000.0}, {"-1", -1.0}, /* the "automatic" value */
};

START_TEST(test_parse_double_ok)
{
	double v = -1;

	ck_assert_int_eq(psc_param_parse_double(doubles_ok[_i].text, &v), 0);
	ck_assert_double_eq(v, doubles_ok[_i].value);
}
END_TEST

static const char *const doubles_bad[] = {
	"", "abc", "-2", "-0.5", "1s", "nan", "inf", "-inf", "1e999", "2.5x",
	"1000000.5", "1e20",
};

START_TEST(test_parse_double_bad)
{
	double v = 777;

	ck_assert_msg(psc_param_parse_double(doubles_bad[_i], &v) == -EINVAL,
		      "\"%s\" accepted as %g", doubles_bad[_i], v);
	ck_assert_double_eq(v, 777);
}
END_TEST

static const struct {
	const char *text;
	double value;
} seconds_ok[] = {
	{"0", 0.0}, {"120", 120.0}, {"0.25", 0.25}, {"1e6", 1e6},
	{"1000000", 1e6},
};

START_TEST(test_parse_seconds_ok)
{
	double v = -5;

	ck_assert_int_eq(psc_param_parse_seconds(seconds_ok[_i].text, &v), 0);
	ck_assert_double_eq(v, seconds_ok[_i].value);
}
END_TEST

/* No "automatic" -1, and nothing a deadline could overflow on. */
static const char *const seconds_bad[] = {
	"", "abc", "-1", "-0.5", "1s", "nan", "inf", "1e999", "1000000.001",
	"99999999999999999999", "1e20",
};

START_TEST(test_parse_seconds_bad)
{
	double v = 777;

	ck_assert_msg(psc_param_parse_seconds(seconds_bad[_i], &v) == -EINVAL,
		      "\"%s\" accepted as %g", seconds_bad[_i], v);
	ck_assert_double_eq(v, 777);
}
END_TEST

/* ------------------------------------------------------------ loading */

static const struct psc_param_desc *find_desc(const char *name)
{
	for (size_t i = 0; i < psc_param_count; i++)
		if (strcmp(psc_param_table[i].name, name) == 0)
			return &psc_param_table[i];
	ck_abort_msg("parameter %s is not in the table", name);
	return NULL;
}

START_TEST(test_load_defaults)
{
	struct psc_params p;
	char err[256] = "";

	ck_assert_int_eq(psc_params_load(&p, err, sizeof(err)), 0);
	ck_assert_int_eq(p.rank, -1);
	ck_assert_int_eq(p.size, -1);
	ck_assert_str_eq(p.root, "");
	ck_assert_str_eq(p.bootstrap, "auto");
	ck_assert_double_eq(p.timeout, 120.0);
	ck_assert_double_eq(p.op_timeout, 0.0);
	ck_assert_str_eq(p.ifname, "");
	ck_assert_str_eq(p.port_range, "");
	ck_assert_str_eq(p.job_key, "");
	ck_assert_int_eq(p.deterministic, 0);
	ck_assert_str_eq(p.log_level, "warn");
	ck_assert_uint_eq(p.max_msg_size, 0);
	ck_assert_double_eq(p.spin_us, -1.0);
}
END_TEST

/* Every default in the table parses and prints back as itself. */
START_TEST(test_defaults_print_back)
{
	const struct psc_param_desc *d = &psc_param_table[_i];
	struct psc_params p;
	char err[256], buf[256];

	ck_assert_int_eq(psc_params_load(&p, err, sizeof(err)), 0);
	psc_param_format(&p, d, buf, sizeof(buf));
	ck_assert_msg(strcmp(buf, d->def) == 0, "%s: default \"%s\" prints "
		      "as \"%s\"", d->name, d->def, buf);
	ck_assert_ptr_nonnull(d->help);
	ck_assert_int_gt(strlen(d->help), 0);
}
END_TEST

START_TEST(test_load_env)
{
	struct psc_params p;
	char err[256] = "";

	setenv("PS_COMM_RANK", "3", 1);
	setenv("PS_COMM_SIZE", "8", 1);
	setenv("PS_COMM_TIMEOUT", "2.5", 1);
	setenv("PS_COMM_IFNAME", "^docker,lo", 1);
	setenv("PS_COMM_MAX_MSG_SIZE", "64K", 1);
	setenv("PS_COMM_DETERMINISTIC", "1", 1);
	/* Empty means unset: the default applies. */
	setenv("PS_COMM_BOOTSTRAP", "", 1);
	ck_assert_int_eq(psc_params_load(&p, err, sizeof(err)), 0);
	ck_assert_int_eq(p.rank, 3);
	ck_assert_int_eq(p.size, 8);
	ck_assert_double_eq(p.timeout, 2.5);
	ck_assert_str_eq(p.ifname, "^docker,lo");
	ck_assert_uint_eq(p.max_msg_size, 65536);
	ck_assert_int_eq(p.deterministic, 1);
	ck_assert_str_eq(p.bootstrap, "auto");
	ck_assert_double_eq(p.op_timeout, 0.0);
}
END_TEST

static const struct {
	const char *text;
	unsigned lo, hi;
} ranges_ok[] = {
	{"1-1", 1, 1}, {"50000-50100", 50000, 50100}, {"1-65535", 1, 65535},
	{"0080-81", 80, 81},
};

START_TEST(test_parse_range_ok)
{
	unsigned lo = 0, hi = 0;

	ck_assert_int_eq(psc_param_parse_port_range(ranges_ok[_i].text, &lo,
						    &hi), 0);
	ck_assert_uint_eq(lo, ranges_ok[_i].lo);
	ck_assert_uint_eq(hi, ranges_ok[_i].hi);
}
END_TEST

/* sscanf("%u-%u") took most of these: blanks, signs, trailing words. */
static const char *const ranges_bad[] = {
	"", "5000", "5000-", "-5000", "0-10", "10-9", "1-65536",
	"5000-5100x", " 5000-5100", "5000 -5100", "5000- 5100", "+1-2",
	"1-+2", "-1-5", "5000-5100-5200", "1--2", "99999999999-1", "a-b",
	"4294967297-4294967298",
};

START_TEST(test_parse_range_bad)
{
	unsigned lo = 7, hi = 7;

	ck_assert_msg(psc_param_parse_port_range(ranges_bad[_i], &lo, &hi) ==
			      -EINVAL,
		      "\"%s\" accepted as %u-%u", ranges_bad[_i], lo, hi);
	ck_assert_uint_eq(lo, 7);
	ck_assert_uint_eq(hi, 7);
}
END_TEST

static const struct {
	const char *name;
	const char *value;
} env_bad[] = {
	{"PS_COMM_RANK", "two"},
	{"PS_COMM_SIZE", "4.0"},
	{"PS_COMM_TIMEOUT", "abc"},
	{"PS_COMM_OP_TIMEOUT", "-5"},
	{"PS_COMM_MAX_MSG_SIZE", "-1"},
	{"PS_COMM_MAX_MSG_SIZE", "12Q"},
	{"PS_COMM_DETERMINISTIC", "yes"},
	{"PS_COMM_SPIN_US", "nan"},
	/* Zero would mean "fail at once": refused with what to set. */
	{"PS_COMM_TIMEOUT", "0"},
	{"PS_COMM_PEER_TIMEOUT", "0"},
	{"PS_COMM_WATCHDOG", "2"},
	/* Refused at init, not at the first listen. */
	{"PS_COMM_PORT_RANGE", "5000-4000"},
	{"PS_COMM_PORT_RANGE", "5000-5100 "},
	/* A rank or a size that cannot be (-1 is the default: unset). */
	{"PS_COMM_RANK", "-2"},
	{"PS_COMM_SIZE", "0"},
	{"PS_COMM_SIZE", "-3"},
	/* Durations: no -1 but where it means automatic, and bounded. */
	{"PS_COMM_OP_TIMEOUT", "-1"},
	{"PS_COMM_TIMEOUT", "-1"},
	{"PS_COMM_PEER_TIMEOUT", "-1"},
	{"PS_COMM_PEER_TIMEOUT", "99999999999999999999"},
	{"PS_COMM_TIMEOUT", "1000001"},
	{"PS_COMM_OP_TIMEOUT", "1e7"},
	{"PS_COMM_SPIN_US", "1e9"},
	/* Algorithms: refused at init, not at the first collective. */
	{"PS_COMM_BARRIER_ALGO", "abc"},
	{"PS_COMM_BCAST_ALGO", "abc"},
	{"PS_COMM_REDUCE_ALGO", "abc"},
	{"PS_COMM_ALLREDUCE_ALGO", "abc"},
	{"PS_COMM_ALLGATHER_ALGO", "abc"},
	{"PS_COMM_REDUCE_SCATTER_ALGO", "abc"},
	{"PS_COMM_ALLREDUCE_ALGO", "Ring"},
};

START_TEST(test_load_invalid)
{
	struct psc_params p;
	char err[256] = "";

	setenv(env_bad[_i].name, env_bad[_i].value, 1);
	ck_assert_int_eq(psc_params_load(&p, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, env_bad[_i].name) != NULL,
		      "message \"%s\" does not name %s", err,
		      env_bad[_i].name);
	ck_assert_msg(strstr(err, env_bad[_i].value) != NULL,
		      "message \"%s\" does not quote \"%s\"", err,
		      env_bad[_i].value);
}
END_TEST

START_TEST(test_format)
{
	struct psc_params p;
	char err[256], buf[64];

	setenv("PS_COMM_TIMEOUT", "2.5", 1);
	setenv("PS_COMM_MAX_MSG_SIZE", "1M", 1);
	setenv("PS_COMM_RANK", "7", 1);
	setenv("PS_COMM_ROOT", "[::1]:5000", 1);
	ck_assert_int_eq(psc_params_load(&p, err, sizeof(err)), 0);
	psc_param_format(&p, find_desc("PS_COMM_TIMEOUT"), buf, sizeof(buf));
	ck_assert_str_eq(buf, "2.5");
	psc_param_format(&p, find_desc("PS_COMM_MAX_MSG_SIZE"), buf,
			 sizeof(buf));
	ck_assert_str_eq(buf, "1048576");
	psc_param_format(&p, find_desc("PS_COMM_RANK"), buf, sizeof(buf));
	ck_assert_str_eq(buf, "7");
	psc_param_format(&p, find_desc("PS_COMM_ROOT"), buf, sizeof(buf));
	ck_assert_str_eq(buf, "[::1]:5000");
	/* A short buffer truncates but stays terminated. */
	psc_param_format(&p, find_desc("PS_COMM_ROOT"), buf, 4);
	ck_assert_str_eq(buf, "[::");
}
END_TEST

/* ------------------------------------------------------------- agree */

/* Known FNV-1a 64 vectors. */
START_TEST(test_fnv1a)
{
	ck_assert_uint_eq(psc_fnv1a(PSC_FNV_INIT, "", 0), PSC_FNV_INIT);
	ck_assert_uint_eq(psc_fnv1a(PSC_FNV_INIT, "a", 1),
			  0xaf63dc4c8601ec8cULL);
	ck_assert_uint_eq(psc_fnv1a(PSC_FNV_INIT, "foobar", 6),
			  0x85944171f73967e8ULL);
	/* Continuing equals hashing the concatenation. */
	ck_assert_uint_eq(psc_fnv1a(psc_fnv1a(PSC_FNV_INIT, "foo", 3), "bar",
				    3),
			  0x85944171f73967e8ULL);
}
END_TEST

/* Whether text contains "NAME=" at the start of an entry. */
static bool has_entry(const char *text, const char *name)
{
	char key[128];
	size_t n = (size_t)snprintf(key, sizeof(key), "%s=", name);

	for (const char *p = text; p && *p; p = strchr(p, ';'), p = p ? p + 1
								    : NULL)
		if (strncmp(p, key, n) == 0)
			return true;
	return false;
}

/* The agree text in buf, and its keyed hash as a rank computes it. */
static uint64_t load_agree(char *buf, size_t len)
{
	struct psc_params p;
	struct psc_auth_key k;
	char err[256];

	ck_assert_int_eq(psc_params_load(&p, err, sizeof(err)), 0);
	/* As lib/comm/create.c builds a rank's record. */
	psc_params_agree_text(&p, buf, len);
	psc_provider_agree_append(buf, len);
	ck_assert_int_eq(psc_auth_key_load(&k, p.job_key, err, sizeof(err)),
			 0);
	return psc_auth_settings_hash(&k, buf);
}

START_TEST(test_agree_members)
{
	char buf[2048];
	load_agree(buf, sizeof(buf));
	for (size_t i = 0; i < psc_param_count; i++) {
		const struct psc_param_desc *d = &psc_param_table[i];

		ck_assert_msg(has_entry(buf, d->name) == d->agree,
			      "%s (agree=%d) in \"%s\"", d->name, d->agree,
			      buf);
	}
	for (size_t i = 0; i < PSC_ARRAY_SIZE(rxm_vars); i++)
		ck_assert_msg(has_entry(buf, rxm_vars[i]), "%s missing: \"%s\"",
			      rxm_vars[i], buf);
	ck_assert(has_entry(buf, "PS_COMM_JOB_KEY"));
	ck_assert(has_entry(buf, "PS_COMM_DETERMINISTIC"));
	ck_assert(!has_entry(buf, "PS_COMM_TIMEOUT"));
	ck_assert(!has_entry(buf, "PS_COMM_RANK"));
}
END_TEST

START_TEST(test_agree_values)
{
	char buf[2048];

	setenv("PS_COMM_DETERMINISTIC", "1", 1);
	setenv("FI_OFI_RXM_EAGER_LIMIT", "32768", 1);
	load_agree(buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "PS_COMM_DETERMINISTIC=1;") != NULL, "%s",
		      buf);
	ck_assert_msg(strstr(buf, "FI_OFI_RXM_EAGER_LIMIT=32768;") != NULL,
		      "%s", buf);
	ck_assert_msg(strstr(buf, "FI_OFI_RXM_SAR_LIMIT=;") != NULL, "%s",
		      buf);
	/* The key never shows, not even hashed: the handshake compares it. */
	unsetenv("PS_COMM_JOB_KEY");
	load_agree(buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "PS_COMM_JOB_KEY=(hidden);") != NULL, "%s",
		      buf);
}
END_TEST

START_TEST(test_agree_key_hashed)
{
	const char *key = "s3cr3t-K3y";
	char buf[2048], want[64];

	setenv("PS_COMM_JOB_KEY", key, 1);
	load_agree(buf, sizeof(buf));
	ck_assert_msg(strstr(buf, key) == NULL, "job key in clear: %s", buf);
	ck_assert_msg(strstr(buf, "3cr3t") == NULL, "job key in clear: %s",
		      buf);
	/* No plain hash of it either (an offline search would crack it). */
	snprintf(want, sizeof(want), "%016llx",
		 (unsigned long long)psc_fnv1a(PSC_FNV_INIT, key,
					       strlen(key)));
	ck_assert_msg(strstr(buf, want) == NULL, "FNV of the key in \"%s\"",
		      buf);
	ck_assert_msg(strstr(buf, "PS_COMM_JOB_KEY=(hidden);") != NULL, "%s",
		      buf);
}
END_TEST

/* PS_COMM_JOB_KEY_FILE: read when private, refused otherwise. */
START_TEST(test_key_file)
{
	char path[] = "/tmp/check_param_key.XXXXXX", err[512];
	const char *secret = "file-held-secret";
	struct psc_params p;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, secret, strlen(secret)), strlen(secret));
	ck_assert_int_eq(write(fd, "\n", 1), 1);
	close(fd);
	unsetenv("PS_COMM_JOB_KEY");
	setenv("PS_COMM_JOB_KEY_FILE", path, 1);
	ck_assert_int_eq(chmod(path, 0600), 0);
	ck_assert_int_eq(psc_params_load(&p, err, sizeof(err)), 0);
	ck_assert_str_eq(p.job_key, secret);
	/* No printer shows it. */
	for (size_t i = 0; i < psc_param_count; i++) {
		char val[256];

		psc_param_format(&p, &psc_param_table[i], val, sizeof(val));
		ck_assert_msg(strstr(val, secret) == NULL, "%s shows the key",
			      psc_param_table[i].name);
		if (strcmp(psc_param_table[i].name, "PS_COMM_JOB_KEY") == 0)
			ck_assert_str_eq(val, "(hidden)");
	}
	/* Group- or world-readable: refused, saying how to fix it. */
	ck_assert_int_eq(chmod(path, 0644), 0);
	ck_assert_int_eq(psc_params_load(&p, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "chmod 600") != NULL, "%s", err);
	ck_assert_msg(strstr(err, secret) == NULL, "key in message: %s", err);
	ck_assert_int_eq(chmod(path, 0640), 0);
	ck_assert_int_eq(psc_params_load(&p, err, sizeof(err)), -EINVAL);
	/* Both ways at once: which one was meant? */
	ck_assert_int_eq(chmod(path, 0400), 0);
	setenv("PS_COMM_JOB_KEY", "other", 1);
	ck_assert_int_eq(psc_params_load(&p, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "both") != NULL, "%s", err);
	unsetenv("PS_COMM_JOB_KEY");
	/* Empty, or missing. */
	ck_assert_int_eq(chmod(path, 0600), 0);
	ck_assert_int_eq(truncate(path, 0), 0);
	ck_assert_int_eq(psc_params_load(&p, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "empty") != NULL, "%s", err);
	unlink(path);
	ck_assert_int_eq(psc_params_load(&p, err, sizeof(err)), -EINVAL);
	unsetenv("PS_COMM_JOB_KEY_FILE");
}
END_TEST

/* Changing one variable moves the hash exactly when it must agree. */
static const struct {
	const char *name;
	const char *value;
	bool moves;
} agree_changes[] = {
	{"PS_COMM_JOB_KEY", "other", true},
	{"PS_COMM_DETERMINISTIC", "1", true},
	{"PS_COMM_MAX_MSG_SIZE", "1M", true},
	{"FI_OFI_RXM_BUFFER_SIZE", "16384", true},
	{"FI_OFI_RXM_EAGER_LIMIT", "16384", true},
	{"FI_OFI_RXM_SAR_LIMIT", "131072", true},
	{"PS_COMM_TIMEOUT", "7", false},
	{"PS_COMM_OP_TIMEOUT", "9", false},
	{"PS_COMM_RANK", "5", false},
	{"PS_COMM_SIZE", "6", false},
	{"PS_COMM_IFNAME", "eth0", false},
	{"PS_COMM_LOG_LEVEL", "debug", false},
	{"PS_COMM_SPIN_US", "0", false},
	{"PS_COMM_PORT_RANGE", "5000-5100", false},
};

START_TEST(test_agree_hash_moves)
{
	char buf[2048];
	uint64_t before, after;

	setenv("PS_COMM_JOB_KEY", "base", 1);
	before = load_agree(buf, sizeof(buf));
	setenv(agree_changes[_i].name, agree_changes[_i].value, 1);
	after = load_agree(buf, sizeof(buf));
	ck_assert_msg((before != after) == agree_changes[_i].moves,
		      "%s=%s: hash %s", agree_changes[_i].name,
		      agree_changes[_i].value,
		      before != after ? "changed" : "did not change");
}
END_TEST

static Suite *param_suite(void)
{
	Suite *s = suite_create("param");
	TCase *tc = tcase_create("parse");

	tcase_add_loop_test(tc, test_parse_size_ok, 0,
			    (int)PSC_ARRAY_SIZE(sizes_ok));
	tcase_add_loop_test(tc, test_parse_size_bad, 0,
			    (int)PSC_ARRAY_SIZE(sizes_bad));
	tcase_add_loop_test(tc, test_parse_int_ok, 0,
			    (int)PSC_ARRAY_SIZE(ints_ok));
	tcase_add_loop_test(tc, test_parse_int_bad, 0,
			    (int)PSC_ARRAY_SIZE(ints_bad));
	tcase_add_loop_test(tc, test_parse_double_ok, 0,
			    (int)PSC_ARRAY_SIZE(doubles_ok));
	tcase_add_loop_test(tc, test_parse_double_bad, 0,
			    (int)PSC_ARRAY_SIZE(doubles_bad));
	tcase_add_loop_test(tc, test_parse_seconds_ok, 0,
			    (int)PSC_ARRAY_SIZE(seconds_ok));
	tcase_add_loop_test(tc, test_parse_seconds_bad, 0,
			    (int)PSC_ARRAY_SIZE(seconds_bad));
	tcase_add_loop_test(tc, test_parse_range_ok, 0,
			    (int)PSC_ARRAY_SIZE(ranges_ok));
	tcase_add_loop_test(tc, test_parse_range_bad, 0,
			    (int)PSC_ARRAY_SIZE(ranges_bad));
	suite_add_tcase(s, tc);

	tc = tcase_create("load");
	tcase_add_checked_fixture(tc, clear_env, clear_env);
	tcase_add_test(tc, test_load_defaults);
	tcase_add_loop_test(tc, test_defaults_print_back, 0,
			    (int)psc_param_count);
	tcase_add_test(tc, test_load_env);
	tcase_add_loop_test(tc, test_load_invalid, 0,
			    (int)PSC_ARRAY_SIZE(env_bad));
	tcase_add_test(tc, test_format);
	suite_add_tcase(s, tc);

	tc = tcase_create("agree");
	tcase_add_checked_fixture(tc, clear_env, clear_env);
	tcase_add_test(tc, test_fnv1a);
	tcase_add_test(tc, test_agree_members);
	tcase_add_test(tc, test_agree_values);
	tcase_add_test(tc, test_agree_key_hashed);
	tcase_add_test(tc, test_key_file);
	tcase_add_loop_test(tc, test_agree_hash_moves, 0,
			    (int)PSC_ARRAY_SIZE(agree_changes));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(param_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
