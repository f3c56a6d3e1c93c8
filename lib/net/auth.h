/*
 * Authentication of pscomm's TCP listeners and of bootstrap records, with
 * libsodium (doc/security.md). One module for every listener: the
 * rendezvous store, the van's address exchange and the liveness star all
 * frame the same three messages in their own wire format.
 *
 * Contract:
 * - Keys. psc_auth_key_load turns PS_COMM_JOB_KEY's text into a master
 *   key with Argon2id (crypto_pwhash: each guess of a weak key costs an
 *   attacker ~25 ms and 16 MiB), then into one sub-key per purpose with
 *   crypto_kdf: handshake MACs, record MACs, the settings hash, the
 *   provider's job identity. The text is never kept, printed, hashed
 *   plainly or sent. No key set means the empty key: every step below
 *   still runs, with keys anyone can compute (key->keyed is false), so a
 *   job without a key has no protection but the same code paths.
 * - Handshake, mutual, with a fresh 32-byte random nonce from each side:
 *     client -> server  HELLO  nc
 *     server -> client  CHAL   ns | session | MAC_s
 *     client -> server  PROOF  MAC_c
 *   MAC_x = BLAKE2b-256 keyed with the handshake sub-key over a label
 *   naming the side, the purpose (store, van, live), the caller's binding
 *   (what the connection claims: rank, size, generation) and nc, ns,
 *   session. The client checks MAC_s before it answers (so a stranger's
 *   listener learns nothing it could replay), the server checks MAC_c;
 *   both compare in constant time (sodium_memcmp). A captured PROOF is
 *   worthless: it covers the server's fresh ns. session is 32 bytes the
 *   server chooses (the store: a random rendezvous id that records are
 *   bound to); it arrives authenticated.
 * - Records: psc_auth_record_mac binds a value to the key, the rendezvous
 *   id, the publishing rank and the key name, so a record cannot be
 *   forged, moved to another rank or name, or replayed into another job
 *   or communicator, even one with the same key.
 * - What runs after the handshake on a connection is not MACed: pscomm
 *   trusts the network path (the fabric), not the bytes a stranger sends
 *   to a listening port. Records are protected end to end anyway.
 *
 * Every function is thread-safe; the failing ones return a negative errno
 * (-EACCES for a MAC that does not verify, -EPROTO for a wrong length).
 */
#ifndef PSC_AUTH_H
#define PSC_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PSC_AUTH_NONCE_LEN 32
#define PSC_AUTH_MAC_LEN 32
#define PSC_AUTH_SESSION_LEN 32
/* HELLO's part: nc. CHAL: ns, session, MAC_s. PROOF: MAC_c. */
#define PSC_AUTH_HELLO_LEN PSC_AUTH_NONCE_LEN
#define PSC_AUTH_CHAL_LEN                                                     \
	(PSC_AUTH_NONCE_LEN + PSC_AUTH_SESSION_LEN + PSC_AUTH_MAC_LEN)
#define PSC_AUTH_PROOF_LEN PSC_AUTH_MAC_LEN
#define PSC_AUTH_BIND_MAX 64
/* The longest key text accepted (PS_COMM_JOB_KEY, or its file). */
#define PSC_AUTH_KEY_TEXT_MAX 1024

/* Which listener a handshake is for: a MAC for one is no good for another. */
enum psc_auth_purpose {
	PSC_AUTH_STORE = 1,
	PSC_AUTH_VAN = 2,
	PSC_AUTH_LIVE = 3,
};

/* The sub-keys of one job key. Plain data: copy it freely. */
struct psc_auth_key {
	uint8_t hs[32];	 /* handshake MACs */
	uint8_t rec[32]; /* record MACs */
	uint8_t set[32]; /* settings hash */
	uint8_t id[32];	 /* the provider's job identity */
	bool keyed;	 /* a non-empty job key was set */
};

/*
 * Derive k from the key text (NUL-terminated, "" for none). The costly
 * step runs once per process and text; later calls are quick. Returns 0,
 * or -EINVAL (too long) / -ENOMEM with words in err that never quote it.
 */
int psc_auth_key_load(struct psc_auth_key *k, const char *text, char *err,
		      size_t len);

/*
 * A key pscomm makes itself (ps_comm_run, a launcher store's handout) is
 * PSC_AUTH_MADE_PREFIX and 64 lowercase hex digits: 256 random bits.
 * psc_auth_key_load takes a key of exactly that form without stretching
 * (BLAKE2b instead of Argon2id): stretching makes each guess of a weak
 * key dear, and 256 random bits cannot be guessed, while Argon2id costs
 * every rank 25 ms of CPU and 16 MiB as it starts. ps_comm_run writes
 * the same form (tools/ps_comm_run.c). psc_auth_make_key writes a fresh
 * key into out, PSC_AUTH_MADE_LEN + 1 bytes.
 */
#define PSC_AUTH_MADE_PREFIX "pscomm-random-256:"
#define PSC_AUTH_MADE_LEN (sizeof(PSC_AUTH_MADE_PREFIX) - 1 + 64)
void psc_auth_make_key(char *out);

/* One side's state of one handshake. */
struct psc_auth_hs {
	struct psc_auth_key key;
	uint8_t purpose;
	uint8_t bind[PSC_AUTH_BIND_MAX];
	size_t bindlen;
	uint8_t nc[PSC_AUTH_NONCE_LEN], ns[PSC_AUTH_NONCE_LEN];
	uint8_t session[PSC_AUTH_SESSION_LEN];
};

/*
 * Client: start a handshake for purpose, claiming bind (at most
 * PSC_AUTH_BIND_MAX bytes, which the server must know or be told the same
 * way); hello receives PSC_AUTH_HELLO_LEN bytes to send.
 */
void psc_auth_client_hello(struct psc_auth_hs *h, const struct psc_auth_key *k,
			   enum psc_auth_purpose purpose, const void *bind,
			   size_t bindlen, uint8_t *hello);

/*
 * Server: answer a client's hello (hlen bytes) with chal
 * (PSC_AUTH_CHAL_LEN bytes), handing out session. -EPROTO when hlen is
 * wrong.
 */
int psc_auth_server_chal(struct psc_auth_hs *h, const struct psc_auth_key *k,
			 enum psc_auth_purpose purpose, const void *bind,
			 size_t bindlen, const uint8_t *hello, size_t hlen,
			 const uint8_t *session, uint8_t *chal);

/*
 * Client: check the server's chal (clen bytes); on success write proof
 * (PSC_AUTH_PROOF_LEN bytes) and copy the session out (when session is
 * not NULL). -EACCES when the server does not know the key.
 */
int psc_auth_client_proof(struct psc_auth_hs *h, const uint8_t *chal,
			  size_t clen, uint8_t *proof, uint8_t *session);

/* Server: check the client's proof (plen bytes). 0 or -EACCES/-EPROTO. */
int psc_auth_server_check(const struct psc_auth_hs *h, const uint8_t *proof,
			  size_t plen);

/* Fill buf with len random bytes (randombytes_buf). */
void psc_auth_random(void *buf, size_t len);

/*
 * The MAC of a record: value val (len bytes) published by rank under
 * name in the rendezvous whose id is session (PSC_AUTH_SESSION_LEN
 * bytes). psc_auth_record_check compares in constant time: 0 or -EACCES.
 */
void psc_auth_record_mac(const struct psc_auth_key *k, const uint8_t *session,
			 int rank, const char *name, const void *val,
			 size_t len, uint8_t *mac);
int psc_auth_record_check(const struct psc_auth_key *k,
			  const uint8_t *session, int rank, const char *name,
			  const void *val, size_t len, const uint8_t *mac);

/* A keyed 64-bit hash of the settings text every rank must agree on. */
uint64_t psc_auth_settings_hash(const struct psc_auth_key *k,
				const char *text);

/* A keyed hash of data into out (outlen from 16 to 64), for job ids. */
void psc_auth_job_hash(const struct psc_auth_key *k, const void *data,
		       size_t len, uint8_t *out, size_t outlen);

/* Bytes to hex (2 * len + 1 chars into out), for keys that are generated. */
void psc_auth_hex(const uint8_t *in, size_t len, char *out);

/*
 * Hex (all of it, an even number of digits) back to bytes: at most max
 * into out, *len of them. Returns 0, or -EINVAL when hex is not that or
 * holds more than max bytes.
 */
int psc_auth_unhex(const char *hex, uint8_t *out, size_t max, size_t *len);

#endif /* PSC_AUTH_H */
