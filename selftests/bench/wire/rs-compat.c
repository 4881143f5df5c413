// SPDX-License-Identifier: GPL-2.0
/*
 * Preloaded ahead of rdma-core 44's librspreload in make bench-wire, so that unchanged sockperf
 * and iperf3 run over rsockets at all (the peer is measured as users get it, minus two bugs):
 *
 * - sendto() with a destination on a connected stream socket: TCP ignores the address, rsockets'
 *   rsendto() fails it with EISCONN (sockperf's TCP mode always passes one).  Retried without it.
 * - select(): librspreload 44's select() reports readiness on the wrong descriptors (fixed in a
 *   later rdma-core), and iperf3 waits in select().  Here select() is built on poll(), which
 *   librspreload maps correctly, so every descriptor is looked up by librspreload's poll().
 *
 * Usage: LD_PRELOAD=build/bench-wire/rs-compat.so:/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/select.h>
#include <sys/socket.h>

typedef ssize_t (*sendto_fn)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);

ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to,
	       socklen_t tolen)
{
	static sendto_fn real;
	ssize_t n;

	if (!real)
		real = (sendto_fn)dlsym(RTLD_NEXT, "sendto");
	n = real(fd, buf, len, flags, to, tolen);
	if (n < 0 && errno == EISCONN && to)
		n = real(fd, buf, len, flags, NULL, 0);
	return n;
}

static int timeout_ms(const struct timeval *tv)
{
	long long ms;

	if (!tv)
		return -1;
	ms = (long long)tv->tv_sec * 1000 + (tv->tv_usec + 999) / 1000;
	return ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

int select(int nfds, fd_set *rfds, fd_set *wfds, fd_set *efds, struct timeval *tv)
{
	struct pollfd *pfd;
	int n = 0, ready = 0, ret;

	if (nfds < 0 || nfds > FD_SETSIZE) {
		errno = EINVAL;
		return -1;
	}
	pfd = calloc(nfds ? nfds : 1, sizeof(*pfd));
	if (!pfd) {
		errno = ENOMEM;
		return -1;
	}
	for (int fd = 0; fd < nfds; fd++) {
		short events = 0;

		if (rfds && FD_ISSET(fd, rfds))
			events |= POLLIN;
		if (wfds && FD_ISSET(fd, wfds))
			events |= POLLOUT;
		if (efds && FD_ISSET(fd, efds))
			events |= POLLPRI;
		if (events) {
			pfd[n].fd = fd;
			pfd[n].events = events;
			n++;
		}
	}
	ret = poll(pfd, n, timeout_ms(tv));
	if (ret < 0) {
		int saved = errno;

		free(pfd);
		errno = saved;
		return -1;
	}
	if (rfds)
		FD_ZERO(rfds);
	if (wfds)
		FD_ZERO(wfds);
	if (efds)
		FD_ZERO(efds);
	for (int i = 0; ret > 0 && i < n; i++) {
		short ev = pfd[i].events, rev = pfd[i].revents;

		/* A hung-up or failed socket is readable and writable, as select() says of TCP's. */
		if ((ev & POLLIN) && (rev & (POLLIN | POLLHUP | POLLERR))) {
			FD_SET(pfd[i].fd, rfds);
			ready++;
		}
		if ((ev & POLLOUT) && (rev & (POLLOUT | POLLHUP | POLLERR))) {
			FD_SET(pfd[i].fd, wfds);
			ready++;
		}
		if ((ev & POLLPRI) && (rev & POLLPRI)) {
			FD_SET(pfd[i].fd, efds);
			ready++;
		}
	}
	if (!ret && tv)
		tv->tv_sec = tv->tv_usec = 0;
	free(pfd);
	return ready;
}
