/*
 * Bootstrap: rank and size from PS_COMM_* or the usual launcher
 * variables, the choice of rendezvous backend and interface, and the
 * allgather of every rank's record through the store. Every rank checks
 * every record against its own and fails fast, naming the rank that
 * differs. This layer knows nothing of endpoints: the caller fills its
 * record and handles each peer's through a callback.
 *
 * Functions return 0 or a negative errno (-ETIMEDOUT, -EBADE for a
 * mismatch, -EPROTO for a malformed record, -EINVAL for a bad setting)
 * with a message in err.
 */
#ifndef PSC_BOOT_H
#define PSC_BOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "boot/store.h"
#include "net/auth.h"
#include "net/net.h"
#include "ps_comm.h"
#include "util/param.h"

/*
 * Rank and size from PS_COMM_* or the usual launcher variables; with
 * none set, rank 0 of 1. PS_COMM_SIZE alone gives its size with rank -1
 * (unknown: the caller needs one from elsewhere), or rank 0 for size 1.
 * Returns 0, or -EINVAL naming the variable in err.
 */
int psc_env_rank_size(int *rank, int *size, char *err, size_t len);

/* The tcp rendezvous backend's spec (a backend, not the provider). */
#define PSC_BOOT_TCP "tcp"

/*
 * Whether spec is a rendezvous backend: auto, tcp, file:DIR, pmix or pmi2.
 * Returns 0, or -EINVAL with words in err naming what (the variable or
 * field the spec came from) and the values allowed.
 */
int psc_boot_spec_check(const char *spec, const char *what, char *err,
			size_t len);

/* What a rank publishes; text fields are NUL-terminated. */
struct psc_boot_record {
	char version[32];
	char provider[64];
	char addr_format[32];
	char ctx[16];
	char agree[1024];
	uint64_t hash;
	char host[64];
	char node[96];	  /* psc_node_id(PS_COMM_NODE_ID, "net") */
	char live[256];	  /* the liveness monitor's part, opaque here */
	uint8_t addr[256];
	size_t addrlen;
	uint8_t shm[256]; /* a node-aware rank's shared-memory address */
	size_t shmlen;	  /* 0: none */
};

/* How one bootstrap runs, from psc_boot_plan. */
struct psc_boot_plan {
	const struct psc_params *params;
	int rank, size;
	const char *spec;	  /* "tcp", "file:DIR", "pmix", "pmi2" or "none" */
	char root[300];		  /* host:port for tcp, else "" */
	bool have_iface;
	struct psc_iface iface;	  /* when have_iface */
	/*
	 * The job key's sub-keys (PS_COMM_JOB_KEY or its file). When none
	 * is set, the pmix store may make one: psc_boot_exchange updates
	 * this, and the caller passes it on to its other listeners.
	 */
	struct psc_auth_key key;
	/* ps_comm_grow's part, for a tcp rendezvous (store.h). */
	struct psc_store_grow grow;
	/* psc_boot_join's rendezvous, which psc_boot_exchange goes on with. */
	struct psc_store *joined;
};

/*
 * The job's rendezvous address from the environment: PS_COMM_ROOT, else
 * MASTER_ADDR:MASTER_PORT, else "" (into out, len bytes).
 */
void psc_boot_job_root(const struct psc_params *p, char *out, size_t len);

/*
 * Choose the backend (attr's, else PS_COMM_BOOTSTRAP, "auto" resolved
 * from the root address, PMIx or a size of 1) and the interface to use.
 */
int psc_boot_plan(struct psc_boot_plan *b, const struct psc_params *p,
		  const ps_comm_attr_t *attr, int rank, int size, char *err,
		  size_t len);

/*
 * A new process joins a running job's grow (ps_comm_grow) at the tcp
 * rendezvous b->root (PS_COMM_JOIN): it proves the job key like any
 * rank and gets its rank, the grown size and the grow's grant (its
 * context id) into b. The rendezvous stays open for psc_boot_exchange;
 * psc_boot_unjoin closes it if the bootstrap fails before that. Waits
 * until the plan's timeout for a grow to open there. Returns 0, -EBADE
 * (refused: no grow open there, every place taken, or another job or
 * key) or another negative errno, with words in err.
 */
int psc_boot_join(struct psc_boot_plan *b, char *err, size_t len);
void psc_boot_unjoin(struct psc_boot_plan *b);

/*
 * Fill the parts of rec that the bootstrap owns (version, settings
 * text of the parameters, host name, node identity); the caller adds
 * provider, address format, context and addresses, and appends the
 * provider families' variables to the settings text (lib/boot names no
 * provider). psc_boot_exchange computes the keyed settings hash.
 */
void psc_boot_record_init(struct psc_boot_record *rec,
			  const struct psc_params *p);

/*
 * The record's text form (key=value lines, a blank line, the address,
 * then the shared-memory address if any):
 * encode returns the bytes written or 0 when len is too small; decode
 * checks everything a stranger could have put there and returns false
 * when anything is malformed. Neither touches the MAC (psc_boot_exchange
 * adds and checks it).
 */
size_t psc_boot_record_encode(const struct psc_boot_record *rec, uint8_t *buf,
			      size_t len);
bool psc_boot_record_decode(const uint8_t *buf, size_t len,
			    struct psc_boot_record *rec);

/*
 * A vote before the records, in rounds, so that every rank ends up on a
 * choice all of them could make (the provider one rank failed to open is
 * given up by all). Each round every rank offers a value, the largest
 * wins, and ranks that offered less call offer again with it; the vote
 * ends when every rank offered the same. Values only ever grow, so it
 * ends; it fails after PSC_BOOT_VOTE_ROUNDS rounds.
 *
 * Round k: every rank publishes "vote<k>", rank 0 reads them all and
 * publishes the tally "tally<k>", every rank reads the tally: O(ranks)
 * messages a round, all MACed like the records.
 */
#define PSC_BOOT_VOTE_ROUNDS 32
/* The longest note of a vote, with its NUL; longer ones are cut. */
#define PSC_BOOT_VOTE_NOTE 1024

struct psc_boot_vote {
	/*
	 * This rank's offer: *value (>= 0), and in note (nlen bytes, ""
	 * for none) why, when it is not what the rank would have chosen
	 * alone (for the logs). floor is -1 in the first round, then the
	 * largest value offered in the round before: the rank must offer
	 * at least floor if it can (it may end up above). why is the
	 * vote's first note and from the rank that gave it (-1: none yet).
	 * Returns 0, or a negative errno with words in err, which fails
	 * the exchange.
	 */
	int (*offer)(void *arg, int floor, int from, const char *why,
		     int *value, char *note, size_t nlen, char *err,
		     size_t elen);
	void *arg;
	/*
	 * Out, on every rank: the first note of the vote (its first round
	 * with one, lowest rank first), and that rank (-1: none).
	 */
	int note_rank;
	char note[PSC_BOOT_VOTE_NOTE];
	/* Out: the value every rank agreed on. */
	int value;
};

/*
 * With vote (NULL: none), first run it (above). Then publish me, read
 * after the vote (which may change it through offer), MACed with the job
 * key and bound to this rendezvous and rank, read every rank's record
 * in rank order, verify its MAC (-EACCES when it does not), check it
 * against me and hand it to peer(arg, rank, rec), which returns 0 or a
 * negative errno with words in err; -EHOSTUNREACH from peer says that
 * the records themselves rule the job out, as every rank sees (like
 * -EBADE for settings that differ), and the ranks then meet once more
 * before leaving, so none takes another's exit for a death. Once every
 * record is in, gathered(arg) (NULL: none) runs before this rank's
 * last fence, which can wait for the slowest rank (the tcp root waits
 * for every goodbye): what must answer the ranks that finish first
 * starts there. It returns 0 or a negative errno with words in err.
 * *local receives how many ranks share this node. Blocks until the
 * plan's timeout at most.
 */
int psc_boot_exchange(struct psc_boot_plan *b, struct psc_boot_vote *vote,
		      const struct psc_boot_record *me,
		      int (*peer)(void *arg, int rank,
				  const struct psc_boot_record *rec,
				  char *err, size_t len),
		      int (*gathered)(void *arg, char *err, size_t len),
		      void *arg, int *local, char *err, size_t len);

#endif /* PSC_BOOT_H */
