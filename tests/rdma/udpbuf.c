/*
 * udpbuf: preloaded into the RDMA rig's qemu processes (tests/rdma/rig.sh)
 * to give the UDP sockets that carry the guests' wire 8 MiB receive and
 * send buffers. Under software emulation a guest drains its socket in
 * bursts, and with the default buffer (about 200 KiB) the host dropped
 * about 40% of the wire's datagrams in a p2p run, each loss costing rxe
 * a retransmission timeout of about a second. Only qemu's own sockets are
 * touched; the host's settings are not.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/socket.h>

#define RIG_SOCKBUF (8 << 20)

int socket(int domain, int type, int protocol)
{
	static int (*real)(int, int, int);
	int fd, sz = RIG_SOCKBUF;

	if (!real)
		real = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
	if (!real)
		return -1;
	fd = real(domain, type, protocol);
	if (fd >= 0 && (domain == AF_INET || domain == AF_INET6) &&
	    (type & 0xf) == SOCK_DGRAM) {
		/* FORCE ignores rmem_max but needs CAP_NET_ADMIN. */
		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
		if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)))
			setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	}
	return fd;
}
