/*
 * Job-key authentication with libsodium (contract in auth.h). No
 * cryptography is written here: Argon2id, crypto_kdf, keyed BLAKE2b,
 * randombytes and sodium_memcmp do all of it.
 */
#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "net/auth.h"
#include "util/util.h"

/* Argon2id's cost per key text: ~25 ms and 16 MiB once per process. */
#define STRETCH_OPS 2
#define STRETCH_MEM (16u << 20)
#define KDF_CONTEXT "pscomm01"

enum { SUB_HS = 1, SUB_REC, SUB_SET, SUB_ID };

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc;

static void sodium_start(void)
{
	init_rc = sodium_init() < 0 ? -ENOSYS : 0;
}

static int ready(void)
{
	pthread_once(&init_once, sodium_start);
	return init_rc;
}

/* Derived keys of the last few texts, by a digest of the text. */
#define CACHE_N 4
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	bool used;
	uint8_t tag[32];
	struct psc_auth_key key;
} cache[CACHE_N];
static unsigned cache_next;

static void derive(struct psc_auth_key *k, const uint8_t *master)
{
	crypto_kdf_derive_from_key(k->hs, sizeof(k->hs), SUB_HS, KDF_CONTEXT,
				   master);
	crypto_kdf_derive_from_key(k->rec, sizeof(k->rec), SUB_REC,
				   KDF_CONTEXT, master);
	crypto_kdf_derive_from_key(k->set, sizeof(k->set), SUB_SET,
				   KDF_CONTEXT, master);
	crypto_kdf_derive_from_key(k->id, sizeof(k->id), SUB_ID, KDF_CONTEXT,
				   master);
}

void psc_auth_make_key(char *out)
{
	uint8_t raw[32];
	size_t n = strlen(PSC_AUTH_MADE_PREFIX);

	psc_auth_random(raw, sizeof(raw));
	snprintf(out, n + 1, "%s", PSC_AUTH_MADE_PREFIX);
	psc_auth_hex(raw, sizeof(raw), out + n);
	sodium_memzero(raw, sizeof(raw));
}

/*
 * Whether text is a key of psc_auth_make_key's form; its 32 random bytes
 * into raw if so. Uppercase digits are not the form.
 */
static bool made_key(const char *text, size_t tlen, uint8_t raw[32])
{
	size_t n = strlen(PSC_AUTH_MADE_PREFIX), got = 0;

	if (tlen != PSC_AUTH_MADE_LEN ||
	    memcmp(text, PSC_AUTH_MADE_PREFIX, n) != 0)
		return false;
	for (size_t i = n; i < tlen; i++)
		if (!((text[i] >= '0' && text[i] <= '9') ||
		      (text[i] >= 'a' && text[i] <= 'f')))
			return false;
	return psc_auth_unhex(text + n, raw, 32, &got) == 0 && got == 32;
}

int psc_auth_key_load(struct psc_auth_key *k, const char *text, char *err,
		      size_t len)
{
	uint8_t raw[32];
	static const uint8_t salt[crypto_pwhash_SALTBYTES] = "pscomm-job-key1";
	uint8_t master[crypto_kdf_KEYBYTES], tag[32];
	size_t tlen = text ? strlen(text) : 0;
	int rc = ready();

	memset(k, 0, sizeof(*k));
	if (rc) {
		snprintf(err, len, "libsodium failed to initialise");
		return rc;
	}
	if (tlen > PSC_AUTH_KEY_TEXT_MAX) {
		snprintf(err, len, "the job key is %zu bytes long, at most %d "
			 "are allowed", tlen, PSC_AUTH_KEY_TEXT_MAX);
		return -EINVAL;
	}
	crypto_generichash(tag, sizeof(tag), (const uint8_t *)(text ? text : ""),
			   tlen, (const uint8_t *)"pscomm-cache", 12);
	pthread_mutex_lock(&cache_lock);
	for (unsigned i = 0; i < CACHE_N; i++)
		if (cache[i].used &&
		    sodium_memcmp(cache[i].tag, tag, sizeof(tag)) == 0) {
			*k = cache[i].key;
			pthread_mutex_unlock(&cache_lock);
			return 0;
		}
	pthread_mutex_unlock(&cache_lock);
	if (tlen == 0) {
		/* No key: a master everyone can compute. */
		crypto_generichash(master, sizeof(master),
				   (const uint8_t *)"pscomm: no job key", 18,
				   NULL, 0);
	} else if (made_key(text, tlen, raw)) {
		/* 256 random bits: nothing to stretch (auth.h). */
		crypto_generichash(master, sizeof(master), raw, sizeof(raw),
				   (const uint8_t *)"pscomm-made-key1", 16);
		sodium_memzero(raw, sizeof(raw));
	} else if (crypto_pwhash(master, sizeof(master), text, tlen, salt,
				 STRETCH_OPS, STRETCH_MEM,
				 crypto_pwhash_ALG_ARGON2ID13) != 0) {
		snprintf(err, len, "deriving the job key's sub-keys: out of "
			 "memory (Argon2id needs %u MiB)", STRETCH_MEM >> 20);
		return -ENOMEM;
	}
	derive(k, master);
	k->keyed = tlen > 0;
	sodium_memzero(master, sizeof(master));
	pthread_mutex_lock(&cache_lock);
	cache[cache_next % CACHE_N].used = true;
	memcpy(cache[cache_next % CACHE_N].tag, tag, sizeof(tag));
	cache[cache_next % CACHE_N].key = *k;
	cache_next++;
	pthread_mutex_unlock(&cache_lock);
	return 0;
}

void psc_auth_random(void *buf, size_t len)
{
	if (ready() == 0)
		randombytes_buf(buf, len);
}

/* MAC_s or MAC_c of a handshake (auth.h). */
static void hs_mac(const struct psc_auth_hs *h, bool server, uint8_t *mac)
{
	const char *label = server ? "pscomm-auth-v1-server"
				   : "pscomm-auth-v1-client";
	crypto_generichash_state st;
	uint8_t pb[2] = {h->purpose, (uint8_t)h->bindlen};

	crypto_generichash_init(&st, h->key.hs, sizeof(h->key.hs),
				PSC_AUTH_MAC_LEN);
	crypto_generichash_update(&st, (const uint8_t *)label, strlen(label));
	crypto_generichash_update(&st, pb, sizeof(pb));
	crypto_generichash_update(&st, h->bind, h->bindlen);
	crypto_generichash_update(&st, h->nc, sizeof(h->nc));
	crypto_generichash_update(&st, h->ns, sizeof(h->ns));
	crypto_generichash_update(&st, h->session, sizeof(h->session));
	crypto_generichash_final(&st, mac, PSC_AUTH_MAC_LEN);
}

static void hs_init(struct psc_auth_hs *h, const struct psc_auth_key *k,
		    enum psc_auth_purpose purpose, const void *bind,
		    size_t bindlen)
{
	memset(h, 0, sizeof(*h));
	h->key = *k;
	h->purpose = (uint8_t)purpose;
	h->bindlen = PSC_MIN(bindlen, (size_t)PSC_AUTH_BIND_MAX);
	if (h->bindlen)
		memcpy(h->bind, bind, h->bindlen);
}

void psc_auth_client_hello(struct psc_auth_hs *h, const struct psc_auth_key *k,
			   enum psc_auth_purpose purpose, const void *bind,
			   size_t bindlen, uint8_t *hello)
{
	hs_init(h, k, purpose, bind, bindlen);
	psc_auth_random(h->nc, sizeof(h->nc));
	memcpy(hello, h->nc, PSC_AUTH_HELLO_LEN);
}

int psc_auth_server_chal(struct psc_auth_hs *h, const struct psc_auth_key *k,
			 enum psc_auth_purpose purpose, const void *bind,
			 size_t bindlen, const uint8_t *hello, size_t hlen,
			 const uint8_t *session, uint8_t *chal)
{
	hs_init(h, k, purpose, bind, bindlen);
	if (hlen != PSC_AUTH_HELLO_LEN)
		return -EPROTO;
	memcpy(h->nc, hello, sizeof(h->nc));
	psc_auth_random(h->ns, sizeof(h->ns));
	if (session)
		memcpy(h->session, session, sizeof(h->session));
	memcpy(chal, h->ns, PSC_AUTH_NONCE_LEN);
	memcpy(chal + PSC_AUTH_NONCE_LEN, h->session, PSC_AUTH_SESSION_LEN);
	hs_mac(h, true, chal + PSC_AUTH_NONCE_LEN + PSC_AUTH_SESSION_LEN);
	return 0;
}

int psc_auth_client_proof(struct psc_auth_hs *h, const uint8_t *chal,
			  size_t clen, uint8_t *proof, uint8_t *session)
{
	uint8_t want[PSC_AUTH_MAC_LEN];
	int bad;

	if (clen != PSC_AUTH_CHAL_LEN)
		return -EPROTO;
	memcpy(h->ns, chal, sizeof(h->ns));
	memcpy(h->session, chal + PSC_AUTH_NONCE_LEN, sizeof(h->session));
	hs_mac(h, true, want);
	bad = sodium_memcmp(want, chal + PSC_AUTH_NONCE_LEN +
				      PSC_AUTH_SESSION_LEN,
			    sizeof(want));
	if (bad)
		return -EACCES;
	hs_mac(h, false, proof);
	if (session)
		memcpy(session, h->session, PSC_AUTH_SESSION_LEN);
	return 0;
}

int psc_auth_server_check(const struct psc_auth_hs *h, const uint8_t *proof,
			  size_t plen)
{
	uint8_t want[PSC_AUTH_MAC_LEN];

	if (plen != PSC_AUTH_PROOF_LEN)
		return -EPROTO;
	hs_mac(h, false, want);
	return sodium_memcmp(want, proof, sizeof(want)) == 0 ? 0 : -EACCES;
}

void psc_auth_record_mac(const struct psc_auth_key *k, const uint8_t *session,
			 int rank, const char *name, const void *val,
			 size_t len, uint8_t *mac)
{
	static const char label[] = "pscomm-record-v1";
	crypto_generichash_state st;
	uint8_t num[13];
	size_t nlen = strlen(name);

	psc_be_put(num, (uint32_t)rank, 4);
	psc_be_put(num + 4, (uint64_t)len, 8);
	num[12] = (uint8_t)PSC_MIN(nlen, (size_t)255);
	crypto_generichash_init(&st, k->rec, sizeof(k->rec), PSC_AUTH_MAC_LEN);
	crypto_generichash_update(&st, (const uint8_t *)label,
				  sizeof(label) - 1);
	crypto_generichash_update(&st, session, PSC_AUTH_SESSION_LEN);
	crypto_generichash_update(&st, num, sizeof(num));
	crypto_generichash_update(&st, (const uint8_t *)name, num[12]);
	crypto_generichash_update(&st, val, len);
	crypto_generichash_final(&st, mac, PSC_AUTH_MAC_LEN);
}

int psc_auth_record_check(const struct psc_auth_key *k,
			  const uint8_t *session, int rank, const char *name,
			  const void *val, size_t len, const uint8_t *mac)
{
	uint8_t want[PSC_AUTH_MAC_LEN];

	psc_auth_record_mac(k, session, rank, name, val, len, want);
	return sodium_memcmp(want, mac, sizeof(want)) == 0 ? 0 : -EACCES;
}

uint64_t psc_auth_settings_hash(const struct psc_auth_key *k,
				const char *text)
{
	uint8_t out[16];

	crypto_generichash(out, sizeof(out), (const uint8_t *)text,
			   strlen(text), k->set, sizeof(k->set));
	return psc_be_get(out, 8);
}

void psc_auth_job_hash(const struct psc_auth_key *k, const void *data,
		       size_t len, uint8_t *out, size_t outlen)
{
	outlen = PSC_MAX(PSC_MIN(outlen, (size_t)crypto_generichash_BYTES_MAX),
			 (size_t)crypto_generichash_BYTES_MIN);
	crypto_generichash(out, outlen, data, len, k->id, sizeof(k->id));
}

void psc_auth_hex(const uint8_t *in, size_t len, char *out)
{
	sodium_bin2hex(out, 2 * len + 1, in, len);
}

int psc_auth_unhex(const char *hex, uint8_t *out, size_t max, size_t *len)
{
	const char *end = NULL;

	if (sodium_hex2bin(out, max, hex, strlen(hex), NULL, len, &end) != 0 ||
	    *end != '\0')
		return -EINVAL;
	return 0;
}
