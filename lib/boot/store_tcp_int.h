/*
 * What the tcp rendezvous store's client (store_tcp.c) and rank 0's
 * server (store_tcp_server.c) share: the meaning of a reply's rank field,
 * a stranger's limits, the handshake's binding, and the server's start
 * and stop. Private to lib/boot.
 */
#ifndef PSC_BOOT_STORE_TCP_INT_H
#define PSC_BOOT_STORE_TCP_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "boot/store.h"
#include "net/auth.h"

/* The job field counts communicators (generations); it is not secret. */
#define GEN_MASK 0xffffULL
/*
 * The rank field of a reply from the root says what kind of answer it is:
 * an ERROR with REPLY_RETRY asks the client to come back later, one with
 * REPLY_MISMATCH says the client belongs to another job (key or size).
 */
enum { REPLY_PLAIN = 0, REPLY_RETRY = -2, REPLY_MISMATCH = -3 };
/* What a stranger may send: HELLO (nonce and host name) or PROOF. */
#define PRE_MAX (PSC_AUTH_HELLO_LEN + 64)
/* Seconds a stranger has to authenticate. */
#define PRE_DEADLINE_S 5.0
/* The binding of a store handshake: generation, rank, size. */
#define BIND_LEN 12
/*
 * A process joining a grow claims rank JOIN_RANK and size 0; the root's
 * OK to its PROOF carries JOIN_GRANT_LEN bytes: its rank, the grown
 * size and the grow's grant (big-endian 32-bit each).
 */
#define JOIN_RANK (-1)
#define JOIN_GRANT_LEN 12

/* The binding of a store handshake (BIND_LEN bytes at b). */
void psc_store_tcp_bind(uint8_t *b, uint64_t job, int32_t rank,
			int32_t size);

struct psc_store_tcp_server;

/*
 * Rank 0: serve the rendezvous of generation job for s (its size,
 * deadline; s->err gets the words of a failure) on addr, from a thread
 * of the listener's (net/listener.h). Returns 0 or a negative errno.
 */
int psc_store_tcp_serve(struct psc_store *s, struct sockaddr_storage *addr,
			socklen_t addrlen, uint64_t job,
			const struct psc_params *params,
			const struct psc_auth_key *key,
			struct psc_store_tcp_server **out);

/*
 * Stop and free the server: after every rank's goodbye (or the
 * deadline) when wait_for_byes, else at once.
 */
void psc_store_tcp_unserve(struct psc_store_tcp_server *sv,
			   bool wait_for_byes);

#endif /* PSC_BOOT_STORE_TCP_INT_H */
