/*
 * Sockets for the rendezvous and the van's address exchange: host:port
 * parsing, interface choice with NCCL_SOCKET_IFNAME's syntax, listening,
 * connecting with backoff, and full reads and writes under a deadline.
 * Every blocking call takes a deadline (psc_now() seconds) and returns a
 * negative errno, never blocking past it.
 */
#ifndef PSC_NET_H
#define PSC_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* A parsed "host:port", "[v6]:port" or "host" (port 0). */
struct psc_hostport {
	char host[256];
	uint16_t port;
};

/* Parse s into hp. Returns 0 or -EINVAL (bad brackets, port, length). */
int psc_hostport_parse(const char *s, struct psc_hostport *hp);

/*
 * NCCL_SOCKET_IFNAME syntax: comma list of prefixes; leading '^' makes it
 * an exclude list; leading '=' requires exact names. Returns true if name
 * is selected by spec.
 */
bool psc_ifname_match(const char *spec, const char *name);

/* The chosen interface for this rank. */
struct psc_iface {
	char name[64];
	struct sockaddr_storage addr; /* port 0 */
	socklen_t addrlen;
	char addrstr[64];
};

/*
 * Choose the interface to advertise. spec is PS_COMM_IFNAME (may be NULL
 * or empty), root the rendezvous address (may be NULL). family is AF_INET,
 * AF_INET6 or AF_UNSPEC. Loopback is chosen only when root is loopback or
 * spec selects it; docker* and veth* are skipped unless spec selects them.
 * Returns 0, or -ENODEV with a message listing the interfaces in err.
 */
int psc_iface_choose(const char *spec, const struct sockaddr *root,
		     int family, struct psc_iface *out, char *err,
		     size_t len);

/* Format addr as "a.b.c.d:port" or "[v6]:port". */
void psc_sockaddr_str(const struct sockaddr *addr, char *buf, size_t len);

/*
 * Resolve hp to a socket address (numeric or DNS, family AF_UNSPEC).
 * Returns 0 or -EHOSTUNREACH with the resolver's text in err.
 */
int psc_resolve(const struct psc_hostport *hp, struct sockaddr_storage *ss,
		socklen_t *sslen, char *err, size_t len);

/* True if a and b hold the same IP address (ports ignored). */
bool psc_sockaddr_same_ip(const struct sockaddr *a, const struct sockaddr *b);

/* True if addr is a loopback address. */
bool psc_sockaddr_is_loopback(const struct sockaddr *addr);

/*
 * Open a listening TCP socket on addr. If addr's port is nonzero it is
 * used as is (the root); else a port from range "lo-hi" (may be NULL or
 * empty: the kernel picks one). Backlog is large. The bound port is
 * written back into addr. Returns the fd or a negative errno.
 */
int psc_listen(struct sockaddr_storage *addr, socklen_t addrlen,
	       const char *range);

/*
 * Connect to addr, retrying refused or unreachable attempts with jittered
 * exponential backoff until deadline (psc_now() seconds). Returns the fd,
 * or -ETIMEDOUT when the deadline passed with the last attempt's errno in
 * *last_err (for the message).
 */
int psc_connect_retry(const struct sockaddr *addr, socklen_t addrlen,
		      double deadline, int *last_err);

/*
 * Write or read exactly len bytes before deadline. Return 0, -ETIMEDOUT,
 * -ECONNRESET on EOF, or another negative errno.
 */
int psc_write_full(int fd, const void *buf, size_t len, double deadline);
int psc_read_full(int fd, void *buf, size_t len, double deadline);

#endif /* PSC_NET_H */
