/*
 * Networking helpers for the rendezvous and interface choice: host:port
 * parsing (with [v6]:port), NCCL_SOCKET_IFNAME-style interface matching,
 * choosing the interface to advertise, listening within a port range,
 * connecting with jittered backoff, and deadline-bounded reads and writes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "net/net.h"
#include "util/param.h"
#include "util/util.h"

int psc_hostport_parse(const char *s, struct psc_hostport *hp)
{
	const char *host = s, *colon, *port = NULL;
	size_t hlen;

	memset(hp, 0, sizeof(*hp));
	if (!s || !*s)
		return -EINVAL;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close == s + 1)
			return -EINVAL;
		host = s + 1;
		hlen = (size_t)(close - host);
		if (close[1] == ':')
			port = close + 2;
		else if (close[1] != '\0')
			return -EINVAL;
	} else {
		colon = strrchr(s, ':');
		/* More than one colon without brackets: a bare IPv6 host. */
		if (colon && strchr(s, ':') == colon) {
			hlen = (size_t)(colon - s);
			port = colon + 1;
		} else {
			hlen = strlen(s);
		}
	}
	if (hlen == 0 || hlen >= sizeof(hp->host))
		return -EINVAL;
	memcpy(hp->host, host, hlen);
	hp->host[hlen] = '\0';
	if (port) {
		const char *end;
		unsigned v;

		if (psc_param_parse_port(port, &end, &v) != 0 || *end)
			return -EINVAL;
		hp->port = (uint16_t)v;
	}
	return 0;
}

/* Whether name matches one comma-separated item (prefix or exact). */
static bool ifname_item_match(const char *item, size_t ilen, const char *name,
			      bool exact)
{
	if (exact)
		return strlen(name) == ilen && strncmp(item, name, ilen) == 0;
	return strncmp(item, name, ilen) == 0;
}

bool psc_ifname_match(const char *spec, const char *name)
{
	bool exclude = false, exact = false, hit = false;

	if (!spec || !*spec)
		return true;
	if (*spec == '^') {
		exclude = true;
		spec++;
	}
	if (*spec == '=') {
		exact = true;
		spec++;
	}
	while (*spec && !hit) {
		const char *comma = strchr(spec, ',');
		size_t ilen = comma ? (size_t)(comma - spec) : strlen(spec);

		if (ilen > 0 && ifname_item_match(spec, ilen, name, exact))
			hit = true;
		spec += ilen + (comma ? 1 : 0);
	}
	return exclude ? !hit : hit;
}

void psc_sockaddr_str(const struct sockaddr *addr, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (addr->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)addr;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(in->sin_port));
	} else if (addr->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)addr;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, ntohs(in6->sin6_port));
	} else {
		snprintf(buf, len, "(family %d)", addr->sa_family);
	}
}

bool psc_sockaddr_is_loopback(const struct sockaddr *addr)
{
	if (addr->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)addr;

		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (addr->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)addr;

		return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
	}
	return false;
}

int psc_resolve(const struct psc_hostport *hp, struct sockaddr_storage *ss,
		socklen_t *sslen, char *err, size_t len)
{
	struct addrinfo hints = {0}, *res = NULL;
	char port[8];
	int rc;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(port, sizeof(port), "%u", hp->port);
	rc = getaddrinfo(hp->host, port, &hints, &res);
	if (rc != 0 || !res) {
		snprintf(err, len, "cannot resolve \"%s\": %s", hp->host,
			 gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*sslen = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* The source address the kernel would use to reach dst (port ignored). */
static int route_source(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	socklen_t dlen = dst->sa_family == AF_INET ? sizeof(struct sockaddr_in)
						   : sizeof(struct sockaddr_in6);
	socklen_t slen = sizeof(*src);
	struct sockaddr_storage d;
	int fd, rc = -1;

	memset(src, 0, sizeof(*src));
	fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memcpy(&d, dst, dlen);
	/* A UDP connect only consults the routing table; port must be set. */
	if (d.ss_family == AF_INET && !((struct sockaddr_in *)&d)->sin_port)
		((struct sockaddr_in *)&d)->sin_port = htons(9);
	if (d.ss_family == AF_INET6 && !((struct sockaddr_in6 *)&d)->sin6_port)
		((struct sockaddr_in6 *)&d)->sin6_port = htons(9);
	if (connect(fd, (struct sockaddr *)&d, dlen) == 0 &&
	    getsockname(fd, (struct sockaddr *)src, &slen) == 0)
		rc = 0;
	close(fd);
	return rc;
}

bool psc_sockaddr_same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		      &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
}

/* Whether interface ifa may be advertised under spec and the defaults. */
static bool iface_allowed(const struct ifaddrs *ifa, const char *spec,
			  bool loopback_ok, int family)
{
	const struct sockaddr *a = ifa->ifa_addr;

	if (!a || (a->sa_family != AF_INET && a->sa_family != AF_INET6))
		return false;
	if (family != AF_UNSPEC && a->sa_family != family)
		return false;
	if (!(ifa->ifa_flags & IFF_UP))
		return false;
	/* Link-local IPv6 needs a scope id peers cannot know. */
	if (a->sa_family == AF_INET6 &&
	    IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)a)->sin6_addr))
		return false;
	if (spec && *spec)
		return psc_ifname_match(spec, ifa->ifa_name);
	if (psc_sockaddr_is_loopback(a) || (ifa->ifa_flags & IFF_LOOPBACK))
		return loopback_ok;
	return psc_ifname_match("^docker,veth", ifa->ifa_name);
}

static void iface_fill(struct psc_iface *out, const struct ifaddrs *ifa)
{
	char buf[96];
	char *colon;

	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", ifa->ifa_name);
	out->addrlen = ifa->ifa_addr->sa_family == AF_INET
			       ? sizeof(struct sockaddr_in)
			       : sizeof(struct sockaddr_in6);
	memcpy(&out->addr, ifa->ifa_addr, out->addrlen);
	psc_sockaddr_str(ifa->ifa_addr, buf, sizeof(buf));
	/* Drop the ":0" port suffix for display. */
	colon = strrchr(buf, ':');
	if (colon)
		*colon = '\0';
	snprintf(out->addrstr, sizeof(out->addrstr), "%s", buf);
}

/* List "name(addr)" of every interface into buf for error messages. */
static void iface_list(const struct ifaddrs *all, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (const struct ifaddrs *i = all; i; i = i->ifa_next) {
		struct psc_iface tmp;

		if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET &&
				     i->ifa_addr->sa_family != AF_INET6))
			continue;
		iface_fill(&tmp, i);
		PSC_APPEND(buf, len, used, "%s%s %s", used ? ", " : "", tmp.name,
			   tmp.addrstr);
	}
}

int psc_iface_choose(const char *spec, const struct sockaddr *root,
		     int family, struct psc_iface *out, char *err, size_t len)
{
	struct ifaddrs *all = NULL, *first = NULL;
	struct sockaddr_storage via;
	bool loopback_ok, have_via;
	char list[768];

	if (getifaddrs(&all) != 0) {
		snprintf(err, len, "getifaddrs: %s", strerror(errno));
		return -errno;
	}
	loopback_ok = root && psc_sockaddr_is_loopback(root);
	if (root && family == AF_UNSPEC)
		family = root->sa_family;
	have_via = root && route_source(root, &via) == 0;
	for (struct ifaddrs *i = all; i; i = i->ifa_next) {
		if (!iface_allowed(i, spec, loopback_ok, family))
			continue;
		/* The interface the kernel routes the root through wins. */
		if (have_via &&
		    psc_sockaddr_same_ip(i->ifa_addr, (struct sockaddr *)&via)) {
			first = i;
			break;
		}
		/* Without a root, prefer IPv4 when both families qualify. */
		if (!first || (family == AF_UNSPEC &&
			       first->ifa_addr->sa_family == AF_INET6 &&
			       i->ifa_addr->sa_family == AF_INET))
			first = i;
	}
	if (!first) {
		iface_list(all, list, sizeof(list));
		if (spec && *spec)
			snprintf(err, len, "PS_COMM_IFNAME=\"%s\" matches no "
				 "usable %s interface; interfaces here: %s",
				 spec, family == AF_INET6 ? "IPv6"
				       : family == AF_INET ? "IPv4" : "IP",
				 list);
		else
			snprintf(err, len, "no usable %s interface (loopback, "
				 "docker* and veth* are skipped for multi-host "
				 "jobs; set PS_COMM_IFNAME to choose); "
				 "interfaces here: %s",
				 family == AF_INET6 ? "IPv6"
				 : family == AF_INET ? "IPv4" : "IP", list);
		freeifaddrs(all);
		return -ENODEV;
	}
	iface_fill(out, first);
	freeifaddrs(all);
	return 0;
}

static void set_port(struct sockaddr_storage *a, uint16_t port)
{
	if (a->ss_family == AF_INET)
		((struct sockaddr_in *)a)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)a)->sin6_port = htons(port);
}

static uint16_t get_port(const struct sockaddr_storage *a)
{
	return ntohs(a->ss_family == AF_INET
			     ? ((const struct sockaddr_in *)a)->sin_port
			     : ((const struct sockaddr_in6 *)a)->sin6_port);
}

/* Bind and listen on addr as is. Returns fd or -errno. */
static int listen_at(const struct sockaddr_storage *addr, socklen_t addrlen)
{
	int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1, rc;

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)addr, addrlen) != 0 ||
	    listen(fd, 4096) != 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

int psc_listen(struct sockaddr_storage *addr, socklen_t addrlen,
	       const char *range)
{
	unsigned lo = 0, hi = 0;
	socklen_t len = addrlen;
	int fd = -EADDRINUSE;

	if (get_port(addr) == 0 && range && *range) {
		if (psc_param_parse_port_range(range, &lo, &hi) != 0)
			return -EINVAL;
		for (unsigned p = lo; p <= hi; p++) {
			set_port(addr, (uint16_t)p);
			fd = listen_at(addr, addrlen);
			if (fd != -EADDRINUSE)
				break;
		}
		if (fd < 0)
			set_port(addr, 0);
	} else {
		fd = listen_at(addr, addrlen);
	}
	if (fd >= 0)
		getsockname(fd, (struct sockaddr *)addr, &len);
	return fd;
}

/* Wait for fd to become readable (POLLIN) or writable; -ETIMEDOUT. */
static int wait_fd(int fd, short events, double deadline)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		double left = deadline - psc_now();
		int rc;

		if (left <= 0)
			return -ETIMEDOUT;
		rc = poll(&p, 1, (int)(left * 1000) + 1);
		if (rc > 0)
			return 0;
		if (rc < 0 && errno != EINTR)
			return -errno;
	}
}

/* One non-blocking connect attempt bounded by deadline. */
static int connect_once(const struct sockaddr *addr, socklen_t addrlen,
			double deadline)
{
	int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int rc, soerr = 0, one = 1, flags;
	socklen_t sl = sizeof(soerr);

	if (fd < 0)
		return -errno;
	flags = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, flags | O_NONBLOCK);
	rc = connect(fd, addr, addrlen);
	if (rc != 0 && errno != EINPROGRESS) {
		rc = -errno;
		goto fail;
	}
	if (rc != 0) {
		rc = wait_fd(fd, POLLOUT, deadline);
		if (rc)
			goto fail;
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
		if (soerr) {
			rc = -soerr;
			goto fail;
		}
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
fail:
	close(fd);
	return rc;
}

int psc_connect_retry(const struct sockaddr *addr, socklen_t addrlen,
		      double deadline, int *last_err)
{
	*last_err = ETIMEDOUT;
	for (unsigned attempt = 0; psc_now() < deadline; attempt++) {
		int fd = connect_once(addr, addrlen, deadline);

		if (fd >= 0)
			return fd;
		*last_err = -fd;
		if (fd == -ETIMEDOUT)
			break;
		psc_backoff_sleep(0.001, 0.512, attempt, true, deadline);
	}
	return -ETIMEDOUT;
}

int psc_write_full(int fd, const void *buf, size_t len, double deadline)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			int rc = wait_fd(fd, POLLOUT, deadline);

			if (rc)
				return rc;
		} else {
			return n < 0 ? -errno : -ECONNRESET;
		}
	}
	return 0;
}

int psc_read_full(int fd, void *buf, size_t len, double deadline)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = recv(fd, p, len, MSG_DONTWAIT);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (n == 0) {
			return -ECONNRESET;
		} else if (errno == EAGAIN || errno == EINTR) {
			int rc = wait_fd(fd, POLLIN, deadline);

			if (rc)
				return rc;
		} else {
			return -errno;
		}
	}
	return 0;
}
