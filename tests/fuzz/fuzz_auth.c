/*
 * The job key's handshake (lib/net/auth.c) as a stranger meets it: every
 * message a peer sends is outside bytes. The input is cut into a HELLO
 * for the server side, a CHAL for the client side, a PROOF for the
 * server side and a record with its MAC; byte 0 picks the key (none or a
 * fixed one), the purpose and the binding.
 *
 * Promises checked: a genuine handshake always passes; the server answers
 * only a HELLO of the right length; a made-up CHAL or PROOF (the input's)
 * never passes, nor does the genuine PROOF once the input changed the
 * CHAL it answers; the genuine PROOF fails on a new server (replay); a
 * record passes only with the MAC made for exactly its bytes, rank, name
 * and session. AddressSanitizer and UBSan catch reads past any length.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "net/auth.h"

static struct psc_auth_key keys[2];
static bool loaded;

/* Take up to want bytes of the input; *len gets how many there were. */
static const uint8_t *take(const uint8_t **data, size_t *size, size_t want,
			   size_t *len)
{
	const uint8_t *p = *data;

	*len = want < *size ? want : *size;
	*data += *len;
	*size -= *len;
	return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *binds[] = {"", "r1", "\x00\x00\x00\x01"};
	const struct psc_auth_key *k;
	struct psc_auth_hs c, s, s2;
	uint8_t hello[PSC_AUTH_HELLO_LEN], chal[PSC_AUTH_CHAL_LEN];
	uint8_t proof[PSC_AUTH_PROOF_LEN], chal2[PSC_AUTH_CHAL_LEN];
	uint8_t session[PSC_AUTH_SESSION_LEN], mac[PSC_AUTH_MAC_LEN];
	const uint8_t *in;
	enum psc_auth_purpose purpose;
	const char *bind;
	size_t n, blen;
	char err[128];
	int rc;

	if (!loaded) {
		if (psc_auth_key_load(&keys[0], "", err, sizeof(err)) ||
		    psc_auth_key_load(&keys[1], "fuzz-key", err, sizeof(err)))
			abort();
		loaded = true;
	}
	if (size < 1)
		return 0;
	k = &keys[data[0] & 1];
	purpose = (enum psc_auth_purpose)(1 + (data[0] >> 1) % 3);
	bind = binds[(data[0] >> 3) % 3];
	blen = (data[0] >> 3) % 3 == 2 ? 4 : strlen(bind);
	memset(session, data[0], sizeof(session));
	data++;
	size--;

	/* The server side, given the input's HELLO (any length). */
	in = take(&data, &size, (size_t)(size ? data[0] % 64 : 0) + 1, &n);
	rc = psc_auth_server_chal(&s, k, purpose, bind, blen, in, n, session,
				  chal);
	PSC_FUZZ_ASSERT(rc == (n == PSC_AUTH_HELLO_LEN ? 0 : -EPROTO));

	/* A genuine client against a genuine server: always passes. */
	psc_auth_client_hello(&c, k, purpose, bind, blen, hello);
	PSC_FUZZ_ASSERT(psc_auth_server_chal(&s, k, purpose, bind, blen, hello,
				     sizeof(hello), session, chal) == 0);

	/* The client side, given the input's CHAL: only the genuine passes. */
	in = take(&data, &size, PSC_AUTH_CHAL_LEN, &n);
	{
		struct psc_auth_hs cc = c;

		rc = psc_auth_client_proof(&cc, in, n, proof, NULL);
		PSC_FUZZ_ASSERT(n == PSC_AUTH_CHAL_LEN
				? (rc == 0) == (memcmp(in, chal, n) == 0)
				: rc == -EPROTO);
		PSC_FUZZ_ASSERT(rc == 0 || rc == -EACCES || rc == -EPROTO);
	}
	PSC_FUZZ_ASSERT(psc_auth_client_proof(&c, chal, sizeof(chal), proof,
				      session) == 0);
	PSC_FUZZ_ASSERT(psc_auth_server_check(&s, proof, sizeof(proof)) == 0);

	/* The input's PROOF: passes only if it is the genuine one. */
	in = take(&data, &size, PSC_AUTH_PROOF_LEN, &n);
	rc = psc_auth_server_check(&s, in, n);
	PSC_FUZZ_ASSERT(n != PSC_AUTH_PROOF_LEN ? rc == -EPROTO
					: (rc == 0) == (memcmp(in, proof, n) == 0));

	/* The genuine PROOF replayed to a new server (fresh nonce) fails. */
	PSC_FUZZ_ASSERT(psc_auth_server_chal(&s2, k, purpose, bind, blen, hello,
				     sizeof(hello), session, chal2) == 0);
	PSC_FUZZ_ASSERT(psc_auth_server_check(&s2, proof, sizeof(proof)) == -EACCES);

	/* A record: the rest, its last 32 bytes taken as the MAC. */
	if (size >= PSC_AUTH_MAC_LEN) {
		size_t vlen = size - PSC_AUTH_MAC_LEN;

		psc_auth_record_mac(k, session, 1, "rec", data, vlen, mac);
		rc = psc_auth_record_check(k, session, 1, "rec", data, vlen,
					   data + vlen);
		PSC_FUZZ_ASSERT((rc == 0) == (memcmp(mac, data + vlen, sizeof(mac)) ==
				      0));
		PSC_FUZZ_ASSERT(psc_auth_record_check(k, session, 1, "rec", data, vlen,
					      mac) == 0);
		PSC_FUZZ_ASSERT(psc_auth_record_check(k, session, 2, "rec", data, vlen,
					      mac) == -EACCES);
		PSC_FUZZ_ASSERT(psc_auth_record_check(&keys[!(k - keys)], session, 1,
					      "rec", data, vlen,
					      mac) == -EACCES);
	}
	(void)psc_auth_settings_hash(k, "PS_COMM_DETERMINISTIC=0;");
	return 0;
}
