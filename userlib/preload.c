// SPDX-License-Identifier: GPL-2.0
/*
 * librdmasock-preload.so: make an unchanged program's TCP sockets rdmasock sockets.
 *
 * Only socket() is intercepted.  socket(AF_INET or AF_INET6, SOCK_STREAM, 0 or IPPROTO_TCP) becomes
 * socket(<rdmasock family>, ...), the family read once from the module's sysfs parameter.  When the
 * module is absent or refuses, the original call is made: nothing breaks, everything stays TCP.
 * Other sockets are never touched.  RDMASOCK_DEBUG=1 logs one line per decision to stderr.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/rdmasock.h>

typedef int (*socket_fn)(int, int, int);

static socket_fn real_socket;
static int rdmasock_family = -1;
static int debug;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init(void)
{
	const char *d = getenv("RDMASOCK_DEBUG");
	char buf[16];
	ssize_t n;
	int fd;

	real_socket = (socket_fn)dlsym(RTLD_NEXT, "socket");
	debug = d && *d && strcmp(d, "0");
	fd = open(RDMASOCK_FAMILY_PARAM, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = 0;
		rdmasock_family = atoi(buf);
	}
}

/* One line, written with write(2): no stdio locks, safe after fork and in signal handlers. */
static void log_decision(const char *what, int domain, int fd, int err)
{
	char line[160];
	int n;

	if (!debug)
		return;
	n = snprintf(line, sizeof(line), "rdmasock[%d]: socket(%s) -> %s fd %d%s%s\n", getpid(),
		     domain == AF_INET ? "AF_INET" : "AF_INET6", what, fd,
		     err ? ", errno " : "", err ? strerror(err) : "");
	if (n > 0)
		(void)!write(2, line, n < (int)sizeof(line) ? n : (int)sizeof(line) - 1);
}

static int eligible(int domain, int type, int protocol)
{
	int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);

	return (domain == AF_INET || domain == AF_INET6) && base == SOCK_STREAM &&
	       (protocol == 0 || protocol == IPPROTO_TCP);
}

int socket(int domain, int type, int protocol)
{
	int fd, err;

	pthread_once(&once, init);
	if (!real_socket) {
		errno = ENOSYS;
		return -1;
	}
	if (!eligible(domain, type, protocol) || rdmasock_family <= 0)
		return real_socket(domain, type, protocol);
	fd = real_socket(rdmasock_family, type, protocol);
	if (fd >= 0) {
		log_decision("rdmasock", domain, fd, 0);
		return fd;
	}
	err = errno;
	fd = real_socket(domain, type, protocol);
	log_decision("tcp (module refused)", domain, fd, err);
	return fd;
}
