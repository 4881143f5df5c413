// SPDX-License-Identifier: GPL-2.0
/*
 * Preloaded into the QEMU on the listen= end of the runner's --two-vm wire.  QEMU 7.2's -netdev
 * socket sets TCP_NODELAY on the socket its connect= end opens, not on the one its listen= end
 * accepts: frames from that guest met Nagle and the other end's delayed ACK.  rxe answers with an
 * ACK and then the reply, two small frames back to back, and the second waited ~40 ms (#23: every
 * RDMA ping-pong on this wire took ~24 ms one way).  So: TCP_NODELAY on every accepted socket.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

typedef int (*accept_fn)(int, struct sockaddr *, socklen_t *);
typedef int (*accept4_fn)(int, struct sockaddr *, socklen_t *, int);

static int nodelay(int fd)
{
	int one = 1, saved = errno;

	/* (Fails, harmlessly, on a socket that is not TCP.) */
	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	errno = saved;
	return fd;
}

int accept(int s, struct sockaddr *addr, socklen_t *len)
{
	static accept_fn next;

	if (!next)
		next = (accept_fn)dlsym(RTLD_NEXT, "accept");
	return nodelay(next(s, addr, len));
}

int accept4(int s, struct sockaddr *addr, socklen_t *len, int flags)
{
	static accept4_fn next;

	if (!next)
		next = (accept4_fn)dlsym(RTLD_NEXT, "accept4");
	return nodelay(next(s, addr, len, flags));
}
