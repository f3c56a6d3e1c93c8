/*
 * Unit tests for the tcp store's wire header (lib/net/wire.c): encoding
 * and decoding round-trip, the byte-exact big-endian layout of a known
 * header, rejection with a message of a bad magic, a wrong version, an
 * unknown type or an oversized length; and for the job key's handshake
 * and record MACs (lib/net/auth.c): a wrong key, a replayed proof, a
 * tampered challenge, another binding or purpose, and a record moved to
 * another rank, name, rendezvous or key all fail.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "boot/store.h"
#include "net/auth.h"
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
		0x00, 0x02,		/* version */
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

	ck_assert_int_eq(PSC_WIRE_TYPE_MAX, 10);
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

static struct psc_auth_key key_of(const char *text)
{
	struct psc_auth_key k;
	char err[128];

	ck_assert_int_eq(psc_auth_key_load(&k, text, err, sizeof(err)), 0);
	return k;
}

/* One handshake; returns what the client's and the server's checks say. */
static void handshake(const struct psc_auth_key *kc,
		      const struct psc_auth_key *ks, int pc, int ps,
		      const char *bc, const char *bs, int *client_rc,
		      int *server_rc)
{
	struct psc_auth_hs c, s;
	uint8_t hello[PSC_AUTH_HELLO_LEN], chal[PSC_AUTH_CHAL_LEN];
	uint8_t proof[PSC_AUTH_PROOF_LEN], session[PSC_AUTH_SESSION_LEN];
	uint8_t got[PSC_AUTH_SESSION_LEN];

	memset(session, 0x5a, sizeof(session));
	psc_auth_client_hello(&c, kc, pc, bc, strlen(bc), hello);
	ck_assert_int_eq(psc_auth_server_chal(&s, ks, ps, bs, strlen(bs),
					      hello, sizeof(hello), session,
					      chal),
			 0);
	*client_rc = psc_auth_client_proof(&c, chal, sizeof(chal), proof, got);
	if (*client_rc == 0)
		ck_assert_mem_eq(got, session, sizeof(got));
	/* A client that skips its check still cannot pass the server's. */
	if (*client_rc != 0)
		memset(proof, 0, sizeof(proof));
	*server_rc = psc_auth_server_check(&s, proof, sizeof(proof));
}

START_TEST(test_auth_ok)
{
	struct psc_auth_key k = key_of("alpha"), none = key_of("");
	int crc, src;

	ck_assert(k.keyed);
	ck_assert(!none.keyed);
	handshake(&k, &k, PSC_AUTH_STORE, PSC_AUTH_STORE, "r1", "r1", &crc,
		  &src);
	ck_assert_int_eq(crc, 0);
	ck_assert_int_eq(src, 0);
	/* No key: the same steps with a key anyone has. */
	handshake(&none, &none, PSC_AUTH_LIVE, PSC_AUTH_LIVE, "", "", &crc,
		  &src);
	ck_assert_int_eq(crc, 0);
	ck_assert_int_eq(src, 0);
	/* Loading again gives the same sub-keys (the cache). */
	ck_assert_mem_eq(key_of("alpha").hs, k.hs, sizeof(k.hs));
}
END_TEST

/*
 * Keys pscomm makes (psc_auth_make_key) are fresh each time and work
 * like any other; text that only resembles one (an uppercase digit, a
 * digit short) is still a key of its own, taken the costly way.
 */
START_TEST(test_made_key)
{
	char a[PSC_AUTH_MADE_LEN + 1], b[PSC_AUTH_MADE_LEN + 1];
	char up[PSC_AUTH_MADE_LEN + 1], shorter[PSC_AUTH_MADE_LEN];
	struct psc_auth_key ka, kb, ku, ks;
	size_t n = strlen(PSC_AUTH_MADE_PREFIX);
	int crc, src;

	psc_auth_make_key(a);
	psc_auth_make_key(b);
	ck_assert_uint_eq(strlen(a), PSC_AUTH_MADE_LEN);
	ck_assert(strncmp(a, PSC_AUTH_MADE_PREFIX, n) == 0);
	ck_assert_str_ne(a, b);
	ka = key_of(a);
	kb = key_of(b);
	ck_assert(ka.keyed && kb.keyed);
	handshake(&ka, &ka, PSC_AUTH_STORE, PSC_AUTH_STORE, "", "", &crc,
		  &src);
	ck_assert_int_eq(crc, 0);
	ck_assert_int_eq(src, 0);
	handshake(&ka, &kb, PSC_AUTH_STORE, PSC_AUTH_STORE, "", "", &crc,
		  &src);
	ck_assert_int_eq(crc, -EACCES);
	/* Not the form: keys of their own, each different. */
	memcpy(up, a, sizeof(up));
	for (size_t i = n; i < PSC_AUTH_MADE_LEN; i++)
		if (up[i] >= 'a' && up[i] <= 'f')
			up[i] = (char)(up[i] - 'a' + 'A');
	memcpy(shorter, a, sizeof(shorter) - 1);
	shorter[sizeof(shorter) - 1] = '\0';
	ku = key_of(up);
	ks = key_of(shorter);
	ck_assert(ku.keyed && ks.keyed);
	ck_assert(memcmp(ku.hs, ka.hs, sizeof(ka.hs)) != 0 ||
		  strcmp(up, a) == 0);
	ck_assert(memcmp(ks.hs, ka.hs, sizeof(ka.hs)) != 0);
	ck_assert(memcmp(ks.hs, ku.hs, sizeof(ka.hs)) != 0);
}
END_TEST

START_TEST(test_auth_refusals)
{
	struct psc_auth_key a = key_of("alpha"), b = key_of("alphb");
	struct psc_auth_key none = key_of("");
	int crc, src;

	handshake(&a, &b, PSC_AUTH_STORE, PSC_AUTH_STORE, "", "", &crc, &src);
	ck_assert_int_eq(crc, -EACCES);
	ck_assert_int_eq(src, -EACCES);
	handshake(&none, &a, PSC_AUTH_STORE, PSC_AUTH_STORE, "", "", &crc,
		  &src);
	ck_assert_int_eq(crc, -EACCES);
	ck_assert_int_eq(src, -EACCES);
	/* The claim (rank, size, generation) is bound. */
	handshake(&a, &a, PSC_AUTH_STORE, PSC_AUTH_STORE, "rank 1", "rank 2",
		  &crc, &src);
	ck_assert_int_eq(crc, -EACCES);
	/* A MAC for one listener is no good for another. */
	handshake(&a, &a, PSC_AUTH_VAN, PSC_AUTH_LIVE, "", "", &crc, &src);
	ck_assert_int_eq(crc, -EACCES);
	ck_assert_int_eq(src, -EACCES);
}
END_TEST

/* A captured HELLO and PROOF, replayed to a new server, fail. */
START_TEST(test_auth_replay)
{
	struct psc_auth_key k = key_of("alpha");
	struct psc_auth_hs c, s1, s2;
	uint8_t hello[PSC_AUTH_HELLO_LEN], chal[PSC_AUTH_CHAL_LEN];
	uint8_t chal2[PSC_AUTH_CHAL_LEN], proof[PSC_AUTH_PROOF_LEN];

	psc_auth_client_hello(&c, &k, PSC_AUTH_STORE, NULL, 0, hello);
	psc_auth_server_chal(&s1, &k, PSC_AUTH_STORE, NULL, 0, hello,
			     sizeof(hello), NULL, chal);
	ck_assert_int_eq(psc_auth_client_proof(&c, chal, sizeof(chal), proof,
					       NULL),
			 0);
	ck_assert_int_eq(psc_auth_server_check(&s1, proof, sizeof(proof)), 0);
	psc_auth_server_chal(&s2, &k, PSC_AUTH_STORE, NULL, 0, hello,
			     sizeof(hello), NULL, chal2);
	ck_assert_mem_ne(chal, chal2, PSC_AUTH_NONCE_LEN);
	ck_assert_int_eq(psc_auth_server_check(&s2, proof, sizeof(proof)),
			 -EACCES);
}
END_TEST

/* Any flipped bit of the challenge, and wrong lengths, are refused. */
START_TEST(test_auth_tamper)
{
	struct psc_auth_key k = key_of("alpha");
	struct psc_auth_hs c, s;
	uint8_t hello[PSC_AUTH_HELLO_LEN], chal[PSC_AUTH_CHAL_LEN];
	uint8_t proof[PSC_AUTH_PROOF_LEN];

	psc_auth_client_hello(&c, &k, PSC_AUTH_STORE, NULL, 0, hello);
	ck_assert_int_eq(psc_auth_server_chal(&s, &k, PSC_AUTH_STORE, NULL, 0,
					      hello, sizeof(hello) - 1, NULL,
					      chal),
			 -EPROTO);
	psc_auth_server_chal(&s, &k, PSC_AUTH_STORE, NULL, 0, hello,
			     sizeof(hello), NULL, chal);
	chal[_i] ^= 0x10;
	ck_assert_int_eq(psc_auth_client_proof(&c, chal, sizeof(chal), proof,
					       NULL),
			 -EACCES);
	chal[_i] ^= 0x10;
	ck_assert_int_eq(psc_auth_client_proof(&c, chal, sizeof(chal) - 1,
					       proof, NULL),
			 -EPROTO);
	ck_assert_int_eq(psc_auth_client_proof(&c, chal, sizeof(chal), proof,
					       NULL),
			 0);
	ck_assert_int_eq(psc_auth_server_check(&s, proof, sizeof(proof) - 1),
			 -EPROTO);
	proof[_i % PSC_AUTH_PROOF_LEN] ^= 1;
	ck_assert_int_eq(psc_auth_server_check(&s, proof, sizeof(proof)),
			 -EACCES);
}
END_TEST

START_TEST(test_record_mac)
{
	struct psc_auth_key a = key_of("alpha"), b = key_of("beta");
	uint8_t s1[PSC_AUTH_SESSION_LEN] = {1}, s2[PSC_AUTH_SESSION_LEN] = {2};
	uint8_t mac[PSC_AUTH_MAC_LEN];
	char val[] = "v=0.1.0\nprov=tcp\n\naddr";

	psc_auth_record_mac(&a, s1, 1, "rec", val, sizeof(val), mac);
	ck_assert_int_eq(psc_auth_record_check(&a, s1, 1, "rec", val,
					       sizeof(val), mac),
			 0);
	/* Another rendezvous (job or communicator), key, rank or name. */
	ck_assert_int_eq(psc_auth_record_check(&a, s2, 1, "rec", val,
					       sizeof(val), mac),
			 -EACCES);
	ck_assert_int_eq(psc_auth_record_check(&b, s1, 1, "rec", val,
					       sizeof(val), mac),
			 -EACCES);
	ck_assert_int_eq(psc_auth_record_check(&a, s1, 2, "rec", val,
					       sizeof(val), mac),
			 -EACCES);
	ck_assert_int_eq(psc_auth_record_check(&a, s1, 1, "rek", val,
					       sizeof(val), mac),
			 -EACCES);
	/* A changed or cut value. */
	ck_assert_int_eq(psc_auth_record_check(&a, s1, 1, "rec", val,
					       sizeof(val) - 1, mac),
			 -EACCES);
	val[3] ^= 1;
	ck_assert_int_eq(psc_auth_record_check(&a, s1, 1, "rec", val,
					       sizeof(val), mac),
			 -EACCES);
}
END_TEST

/* The settings hash is keyed: the same text hashes apart under two keys. */
START_TEST(test_settings_hash)
{
	struct psc_auth_key a = key_of("alpha"), b = key_of("beta");
	const char *t = "PS_COMM_JOB_KEY=(hidden);PS_COMM_DETERMINISTIC=0;";

	ck_assert_uint_eq(psc_auth_settings_hash(&a, t),
			  psc_auth_settings_hash(&a, t));
	ck_assert_uint_ne(psc_auth_settings_hash(&a, t),
			  psc_auth_settings_hash(&b, t));
	ck_assert_uint_ne(psc_auth_settings_hash(&a, t),
			  psc_auth_settings_hash(&a, "PS_COMM_DETERMINISTIC=1;"));
	ck_assert_uint_ne(psc_auth_settings_hash(&a, t),
			  psc_fnv1a(PSC_FNV_INIT, t, strlen(t)));
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

	tc = tcase_create("auth");
	tcase_add_test(tc, test_auth_ok);
	tcase_add_test(tc, test_auth_refusals);
	tcase_add_test(tc, test_made_key);
	tcase_add_test(tc, test_auth_replay);
	tcase_add_loop_test(tc, test_auth_tamper, 0, PSC_AUTH_CHAL_LEN);
	tcase_add_test(tc, test_record_mac);
	tcase_add_test(tc, test_settings_hash);
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
