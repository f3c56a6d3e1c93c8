/*
 * Unit tests for the tcp store's wire header (lib/store_tcp.c): encoding
 * and decoding round-trip, the byte-exact big-endian layout of a known
 * header, rejection with a message of a bad magic, a wrong version, an
 * unknown type or an oversized length, and a job id that depends on the
 * job key.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "boot/store.h"
#include "net/wire.h"
#include "util/param.h"
#include "util/util.h"

static struct psc_wire_hdr sample(void)
{
	struct psc_wire_hdr h = {
		.magic = PSC_WIRE_MAGIC,
		.version = PSC_WIRE_VERSION,
		.type = PSC_WIRE_SET,
		.job = 0x0102030405060708ULL,
		.rank = -2,
		.size = 0x0a0b0c0d,
		.len = 0x00012345,
	};

	return h;
}

START_TEST(test_layout)
{
	static const uint8_t want[PSC_WIRE_HDR_LEN] = {
		0x50, 0x53, 0x43, 0x53, /* magic "PSCS" */
		0x00, 0x01,		/* version */
		0x00, 0x02,		/* type SET */
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, /* job */
		0xff, 0xff, 0xff, 0xfe, /* rank -2 */
		0x0a, 0x0b, 0x0c, 0x0d, /* size */
		0x00, 0x01, 0x23, 0x45, /* len */
	};
	struct psc_wire_hdr h = sample();
	uint8_t buf[PSC_WIRE_HDR_LEN + 4];

	ck_assert_int_eq(PSC_WIRE_HDR_LEN, 28);
	memset(buf, 0xee, sizeof(buf));
	psc_wire_encode(&h, buf);
	ck_assert_mem_eq(buf, want, sizeof(want));
	/* Nothing is written past the header. */
	for (size_t i = PSC_WIRE_HDR_LEN; i < sizeof(buf); i++)
		ck_assert_uint_eq(buf[i], 0xee);
}
END_TEST

/* Round-trip every valid type with varied field values. */
START_TEST(test_roundtrip)
{
	struct psc_wire_hdr h = sample(), out;
	uint8_t buf[PSC_WIRE_HDR_LEN];
	char err[128] = "";

	h.type = (uint16_t)_i;
	h.job = 0xfedcba9876543210ULL ^ (uint64_t)_i;
	h.rank = _i % 2 ? -1 : 1000 * _i;
	h.size = 1 << 20;
	h.len = _i == PSC_WIRE_OK ? 0 : PSC_WIRE_MAX_PAYLOAD;
	psc_wire_encode(&h, buf);
	memset(&out, 0, sizeof(out));
	ck_assert_int_eq(psc_wire_decode(buf, &out, err, sizeof(err)), 0);
	ck_assert_uint_eq(out.magic, PSC_WIRE_MAGIC);
	ck_assert_uint_eq(out.version, PSC_WIRE_VERSION);
	ck_assert_uint_eq(out.type, h.type);
	ck_assert_uint_eq(out.job, h.job);
	ck_assert_int_eq(out.rank, h.rank);
	ck_assert_int_eq(out.size, h.size);
	ck_assert_uint_eq(out.len, h.len);
}
END_TEST

/* Encode h and expect decode to fail with -EPROTO and text in err. */
static void expect_reject(const struct psc_wire_hdr *h, const char *what)
{
	struct psc_wire_hdr out;
	uint8_t buf[PSC_WIRE_HDR_LEN];
	char err[128] = "";

	psc_wire_encode(h, buf);
	ck_assert_int_eq(psc_wire_decode(buf, &out, err, sizeof(err)),
			 -EPROTO);
	ck_assert_msg(strstr(err, what) != NULL, "message \"%s\" lacks \"%s\"",
		      err, what);
}

START_TEST(test_bad_magic)
{
	struct psc_wire_hdr h = sample();

	h.magic = 0x47455420; /* "GET ": someone speaking HTTP */
	expect_reject(&h, "magic");
	h.magic = PSC_WIRE_MAGIC ^ 1;
	expect_reject(&h, "magic");
}
END_TEST

START_TEST(test_bad_version)
{
	struct psc_wire_hdr h = sample();

	h.version = PSC_WIRE_VERSION + 1;
	expect_reject(&h, "version");
	h.version = 0;
	expect_reject(&h, "version");
}
END_TEST

static const uint16_t bad_types[] = {0, PSC_WIRE_TYPE_MAX,
				     PSC_WIRE_TYPE_MAX + 1, 0xffff};

START_TEST(test_bad_type)
{
	struct psc_wire_hdr h = sample();

	ck_assert_int_eq(PSC_WIRE_TYPE_MAX, 8);
	h.type = bad_types[_i];
	expect_reject(&h, "type");
}
END_TEST

START_TEST(test_oversized)
{
	struct psc_wire_hdr h = sample();

	h.len = PSC_WIRE_MAX_PAYLOAD + 1;
	expect_reject(&h, "oversized");
	h.len = UINT32_MAX;
	expect_reject(&h, "oversized");
}
END_TEST

static uint64_t job_of(const char *key)
{
	struct psc_params p;

	memset(&p, 0, sizeof(p));
	p.job_key = key;
	return psc_store_job_id(&p);
}

START_TEST(test_job_id)
{
	ck_assert_uint_eq(job_of("alpha"), job_of("alpha"));
	ck_assert_uint_ne(job_of("alpha"), job_of("beta"));
	ck_assert_uint_ne(job_of("alpha"), job_of("alphb"));
	ck_assert_uint_ne(job_of(""), job_of("alpha"));
	ck_assert_uint_ne(job_of(""), job_of(" "));
}
END_TEST

static Suite *wire_suite(void)
{
	Suite *s = suite_create("wire");
	TCase *tc = tcase_create("codec");

	tcase_add_test(tc, test_layout);
	tcase_add_loop_test(tc, test_roundtrip, PSC_WIRE_HELLO,
			    PSC_WIRE_TYPE_MAX);
	tcase_add_test(tc, test_bad_magic);
	tcase_add_test(tc, test_bad_version);
	tcase_add_loop_test(tc, test_bad_type, 0,
			    (int)PSC_ARRAY_SIZE(bad_types));
	tcase_add_test(tc, test_oversized);
	suite_add_tcase(s, tc);

	tc = tcase_create("job");
	tcase_add_test(tc, test_job_id);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(wire_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
