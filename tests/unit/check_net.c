/*
 * Unit tests for the networking helpers (lib/net/net.c): host:port parsing
 * with bracketed IPv6 and its failures, NCCL_SOCKET_IFNAME matching,
 * address printing and the loopback test, choosing the interface to
 * advertise on this host, listening within a port range, connecting with
 * retries until a measured deadline, and deadline-bounded reads.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <check.h>

#include "boot/store.h"
#include "core/ep.h"
#include "core/req.h"
#include "net/net.h"
#include "util/util.h"

/* ---------------------------------------------------------- hostport */

static const struct {
	const char *in;
	const char *host;
	unsigned port;
} hp_ok[] = {
	{"myhost:8080", "myhost", 8080},
	{"node7:29500", "node7", 29500},
	{"1.2.3.4:80", "1.2.3.4", 80},
	{"[::1]:5000", "::1", 5000},
	{"[fe80::1%eth0]:1", "fe80::1%eth0", 1},
	{"[2001:db8::7]", "2001:db8::7", 0},
	{"::1", "::1", 0},
	{"fe80::1:2:3", "fe80::1:2:3", 0},
	{"host", "host", 0},
	{"h:0", "h", 0},
	{"h:65535", "h", 65535},
	{"localhost:1", "localhost", 1},
};

START_TEST(test_hostport_ok)
{
	struct psc_hostport hp;

	ck_assert_msg(psc_hostport_parse(hp_ok[_i].in, &hp) == 0,
		      "\"%s\" rejected", hp_ok[_i].in);
	ck_assert_str_eq(hp.host, hp_ok[_i].host);
	ck_assert_uint_eq(hp.port, hp_ok[_i].port);
}
END_TEST

static const char *const hp_bad[] = {
	"",	 "[::1",   "[]:1",   "[]",     "h:99999", "h:65536", "h:-1",
	"h:abc", "h:",	   ":80",    "h:80x",  "[::1]x",  "[::1]:",  "[::1]:x",
	"[::1]5000",
};

START_TEST(test_hostport_bad)
{
	struct psc_hostport hp;

	ck_assert_msg(psc_hostport_parse(hp_bad[_i], &hp) == -EINVAL,
		      "\"%s\" accepted as host \"%s\" port %u", hp_bad[_i],
		      hp.host, hp.port);
}
END_TEST

START_TEST(test_hostport_length)
{
	struct psc_hostport hp;
	char s[300];

	/* 255 characters fit the 256-byte host field; 256 do not. */
	memset(s, 'a', 255);
	strcpy(s + 255, ":9");
	ck_assert_int_eq(psc_hostport_parse(s, &hp), 0);
	ck_assert_uint_eq(strlen(hp.host), 255);
	ck_assert_uint_eq(hp.port, 9);
	memset(s, 'a', 256);
	strcpy(s + 256, ":9");
	ck_assert_int_eq(psc_hostport_parse(s, &hp), -EINVAL);
	s[256] = '\0';
	ck_assert_int_eq(psc_hostport_parse(s, &hp), -EINVAL);
	s[0] = '[';
	memset(s + 1, 'a', 256);
	strcpy(s + 257, "]:9");
	ck_assert_int_eq(psc_hostport_parse(s, &hp), -EINVAL);
	ck_assert_int_eq(psc_hostport_parse(NULL, &hp), -EINVAL);
}
END_TEST

/* ------------------------------------------------------------ ifname */

static const struct {
	const char *spec;
	const char *name;
	bool match;
} ifmatch[] = {
	{"eth", "eth0", true},
	{"eth", "eth10", true},
	{"eth", "ib0", false},
	{"eth", "et", false},
	{"^docker,lo", "docker0", false},
	{"^docker,lo", "lo", false},
	{"^docker,lo", "eth0", true},
	{"^docker,lo", "ib0", true},
	{"=eth0", "eth0", true},
	{"=eth0", "eth01", false},
	{"=eth0", "eth", false},
	{"^=eth0", "eth0", false},
	{"^=eth0", "eth01", true},
	{"^=eth0", "ib0", true},
	{"eth,ib", "ib0", true},
	{"eth,ib", "eth3", true},
	{"eth,ib", "lo", false},
	{"=eth0,ib0", "ib0", true},
	{"=eth0,ib0", "ib01", false},
	{"=eth0,ib0", "eth0", true},
	{"", "anything", true},
	{NULL, "anything", true},
	{"^", "eth0", true},
	{"eth0", "eth0", true},
	{"eth0", "eth", false},
};

START_TEST(test_ifname_match)
{
	ck_assert_msg(psc_ifname_match(ifmatch[_i].spec, ifmatch[_i].name) ==
			      ifmatch[_i].match,
		      "spec \"%s\" name \"%s\": expected %s",
		      ifmatch[_i].spec ? ifmatch[_i].spec : "(null)",
		      ifmatch[_i].name,
		      ifmatch[_i].match ? "match" : "no match");
}
END_TEST

/* ---------------------------------------------------------- sockaddr */

static socklen_t make_addr(struct sockaddr_storage *ss, const char *ip,
			   uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(ip, ':')) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		ck_assert_int_eq(inet_pton(AF_INET6, ip, &in6->sin6_addr), 1);
		return sizeof(*in6);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		ck_assert_int_eq(inet_pton(AF_INET, ip, &in->sin_addr), 1);
		return sizeof(*in);
	}
}

static const struct {
	const char *ip;
	uint16_t port;
	const char *text;
	bool loopback;
} addrs[] = {
	{"127.0.0.1", 80, "127.0.0.1:80", true},
	{"127.1.2.3", 0, "127.1.2.3:0", true},
	{"192.0.2.1", 65535, "192.0.2.1:65535", false},
	{"0.0.0.0", 1, "0.0.0.0:1", false},
	{"10.0.0.127", 2, "10.0.0.127:2", false},
	{"::1", 5000, "[::1]:5000", true},
	{"::", 7, "[::]:7", false},
	{"2001:db8::1", 443, "[2001:db8::1]:443", false},
	{"fe80::1", 1, "[fe80::1]:1", false},
};

START_TEST(test_sockaddr)
{
	struct sockaddr_storage ss;
	char buf[80];

	make_addr(&ss, addrs[_i].ip, addrs[_i].port);
	psc_sockaddr_str((struct sockaddr *)&ss, buf, sizeof(buf));
	ck_assert_str_eq(buf, addrs[_i].text);
	ck_assert_msg(psc_sockaddr_is_loopback((struct sockaddr *)&ss) ==
			      addrs[_i].loopback,
		      "%s loopback?", addrs[_i].ip);
}
END_TEST

START_TEST(test_sockaddr_other)
{
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	struct sockaddr_storage a, b;
	char buf[80];

	psc_sockaddr_str((struct sockaddr *)&un, buf, sizeof(buf));
	ck_assert_str_eq(buf, "(family 1)");
	ck_assert(!psc_sockaddr_is_loopback((struct sockaddr *)&un));
	make_addr(&a, "192.0.2.1", 1);
	make_addr(&b, "192.0.2.1", 2);
	ck_assert(psc_sockaddr_same_ip((struct sockaddr *)&a,
				       (struct sockaddr *)&b));
	make_addr(&b, "192.0.2.2", 1);
	ck_assert(!psc_sockaddr_same_ip((struct sockaddr *)&a,
					(struct sockaddr *)&b));
	make_addr(&b, "::1", 1);
	ck_assert(!psc_sockaddr_same_ip((struct sockaddr *)&a,
					(struct sockaddr *)&b));
}
END_TEST

/* ------------------------------------------------------------- iface */

/* Whether this host has an interface with address ip. */
static bool have_local(const char *ip, char *name, size_t len)
{
	struct ifaddrs *all, *i;
	bool found = false;

	ck_assert_int_eq(getifaddrs(&all), 0);
	for (i = all; i && !found; i = i->ifa_next) {
		char buf[80], want[80];
		struct sockaddr_storage ss;

		if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET &&
				     i->ifa_addr->sa_family != AF_INET6))
			continue;
		psc_sockaddr_str(i->ifa_addr, buf, sizeof(buf));
		make_addr(&ss, ip, 0);
		psc_sockaddr_str((struct sockaddr *)&ss, want, sizeof(want));
		if (strcmp(buf, want) == 0) {
			snprintf(name, len, "%s", i->ifa_name);
			found = true;
		}
	}
	freeifaddrs(all);
	return found;
}

START_TEST(test_iface_loopback_root)
{
	struct sockaddr_storage root;
	struct psc_iface f;
	char err[1024] = "";

	make_addr(&root, "127.0.0.1", 29500);
	ck_assert_msg(psc_iface_choose(NULL, (struct sockaddr *)&root,
				       AF_UNSPEC, &f, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_str_eq(f.name, "lo");
	ck_assert_str_eq(f.addrstr, "127.0.0.1");
	ck_assert_int_eq(f.addr.ss_family, AF_INET);
	ck_assert_uint_eq(f.addrlen, sizeof(struct sockaddr_in));
	ck_assert_uint_eq(((struct sockaddr_in *)&f.addr)->sin_port, 0);
	/* An empty spec is no spec. */
	ck_assert_int_eq(psc_iface_choose("", (struct sockaddr *)&root,
					  AF_UNSPEC, &f, err, sizeof(err)),
			 0);
	ck_assert_str_eq(f.name, "lo");
}
END_TEST

START_TEST(test_iface_loopback_root6)
{
	struct sockaddr_storage root;
	struct psc_iface f;
	char err[1024] = "", name[64];

	if (!have_local("::1", name, sizeof(name)))
		return; /* no IPv6 loopback here */
	make_addr(&root, "::1", 29500);
	ck_assert_msg(psc_iface_choose(NULL, (struct sockaddr *)&root,
				       AF_UNSPEC, &f, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_str_eq(f.name, name);
	ck_assert_int_eq(f.addr.ss_family, AF_INET6);
	ck_assert(psc_sockaddr_is_loopback((struct sockaddr *)&f.addr));
}
END_TEST

START_TEST(test_iface_nosuch)
{
	struct sockaddr_storage root;
	struct ifaddrs *all, *i;
	struct psc_iface f;
	char err[2048] = "";

	make_addr(&root, "127.0.0.1", 29500);
	ck_assert_int_eq(psc_iface_choose("nosuchif", (struct sockaddr *)&root,
					  AF_UNSPEC, &f, err, sizeof(err)),
			 -ENODEV);
	ck_assert_msg(strstr(err, "nosuchif") != NULL, "%s", err);
	/* Every interface with an IP address is listed. */
	ck_assert_int_eq(getifaddrs(&all), 0);
	for (i = all; i; i = i->ifa_next) {
		if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET &&
				     i->ifa_addr->sa_family != AF_INET6))
			continue;
		ck_assert_msg(strstr(err, i->ifa_name) != NULL,
			      "%s not listed in \"%s\"", i->ifa_name, err);
	}
	freeifaddrs(all);
	ck_assert_int_eq(psc_iface_choose("=nosuchif", NULL, AF_INET, &f, err,
					  sizeof(err)),
			 -ENODEV);
	ck_assert_msg(strstr(err, "lo 127.0.0.1") != NULL, "%s", err);
}
END_TEST

START_TEST(test_iface_spec_lo)
{
	struct psc_iface f;
	char err[1024] = "";

	/* Without a root, IPv4 wins over IPv6 on the same interface. */
	ck_assert_msg(psc_iface_choose("lo", NULL, AF_UNSPEC, &f, err,
				       sizeof(err)) == 0,
		      "%s", err);
	ck_assert_str_eq(f.name, "lo");
	ck_assert_str_eq(f.addrstr, "127.0.0.1");
	ck_assert_int_eq(psc_iface_choose("=lo", NULL, AF_INET, &f, err,
					  sizeof(err)),
			 0);
	ck_assert_str_eq(f.name, "lo");
	ck_assert_str_eq(f.addrstr, "127.0.0.1");
}
END_TEST

/* Without spec or root, never loopback, docker* or veth*. */
START_TEST(test_iface_default)
{
	struct psc_iface f;
	char err[1024] = "";
	int rc = psc_iface_choose(NULL, NULL, AF_UNSPEC, &f, err, sizeof(err));

	if (rc == -ENODEV) {
		ck_assert_msg(strstr(err, "PS_COMM_IFNAME") != NULL, "%s", err);
		return;
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(!psc_sockaddr_is_loopback((struct sockaddr *)&f.addr),
		      "chose %s %s", f.name, f.addrstr);
	ck_assert_str_ne(f.name, "lo");
	ck_assert(strncmp(f.name, "docker", 6) != 0);
	ck_assert(strncmp(f.name, "veth", 4) != 0);
}
END_TEST

/* A root on one of our own addresses selects that address's interface. */
START_TEST(test_iface_route)
{
	struct ifaddrs *all, *i;
	struct psc_iface f;
	char err[1024] = "", want[80];

	ck_assert_int_eq(getifaddrs(&all), 0);
	for (i = all; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    (i->ifa_flags & IFF_UP) &&
		    !psc_sockaddr_is_loopback(i->ifa_addr) &&
		    psc_ifname_match("^docker,veth", i->ifa_name))
			break;
	if (!i) {
		freeifaddrs(all);
		return; /* only loopback here */
	}
	ck_assert_msg(psc_iface_choose(NULL, i->ifa_addr, AF_UNSPEC, &f, err,
				       sizeof(err)) == 0,
		      "%s", err);
	ck_assert_str_eq(f.name, i->ifa_name);
	psc_sockaddr_str(i->ifa_addr, want, sizeof(want));
	*strrchr(want, ':') = '\0';
	ck_assert_str_eq(f.addrstr, want);
	freeifaddrs(all);
}
END_TEST

/* ------------------------------------------------------------ listen */

static socklen_t loopback(struct sockaddr_storage *ss, uint16_t port)
{
	return make_addr(ss, "127.0.0.1", port);
}

static uint16_t port_of(const struct sockaddr_storage *ss)
{
	return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

/* Whether 127.0.0.1:port can be listened on now. */
static bool port_free(uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t len = loopback(&ss, port);
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	bool ok;

	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	ok = bind(fd, (struct sockaddr *)&ss, len) == 0 && listen(fd, 1) == 0;
	close(fd);
	return ok;
}

/* Two consecutive free ports, base returned. */
static uint16_t free_pair(void)
{
	for (unsigned n = 0; n < 200; n++) {
		unsigned spread = (unsigned)getpid() * 131 + n * 977;
		uint16_t base = (uint16_t)(20000 + spread % 30000);

		if (port_free(base) && port_free(base + 1))
			return base;
	}
	ck_abort_msg("no two consecutive free ports");
	return 0;
}

START_TEST(test_listen_range)
{
	struct sockaddr_storage a, b, c;
	socklen_t len = loopback(&a, 0);
	uint16_t base = free_pair();
	char range[32];
	int fa, fb, fc;

	snprintf(range, sizeof(range), "%u-%u", base, base + 1);
	loopback(&b, 0);
	loopback(&c, 0);
	fa = psc_listen(&a, len, range);
	ck_assert_int_ge(fa, 0);
	fb = psc_listen(&b, len, range);
	ck_assert_int_ge(fb, 0);
	ck_assert_uint_ne(port_of(&a), port_of(&b));
	ck_assert_uint_ge(port_of(&a), base);
	ck_assert_uint_le(port_of(&a), base + 1);
	ck_assert_uint_ge(port_of(&b), base);
	ck_assert_uint_le(port_of(&b), base + 1);
	/* The range is full now. */
	fc = psc_listen(&c, len, range);
	ck_assert_int_eq(fc, -EADDRINUSE);
	ck_assert_uint_eq(port_of(&c), 0);
	close(fa);
	close(fb);
}
END_TEST

START_TEST(test_listen_any)
{
	struct sockaddr_storage a, b;
	socklen_t len = loopback(&a, 0);
	int fa, fb;

	fa = psc_listen(&a, len, NULL);
	ck_assert_int_ge(fa, 0);
	ck_assert_uint_ne(port_of(&a), 0);
	loopback(&b, 0);
	fb = psc_listen(&b, len, "");
	ck_assert_int_ge(fb, 0);
	ck_assert_uint_ne(port_of(&b), 0);
	ck_assert_uint_ne(port_of(&a), port_of(&b));
	close(fb);
	/* A nonzero port (the root's) is used as is, whatever the range. */
	b = a;
	close(fa);
	fa = psc_listen(&a, len, "1-2");
	ck_assert_int_ge(fa, 0);
	ck_assert_uint_eq(port_of(&a), port_of(&b));
	close(fa);
}
END_TEST

static const char *const bad_ranges[] = {"5-3", "0-10", "abc", "1-70000",
					 "100", "-5-10"};

START_TEST(test_listen_bad_range)
{
	struct sockaddr_storage a;
	socklen_t len = loopback(&a, 0);

	ck_assert_int_eq(psc_listen(&a, len, bad_ranges[_i]), -EINVAL);
}
END_TEST

/* ----------------------------------------------------------- connect */

/* A port on 127.0.0.1 that nothing listens on. */
static uint16_t closed_port(void)
{
	struct sockaddr_storage a;
	socklen_t len = loopback(&a, 0);
	int fd = psc_listen(&a, len, NULL);

	ck_assert_int_ge(fd, 0);
	close(fd);
	return port_of(&a);
}

START_TEST(test_connect_closed_times_out)
{
	struct sockaddr_storage a;
	socklen_t len = loopback(&a, closed_port());
	double t0 = psc_now(), deadline = t0 + 0.5, dt;
	int last = 0;
	int fd = psc_connect_retry((struct sockaddr *)&a, len, deadline, &last);

	dt = psc_now() - t0;
	if (fd >= 0)
		close(fd);
	/* It keeps retrying until the deadline, and not much longer. */
	ck_assert_msg(dt >= 0.45 && dt <= 0.8, "returned after %.3f s", dt);
	ck_assert_msg(fd == -ETIMEDOUT, "returned %d (%s), expected -ETIMEDOUT",
		      fd, strerror(-fd));
	/* The reason survives for the message. */
	ck_assert_int_eq(last, ECONNREFUSED);
}
END_TEST

START_TEST(test_connect_past_deadline)
{
	struct sockaddr_storage a;
	socklen_t len = loopback(&a, closed_port());

	int last = 0;

	ck_assert_int_eq(psc_connect_retry((struct sockaddr *)&a, len,
					   psc_now() - 1, &last),
			 -ETIMEDOUT);
}
END_TEST

struct late_listener {
	struct sockaddr_storage addr;
	socklen_t len;
	int fd;
	int *last; /* the connecting thread's psc_connect_retry last_err */
};

/*
 * Listen once the connecting thread has been refused (its last_err says
 * ECONNREFUSED), so that it is reached by a retry; give up after 10 s.
 */
static void *listen_late(void *arg)
{
	struct late_listener *l = arg;
	double end = psc_now() + 10;

	while (__atomic_load_n(l->last, __ATOMIC_RELAXED) != ECONNREFUSED &&
	       psc_now() < end)
		usleep(1000);
	l->fd = psc_listen(&l->addr, l->len, NULL);
	return NULL;
}

/* A root that comes up late is reached by retrying. */
START_TEST(test_connect_late_listener)
{
	struct late_listener l;
	pthread_t th;
	int fd, last = 0;

	l.len = loopback(&l.addr, closed_port());
	l.last = &last;
	ck_assert_int_eq(pthread_create(&th, NULL, listen_late, &l), 0);
	fd = psc_connect_retry((struct sockaddr *)&l.addr, l.len,
			       psc_now() + 15, &last);
	pthread_join(th, NULL);
	ck_assert_int_ge(l.fd, 0);
	ck_assert_msg(fd >= 0, "psc_connect_retry: %s", strerror(-fd));
	/* Untouched by a first attempt that connects: one was refused. */
	ck_assert_int_eq(last, ECONNREFUSED);
	close(fd);
	close(l.fd);
}
END_TEST

/* ------------------------------------------------------------ read */

START_TEST(test_read_timeout)
{
	int sv[2];
	char buf[8];
	double t0, dt;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	t0 = psc_now();
	ck_assert_int_eq(psc_read_full(sv[0], buf, sizeof(buf), t0 + 0.2),
			 -ETIMEDOUT);
	dt = psc_now() - t0;
	ck_assert_msg(dt >= 0.19 && dt <= 0.45, "timed out after %.3f s", dt);

	/* A partial message times out, too. */
	ck_assert_int_eq(write(sv[1], "abc", 3), 3);
	t0 = psc_now();
	ck_assert_int_eq(psc_read_full(sv[0], buf, sizeof(buf), t0 + 0.2),
			 -ETIMEDOUT);
	dt = psc_now() - t0;
	ck_assert_msg(dt >= 0.19 && dt <= 0.45, "timed out after %.3f s", dt);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(test_read_eof)
{
	int sv[2];
	char buf[8];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(write(sv[1], "abcd", 4), 4);
	close(sv[1]);
	ck_assert_int_eq(psc_read_full(sv[0], buf, sizeof(buf), psc_now() + 2),
			 -ECONNRESET);
	close(sv[0]);
}
END_TEST

struct writer {
	int fd;
	const uint8_t *buf;
	size_t len;
	int rc;
};

static void *write_all(void *arg)
{
	struct writer *w = arg;

	w->rc = psc_write_full(w->fd, w->buf, w->len, psc_now() + 5);
	return NULL;
}

/* Messages larger than the socket buffers arrive whole and in order. */
START_TEST(test_write_read_roundtrip)
{
	size_t len = (size_t)1 << (14 + _i * 3); /* 16 KiB .. 8 MiB */
	uint8_t *out = malloc(len), *in = calloc(1, len);
	struct writer w;
	pthread_t th;
	int sv[2];

	ck_assert_ptr_nonnull(out);
	ck_assert_ptr_nonnull(in);
	for (size_t k = 0; k < len; k++)
		out[k] = (uint8_t)(k * 31 + k / 251);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	w = (struct writer){sv[1], out, len, 1};
	ck_assert_int_eq(pthread_create(&th, NULL, write_all, &w), 0);
	ck_assert_int_eq(psc_read_full(sv[0], in, len, psc_now() + 5), 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(w.rc, 0);
	ck_assert_mem_eq(in, out, len);
	close(sv[0]);
	close(sv[1]);
	free(in);
	free(out);
}
END_TEST

START_TEST(test_write_closed)
{
	int sv[2];
	char buf[4096] = {0};
	int rc = 0;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	close(sv[0]);
	/* No SIGPIPE: the error comes back as a value. */
	for (int n = 0; n < 100 && rc == 0; n++)
		rc = psc_write_full(sv[1], buf, sizeof(buf), psc_now() + 1);
	ck_assert_int_eq(rc, -EPIPE);
	close(sv[1]);
}
END_TEST

static Suite *net_suite(void)
{
	Suite *s = suite_create("net");
	TCase *tc = tcase_create("parse");

	tcase_add_loop_test(tc, test_hostport_ok, 0,
			    (int)PSC_ARRAY_SIZE(hp_ok));
	tcase_add_loop_test(tc, test_hostport_bad, 0,
			    (int)PSC_ARRAY_SIZE(hp_bad));
	tcase_add_test(tc, test_hostport_length);
	tcase_add_loop_test(tc, test_ifname_match, 0,
			    (int)PSC_ARRAY_SIZE(ifmatch));
	tcase_add_loop_test(tc, test_sockaddr, 0, (int)PSC_ARRAY_SIZE(addrs));
	tcase_add_test(tc, test_sockaddr_other);
	suite_add_tcase(s, tc);

	tc = tcase_create("iface");
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_iface_loopback_root);
	tcase_add_test(tc, test_iface_loopback_root6);
	tcase_add_test(tc, test_iface_nosuch);
	tcase_add_test(tc, test_iface_spec_lo);
	tcase_add_test(tc, test_iface_default);
	tcase_add_test(tc, test_iface_route);
	suite_add_tcase(s, tc);

	tc = tcase_create("socket");
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_listen_range);
	tcase_add_test(tc, test_listen_any);
	tcase_add_loop_test(tc, test_listen_bad_range, 0,
			    (int)PSC_ARRAY_SIZE(bad_ranges));
	tcase_add_test(tc, test_connect_closed_times_out);
	tcase_add_test(tc, test_connect_past_deadline);
	tcase_add_test(tc, test_connect_late_listener);
	tcase_add_test(tc, test_read_timeout);
	tcase_add_test(tc, test_read_eof);
	tcase_add_loop_test(tc, test_write_read_roundtrip, 0, 4);
	tcase_add_test(tc, test_write_closed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(net_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
