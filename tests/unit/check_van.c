/*
 * Unit tests for the van (lib/van/), with several vans in one process on
 * whatever provider FI_PROVIDER selects (tests/mp/van.sh runs this on tcp,
 * net and shm): the frame codec and its refusals; the scheduler's fixed port
 * and a taken port with and without retry; self-sends, which never reach
 * the provider, also in ps-lite's stop sequence; connecting again
 * and again; fetches that a van with room for one stranger drops asking
 * again; a node sending before it has an id; eight threads sending
 * while one receives, checked for order and content; segments of 0 B,
 * 1 B and 64 MiB compared bitwise; a provider completing a segment's
 * receive twice failing the van with PS_COMM_ERR_FABRIC, its message
 * not handed out; stop then bind again; malformed
 * frames and unknown senders dropped while the van keeps working; a van
 * listening on its host's address only (the provider's ports too), every
 * address when asked, and a host not of this machine refused; a
 * frame naming an id that connected again since dropped; a connect to a
 * host that never answers failing after PS_COMM_TIMEOUT; a node that
 * dies reported once by the receiver, its sends failing at once, stop
 * not held up by sends to it, and the node usable again once connected
 * anew; and 50 cycles of start, traffic and a stop while a thread waits
 * in ps_comm_van_recv, each stop within a second. Silence: a node that
 * stops answering (SIGSTOP) while a request waits on it, and one whose
 * message is half received, reported within PS_COMM_PEER_TIMEOUT and
 * some seconds; a node that answers three times PS_COMM_PEER_TIMEOUT
 * late is waited for.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "ps_comm/van.h"
#include "boot/store.h"
#include "core/ep.h"
#include "core/req.h"
#include "p2p/tag.h"
#include "fabric/fabric.h"
#include "net/net.h"
#include "p2p/p2p.h"
#include "provider.h"
#include "util/param.h"
#include "util/util.h"
#include "core/ep_int.h"
#include "van/state_int.h"
#include "van/van_int.h"

#define HOST "127.0.0.1"

/* A bound van with its port. */
struct node {
	ps_comm_van_t van;
	int port;
};

static void node_up(struct node *n, int id)
{
	ck_assert_int_eq(ps_comm_van_create(&n->van), 0);
	ck_assert_int_eq(ps_comm_van_bind(n->van, HOST, 0, 1, &n->port), 0);
	ck_assert_int_gt(n->port, 0);
	ck_assert_int_eq(ps_comm_van_set_id(n->van, id), 0);
}

/* Send meta "tag" plus segments, from static or long-lived buffers. */
static void send_text(struct node *from, int to, const char *meta,
		      const ps_comm_van_seg_t *segs, size_t nseg)
{
	ck_assert_int_eq(ps_comm_van_send(from->van, to, meta, strlen(meta),
					  segs, nseg, NULL, NULL), 0);
}

/* Receive one message and check its meta text and sender. */
static void expect(struct node *at, int sender, const char *meta,
		   ps_comm_van_msg_t *m)
{
	ck_assert_int_eq(ps_comm_van_recv(at->van, m), 0);
	ck_assert_int_eq(m->sender, sender);
	ck_assert_uint_eq(m->meta_len, strlen(meta));
	ck_assert(memcmp(m->meta, meta, m->meta_len) == 0);
}

/* Pass one message, meta "meta", from node from_id to to_id. */
static void relay(struct node *from, int from_id, struct node *to, int to_id,
		  const char *meta)
{
	ps_comm_van_msg_t m;

	send_text(from, to_id, meta, NULL, 0);
	expect(to, from_id, meta, &m);
	ps_comm_van_msg_release(&m);
}

/* Connect node from_id to to_id and pass one message, meta "meta". */
static void say_hello(struct node *from, int from_id, struct node *to,
		      int to_id, const char *meta)
{
	ck_assert_int_eq(ps_comm_van_connect(from->van, to_id, HOST, to->port),
			 0);
	relay(from, from_id, to, to_id, meta);
}

/* Pseudo-random bytes from seed. */
static void fill(uint8_t *p, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

/* A send's done: it must succeed; done_calls counts them. */
static int done_calls;

static void count_done(void *arg, int err)
{
	(void)arg;
	ck_assert_int_eq(err, 0);
	__atomic_add_fetch(&done_calls, 1, __ATOMIC_RELAXED);
}

/*
 * m's segments: 0 B, then 1 B holding `one`, then big bytes equal to
 * want.
 */
static void expect_three_segs(const ps_comm_van_msg_t *m, uint8_t one,
			      const uint8_t *want, size_t big)
{
	ck_assert_uint_eq(m->nseg, 3);
	ck_assert_uint_eq(m->segs[0].len, 0);
	ck_assert_uint_eq(m->segs[1].len, 1);
	ck_assert_uint_eq(((uint8_t *)m->segs[1].data)[0], one);
	ck_assert_uint_eq(m->segs[2].len, big);
	ck_assert(memcmp(m->segs[2].data, want, big) == 0);
}

/* ------------------------------------------------------------ frame */

START_TEST(test_frame_roundtrip)
{
	static char big[PSC_VAN_SEG_INLINE_MAX + 1];
	ps_comm_van_seg_t segs[4] = {{NULL, 0},
				     {"k", 1},
				     {NULL, (size_t)64 << 20},
				     {big, sizeof(big)}};
	uint8_t buf[PSC_VAN_FRAME_MAX];
	struct psc_van_frame f;
	char err[128];
	bool inl;
	size_t n = psc_van_frame_size(5, segs, 4, PSC_VAN_FRAME_MAX,
				      &inl);

	/* The 1-byte segment rides in the frame; the others do not. */
	ck_assert(inl);
	ck_assert_uint_eq(n, PSC_VAN_HDR + 4 * 8 + 5 + 1);
	psc_van_frame_encode(buf, 9, "hello", 5, inl, segs, 4,
			     PSC_VAN_FRAME_MAX);
	ck_assert_int_eq(psc_van_frame_decode(buf, n, &f, err, sizeof(err)),
			 0);
	ck_assert_int_eq(f.sender, 9);
	ck_assert_uint_eq(f.nseg, 4);
	for (uint32_t i = 0; i < 4; i++) {
		ck_assert_uint_eq(psc_van_frame_seg_len(&f, i), segs[i].len);
		ck_assert(psc_van_frame_seg_inline(&f, i) == (i == 1));
	}
	ck_assert(memcmp(f.meta, "hello", 5) == 0);
	ck_assert(f.segdata[0] == 'k');
	psc_van_frame_encode(buf, PS_COMM_VAN_NO_ID, "x", 1, true, NULL, 0,
			     PSC_VAN_FRAME_MAX);
	ck_assert_int_eq(psc_van_frame_decode(buf, PSC_VAN_HDR + 1, &f, err,
					      sizeof(err)), 0);
	ck_assert_int_eq(f.sender, PS_COMM_VAN_NO_ID);
	/* Too big a meta travels on its own, and so do its segments. */
	ck_assert_uint_eq(psc_van_frame_size(PSC_VAN_FRAME_MAX, segs, 2,
					     PSC_VAN_FRAME_MAX, &inl),
			  PSC_VAN_HDR + 2 * 8);
	ck_assert(!inl);
}
END_TEST

/*
 * The frame limit decides what rides inline: segments up to
 * PSC_VAN_SEG_INLINE_MAX while the frame has room, in order, and a meta
 * that does not fit the limit sends everything as pieces.
 */
START_TEST(test_frame_limit)
{
	static uint8_t a[4096], b[4096], c[PSC_VAN_SEG_INLINE_MAX];
	static uint8_t buf[PSC_VAN_FRAME_MAX];
	ps_comm_van_seg_t segs[3] = {{a, sizeof(a)}, {b, sizeof(b)},
				     {c, sizeof(c)}};
	size_t lim8 = PSC_VAN_FRAME_MIN, lim64 = PSC_VAN_FRAME_MAX, n;
	struct psc_van_frame f;
	char err[128];
	bool inl;

	memset(a, 1, sizeof(a));
	memset(b, 2, sizeof(b));
	memset(c, 3, sizeof(c));
	/* 8 KiB: the first 4 KiB segment fits, the second no longer does. */
	n = psc_van_frame_size(10, segs, 3, lim8, &inl);
	ck_assert(inl);
	ck_assert_uint_eq(n, PSC_VAN_HDR + 3 * 8 + 10 + sizeof(a));
	psc_van_frame_encode(buf, 1, "0123456789", 10, inl, segs, 3, lim8);
	ck_assert_int_eq(psc_van_frame_decode(buf, n, &f, err, sizeof(err)),
			 0);
	ck_assert(psc_van_frame_seg_inline(&f, 0));
	ck_assert(!psc_van_frame_seg_inline(&f, 1));
	ck_assert(!psc_van_frame_seg_inline(&f, 2));
	ck_assert(memcmp(f.segdata, a, sizeof(a)) == 0);
	/* 64 KiB: all three, the largest inline size included. */
	n = psc_van_frame_size(10, segs, 3, lim64, &inl);
	ck_assert_uint_eq(n, PSC_VAN_HDR + 3 * 8 + 10 + sizeof(a) + sizeof(b) +
				     sizeof(c));
	psc_van_frame_encode(buf, 1, "0123456789", 10, inl, segs, 3, lim64);
	ck_assert_int_eq(psc_van_frame_decode(buf, n, &f, err, sizeof(err)),
			 0);
	for (uint32_t i = 0; i < 3; i++)
		ck_assert(psc_van_frame_seg_inline(&f, i));
	ck_assert(memcmp(f.segdata + sizeof(a), b, sizeof(b)) == 0);
	ck_assert(memcmp(f.segdata + sizeof(a) + sizeof(b), c, sizeof(c)) ==
		  0);
	/* A meta that fills the limit leaves no room for any segment. */
	n = psc_van_frame_size(lim8 - PSC_VAN_HDR - 3 * 8, segs, 3, lim8,
			       &inl);
	ck_assert(inl);
	ck_assert_uint_eq(n, lim8);
	ck_assert_uint_eq(psc_van_frame_size(lim8, segs, 3, lim8, &inl),
			  PSC_VAN_HDR + 3 * 8);
	ck_assert(!inl);
}
END_TEST

/*
 * A frame's credit fields: a grant, a segment on credit and a credit
 * given back decode as written; a credit on an inline or empty segment,
 * two credit segments, and a grant with a zero field are refused.
 */
START_TEST(test_frame_credit)
{
	static uint8_t big[1 << 20];
	ps_comm_van_seg_t segs[3] = {{"k", 1}, {big, sizeof(big)},
				     {big, sizeof(big)}};
	uint8_t buf[256], bad[256];
	struct psc_van_frame f;
	char err[128];
	bool inl;
	size_t n = psc_van_frame_size(2, segs, 3, PSC_VAN_FRAME_MIN, &inl);

	psc_van_frame_encode(buf, 3, "kv", 2, inl, segs, 3, PSC_VAN_FRAME_MIN);
	ck_assert_int_eq(psc_van_frame_decode(buf, n, &f, err, sizeof(err)),
			 0);
	ck_assert_uint_eq(f.grant_id, 0);
	psc_van_frame_set_grant(buf, 7, 2, 262144, sizeof(big));
	psc_van_frame_set_credit(buf, 1);
	psc_van_frame_set_return(buf);
	ck_assert_int_eq(psc_van_frame_decode(buf, n, &f, err, sizeof(err)),
			 0);
	ck_assert_uint_eq(f.grant_id, 7);
	ck_assert_uint_eq(f.grant_slot, 2);
	ck_assert_uint_eq(f.grant_chunk, 262144);
	ck_assert_uint_eq(f.grant_len, sizeof(big));
	ck_assert(f.flags & PSC_VAN_F_RETURN);
	ck_assert(!psc_van_frame_seg_credit(&f, 0));
	ck_assert(psc_van_frame_seg_credit(&f, 1));
	ck_assert(!psc_van_frame_seg_credit(&f, 2));
	ck_assert_uint_eq(psc_van_frame_seg_len(&f, 1), sizeof(big));
	/* Two segments on credit. */
	memcpy(bad, buf, n);
	psc_van_frame_set_credit(bad, 2);
	ck_assert_int_eq(psc_van_frame_decode(bad, n, &f, err, sizeof(err)),
			 -EPROTO);
	/* The inline segment on credit. */
	psc_van_frame_encode(bad, 3, "kv", 2, inl, segs, 3, PSC_VAN_FRAME_MIN);
	psc_van_frame_set_credit(bad, 0);
	ck_assert_int_eq(psc_van_frame_decode(bad, n, &f, err, sizeof(err)),
			 -EPROTO);
	/* A grant with a zero slot, chunk or length. */
	for (int i = 0; i < 3; i++) {
		psc_van_frame_encode(bad, 3, "kv", 2, inl, segs, 3,
				     PSC_VAN_FRAME_MIN);
		psc_van_frame_set_grant(bad, 7, i == 0 ? 0 : 2,
					i == 1 ? 0 : 4096, i == 2 ? 0 : 8192);
		ck_assert_int_eq(psc_van_frame_decode(bad, n, &f, err,
						      sizeof(err)), -EPROTO);
	}
}
END_TEST

START_TEST(test_frame_refused)
{
	ps_comm_van_seg_t segs[1] = {{"1234567", 7}};
	uint8_t buf[64], bad[64];
	struct psc_van_frame f;
	char err[128];
	size_t n = PSC_VAN_HDR + 8 + 2 + 7;

	psc_van_frame_encode(buf, 1, "ab", 2, true, segs, 1,
			     PSC_VAN_FRAME_MIN);
	/* Every truncation and any extra byte. */
	for (size_t len = 0; len < n; len++)
		ck_assert_int_eq(psc_van_frame_decode(buf, len, &f, err,
						      sizeof(err)), -EPROTO);
	ck_assert_int_eq(psc_van_frame_decode(buf, n + 1, &f, err,
					      sizeof(err)), -EPROTO);
	/* Each header byte flipped: magic, version, flags, reserved, ids. */
	for (size_t i = 0; i < PSC_VAN_HDR; i++) {
		int rc;

		memcpy(bad, buf, n);
		bad[i] ^= 0x80;
		rc = psc_van_frame_decode(bad, n, &f, err, sizeof(err));
		/* The sender's low bytes and a meta length change are legal. */
		if (i >= 9 && i < 12)
			continue;
		ck_assert_msg(rc == -EPROTO, "byte %zu accepted", i);
	}
	/* Too many segments. */
	memcpy(bad, buf, n);
	psc_be_put(bad + 16, PSC_VAN_MAX_SEGS + 1, 4);
	ck_assert_int_eq(psc_van_frame_decode(bad, n, &f, err, sizeof(err)),
			 -EPROTO);
	/* An inline segment without an inline meta, or too long to be one. */
	memcpy(bad, buf, n);
	bad[5] = 0;
	ck_assert_int_eq(psc_van_frame_decode(bad, n - 2, &f, err,
					      sizeof(err)), -EPROTO);
	memcpy(bad, buf, n);
	psc_be_put(bad + PSC_VAN_HDR, PSC_VAN_SEG_IN_FRAME |
				      (PSC_VAN_SEG_INLINE_MAX + 1), 8);
	ck_assert_int_eq(psc_van_frame_decode(bad, PSC_VAN_HDR + 8 + 2 +
						  PSC_VAN_SEG_INLINE_MAX + 1,
					      &f, err, sizeof(err)), -EPROTO);
	/* A goodbye carries no message; an empty one decodes. */
	memcpy(bad, buf, n);
	bad[5] |= PSC_VAN_F_BYE;
	ck_assert_int_eq(psc_van_frame_decode(bad, n, &f, err, sizeof(err)),
			 -EPROTO);
	psc_van_frame_encode(bad, 1, NULL, 0, true, NULL, 0, PSC_VAN_FRAME_MIN);
	psc_van_frame_set_bye(bad);
	ck_assert_int_eq(psc_van_frame_decode(bad, PSC_VAN_HDR, &f, err,
					      sizeof(err)), 0);
	ck_assert(f.flags & PSC_VAN_F_BYE);
	ck_assert_int_eq(f.sender, 1);
}
END_TEST

/* ------------------------------------------------------------- bind */

START_TEST(test_bind_ports)
{
	struct node a, b;
	ps_comm_van_t c;
	int port = -1, again = -1;

	node_up(&a, 1);
	ck_assert_int_eq(ps_comm_van_create(&c), 0);
	/* The scheduler insists on its port: taken, it fails. */
	ck_assert_int_ne(ps_comm_van_bind(c, HOST, a.port, 0, &port), 0);
	/* Others take another one. */
	ck_assert_int_eq(ps_comm_van_bind(c, HOST, a.port, 3, &port), 0);
	ck_assert_int_ne(port, a.port);
	ck_assert_int_eq(ps_comm_van_bind(c, HOST, 0, 3, &again),
			 PS_COMM_ERR_ARG);
	ps_comm_van_destroy(c);
	/* A free port asked for exactly is the port served. */
	ck_assert_int_eq(ps_comm_van_create(&b.van), 0);
	ck_assert_int_eq(ps_comm_van_bind(b.van, HOST, port, 0, &b.port), 0);
	ck_assert_int_eq(b.port, port);
	ps_comm_van_destroy(b.van);
	ps_comm_van_destroy(a.van);
}
END_TEST

/*
 * The listening TCP sockets of this process (from /proc/self/net/tcp and
 * tcp6, matched to its descriptors), counted by whether they are bound
 * to the wildcard address.
 */
static void count_listeners(int *wild, int *total)
{
	const char *tables[] = {"/proc/self/net/tcp", "/proc/self/net/tcp6"};
	char line[512], link[64], want[64];

	*wild = *total = 0;
	for (size_t t = 0; t < 2; t++) {
		FILE *f = fopen(tables[t], "r");

		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			char local[64], st[8];
			unsigned long inode;
			bool mine = false, any = true;

			if (sscanf(line, " %*s %63s %*s %7s %*s %*s %*s %*s %*s "
				   "%lu", local, st, &inode) != 3 ||
			    strcmp(st, "0A") != 0)
				continue;
			snprintf(want, sizeof(want), "socket:[%lu]", inode);
			for (int fd = 0; fd < 1024 && !mine; fd++) {
				char path[32];
				ssize_t n;

				snprintf(path, sizeof(path), "/proc/self/fd/%d",
					 fd);
				n = readlink(path, link, sizeof(link) - 1);
				if (n > 0) {
					link[n] = '\0';
					mine = strcmp(link, want) == 0;
				}
			}
			if (!mine)
				continue;
			for (char *c = local; *c && *c != ':'; c++)
				any &= *c == '0';
			*wild += any;
			(*total)++;
		}
		fclose(f);
	}
}

/* Whether a TCP connect to ip:port is accepted. */
static bool accepts(const char *ip, int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	bool ok;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(inet_pton(AF_INET, ip, &a.sin_addr), 1);
	ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

/*
 * No port listens wider than asked: a van bound to an address listens
 * there only, its provider's ports included (127.0.0.2 is another
 * address of the loopback interface); the wildcard address is taken when
 * asked for; a host that is not this machine's, or not a host, is a bad
 * argument.
 */
START_TEST(test_bind_address)
{
	struct node a, b;
	ps_comm_van_t w;
	int wild, total, port;

	node_up(&a, 1);
	ck_assert_int_eq(ps_comm_van_create(&b.van), 0);
	ck_assert_int_eq(ps_comm_van_bind(b.van, "127.0.0.2", 0, 1, &b.port),
			 0);
	ck_assert_int_eq(ps_comm_van_set_id(b.van, 8), 0);
	/* Traffic both ways, so that the provider has opened its ports. */
	ck_assert_int_eq(ps_comm_van_connect(a.van, 8, "127.0.0.2", b.port),
			 0);
	ck_assert_int_eq(ps_comm_van_connect(b.van, 1, HOST, a.port), 0);
	relay(&a, 1, &b, 8, "a to b");
	relay(&b, 8, &a, 1, "b to a");
	ck_assert(accepts(HOST, a.port));
	ck_assert(!accepts("127.0.0.2", a.port));
	ck_assert(accepts("127.0.0.2", b.port));
	ck_assert(!accepts(HOST, b.port));
	count_listeners(&wild, &total);
	ck_assert_int_ge(total, 2);
	ck_assert_int_eq(wild, 0);

	ck_assert_int_eq(ps_comm_van_create(&w), 0);
	ck_assert_int_eq(ps_comm_van_bind(w, "0.0.0.0", 0, 1, &port), 0);
	ck_assert(accepts(HOST, port) && accepts("127.0.0.2", port));
	count_listeners(&wild, &total);
	ck_assert_int_ge(wild, 1);
	ps_comm_van_destroy(w);

	/* TEST-NET-1 (RFC 5737) is nobody's address. */
	ck_assert_int_eq(ps_comm_van_create(&w), 0);
	ck_assert_int_eq(ps_comm_van_bind(w, "192.0.2.1", 0, 1, &port),
			 PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_van_bind(w, "no-such-host.invalid", 0, 1,
					  &port),
			 PS_COMM_ERR_ARG);
	/* Neither left the van bound. */
	ck_assert_int_eq(ps_comm_van_bind(w, HOST, 0, 1, &port), 0);
	ps_comm_van_destroy(w);
	ps_comm_van_destroy(b.van);
	ps_comm_van_destroy(a.van);
}
END_TEST

/* --------------------------------------------- self, reconnect, no id */

START_TEST(test_self_and_reconnect)
{
	struct node a, b;
	ps_comm_van_msg_t m;
	char meta[32];

	node_up(&a, 1);
	node_up(&b, 8);
	ck_assert_int_eq(ps_comm_van_connect(a.van, 1, HOST, a.port), 0);
	send_text(&a, 1, "to myself", NULL, 0);
	expect(&a, 1, "to myself", &m);
	ck_assert_uint_eq(m.nseg, 0);
	ps_comm_van_msg_release(&m);
	/* Sends to a node never connected fail and do not break the van. */
	ck_assert_int_eq(ps_comm_van_send(a.van, 8, "x", 1, NULL, 0, NULL,
					  NULL), PS_COMM_ERR_PEER);
	for (int i = 0; i < 20; i++) {
		ck_assert_int_eq(ps_comm_van_connect(a.van, 8, HOST, b.port), 0);
		ck_assert_int_eq(ps_comm_van_connect(b.van, 1, HOST, a.port), 0);
		snprintf(meta, sizeof(meta), "round %d", i);
		send_text(&a, 8, meta, NULL, 0);
		expect(&b, 1, meta, &m);
		ps_comm_van_msg_release(&m);
		send_text(&b, 1, meta, NULL, 0);
		expect(&a, 8, meta, &m);
		ps_comm_van_msg_release(&m);
	}
	ps_comm_van_destroy(b.van);
	ps_comm_van_destroy(a.van);
}
END_TEST

/*
 * Every call that could carry a message out of a's endpoint, counted:
 * the tagged and untagged sends that pscomm's posts use.
 */
static struct fi_ops_tagged *real_tagged, counted_tagged;
static struct fi_ops_msg *real_msg, counted_msg;
static int fabric_sends;

static void sent_one(void)
{
	__atomic_add_fetch(&fabric_sends, 1, __ATOMIC_RELAXED);
}

static ssize_t c_tsend(struct fid_ep *ep, const void *buf, size_t len,
		       void *desc, fi_addr_t dest, uint64_t tag, void *ctx)
{
	sent_one();
	return real_tagged->send(ep, buf, len, desc, dest, tag, ctx);
}

static ssize_t c_tsenddata(struct fid_ep *ep, const void *buf, size_t len,
			   void *desc, uint64_t data, fi_addr_t dest,
			   uint64_t tag, void *ctx)
{
	sent_one();
	return real_tagged->senddata(ep, buf, len, desc, data, dest, tag, ctx);
}

static ssize_t c_tinject(struct fid_ep *ep, const void *buf, size_t len,
			 fi_addr_t dest, uint64_t tag)
{
	sent_one();
	return real_tagged->inject(ep, buf, len, dest, tag);
}

static ssize_t c_tinjectdata(struct fid_ep *ep, const void *buf, size_t len,
			     uint64_t data, fi_addr_t dest, uint64_t tag)
{
	sent_one();
	return real_tagged->injectdata(ep, buf, len, data, dest, tag);
}

static ssize_t c_sendv(struct fid_ep *ep, const struct iovec *iov,
		       void **desc, size_t n, fi_addr_t dest, void *ctx)
{
	sent_one();
	return real_msg->sendv(ep, iov, desc, n, dest, ctx);
}

static ssize_t c_senddata(struct fid_ep *ep, const void *buf, size_t len,
			  void *desc, uint64_t data, fi_addr_t dest, void *ctx)
{
	sent_one();
	return real_msg->senddata(ep, buf, len, desc, data, dest, ctx);
}

static ssize_t c_inject(struct fid_ep *ep, const void *buf, size_t len,
			fi_addr_t dest)
{
	sent_one();
	return real_msg->inject(ep, buf, len, dest);
}

static ssize_t c_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			    uint64_t data, fi_addr_t dest)
{
	sent_one();
	return real_msg->injectdata(ep, buf, len, data, dest);
}

/*
 * Count the sends of the endpoint van v reaches node id on (on), or stop
 * counting (off).
 */
static void count_sends(ps_comm_van_t v, int id, bool on)
{
	struct fid_ep *ep = psc_van_peer_ep(v, id)->fab.ep;

	if (!on) {
		ep->tagged = real_tagged;
		ep->msg = real_msg;
		return;
	}
	real_tagged = ep->tagged;
	real_msg = ep->msg;
	counted_tagged = *real_tagged;
	counted_msg = *real_msg;
	counted_tagged.send = c_tsend;
	counted_tagged.senddata = c_tsenddata;
	counted_tagged.inject = c_tinject;
	counted_tagged.injectdata = c_tinjectdata;
	counted_msg.sendv = c_sendv;
	counted_msg.senddata = c_senddata;
	counted_msg.inject = c_inject;
	counted_msg.injectdata = c_injectdata;
	ep->tagged = &counted_tagged;
	ep->msg = &counted_msg;
	fabric_sends = 0;
}

/* A receiving thread like ps-lite's: it ends on a "terminate". */
struct self_rx {
	struct node *n;
	int got, rc;
	bool terminated;
};

static void *self_rx_loop(void *arg)
{
	struct self_rx *r = arg;
	ps_comm_van_msg_t m;

	while ((r->rc = ps_comm_van_recv(r->n->van, &m)) == 0) {
		bool end = m.sender == 1 && m.meta_len == 9 &&
			   memcmp(m.meta, "terminate", 9) == 0;

		ps_comm_van_msg_release(&m);
		r->got++;
		if (end) {
			r->terminated = true;
			break;
		}
	}
	return NULL;
}

/*
 * A message to the van itself never enters the fabric, in normal
 * operation and in ps-lite's stop sequence (its peers said goodbye, then
 * a TERMINATE to itself ends its receiving thread): no send call reaches
 * the provider, the buffers go back (done) before the send returns, and
 * the receiver gets every segment, bit for bit and in order. A message
 * still queued at stop is released with the van.
 */
START_TEST(test_self_local)
{
	size_t big = (size_t)1 << 20;
	uint8_t one = 0x5a, *data = malloc(big), *want = malloc(big);
	ps_comm_van_seg_t segs[3] = {{NULL, 0}, {&one, 1}, {data, big}};
	struct self_rx rx;
	struct node a, b;
	ps_comm_van_msg_t m;
	pthread_t t;

	ck_assert(data && want);
	fill(data, big, 3);
	memcpy(want, data, big);
	node_up(&a, 1);
	node_up(&b, 8);
	ck_assert_int_eq(ps_comm_van_connect(a.van, 1, HOST, a.port), 0);
	say_hello(&a, 1, &b, 8, "hello");
	say_hello(&b, 8, &a, 1, "answer");
	count_sends(a.van, 1, true);
	done_calls = 0;
	ck_assert_int_eq(ps_comm_van_send(a.van, 1, "first", 5, NULL, 0,
					  count_done, NULL), 0);
	ck_assert_int_eq(ps_comm_van_send(a.van, 1, "segs", 4, segs, 3,
					  count_done, NULL), 0);
	ck_assert_int_eq(fabric_sends, 0);
	/* Copied: the caller has its buffers back already. */
	ck_assert_int_eq(done_calls, 2);
	memset(data, 0, big);
	one = 0;
	expect(&a, 1, "first", &m);
	ck_assert_uint_eq(m.nseg, 0);
	ps_comm_van_msg_release(&m);
	expect(&a, 1, "segs", &m);
	expect_three_segs(&m, 0x5a, want, big);
	ps_comm_van_msg_release(&m);
	/* ps-lite's stop: the peer leaves, then TERMINATE to oneself. */
	rx = (struct self_rx){&a, 0, 0, false};
	ck_assert_int_eq(pthread_create(&t, NULL, self_rx_loop, &rx), 0);
	ps_comm_van_destroy(b.van);
	send_text(&a, 1, "terminate", NULL, 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert(rx.terminated);
	ck_assert_int_eq(rx.got, 1);
	send_text(&a, 1, "never received", NULL, 0);
	ck_assert_int_eq(fabric_sends, 0);
	count_sends(a.van, 1, false);
	ck_assert_int_eq(ps_comm_van_stop(a.van), 0);
	ps_comm_van_destroy(a.van);
	free(data);
	free(want);
}
END_TEST

START_TEST(test_no_id_yet)
{
	struct node s, w;
	ps_comm_van_msg_t m;

	node_up(&s, 1);
	node_up(&w, PS_COMM_VAN_NO_ID);
	ck_assert_int_eq(ps_comm_van_connect(w.van, 1, HOST, s.port), 0);
	send_text(&w, 1, "add me", NULL, 0);
	expect(&s, PS_COMM_VAN_NO_ID, "add me", &m);
	ps_comm_van_msg_release(&m);
	ck_assert_int_eq(ps_comm_van_set_id(w.van, 9), 0);
	send_text(&w, 1, "now 9", NULL, 0);
	expect(&s, 9, "now 9", &m);
	ps_comm_van_msg_release(&m);
	ps_comm_van_destroy(w.van);
	ps_comm_van_destroy(s.van);
}
END_TEST

/* ---------------------------------------------------------- segments */

START_TEST(test_segment_sizes)
{
	size_t big = (size_t)64 << 20;
	uint8_t one = 0xa5, *data = malloc(big), *want = malloc(big);
	ps_comm_van_seg_t segs[3] = {{NULL, 0}, {&one, 1}, {data, big}};
	char meta[PSC_VAN_FRAME_MAX + 100];
	struct node a, b;
	ps_comm_van_msg_t m;

	ck_assert(data && want);
	fill(data, big, 7);
	memcpy(want, data, big);
	memset(meta, 'm', sizeof(meta) - 1);
	meta[sizeof(meta) - 1] = '\0';
	node_up(&a, 9);
	node_up(&b, 8);
	ck_assert_int_eq(ps_comm_van_connect(a.van, 8, HOST, b.port), 0);
	done_calls = 0;
	for (int round = 0; round < 2; round++) {
		/* The second round's meta is too big for the frame. */
		const char *mt = round ? meta : "segs";

		ck_assert_int_eq(ps_comm_van_send(a.van, 8, mt, strlen(mt), segs,
						  3, count_done, NULL), 0);
		expect(&b, 9, mt, &m);
		expect_three_segs(&m, 0xa5, want, big);
		/* Segments are released one by one, in any order. */
		ps_comm_van_free(m.segs[2].data);
		m.segs[2].data = NULL;
		ps_comm_van_msg_release(&m);
	}
	/* Sends are handed back by stop at the latest. */
	ps_comm_van_stop(a.van);
	ck_assert_int_eq(done_calls, 2);
	ps_comm_van_destroy(a.van);
	ps_comm_van_destroy(b.van);
	free(data);
	free(want);
}
END_TEST

/*
 * Whether v sends segments of len bytes to node id on credit where it can
 * (net, unless PS_COMM_MAX_MSG_SIZE makes the largest credit smaller).
 */
static bool credit_applies(ps_comm_van_t v, int id, size_t len)
{
	return len > v->credit_min && len <= v->credit_max &&
	       psc_van_peer_ep(v, id) == psc_node_chan_ep(v->chan, 0);
}

/*
 * One segment of len bytes filled from seed, from node from_id to to_id,
 * behind an 8-byte key; the receiver checks every byte.
 */
static void pass_seg(struct node *from, int from_id, struct node *to,
		     int to_id, uint8_t *buf, uint8_t *want, size_t len,
		     unsigned seed)
{
	uint64_t key = seed;
	ps_comm_van_seg_t segs[2] = {{&key, sizeof(key)}, {buf, len}};
	ps_comm_van_msg_t m;

	fill(buf, len, seed);
	memcpy(want, buf, len);
	ck_assert_int_eq(ps_comm_van_send(from->van, to_id, "kv", 2, segs, 2,
					  count_done, NULL), 0);
	expect(to, from_id, "kv", &m);
	ck_assert_uint_eq(m.nseg, 2);
	ck_assert_uint_eq(m.segs[0].len, sizeof(key));
	ck_assert(memcmp(m.segs[0].data, &key, sizeof(key)) == 0);
	ck_assert_uint_eq(m.segs[1].len, len);
	ck_assert_msg(memcmp(m.segs[1].data, want, len) == 0,
		      "segment of %zu bytes, seed %u, differs", len, seed);
	ps_comm_van_msg_release(&m);
}

/*
 * Credit (lib/van/credit.c): nodes that trade large segments of one size
 * send them on each other's credit, without the go-ahead, where the
 * network path needs one (net): both ways, through a change of size
 * (the credit given back and granted again) and a segment too large for
 * any credit, every byte checked. Elsewhere nothing goes on credit.
 * After stop no credit holds a buffer.
 */
START_TEST(test_credit)
{
	static const size_t sizes[] = {1 << 20, 1 << 20, 1 << 20, 1 << 20,
				       768 << 10, 768 << 10, 768 << 10,
				       1 << 20, 1 << 20, 64 << 20, 1 << 20};
	size_t n = sizeof(sizes) / sizeof(sizes[0]);
	uint8_t *buf = malloc(64 << 20), *want = malloc(64 << 20);
	struct node a, b;
	bool applies;

	ck_assert(buf && want);
	node_up(&a, 9);
	node_up(&b, 8);
	ck_assert_int_eq(ps_comm_van_connect(a.van, 8, HOST, b.port), 0);
	ck_assert_int_eq(ps_comm_van_connect(b.van, 9, HOST, a.port), 0);
	applies = credit_applies(a.van, 8, 768 << 10) &&
		  credit_applies(a.van, 8, 1 << 20) &&
		  credit_applies(b.van, 9, 768 << 10) &&
		  credit_applies(b.van, 9, 1 << 20);
	done_calls = 0;
	for (size_t r = 0; r < n; r++) {
		pass_seg(&a, 9, &b, 8, buf, want, sizes[r], (unsigned)r);
		pass_seg(&b, 8, &a, 9, buf, want, sizes[r],
			 (unsigned)(100 + r));
	}
	/*
	 * Each way the first segment of a size waits for the go-ahead, and
	 * so does the one after the change (the credit's grant travels in
	 * the answer), and the 64 MiB one goes on none: 3 + 2 + 2.
	 */
	ck_assert_uint_eq(a.van->credit_sent, b.van->credit_recvd);
	ck_assert_uint_eq(b.van->credit_sent, a.van->credit_recvd);
	if (applies) {
		ck_assert_uint_eq(a.van->credit_sent, 7);
		ck_assert_uint_eq(b.van->credit_sent, 7);
	} else {
		ck_assert_uint_eq(a.van->credit_sent + b.van->credit_sent, 0);
	}
	/* b first: its last send is done once a's endpoint has it. */
	ps_comm_van_stop(b.van);
	ck_assert_uint_eq(b.van->credit_bytes, 0);
	ps_comm_van_destroy(b.van);
	ps_comm_van_stop(a.van);
	ck_assert_int_eq(done_calls, 2 * (int)n);
	ck_assert_uint_eq(a.van->credit_bytes, 0);
	ps_comm_van_destroy(a.van);
	free(buf);
	free(want);
}
END_TEST

/*
 * Which fabric carries a node's messages. With FI_PROVIDER naming one
 * provider, that one for every node. Without it, shm to a node of this
 * node (PS_COMM_NODE_ID equal) and the network provider, never shm, to
 * a node of another; every path carries segments of 0, 1 and 1 MiB + 3
 * bytes exactly, both ways.
 */
START_TEST(test_paths)
{
	const char *fp = getenv("FI_PROVIDER");
	size_t big = ((size_t)1 << 20) + 3;
	uint8_t one = 0x5a, *data = malloc(big), *want = malloc(big);
	ps_comm_van_seg_t segs[3] = {{NULL, 0}, {&one, 1}, {data, big}};
	struct node a, b, c;
	struct node *to[2] = {&b, &c};
	ps_comm_van_msg_t m;
	const char *prov;

	ck_assert(data && want);
	fill(data, big, 3);
	memcpy(want, data, big);
	setenv("PS_COMM_NODE_ID", "van-node-one", 1);
	node_up(&a, 8);
	node_up(&b, 9);
	setenv("PS_COMM_NODE_ID", "van-node-two", 1);
	node_up(&c, 10);
	unsetenv("PS_COMM_NODE_ID");
	prov = ps_comm_van_provider(a.van);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(ps_comm_van_connect(a.van, 9 + i, HOST,
						     to[i]->port), 0);
		ck_assert_int_eq(ps_comm_van_connect(to[i]->van, 8, HOST,
						     a.port), 0);
	}
	ck_assert_ptr_null(psc_van_peer_ep(a.van, 11));
	if (fp && *fp) {
		ck_assert_str_eq(psc_ep_provider(psc_van_peer_ep(a.van, 9)), prov);
		ck_assert_str_eq(psc_ep_provider(psc_van_peer_ep(a.van, 10)), prov);
	} else {
		ck_assert_str_eq(psc_ep_provider(psc_van_peer_ep(a.van, 9)), "shm");
		ck_assert_str_eq(psc_ep_provider(psc_van_peer_ep(b.van, 8)), "shm");
		ck_assert_str_ne(prov, "shm");
		ck_assert_str_eq(psc_ep_provider(psc_van_peer_ep(a.van, 10)), prov);
		ck_assert_str_eq(psc_ep_provider(psc_van_peer_ep(c.van, 8)), prov);
	}
	for (int i = 0; i < 2; i++) {
		send_text(&a, 9 + i, "out", segs, 3);
		expect(to[i], 8, "out", &m);
		expect_three_segs(&m, 0x5a, want, big);
		ps_comm_van_msg_release(&m);
		send_text(to[i], 8, "back", segs, 3);
		expect(&a, 9 + i, "back", &m);
		expect_three_segs(&m, 0x5a, want, big);
		ps_comm_van_msg_release(&m);
	}
	ps_comm_van_destroy(c.van);
	ps_comm_van_destroy(b.van);
	ps_comm_van_destroy(a.van);
	free(data);
	free(want);
}
END_TEST

/* ------------------------------------------------ provider contract */

/*
 * A CQ read that hands out one segment receive's completion twice in a
 * row, as net in libfabric 1.17 was seen to do (doc/fabrics.md): armed,
 * the next read that returns the receive of a segment (at least
 * TWICE_MIN bytes, so not a frame) or of one of its chunks returns a
 * copy of it right behind it. The van frees neither before its
 * receiving thread takes the message, after this read.
 */
#define TWICE_MIN ((size_t)64 << 10)
static ssize_t (*real_read)(struct fid_cq *, void *, size_t);
static struct fi_ops_cq twice_ops;
static int twice_armed;

static ssize_t read_twice(struct fid_cq *cq, void *buf, size_t count)
{
	struct fi_cq_tagged_entry *ev = buf;
	/* Armed, leave room for the copy. */
	ssize_t n = real_read(cq, buf, twice_armed && count > 1 ? count - 1
							     : count);

	for (ssize_t i = 0; twice_armed && i < n && (size_t)n < count; i++) {
		const struct ps_comm_request *r =
			ev[i].op_context
				? psc_container_of(ev[i].op_context,
						   struct ps_comm_request, fctx)
				: NULL;

		if (!r || r->kind != PSC_REQ_RECV ||
		    (!r->parent && r->len < TWICE_MIN) ||
		    (r->parent ? r->parent : r)->abandoned)
			continue;
		memmove(&ev[i + 1], &ev[i], (size_t)(n - i) * sizeof(*ev));
		twice_armed = 0;
		return n + 1;
	}
	return n;
}

START_TEST(test_completion_twice)
{
	size_t big = (size_t)4 << 20;
	uint8_t *data = calloc(1, big);
	ps_comm_van_seg_t seg = {data, big};
	struct node a, b;
	ps_comm_van_msg_t m;
	struct fid_cq *cq;
	struct fi_ops_cq *orig;

	ck_assert(data);
	node_up(&a, 9);
	node_up(&b, 8);
	say_hello(&a, 9, &b, 8, "first");
	/* b's endpoint for node 9 is the one 9's messages arrive on. */
	ck_assert_int_eq(ps_comm_van_connect(b.van, 9, HOST, a.port), 0);
	cq = psc_van_peer_ep(b.van, 9)->fab.cq;
	orig = cq->ops;
	twice_ops = *orig;
	real_read = orig->read;
	twice_ops.read = read_twice;
	twice_armed = 1;
	cq->ops = &twice_ops;
	ck_assert_int_eq(ps_comm_van_send(a.van, 8, "big", 3, &seg, 1, NULL,
					  NULL), 0);
	/* The message is refused, not handed out, and so is what follows. */
	ck_assert_int_eq(ps_comm_van_recv(b.van, &m), PS_COMM_ERR_FABRIC);
	ck_assert_int_eq(twice_armed, 0);
	send_text(&a, 8, "later", NULL, 0);
	ck_assert_int_eq(ps_comm_van_recv(b.van, &m), PS_COMM_ERR_FABRIC);
	cq->ops = orig;
	ps_comm_van_stop(a.van);
	ps_comm_van_destroy(a.van);
	ps_comm_van_destroy(b.van);
	free(data);
}
END_TEST

/* ---------------------------------------------------------- threads */

#define NTHREADS 8
#define PER_THREAD 200

struct sender {
	struct node *from;
	int thread;
};

struct payload {
	uint32_t thread, seq;
	uint8_t bytes[300];
};

static void free_done(void *arg, int err)
{
	ck_assert_int_eq(err, 0);
	free(arg);
}

static void *send_many(void *arg)
{
	struct sender *s = arg;

	for (int i = 0; i < PER_THREAD; i++) {
		struct payload *p = malloc(sizeof(*p));
		ps_comm_van_seg_t segs[2];
		char meta[32];

		p->thread = (uint32_t)s->thread;
		p->seq = (uint32_t)i;
		fill(p->bytes, sizeof(p->bytes), (unsigned)(s->thread * 1000 + i));
		snprintf(meta, sizeof(meta), "%d/%d", s->thread, i);
		segs[0].data = p;
		segs[0].len = sizeof(*p);
		/* A larger piece now and then (rendezvous on rxm). */
		segs[1].data = p;
		segs[1].len = i % 10 == 0 ? sizeof(*p) : 8;
		/* meta is copied into the frame, so a stack buffer is fine. */
		ck_assert_int_eq(ps_comm_van_send(s->from->van, 8, meta,
						  strlen(meta), segs, 2,
						  free_done, p), 0);
	}
	return NULL;
}

START_TEST(test_eight_senders)
{
	struct node a, b;
	pthread_t t[NTHREADS];
	struct sender s[NTHREADS];
	int next[NTHREADS] = {0};
	uint8_t want[300];

	node_up(&a, 9);
	node_up(&b, 8);
	ck_assert_int_eq(ps_comm_van_connect(a.van, 8, HOST, b.port), 0);
	for (int i = 0; i < NTHREADS; i++) {
		s[i].from = &a;
		s[i].thread = i;
		pthread_create(&t[i], NULL, send_many, &s[i]);
	}
	for (int k = 0; k < NTHREADS * PER_THREAD; k++) {
		ps_comm_van_msg_t m;
		struct payload *p;
		char meta[32];

		ck_assert_int_eq(ps_comm_van_recv(b.van, &m), 0);
		ck_assert_uint_eq(m.nseg, 2);
		ck_assert_uint_eq(m.segs[0].len, sizeof(*p));
		p = m.segs[0].data;
		ck_assert_uint_lt(p->thread, NTHREADS);
		/* One sender's messages arrive in its order, whole. */
		ck_assert_uint_eq(p->seq, (uint32_t)next[p->thread]);
		snprintf(meta, sizeof(meta), "%u/%u", p->thread, p->seq);
		ck_assert_uint_eq(m.meta_len, strlen(meta));
		ck_assert(memcmp(m.meta, meta, m.meta_len) == 0);
		fill(want, sizeof(want), p->thread * 1000 + p->seq);
		ck_assert(memcmp(p->bytes, want, sizeof(want)) == 0);
		ck_assert_uint_eq(m.segs[1].len, p->seq % 10 == 0 ? sizeof(*p)
								  : 8);
		ck_assert(memcmp(m.segs[1].data, p, m.segs[1].len) == 0);
		next[p->thread]++;
		ps_comm_van_msg_release(&m);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	ps_comm_van_destroy(a.van);
	ps_comm_van_destroy(b.van);
}
END_TEST

/* ------------------------------------------------------ stop, start */

START_TEST(test_stop_start)
{
	struct node a, b;
	ps_comm_van_msg_t m;

	node_up(&a, 1);
	node_up(&b, 8);
	for (int round = 0; round < 3; round++) {
		ck_assert_int_eq(ps_comm_van_connect(a.van, 8, HOST, b.port), 0);
		ck_assert_int_eq(ps_comm_van_connect(a.van, 1, HOST, a.port), 0);
		send_text(&a, 8, "hello", NULL, 0);
		expect(&b, 1, "hello", &m);
		ps_comm_van_msg_release(&m);
		/* Terminate as ps-lite does: a message to oneself. */
		send_text(&a, 1, "terminate", NULL, 0);
		expect(&a, 1, "terminate", &m);
		ps_comm_van_msg_release(&m);
		ck_assert_int_eq(ps_comm_van_stop(a.van), 0);
		ck_assert_int_eq(ps_comm_van_send(a.van, 8, "x", 1, NULL, 0,
						  NULL, NULL), PS_COMM_ERR_ARG);
		ck_assert_int_eq(ps_comm_van_bind(a.van, HOST, a.port, 5,
						  &a.port), 0);
	}
	ps_comm_van_destroy(a.van);
	ps_comm_van_destroy(b.van);
}
END_TEST

/* -------------------------------------------------------- bad input */

/*
 * A raw node channel (p2p/node.h, as a van opens it) that sends crafted
 * frames to the van at port p.
 */
static void send_raw(int port, bool valid_slot, const void *frame,
		     size_t len, const char *provider)
{
	struct psc_params params;
	struct psc_node_chan_config cfg = {.params = &params};
	struct psc_node_chan *n;
	struct psc_node_names names;
	struct psc_node_addr at;
	struct psc_auth_key key;
	struct psc_van_addr a;
	ps_comm_request_t r;
	char err[512];

	ck_assert_int_eq(psc_params_load(&params, err, sizeof(err)), 0);
	ck_assert_int_eq(psc_node_chan_open(&n, &cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(psc_auth_key_load(&key, params.job_key, err,
					   sizeof(err)), 0);
	psc_node_chan_names(n, &names);
	ck_assert_int_eq(psc_van_fetch(HOST, port, &key, &names, provider,
				       psc_now() + 10, &a, err, sizeof(err)),
			 0);
	psc_van_addr_names(&a, provider, &names);
	ck_assert_int_eq(psc_node_chan_join(n, &names, &at), 0);
	ck_assert_int_eq(psc_node_chan_send(n, &at,
					    valid_slot ? a.slot
						       : PSC_VAN_SLOT_MAX - 3,
					    PSC_VAN_TAG_FRAME, frame, len, &r,
					    err, sizeof(err)),
			 0);
	ck_assert_int_eq(psc_wait(&r, NULL, psc_now() + 10, NULL), 0);
	psc_node_chan_close(n);
}

START_TEST(test_bad_frames)
{
	uint8_t frame[PSC_VAN_HDR + 4];
	struct node a, b;
	ps_comm_van_msg_t m;

	node_up(&a, 8);
	node_up(&b, 9);
	ck_assert_int_eq(ps_comm_van_connect(b.van, 8, HOST, a.port), 0);
	/* Garbage from a known slot, then a good frame from an unknown one. */
	memset(frame, 0xee, sizeof(frame));
	send_raw(a.port, true, frame, sizeof(frame),
		 ps_comm_van_provider(a.van));
	psc_van_frame_encode(frame, 3, "evil", 4, true, NULL, 0,
			     PSC_VAN_FRAME_MIN);
	send_raw(a.port, false, frame, PSC_VAN_HDR + 4,
		 ps_comm_van_provider(a.van));
	/* Both were dropped: the next message is the real one. */
	send_text(&b, 8, "still here", NULL, 0);
	expect(&a, 9, "still here", &m);
	ps_comm_van_msg_release(&m);
	ps_comm_van_destroy(b.van);
	ps_comm_van_destroy(a.van);
}
END_TEST

/* A fetcher with another job key is refused, and so is a van with one. */
START_TEST(test_wrong_key)
{
	struct psc_auth_key other;
	struct psc_van_addr got;
	struct node a, b;
	char err[512];

	setenv("PS_COMM_JOB_KEY", "van-key-one", 1);
	node_up(&a, 8);
	setenv("PS_COMM_JOB_KEY", "van-key-two", 1);
	node_up(&b, 9);
	unsetenv("PS_COMM_JOB_KEY");
	ck_assert_int_ne(ps_comm_van_connect(b.van, 8, HOST, a.port), 0);
	ck_assert_int_eq(psc_auth_key_load(&other, "van-key-two", err,
					   sizeof(err)), 0);
	ck_assert_int_eq(psc_van_fetch(HOST, a.port, &other, NULL,
				       ps_comm_van_provider(a.van),
				       psc_now() + 5, &got, err, sizeof(err)),
			 -EBADE);
	ck_assert_msg(strstr(err, "PS_COMM_JOB_KEY") != NULL, "%s", err);
	ck_assert_int_eq(psc_auth_key_load(&other, "van-key-one", err,
					   sizeof(err)), 0);
	ck_assert_int_eq(psc_van_fetch(HOST, a.port, &other, NULL,
				       ps_comm_van_provider(a.van),
				       psc_now() + 5, &got, err, sizeof(err)),
			 0);
	ps_comm_van_destroy(b.van);
	ps_comm_van_destroy(a.van);
}
END_TEST

/*
 * A van with room for one stranger drops the oldest when the next comes:
 * 16 fetches at once each get dropped, before or after their proof, and
 * must ask again rather than report another key (every fetch but a few
 * failed so, "refused this node's proof", before they did).
 */
#define CROWD 16

struct fetcher {
	int port;
	const struct psc_auth_key *key;
	const char *provider;
	int rc;
	char err[512];
};

static void *fetch_one(void *arg)
{
	struct fetcher *f = arg;
	struct psc_van_addr got;

	f->rc = psc_van_fetch(HOST, f->port, f->key, NULL, f->provider,
			      psc_now() + 30, &got, f->err, sizeof(f->err));
	return NULL;
}

START_TEST(test_fetch_crowd)
{
	struct fetcher f[CROWD];
	pthread_t t[CROWD];
	struct psc_auth_key key;
	struct node a;
	char err[512];

	setenv("PS_COMM_JOB_KEY", "van-key-one", 1);
	setenv("PS_COMM_UNAUTH_MAX", "1", 1);
	node_up(&a, 8);
	unsetenv("PS_COMM_UNAUTH_MAX");
	unsetenv("PS_COMM_JOB_KEY");
	ck_assert_int_eq(psc_auth_key_load(&key, "van-key-one", err,
					   sizeof(err)), 0);
	for (int i = 0; i < CROWD; i++) {
		f[i] = (struct fetcher){.port = a.port, .key = &key,
					.provider = ps_comm_van_provider(a.van),
					.rc = -1};
		ck_assert_int_eq(pthread_create(&t[i], NULL, fetch_one, &f[i]),
				 0);
	}
	for (int i = 0; i < CROWD; i++) {
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
		ck_assert_msg(f[i].rc == 0, "fetch %d: %d: %s", i, f[i].rc,
			      f[i].err);
	}
	ps_comm_van_destroy(a.van);
}
END_TEST

/*
 * A fetch that says where its go-aheads go must name this van's provider
 * and carry an address; otherwise the van refuses it (an ERROR answer,
 * no slot bound) and goes on serving.
 */
START_TEST(test_fetch_refused)
{
	static const uint8_t name[PSC_NODE_NAME_MAX + 1];
	struct psc_node_names self = {.provider = "bogus", .name = name,
				      .namelen = 4, .node = ""};
	struct psc_auth_key key;
	struct psc_van_addr got;
	struct node a;
	char err[512];

	setenv("PS_COMM_JOB_KEY", "van-key-one", 1);
	node_up(&a, 8);
	unsetenv("PS_COMM_JOB_KEY");
	ck_assert_int_eq(psc_auth_key_load(&key, "van-key-one", err,
					   sizeof(err)), 0);
	/* Another provider's address: refused, and it says which. */
	ck_assert_int_eq(psc_van_fetch(HOST, a.port, &key, &self,
				       ps_comm_van_provider(a.van),
				       psc_now() + 5, &got, err, sizeof(err)),
			 -EBADE);
	ck_assert_msg(strstr(err, "bogus") != NULL, "%s", err);
	/* This provider, but an address longer than any. */
	self.provider = ps_comm_van_provider(a.van);
	self.namelen = sizeof(name);
	ck_assert_int_eq(psc_van_fetch(HOST, a.port, &key, &self,
				       ps_comm_van_provider(a.van),
				       psc_now() + 5, &got, err, sizeof(err)),
			 -EBADE);
	ck_assert_msg(strstr(err, "refused") != NULL, "%s", err);
	/* A probe (no addresses) still gets an answer. */
	ck_assert_int_eq(psc_van_fetch(HOST, a.port, &key, NULL,
				       ps_comm_van_provider(a.van),
				       psc_now() + 5, &got, err, sizeof(err)),
			 0);
	ck_assert_uint_gt(got.slot, 0);
	ps_comm_van_destroy(a.van);
}
END_TEST

/*
 * PS_COMM_WAIT: auto polls only where every rank of the job has a core
 * (a van counts none, so it keeps the wait object); other values are a
 * configuration error, for a van as for a communicator.
 */
START_TEST(test_wait_policy)
{
	ps_comm_van_t v;
	bool poll = true;
	char err[128];

	ck_assert_int_eq(psc_wait_policy("auto", 2, 2, &poll, err,
					 sizeof(err)), 0);
	ck_assert(poll);
	ck_assert_int_eq(psc_wait_policy("auto", 3, 2, &poll, err,
					 sizeof(err)), 0);
	ck_assert(!poll);
	ck_assert_int_eq(psc_wait_policy("auto", 2, 0, &poll, err,
					 sizeof(err)), 0);
	ck_assert(!poll);
	ck_assert_int_eq(psc_wait_policy("auto", 0, 0, &poll, err,
					 sizeof(err)), 0);
	ck_assert(!poll);
	ck_assert_int_eq(psc_wait_policy("poll", 64, 2, &poll, err,
					 sizeof(err)), 0);
	ck_assert(poll);
	ck_assert_int_eq(psc_wait_policy("fd", 1, 64, &poll, err,
					 sizeof(err)), 0);
	ck_assert(!poll);
	ck_assert_int_eq(psc_wait_policy("spin", 1, 64, &poll, err,
					 sizeof(err)), -EINVAL);
	ck_assert_int_eq(psc_wait_policy("", 1, 64, &poll, err, sizeof(err)),
			 -EINVAL);
	ck_assert_str_eq(err, "PS_COMM_WAIT: '' is not fd, poll or auto");
	setenv("PS_COMM_WAIT", "sometimes", 1);
	ck_assert_int_eq(ps_comm_van_create(&v), PS_COMM_ERR_CONFIG);
	ck_assert_ptr_null(v);
	unsetenv("PS_COMM_WAIT");
}
END_TEST

START_TEST(test_connect_unreachable)
{
	struct node a;
	double t0;
	int rc;

	setenv("PS_COMM_TIMEOUT", "2", 1);
	node_up(&a, 9);
	unsetenv("PS_COMM_TIMEOUT");
	t0 = psc_now();
	/* Nothing listens on port 1: refused until the deadline. */
	rc = ps_comm_van_connect(a.van, 1, HOST, 1);
	ck_assert_int_eq(rc, PS_COMM_ERR_TIMEOUT);
	ck_assert(psc_now() - t0 >= 1.5 && psc_now() - t0 < 10);
	ck_assert_int_eq(ps_comm_van_connect(a.van, 1, "no.such.host.invalid",
					     1000), PS_COMM_ERR_PEER);
	ps_comm_van_destroy(a.van);
}
END_TEST

/* A second process that claims id 9, for test_reused_id. */
START_TEST(test_reused_id)
{
	struct node a, old9, new9;
	ps_comm_van_msg_t m;

	node_up(&a, 8);
	node_up(&old9, 9);
	node_up(&new9, 9);
	say_hello(&old9, 9, &a, 8, "old");
	/* Another node takes id 9 over: it fetched a's address later. */
	ck_assert_int_eq(ps_comm_van_connect(new9.van, 8, HOST, a.port), 0);
	send_text(&new9, 8, "new", NULL, 0);
	expect(&a, 9, "new", &m);
	ps_comm_van_msg_release(&m);
	/* The old connection's frames are dropped; the van goes on. */
	send_text(&old9, 8, "stale", NULL, 0);
	send_text(&new9, 8, "still new", NULL, 0);
	expect(&a, 9, "still new", &m);
	ps_comm_van_msg_release(&m);
	ps_comm_van_destroy(old9.van);
	ps_comm_van_destroy(new9.van);
	ps_comm_van_destroy(a.van);
}
END_TEST

/* ------------------------------------------------------------ faults */

static int dead_err;

static void note_err(void *arg, int err)
{
	(void)arg;
	__atomic_store_n(&dead_err, err, __ATOMIC_RELAXED);
}

/*
 * Wait for child pid (WUNTRACED: or for its stop) into *status; once it
 * died by a signal, remove the files it left in /dev/shm (SIGKILL leaves
 * them, as it would in a real job).
 */
static void reap_child(pid_t pid, int *status, int flags)
{
	const struct psc_provider_ops *shm = psc_provider_lookup("shm");

	ck_assert_int_eq(waitpid(pid, status, flags), pid);
	if (!WIFSIGNALED(*status))
		return;
	if (shm->remove_regions)
		shm->remove_regions(NULL, 0, (int)pid);
	psc_shmring_remove_pid((int)pid);
}

/*
 * Whether process pid left a file in /dev/shm: its shm queues (named as
 * the provider names them) or a ring.
 */
static bool files_left(pid_t pid)
{
	const struct psc_provider_ops *shm = psc_provider_lookup("shm");
	char q[32], r[48];
	struct dirent *d;
	bool left = false;
	DIR *dir = opendir("/dev/shm");

	if (!dir)
		return false;
	shm->region_prefix((int)pid, q, sizeof(q));
	snprintf(r, sizeof(r), "psc-ring-%ld-", (long)pid);
	while (!left && (d = readdir(dir)) != NULL)
		left = strncmp(d->d_name, q, strlen(q)) == 0 ||
		       strncmp(d->d_name, r, strlen(r)) == 0;
	closedir(dir);
	return left;
}

/*
 * A child process runs node 8: it connects to node 9 at the port read
 * from `in`, tells its own port on `out`, and on the first "request"
 * raises sig: SIGKILL takes it to its grave (no goodbye), SIGSTOP leaves
 * its ports open and silent.
 */
/*
 * Segments of this many bytes that dying_node echoes, WARM_ROUNDS of
 * them, after the request (0: none): over net the sender then holds its
 * credit.
 */
#define WARM_ROUNDS 3
static size_t warm_len;

static void dying_node(int in, int out, int sig, int go_in)
{
	static uint8_t echo[WARM_ROUNDS][1 << 20];
	struct node b;
	ps_comm_van_msg_t m;
	int port;

	node_up(&b, 8);
	if (write(out, &b.port, sizeof(b.port)) != sizeof(b.port) ||
	    read(in, &port, sizeof(port)) != sizeof(port))
		_exit(3);
	if (ps_comm_van_connect(b.van, 9, HOST, port) != 0)
		_exit(4);
	expect(&b, 9, "request", &m);
	for (int i = 0; i < WARM_ROUNDS && warm_len; i++) {
		ps_comm_van_seg_t seg = {echo[i], warm_len};

		if (warm_len > sizeof(echo[i]) ||
		    ps_comm_van_recv(b.van, &m) != 0 || m.nseg != 1 ||
		    m.segs[0].len != warm_len)
			_exit(8);
		memcpy(echo[i], m.segs[0].data, warm_len);
		ps_comm_van_msg_release(&m);
		if (ps_comm_van_send(b.van, 9, "warm", 4, &seg, 1, NULL,
				     NULL) != 0)
			_exit(9);
	}
	/* Receiving, the van moves the last echo along until it is in. */
	if (warm_len) {
		expect(&b, 9, "thanks", &m);
		ps_comm_van_msg_release(&m);
	}
	/*
	 * With go_in: say so and leave the van's receive, then wait to be
	 * told (a message is then on its way that no receive was posted
	 * for).
	 */
	if (go_in >= 0) {
		send_text(&b, 9, "ready", NULL, 0);
		if (read(go_in, &port, sizeof(port)) != sizeof(port))
			_exit(7);
	}
	raise(sig);
	_exit(6);
}

/*
 * Start dying_node, then bring node a up as id 9 (after the fork: a
 * child must not inherit an open fabric) and connect it to the child.
 * Returns the child's pid. With go_out, the child raises its signal only
 * once told through *go_out (a pipe; write an int).
 */
static pid_t start_dying_on_go(struct node *a, int *port, int sig,
				int *go_out)
{
	int up[2], down[2], go[2] = {-1, -1};
	pid_t pid;

	ck_assert_int_eq(pipe(up), 0);
	ck_assert_int_eq(pipe(down), 0);
	if (go_out)
		ck_assert_int_eq(pipe(go), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		if (go_out)
			close(go[1]);
		dying_node(down[0], up[1], sig, go[0]);
		_exit(5);
	}
	close(up[1]);
	close(down[0]);
	if (go_out) {
		close(go[0]);
		*go_out = go[1];
	}
	node_up(a, 9);
	ck_assert_int_eq(read(up[0], port, sizeof(*port)), sizeof(*port));
	ck_assert_int_eq(write(down[1], &a->port, sizeof(a->port)),
			 sizeof(a->port));
	close(up[0]);
	close(down[1]);
	ck_assert_int_eq(ps_comm_van_connect(a->van, 8, HOST, *port), 0);
	return pid;
}

static pid_t start_dying(struct node *a, int *port, int sig)
{
	return start_dying_on_go(a, port, sig, NULL);
}

/*
 * Node 8 is gone for a: a send to it (of seg, or none) fails at once and
 * done still runs. A new node 8 on the same port, connected again, is
 * reachable; it is destroyed again at the end.
 */
static void refused_then_back(struct node *a, ps_comm_van_seg_t *seg,
			      int port)
{
	struct node b;
	ps_comm_van_msg_t m;

	dead_err = 0;
	ck_assert_int_eq(ps_comm_van_send(a->van, 8, "x", 1, seg, seg ? 1 : 0,
					  note_err, NULL), PS_COMM_ERR_PEER);
	ck_assert_int_eq(dead_err, PS_COMM_ERR_PEER);
	ck_assert_int_eq(ps_comm_van_create(&b.van), 0);
	ck_assert_int_eq(ps_comm_van_bind(b.van, HOST, port, 0, &b.port), 0);
	ck_assert_int_eq(ps_comm_van_set_id(b.van, 8), 0);
	ck_assert_int_eq(ps_comm_van_connect(a->van, 8, HOST, b.port), 0);
	send_text(a, 8, "again", NULL, 0);
	expect(&b, 9, "again", &m);
	ps_comm_van_msg_release(&m);
	ps_comm_van_destroy(b.van);
}

START_TEST(test_dead_node)
{
	static uint8_t big[8 << 20];
	ps_comm_van_seg_t seg = {big, sizeof(big)};
	struct node a;
	ps_comm_van_msg_t m;
	double t0;
	int rc, port, status;
	pid_t pid;

	pid = start_dying(&a, &port, SIGKILL);
	/*
	 * b dies before it answers: a must learn it, not wait forever (its
	 * receive also drives the request's progress).
	 */
	send_text(&a, 8, "request", NULL, 0);
	t0 = psc_now();
	rc = ps_comm_van_recv(a.van, &m);
	ck_assert_int_eq(rc, PS_COMM_ERR_PEER);
	ck_assert_int_eq(m.sender, 8);
	reap_child(pid, &status, 0);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	/* About 1.5 s: a second of silence, then a refused probe. */
	ck_assert(psc_now() - t0 < 10);
	refused_then_back(&a, &seg, port);
	/*
	 * A large send to a node that is gone (it said goodbye, or a died
	 * unnoticed when that came too late) does not hold stop up long.
	 * Not on shm: in one process the dead node's region is
	 * unmapped, and a post into it faults (across processes it stays
	 * mapped: see doc/pslite.md).
	 */
	if (strcmp(psc_ep_provider(psc_van_peer_ep(a.van, 8)), "shm") != 0) {
		dead_err = 0;
		rc = ps_comm_van_send(a.van, 8, "x", 1, &seg, 1, note_err,
				      NULL);
		ck_assert_msg(rc == 0 || rc == PS_COMM_ERR_PEER, "send: %s",
			      ps_comm_strerror(rc));
		t0 = psc_now();
		ps_comm_van_stop(a.van);
		ck_assert(psc_now() - t0 < 10);
		ck_assert_int_ne(dead_err, 0);
	}
	ps_comm_van_destroy(a.van);
}
END_TEST

/*
 * A node that stops answering without closing anything (a stopped
 * process; a dead one whose host dropped off the network looks the
 * same) while this van waits for its answer: the fabric may never say,
 * so its unanswered probes must. The receive fails with
 * PS_COMM_ERR_PEER naming it about PS_COMM_PEER_TIMEOUT after its
 * probes went unanswered, with PS_COMM_OP_TIMEOUT unset.
 */
START_TEST(test_silent_node)
{
	struct node a;
	ps_comm_van_msg_t m;
	double t0, took;
	int rc, port, status;
	pid_t pid;

	setenv("PS_COMM_PEER_TIMEOUT", "2", 1);
	pid = start_dying(&a, &port, SIGSTOP);
	unsetenv("PS_COMM_PEER_TIMEOUT");
	send_text(&a, 8, "request", NULL, 0);
	t0 = psc_now();
	rc = ps_comm_van_recv(a.van, &m);
	took = psc_now() - t0;
	ck_assert_int_eq(rc, PS_COMM_ERR_PEER);
	ck_assert_int_eq(m.sender, 8);
	/* A second of silence, then 2 s of unanswered probes. */
	ck_assert_msg(took >= 2 && took < 10, "%.1f s", took);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	reap_child(pid, &status, 0);
	ps_comm_van_destroy(a.van);
}
END_TEST

/*
 * A large segment is on its way to node 8, which posted no receive for
 * it: over a provider that needs the go-ahead (net), the sender waits
 * for it; over the others the provider's own transfer waits. Then node 8
 * dies (SIGKILL) or stops (SIGSTOP) without ever granting it. The
 * sender's receive fails with PS_COMM_ERR_PEER naming node 8 within
 * PS_COMM_PEER_TIMEOUT of the silence (2 s here), and stop, which
 * waits on the send, ends it soon with an error.
 */
static void large_never_granted(int sig, size_t warm)
{
	static uint8_t big[8 << 20];
	ps_comm_van_seg_t seg = {big, warm ? warm : sizeof(big)};
	struct node a;
	ps_comm_van_msg_t m;
	double t0, took;
	int rc, port, status, go;
	pid_t pid;

	setenv("PS_COMM_PEER_TIMEOUT", "2", 1);
	warm_len = warm;
	pid = start_dying_on_go(&a, &port, sig, &go);
	warm_len = 0;
	unsetenv("PS_COMM_PEER_TIMEOUT");
	send_text(&a, 8, "request", NULL, 0);
	for (int i = 0; i < WARM_ROUNDS && warm; i++) {
		send_text(&a, 8, "warm", &seg, 1);
		expect(&a, 8, "warm", &m);
		ck_assert_uint_eq(m.segs[0].len, warm);
		ps_comm_van_msg_release(&m);
	}
	if (warm)
		send_text(&a, 8, "thanks", NULL, 0);
	/* Node 8 no longer receives: nothing will take the frame below. */
	expect(&a, 8, "ready", &m);
	ps_comm_van_msg_release(&m);
	dead_err = 0;
	rc = ps_comm_van_send(a.van, 8, "x", 1, &seg, 1, note_err, NULL);
	ck_assert_msg(rc == 0, "send: %s", ps_comm_strerror(rc));
	/* Over net the segment goes on node 8's credit, not waiting. */
	if (warm && credit_applies(a.van, 8, warm))
		ck_assert_uint_eq(a.van->credit_sent, WARM_ROUNDS);
	ck_assert_int_eq(write(go, &port, sizeof(port)), sizeof(port));
	close(go);
	t0 = psc_now();
	rc = ps_comm_van_recv(a.van, &m);
	took = psc_now() - t0;
	ck_assert_int_eq(rc, PS_COMM_ERR_PEER);
	ck_assert_int_eq(m.sender, 8);
	reap_child(pid, &status, WUNTRACED);
	ck_assert(sig == SIGKILL ? WIFSIGNALED(status) : WIFSTOPPED(status));
	/* Silence of a second, then 2 s of probes; refused ones are quick. */
	ck_assert_msg(took < 10, "%.1f s", took);
	if (sig == SIGSTOP)
		ck_assert_msg(took >= 2, "%.1f s", took);
	t0 = psc_now();
	ps_comm_van_stop(a.van);
	ck_assert_msg(psc_now() - t0 < 10, "stop took %.1f s", psc_now() - t0);
	/*
	 * An 8 MiB segment never leaves; a 1 MiB one on credit may have gone
	 * whole into the kernel's socket buffers before node 8 went.
	 */
	if (!warm)
		ck_assert_int_ne(__atomic_load_n(&dead_err, __ATOMIC_RELAXED),
				 0);
	if (sig == SIGSTOP) {
		ck_assert_int_eq(kill(pid, SIGKILL), 0);
		reap_child(pid, &status, 0);
	}
	ps_comm_van_destroy(a.van);
}

START_TEST(test_large_receiver_dies)
{
	large_never_granted(SIGKILL, 0);
}
END_TEST

START_TEST(test_large_receiver_stops)
{
	large_never_granted(SIGSTOP, 0);
}
END_TEST

/*
 * The same with a segment that goes on credit over net: node 8 granted
 * it while it traded 1 MiB segments, then dies or stops, and the sender
 * finds it as above.
 */
START_TEST(test_credit_receiver_dies)
{
	large_never_granted(SIGKILL, 1 << 20);
}
END_TEST

START_TEST(test_credit_receiver_stops)
{
	large_never_granted(SIGSTOP, 1 << 20);
}
END_TEST

/* A node that answers late: it holds the request for `delay` seconds. */
struct late {
	struct node *n;
	unsigned delay;
};

static void *answer_late(void *arg)
{
	struct late *l = arg;
	ps_comm_van_msg_t m;

	expect(l->n, 9, "request", &m);
	ps_comm_van_msg_release(&m);
	sleep(l->delay);
	send_text(l->n, 9, "answer", NULL, 0);
	return NULL;
}

/*
 * Liveness, not duration: a node that takes three times
 * PS_COMM_PEER_TIMEOUT to answer, its process alive all along, is
 * waited for.
 */
START_TEST(test_slow_node_lives)
{
	struct node a, b;
	struct late l = {&b, 6};
	ps_comm_van_msg_t m;
	pthread_t t;
	double t0;

	setenv("PS_COMM_PEER_TIMEOUT", "2", 1);
	node_up(&a, 9);
	node_up(&b, 8);
	unsetenv("PS_COMM_PEER_TIMEOUT");
	ck_assert_int_eq(ps_comm_van_connect(a.van, 8, HOST, b.port), 0);
	ck_assert_int_eq(ps_comm_van_connect(b.van, 9, HOST, a.port), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, answer_late, &l), 0);
	t0 = psc_now();
	send_text(&a, 8, "request", NULL, 0);
	expect(&a, 8, "answer", &m);
	ck_assert(psc_now() - t0 >= l.delay);
	ps_comm_van_msg_release(&m);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ps_comm_van_destroy(a.van);
	ps_comm_van_destroy(b.van);
}
END_TEST

/* A TCP port on HOST that accepts connections and never answers. */
static int mute_listener(int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port)};
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(inet_pton(AF_INET, HOST, &sa.sin_addr), 1);
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
				    sizeof(one)), 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 64), 0);
	return fd;
}

/*
 * A node that this van never sent to, whose message is half received
 * (its frame came, its segment never does), is waited on too: once its
 * port stops answering, the receive fails with PS_COMM_ERR_PEER naming
 * it instead of waiting for ever.
 */
START_TEST(test_inflight_sender)
{
	static const ps_comm_van_seg_t seg = {NULL, 100000};
	uint8_t frame[PSC_VAN_FRAME_MIN];
	struct node a, b;
	ps_comm_van_msg_t m;
	bool inl;
	size_t flen;
	double t0;
	int fd;

	setenv("PS_COMM_PEER_TIMEOUT", "2", 1);
	node_up(&a, 9);
	unsetenv("PS_COMM_PEER_TIMEOUT");
	node_up(&b, 8);
	ck_assert_int_eq(ps_comm_van_connect(a.van, 8, HOST, b.port), 0);
	/* Node 8 goes (it got nothing from a: no goodbye to a)... */
	ps_comm_van_destroy(b.van);
	fd = mute_listener(b.port);
	/* ...and its frame, announcing a segment of its own, arrives. */
	flen = psc_van_frame_size(4, &seg, 1, PSC_VAN_FRAME_MIN, &inl);
	psc_van_frame_encode(frame, 8, "push", 4, inl, &seg, 1,
			     PSC_VAN_FRAME_MIN);
	send_raw(a.port, true, frame, flen, ps_comm_van_provider(a.van));
	t0 = psc_now();
	ck_assert_int_eq(ps_comm_van_recv(a.van, &m), PS_COMM_ERR_PEER);
	ck_assert_int_eq(m.sender, 8);
	ck_assert_msg(psc_now() - t0 < 10, "%.1f s", psc_now() - t0);
	ps_comm_van_destroy(a.van);
	close(fd);
}
END_TEST

/* A thread that receives until its van stops under it. */
struct waiter {
	struct node *n;
	int got, last_rc;
};

static void *wait_loop(void *arg)
{
	struct waiter *w = arg;
	ps_comm_van_msg_t m;
	int rc;

	while ((rc = ps_comm_van_recv(w->n->van, &m)) == 0) {
		ps_comm_van_msg_release(&m);
		__atomic_add_fetch(&w->got, 1, __ATOMIC_RELAXED);
	}
	w->last_rc = rc;
	return NULL;
}

/* Seconds since t0; the largest so far in *max; counts those over 1 s. */
static void stop_took(double t0, double *max, int *slow)
{
	double t = psc_now() - t0;

	if (t > *max)
		*max = t;
	if (t >= 1.0)
		(*slow)++;
}

/*
 * Wait, secs at most, until van v's receiving thread has finished a probe
 * round that began at t or later; whether it did.
 */
static bool probe_round_since(ps_comm_van_t v, double t, double secs)
{
	double end = psc_now() + secs, at;

	for (;;) {
		__atomic_load(&v->probe_round, &at, __ATOMIC_RELAXED);
		if (at >= t)
			return true;
		if (psc_now() >= end)
			return false;
		usleep(1000);
	}
}

/*
 * A node that stops cleanly (ps-lite's Finalize) is not a failure for the
 * nodes that stay on, even though it served the last request they sent
 * and went silent: its goodbye stops their probes. A send to it fails at
 * once until it is connected again.
 */
START_TEST(test_node_left)
{
	struct node a, b;
	struct waiter w = {&a, 0, 0};
	pthread_t t;
	double gone;
	int port;

	node_up(&a, 9);
	node_up(&b, 8);
	port = b.port;
	say_hello(&a, 9, &b, 8, "request");
	say_hello(&b, 8, &a, 9, "answer");
	ps_comm_van_destroy(b.van);
	gone = psc_now();
	ck_assert_int_eq(pthread_create(&t, NULL, wait_loop, &w), 0);
	/* a's receiver has looked at b once b was due for a probe. */
	ck_assert_msg(probe_round_since(a.van, gone + PROBE_SEC, 30),
		      "no probe round within 30 s");
	refused_then_back(&a, NULL, port);
	ps_comm_van_stop(a.van);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	/* No message and no failure: the receive ended only with stop. */
	ck_assert_int_eq(w.got, 0);
	ck_assert_int_eq(w.last_rc, PS_COMM_ERR_CANCELED);
	ps_comm_van_destroy(a.van);
}
END_TEST

/*
 * Every stop takes well under a second; on a loaded machine a few may be
 * descheduled past it, so 5 of the 100 may, none past 10 s.
 */
START_TEST(test_stop_while_receiving)
{
	static uint8_t data[256 << 10];
	ps_comm_van_seg_t seg = {data, sizeof(data)};
	double max = 0;
	int slow = 0;

	for (int cycle = 0; cycle < 50; cycle++) {
		struct node a, b;
		struct waiter w = {&b, 0, 0};
		pthread_t t;
		double t0;

		node_up(&a, 9);
		node_up(&b, 8);
		ck_assert_int_eq(ps_comm_van_connect(a.van, 8, HOST, b.port), 0);
		ck_assert_int_eq(ps_comm_van_connect(b.van, 9, HOST, a.port), 0);
		ck_assert_int_eq(pthread_create(&t, NULL, wait_loop, &w), 0);
		for (int i = 0; i < 4; i++)
			send_text(&a, 8, "data", &seg, 1);
		t0 = psc_now();
		while (__atomic_load_n(&w.got, __ATOMIC_RELAXED) < 4 &&
		       psc_now() - t0 < 30)
			usleep(1000);
		ck_assert_int_eq(w.got, 4);
		/* b's thread is blocked in ps_comm_van_recv now. */
		t0 = psc_now();
		ck_assert_int_eq(ps_comm_van_stop(b.van), 0);
		stop_took(t0, &max, &slow);
		pthread_join(t, NULL);
		ck_assert_int_eq(w.last_rc, PS_COMM_ERR_CANCELED);
		t0 = psc_now();
		ck_assert_int_eq(ps_comm_van_stop(a.van), 0);
		stop_took(t0, &max, &slow);
		ps_comm_van_destroy(a.van);
		ps_comm_van_destroy(b.van);
	}
	ck_assert_msg(slow <= 5 && max < 10, "%d of 100 stops took 1 s or "
		      "more, the longest %.2f s", slow, max);
}
END_TEST

/*
 * No PSM library's crash handler is left on SIGTERM or SIGINT (check's
 * own may be there: it runs the tests).
 */
START_TEST(test_sigterm_default)
{
	static const int sigs[] = {SIGTERM, SIGINT};
	struct node a;

	node_up(&a, 1);
	for (size_t i = 0; i < 2; i++) {
		struct sigaction sa;
		Dl_info di;

		ck_assert_int_eq(sigaction(sigs[i], NULL, &sa), 0);
		if (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN ||
		    !dladdr((void *)sa.sa_handler, &di) || !di.dli_fname)
			continue;
		ck_assert_msg(!strstr(di.dli_fname, "infinipath") &&
				      !strstr(di.dli_fname, "libpsm"),
			      "signal %d handled in %s", sigs[i], di.dli_fname);
	}
	ps_comm_van_destroy(a.van);
}
END_TEST

/* -------------------------------------------------------- watchdog */

/*
 * A node whose thread will never come back from the provider: node 9
 * connects to node 8, then its thread opens the watchdog's bracket of a
 * send post to node 8 on its endpoint and never closes it, as a send
 * spinning on the lock of a shm node that was stopped or killed while
 * holding it does. With fail_it, node 8 is first known failed. Runs in
 * a child of its own (the watchdog ends the process).
 */
static void stuck_node(bool fail_it, int ready)
{
	struct node a, b;
	struct van_peer *p;
	struct psc_ep *ep;

	node_up(&a, 9);
	node_up(&b, 8);
	if (ps_comm_van_connect(a.van, 8, HOST, b.port) != 0)
		_exit(4);
	pthread_mutex_lock(&a.van->lock);
	p = psc_van_peer_find(a.van, 8);
	pthread_mutex_unlock(&a.van->lock);
	if (!p)
		_exit(5);
	if (fail_it)
		psc_van_peer_fail(a.van, p, PS_COMM_ERR_PEER, "a test");
	ep = psc_van_peer_ep(a.van, 8);
	pthread_mutex_lock(ep->lock);
	psc_prov_enter(ep, "a send post", p->at.addr);
	if (write(ready, "s", 1) != 1)
		_exit(6);
	for (;;)
		pause();
}

/*
 * Run stuck_node with PS_COMM_PEER_TIMEOUT=2 and PS_COMM_WATCHDOG=dog;
 * return its exit status once it ends, or -1 if it still runs `wait`
 * seconds after it got stuck (it is then killed). *took: from then to
 * its end.
 */
static int run_stuck(bool fail_it, const char *dog, double wait, double *took)
{
	double t0;
	int status = 0, fds[2];
	pid_t pid, got = 0;
	char c;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		setenv("PS_COMM_PEER_TIMEOUT", "2", 1);
		setenv("PS_COMM_WATCHDOG", dog, 1);
		stuck_node(fail_it, fds[1]);
	}
	close(fds[1]);
	/* Its van set up (however slowly: valgrind), it is stuck now. */
	ck_assert_int_eq(read(fds[0], &c, 1), 1);
	close(fds[0]);
	t0 = psc_now();
	while (psc_now() - t0 < wait &&
	       (got = waitpid(pid, &status, WNOHANG)) == 0)
		psc_backoff_sleep(0.01, 0.01, 0, false, 0);
	*took = psc_now() - t0;
	if (got == pid) {
		/* The watchdog removed every file of the process's two vans. */
		ck_assert_msg(!files_left(pid), "files left in /dev/shm");
		return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
	}
	kill(pid, SIGKILL);
	reap_child(pid, &status, 0);
	return -1;
}

/*
 * The watchdog ends a node stuck inside the provider with
 * PSC_EP_STUCK_EXIT: after PS_COMM_PEER_TIMEOUT (2 s), never before;
 * after 1 s when the node the call is for is known failed; and never
 * with PS_COMM_WATCHDOG=0.
 */
START_TEST(test_watchdog)
{
	double took;

	ck_assert_int_eq(run_stuck(false, "1", 20, &took), PSC_EP_STUCK_EXIT);
	ck_assert_msg(took >= 1.9 && took < 8.0, "stuck: out after %.2f s",
		      took);
	ck_assert_int_eq(run_stuck(true, "1", 20, &took), PSC_EP_STUCK_EXIT);
	ck_assert_msg(took >= 0.9 && took < 1.9,
		      "stuck for a failed node: out after %.2f s", took);
	ck_assert_int_eq(run_stuck(false, "0", 3, &took), -1);
}
END_TEST

static Suite *van_suite(void)
{
	Suite *s = suite_create("van");
	TCase *tc = tcase_create("codec");

	tcase_add_test(tc, test_frame_roundtrip);
	tcase_add_test(tc, test_frame_limit);
	tcase_add_test(tc, test_frame_refused);
	tcase_add_test(tc, test_frame_credit);
	suite_add_tcase(s, tc);
	tc = tcase_create("van");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_bind_ports);
	tcase_add_test(tc, test_bind_address);
	tcase_add_test(tc, test_self_and_reconnect);
	tcase_add_test(tc, test_self_local);
	tcase_add_test(tc, test_no_id_yet);
	tcase_add_test(tc, test_segment_sizes);
	tcase_add_test(tc, test_credit);
	tcase_add_test(tc, test_paths);
	tcase_add_test(tc, test_completion_twice);
	tcase_add_test(tc, test_eight_senders);
	tcase_add_test(tc, test_stop_start);
	tcase_add_test(tc, test_bad_frames);
	tcase_add_test(tc, test_connect_unreachable);
	tcase_add_test(tc, test_wait_policy);
	tcase_add_test(tc, test_wrong_key);
	tcase_add_test(tc, test_fetch_refused);
	tcase_add_test(tc, test_fetch_crowd);
	tcase_add_test(tc, test_reused_id);
	suite_add_tcase(s, tc);
	tc = tcase_create("faults");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_dead_node);
	tcase_add_test(tc, test_node_left);
	tcase_add_test(tc, test_stop_while_receiving);
	tcase_add_test(tc, test_sigterm_default);
	suite_add_tcase(s, tc);
	tc = tcase_create("silence");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_silent_node);
	tcase_add_test(tc, test_slow_node_lives);
	tcase_add_test(tc, test_inflight_sender);
	tcase_add_test(tc, test_watchdog);
	suite_add_tcase(s, tc);
	tc = tcase_create("granted");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_large_receiver_dies);
	tcase_add_test(tc, test_large_receiver_stops);
	tcase_add_test(tc, test_credit_receiver_dies);
	tcase_add_test(tc, test_credit_receiver_stops);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(van_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
