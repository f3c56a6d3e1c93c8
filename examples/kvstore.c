/*
 * kvstore: a minimal parameter server on pscomm's van (ps_comm/van.h),
 * started like a ps-lite job: one scheduler, DMLC_NUM_SERVER servers and
 * DMLC_NUM_WORKER workers, each told its role by DMLC_ROLE and the
 * scheduler's address by DMLC_PS_ROOT_URI and DMLC_PS_ROOT_PORT; a node
 * advertises DMLC_NODE_HOST (default: the root's address when it is a
 * loopback one).
 *
 *   kvstore [-k KEYS] [-s VALUE_BYTES] [-i ROUNDS] [-v]
 *
 * Nodes register with the scheduler, which gives out ps-lite's ids
 * (scheduler 1, servers 8, 10, ..., workers 9, 11, ...) and the table of
 * all nodes. In each round every worker pushes a float vector per key to
 * the key's server (key % servers), which adds it up; after a barrier
 * every worker pulls every key back and checks each element against the
 * exact sum (the values are small integers, so sums are exact). Each
 * worker prints its push and pull throughput in 10^6 bytes per second,
 * and with -v a line after every round (tests act on it mid-traffic).
 * The exit status is non-zero on any wrong value or error.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ps_comm/van.h>
#include "args.h"
#include "example.h"

enum cmd {
	REGISTER = 1, /* node -> scheduler: role, port, host */
	TABLE,	      /* scheduler -> node: your id, then every node */
	BARRIER,      /* node -> scheduler */
	RELEASE,      /* scheduler -> worker: barrier passed */
	PUSH,	      /* worker -> server: key; segment: values */
	PUSHED,	      /* server -> worker: key */
	PULL,	      /* worker -> server: key */
	PULLED,	      /* server -> worker: key; segment: sums */
	SHUTDOWN,     /* scheduler -> node */
};

enum role { SCHEDULER, SERVER, WORKER };

#define SCHEDULER_ID 1
#define MAX_NODES 256
#define HOST_MAX 64

struct node_info {
	int id;
	int role;
	int port;
	char host[HOST_MAX];
};

struct ctx {
	ps_comm_van_t van;
	int role, id, nserver, nworker;
	int keys, rounds;
	size_t bytes;
	struct node_info self, nodes[MAX_NODES];
	int nnodes;
	float **store; /* server: sums per key (NULL for others' keys) */
	long errors;
	bool corrupt; /* KVSTORE_CORRUPT=1: a server adds wrongly */
	/*
	 * KVSTORE_DIE_AT=push:N or pull:N: a server kills itself (SIGKILL)
	 * on its Nth push or pull request, so fault tests hit a worker that
	 * waits for exactly that reply. die_cmd 0: off.
	 */
	uint32_t die_cmd;
	long die_after;
	bool verbose; /* -v: workers report every round */
};

/* ------------------------------------------------------------ meta */

/* A meta is big-endian u32 words, then an optional text (host names). */
static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static int die(const char *what, int rc)
{
	fprintf(stderr, "kvstore: %s: %s\n", what, ps_comm_strerror(rc));
	exit(1);
}

/* A node that died ends the job, as in ps-lite. */
static void node_failed(int node, int rc)
{
	fprintf(stderr, "kvstore: node %d failed (%s): giving up\n", node,
		ps_comm_strerror(rc));
	exit(1);
}

static void free_buf(void *buf, int err)
{
	(void)err;
	free(buf);
}

/* Send words and a text plus at most one segment; never blocks. */
static void send_msg(struct ctx *c, int to, const uint32_t *w, size_t nw,
		     const char *text, const void *seg, size_t seglen)
{
	size_t tl = text ? strlen(text) : 0;
	uint8_t *buf = malloc(4 * nw + tl + 1);
	ps_comm_van_seg_t s = {(void *)seg, seglen};
	int rc;

	if (!buf)
		die("send", PS_COMM_ERR_NOMEM);
	for (size_t i = 0; i < nw; i++)
		put32(buf + 4 * i, w[i]);
	if (tl)
		memcpy(buf + 4 * nw, text, tl);
	/* The buffer is freed when the van is done with it. */
	rc = ps_comm_van_send(c->van, to, buf, 4 * nw + tl, &s, seg ? 1 : 0,
			      free_buf, buf);
	if (rc == PS_COMM_ERR_PEER)
		node_failed(to, rc);
	if (rc)
		die("send", rc);
}

static uint32_t word(const ps_comm_van_msg_t *m, size_t i)
{
	return m->meta_len >= 4 * (i + 1) ? get32((uint8_t *)m->meta + 4 * i)
					  : 0;
}

static void recv_msg(struct ctx *c, ps_comm_van_msg_t *m)
{
	int rc = ps_comm_van_recv(c->van, m);

	if (rc == PS_COMM_ERR_PEER || rc == PS_COMM_ERR_TIMEOUT)
		node_failed(m->sender, rc);
	if (rc)
		die("receive", rc);
}

/* ----------------------------------------------------------- values */

/* What worker index w pushes in a round for element j of key k. */
static float push_value(int w, int k, size_t j)
{
	return (float)((w + 1) * (int)(1 + (j + (size_t)k) % 4));
}

/* The sum a pull must return after `round` rounds. */
static float want_sum(const struct ctx *c, int round, int k, size_t j)
{
	return (float)(round * c->nworker * (c->nworker + 1) / 2 *
		       (int)(1 + (j + (size_t)k) % 4));
}

/* ------------------------------------------------------- scheduler */

static void scheduler(struct ctx *c)
{
	int total = c->nserver + c->nworker, nsrv = 0, nwrk = 0;
	int waiting = 0, finished = 0, need = total;
	ps_comm_van_msg_t m;
	int rc;

	c->nnodes = 0;
	while (c->nnodes < total) {
		struct node_info *n = &c->nodes[c->nnodes];
		size_t hl;

		recv_msg(c, &m);
		if (word(&m, 0) != REGISTER || m.meta_len < 12 ||
		    m.meta_len - 12 >= HOST_MAX) {
			fprintf(stderr, "kvstore: unexpected message\n");
			exit(1);
		}
		hl = m.meta_len - 12;
		n->role = (int)word(&m, 1);
		n->port = (int)word(&m, 2);
		memcpy(n->host, (char *)m.meta + 12, hl);
		n->host[hl] = '\0';
		n->id = n->role == SERVER ? 8 + 2 * nsrv++ : 9 + 2 * nwrk++;
		if (nsrv > c->nserver || nwrk > c->nworker) {
			fprintf(stderr, "kvstore: too many nodes register\n");
			exit(1);
		}
		rc = ps_comm_van_connect(c->van, n->id, n->host, n->port);
		if (rc)
			die("connect", rc);
		c->nnodes++;
		ps_comm_van_msg_release(&m);
	}
	for (int i = 0; i < total; i++) {
		uint32_t w[3 + 3 * MAX_NODES];
		char hosts[MAX_NODES * HOST_MAX] = "";
		size_t nw = 0;

		w[nw++] = TABLE;
		w[nw++] = (uint32_t)c->nodes[i].id;
		w[nw++] = (uint32_t)total;
		for (int j = 0; j < total; j++) {
			w[nw++] = (uint32_t)c->nodes[j].id;
			w[nw++] = (uint32_t)c->nodes[j].port;
			w[nw++] = (uint32_t)strlen(c->nodes[j].host);
			strcat(hosts, c->nodes[j].host);
		}
		send_msg(c, c->nodes[i].id, w, nw, hosts, NULL, 0);
	}
	/*
	 * Barriers until every worker is done: the first one of every node,
	 * once all are connected, then the workers' barriers between rounds.
	 * Only workers (odd ids) wait for a release: a server serves as soon
	 * as it is connected, since a worker's first push may overtake the
	 * scheduler's message to that server (no order across senders).
	 */
	while (finished < c->nworker) {
		recv_msg(c, &m);
		if (word(&m, 0) == BARRIER && ++waiting == need) {
			uint32_t w = RELEASE;

			waiting = 0;
			for (int i = 0; i < total; i++)
				if (c->nodes[i].id % 2 == 1)
					send_msg(c, c->nodes[i].id, &w, 1,
						 NULL, NULL, 0);
			need = c->nworker;
		} else if (word(&m, 0) == SHUTDOWN) {
			finished++;
		}
		ps_comm_van_msg_release(&m);
	}
	for (int i = 0; i < total; i++) {
		uint32_t w = SHUTDOWN;

		send_msg(c, c->nodes[i].id, &w, 1, NULL, NULL, 0);
	}
}

/* ------------------------------------------------ servers, workers */

/* Wait at the scheduler's barrier until it releases this worker. */
static void barrier(struct ctx *c)
{
	uint32_t w = BARRIER;
	ps_comm_van_msg_t m;

	send_msg(c, SCHEDULER_ID, &w, 1, NULL, NULL, 0);
	recv_msg(c, &m);
	if (word(&m, 0) != RELEASE) {
		fprintf(stderr, "kvstore: expected the barrier's release, got "
			"message %u from node %d\n", word(&m, 0), m.sender);
		exit(1);
	}
	ps_comm_van_msg_release(&m);
}

/*
 * Register, get the table, connect to everyone, then one barrier: a
 * worker returns once every node is connected, a server at once.
 */
static void join(struct ctx *c, const char *root, int root_port)
{
	uint32_t w[3] = {REGISTER, (uint32_t)c->role, (uint32_t)c->self.port};
	ps_comm_van_msg_t m;
	const char *hosts;
	size_t n, off = 0;
	int rc;

	rc = ps_comm_van_connect(c->van, SCHEDULER_ID, root, root_port);
	if (rc)
		die("connect to the scheduler", rc);
	send_msg(c, SCHEDULER_ID, w, 3, c->self.host, NULL, 0);
	recv_msg(c, &m);
	n = word(&m, 2);
	if (word(&m, 0) != TABLE || n > MAX_NODES ||
	    m.meta_len < 12 + 12 * n) {
		fprintf(stderr, "kvstore: bad table from the scheduler\n");
		exit(1);
	}
	c->id = (int)word(&m, 1);
	ps_comm_van_set_id(c->van, c->id);
	hosts = (char *)m.meta + 12 + 12 * n;
	for (size_t i = 0; i < n; i++) {
		struct node_info *ni = &c->nodes[i];
		size_t hl = word(&m, 5 + 3 * i);

		ni->id = (int)word(&m, 3 + 3 * i);
		ni->port = (int)word(&m, 4 + 3 * i);
		if (hl >= HOST_MAX || 12 + 12 * n + off + hl > m.meta_len) {
			fprintf(stderr, "kvstore: bad table\n");
			exit(1);
		}
		memcpy(ni->host, hosts + off, hl);
		ni->host[hl] = '\0';
		off += hl;
		rc = ps_comm_van_connect(c->van, ni->id, ni->host, ni->port);
		if (rc)
			die("connect", rc);
	}
	c->nnodes = (int)n;
	ps_comm_van_msg_release(&m);
	/* Once a worker is past this, everyone can reach everyone. */
	if (c->role == SERVER) {
		w[0] = BARRIER;
		send_msg(c, SCHEDULER_ID, w, 1, NULL, NULL, 0);
	} else {
		barrier(c);
	}
}

static void server(struct ctx *c)
{
	size_t nf = c->bytes / sizeof(float);
	ps_comm_van_msg_t m;

	c->store = calloc((size_t)c->keys, sizeof(*c->store));
	for (int k = 0; c->store && k < c->keys; k++)
		c->store[k] = calloc(nf ? nf : 1, sizeof(float));
	for (;;) {
		uint32_t cmd, key, w[2];

		recv_msg(c, &m);
		cmd = word(&m, 0);
		key = word(&m, 1);
		if (cmd == SHUTDOWN) {
			ps_comm_van_msg_release(&m);
			break;
		}
		if ((cmd == PUSH || cmd == PULL) && key < (uint32_t)c->keys) {
			float *s = c->store[key];

			if (cmd == c->die_cmd && --c->die_after == 0)
				raise(SIGKILL);

			if (cmd == PUSH && m.nseg == 1 &&
			    m.segs[0].len == nf * sizeof(float)) {
				const float *v = m.segs[0].data;

				for (size_t j = 0; j < nf; j++)
					s[j] += v[j];
				/* Proof that wrong sums are caught (tests). */
				if (c->corrupt && nf)
					s[nf - 1] += 1;
			}
			w[0] = cmd == PUSH ? PUSHED : PULLED;
			w[1] = key;
			/* The store outlives the van's use of it. */
			send_msg(c, m.sender, w, 2, NULL,
				 cmd == PULL ? s : NULL,
				 cmd == PULL ? nf * sizeof(float) : 0);
		}
		ps_comm_van_msg_release(&m);
	}
	for (int k = 0; c->store && k < c->keys; k++)
		free(c->store[k]);
	free(c->store);
}

/* Receive n replies of kind cmd; check pulls against round's sums. */
static void await(struct ctx *c, uint32_t cmd, int n, int round)
{
	size_t nf = c->bytes / sizeof(float);

	for (int got = 0; got < n; got++) {
		ps_comm_van_msg_t m;
		int key;

		recv_msg(c, &m);
		key = (int)word(&m, 1);
		if (word(&m, 0) != cmd) {
			fprintf(stderr, "kvstore: unexpected message %u\n",
				word(&m, 0));
			exit(1);
		}
		if (cmd == PULLED) {
			const float *v = m.nseg ? m.segs[0].data : NULL;

			if (m.nseg != 1 || m.segs[0].len != nf * sizeof(float))
				c->errors++;
			for (size_t j = 0; v && j < nf; j++)
				if (v[j] != want_sum(c, round, key, j))
					c->errors++;
		}
		ps_comm_van_msg_release(&m);
	}
}

static void worker(struct ctx *c)
{
	size_t nf = c->bytes / sizeof(float);
	int windex = (c->id - 9) / 2;
	float **vals = calloc((size_t)c->keys, sizeof(*vals));
	double tpush = 0, tpull = 0, t;
	ps_comm_van_msg_t m;
	uint32_t w[2];

	for (int k = 0; vals && k < c->keys; k++) {
		vals[k] = malloc((nf ? nf : 1) * sizeof(float));
		for (size_t j = 0; vals[k] && j < nf; j++)
			vals[k][j] = push_value(windex, k, j);
	}
	for (int r = 1; r <= c->rounds; r++) {
		t = now_us() * 1e-6;
		for (int k = 0; k < c->keys; k++) {
			w[0] = PUSH;
			w[1] = (uint32_t)k;
			send_msg(c, 8 + 2 * (k % c->nserver), w, 2, NULL,
				 vals[k], nf * sizeof(float));
		}
		await(c, PUSHED, c->keys, r);
		tpush += now_us() * 1e-6 - t;
		barrier(c);
		t = now_us() * 1e-6;
		for (int k = 0; k < c->keys; k++) {
			w[0] = PULL;
			w[1] = (uint32_t)k;
			send_msg(c, 8 + 2 * (k % c->nserver), w, 2, NULL, NULL,
				 0);
		}
		await(c, PULLED, c->keys, r);
		tpull += now_us() * 1e-6 - t;
		/* Nobody pushes the next round before all pulled this one. */
		barrier(c);
		if (c->verbose) {
			printf("kvstore worker %d: round %d done\n", c->id, r);
			fflush(stdout);
		}
	}
	printf("kvstore worker %d: %d keys x %zu B, %d rounds: push %.1f "
	       "MB/s, pull %.1f MB/s, %ld wrong values\n", c->id, c->keys,
	       c->bytes, c->rounds,
	       tpush > 0 ? (double)c->bytes * c->keys * c->rounds / tpush / 1e6
			 : 0.0,
	       tpull > 0 ? (double)c->bytes * c->keys * c->rounds / tpull / 1e6
			 : 0.0,
	       c->errors);
	fflush(stdout);
	/* Tell the scheduler, then wait for everyone's shutdown. */
	w[0] = SHUTDOWN;
	send_msg(c, SCHEDULER_ID, w, 1, NULL, NULL, 0);
	do {
		recv_msg(c, &m);
		w[0] = word(&m, 0);
		ps_comm_van_msg_release(&m);
	} while (w[0] != SHUTDOWN);
	for (int k = 0; vals && k < c->keys; k++)
		free(vals[k]);
	free(vals);
}

/* ------------------------------------------------------------ main */

static void usage(FILE *f)
{
	fprintf(f, "usage: kvstore [-k KEYS] [-s VALUE_BYTES] [-i ROUNDS] "
		"[-v]\n"
		"  default 4 keys of 1M (K/M/G suffixes, a multiple of 4), "
		"10 rounds;\n"
		"  -v: workers print a line after every round\n"
		"  environment: DMLC_ROLE (scheduler, server or worker), "
		"DMLC_PS_ROOT_URI,\n"
		"  DMLC_PS_ROOT_PORT, DMLC_NUM_SERVER and DMLC_NUM_WORKER "
		"(1 if unset),\n"
		"  DMLC_NODE_HOST (needed unless the root is a loopback "
		"address)\n");
}

static const char *const role_names[] = {
	[SCHEDULER] = "scheduler", [SERVER] = "server", [WORKER] = "worker"};

/* A variable that must be set; its absence is a usage error. */
static const char *need_env(const struct ex_args *a, const char *name,
			    const char *what)
{
	const char *v = getenv(name);

	if (!v || !*v)
		ex_usage_error(a, "%s is not set (%s)", name, what);
	return v;
}

/* A node count from the environment, 1 if unset. */
static int env_count(const struct ex_args *a, const char *name)
{
	const char *v = getenv(name);

	return v && *v ? ex_int(a, name, v, 1, MAX_NODES, "a node count") : 1;
}

/*
 * This node's address: DMLC_NODE_HOST, else the root's when this is the
 * scheduler or the root is a loopback address; it must fit a table entry.
 */
static const char *node_host(const struct ex_args *a, const struct ctx *c,
			     const char *root)
{
	const char *host = getenv("DMLC_NODE_HOST");
	const char *name = "DMLC_NODE_HOST";

	if (!host || !*host) {
		host = c->role == SCHEDULER || strncmp(root, "127.", 4) == 0
			       ? root
			       : NULL;
		name = "DMLC_PS_ROOT_URI";
	}
	if (!host)
		ex_usage_error(a, "DMLC_NODE_HOST is not set (this node's "
			       "address; DMLC_PS_ROOT_URI=%s is not a "
			       "loopback one)", root);
	if (strlen(host) >= HOST_MAX)
		ex_usage_error(a, "%s=%s: longer than %d characters", name,
			       host, HOST_MAX - 1);
	return host;
}

/* -k, -s and -i; a usage error ends the program. */
static void parse_opts(struct ex_args *a, struct ctx *c)
{
	const char *v;

	c->keys = 4;
	c->bytes = 1 << 20;
	c->rounds = 10;
	while (ex_args_next(a)) {
		if ((v = ex_value(a, "-k"))) {
			c->keys = ex_int(a, "-k", v, 1, INT_MAX, "keys");
		} else if ((v = ex_value(a, "-s"))) {
			c->bytes = ex_size(a, "-s", v);
			if (c->bytes % sizeof(float))
				ex_usage_error(a, "-s %s: the value size must "
					       "be a multiple of 4 (floats)",
					       v);
		} else if ((v = ex_value(a, "-i"))) {
			c->rounds = ex_int(a, "-i", v, 1, INT_MAX, "rounds");
		} else if (ex_flag(a, "-v")) {
			c->verbose = true;
		} else {
			ex_unknown(a);
		}
	}
}

/* KVSTORE_DIE_AT (struct ctx); a malformed value is a usage error. */
static void parse_die_at(const struct ex_args *a, struct ctx *c)
{
	const char *v = getenv("KVSTORE_DIE_AT");
	const char *n;

	if (!v || !*v)
		return;
	if (strncmp(v, "push:", 5) == 0) {
		c->die_cmd = PUSH;
	} else if (strncmp(v, "pull:", 5) == 0) {
		c->die_cmd = PULL;
	} else {
		ex_usage_error(a, "KVSTORE_DIE_AT=%s: want push:N or pull:N",
			       v);
	}
	n = v + 5;
	c->die_after = ex_int(a, "KVSTORE_DIE_AT", n, 1, INT_MAX,
			      "requests before the server dies");
}

/*
 * The DMLC_* variables, after the options; a usage error ends the
 * program. Pulled sums are checked exactly, so they must stay within
 * 2^24, below which every integer is a float.
 */
static void parse_env(const struct ex_args *a, struct ctx *c,
		      const char **root, int *root_port, const char **host)
{
	long long top;

	c->role = ex_choice(a, "DMLC_ROLE",
			    need_env(a, "DMLC_ROLE",
				     "scheduler, server or worker"),
			    role_names,
			    (int)(sizeof(role_names) / sizeof(role_names[0])),
			    "role");
	*root = need_env(a, "DMLC_PS_ROOT_URI", "the scheduler's address");
	*root_port = ex_int(a, "DMLC_PS_ROOT_PORT",
			    need_env(a, "DMLC_PS_ROOT_PORT",
				     "the scheduler's port"),
			    1, 65535, "the port");
	c->nserver = env_count(a, "DMLC_NUM_SERVER");
	c->nworker = env_count(a, "DMLC_NUM_WORKER");
	if (c->nserver + c->nworker > MAX_NODES)
		ex_usage_error(a, "DMLC_NUM_SERVER=%d and DMLC_NUM_WORKER=%d: "
			       "at most %d nodes in all", c->nserver,
			       c->nworker, MAX_NODES);
	top = (long long)c->rounds * c->nworker * (c->nworker + 1) / 2 * 4;
	if (top > 1 << 24)
		ex_usage_error(a, "-i %d with DMLC_NUM_WORKER=%d: sums would "
			       "reach %lld, beyond 2^24, where float sums are "
			       "no longer exact", c->rounds, c->nworker, top);
	*host = node_host(a, c, *root);
	c->corrupt = getenv("KVSTORE_CORRUPT") &&
		     strcmp(getenv("KVSTORE_CORRUPT"), "1") == 0;
	parse_die_at(a, c);
}

int main(int argc, char **argv)
{
	const char *root, *host;
	int root_port, rc;
	struct ex_args a;
	struct ctx c;

	memset(&c, 0, sizeof(c));
	ex_args_init(&a, "kvstore", usage, argc, argv);
	parse_opts(&a, &c);
	/* Both before the van starts, so a mistake needs no running job. */
	parse_env(&a, &c, &root, &root_port, &host);
	snprintf(c.self.host, sizeof(c.self.host), "%s", host);
	rc = ps_comm_van_create(&c.van);
	if (!rc)
		rc = ps_comm_van_bind(c.van, host,
				      c.role == SCHEDULER ? root_port : 0,
				      c.role == SCHEDULER ? 0 : 40,
				      &c.self.port);
	if (rc)
		die("starting the van", rc);
	if (c.role == SCHEDULER) {
		c.id = SCHEDULER_ID;
		ps_comm_van_set_id(c.van, SCHEDULER_ID);
		scheduler(&c);
	} else {
		join(&c, root, root_port);
		if (c.role == SERVER)
			server(&c);
		else
			worker(&c);
	}
	rc = ps_comm_van_stop(c.van);
	ps_comm_van_destroy(c.van);
	if (rc)
		die("stop", rc);
	return c.errors ? 1 : 0;
}
