/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the rdmasock selftests: the family number, the test host's addresses, and
 * connected pairs of either family so that every test runs on TCP (the oracle) and on rdmasock.
 */
#ifndef RDMASOCK_SELFTEST_LIB_H
#define RDMASOCK_SELFTEST_LIB_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <linux/rdmasock.h>

/*
 * TCP, the oracle; rdmasock as a family (socket(<family>, SOCK_STREAM, 0)); rdmasock as a protocol
 * of AF_INET/AF_INET6 (socket(AF_INET*, SOCK_STREAM, IPPROTO_RDMASOCK)).  The two rdmasock
 * carriers are one implementation and must behave the same.
 */
enum carrier { CARRIER_TCP, CARRIER_RDMASOCK, CARRIER_IPPROTO };

/*
 * The six carrier variants of a fixture (kselftest_harness.h) whose FIXTURE_VARIANT has
 * `enum carrier carrier` and `int af`: TCP, rdmasock's family and rdmasock's IPPROTO, each over
 * IPv4 and IPv6.  More designated initialisers, the same for all, may follow the fixture's name.
 */
#define CARRIER_VARIANTS(fixture, ...)								\
	FIXTURE_VARIANT_ADD(fixture, tcp4) { .carrier = CARRIER_TCP, .af = AF_INET, __VA_ARGS__ };	\
	FIXTURE_VARIANT_ADD(fixture, tcp6) { .carrier = CARRIER_TCP, .af = AF_INET6, __VA_ARGS__ };	\
	FIXTURE_VARIANT_ADD(fixture, rdma4) { .carrier = CARRIER_RDMASOCK, .af = AF_INET, __VA_ARGS__ }; \
	FIXTURE_VARIANT_ADD(fixture, rdma6) { .carrier = CARRIER_RDMASOCK, .af = AF_INET6, __VA_ARGS__ }; \
	FIXTURE_VARIANT_ADD(fixture, ipp4) { .carrier = CARRIER_IPPROTO, .af = AF_INET, __VA_ARGS__ };	\
	FIXTURE_VARIANT_ADD(fixture, ipp6) { .carrier = CARRIER_IPPROTO, .af = AF_INET6, __VA_ARGS__ }

/* Write @s to the file at @path (a module parameter, a sysfs, debugfs or tracefs file), truncated. */
static inline int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_TRUNC), ret;

	if (fd < 0)
		return -1;
	ret = write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
	close(fd);
	return ret;
}

/* A number in a module parameter's file (-1: no module). */
static inline int rs_param_number(const char *path)
{
	FILE *f = fopen(path, "r");
	int v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static inline int rs_family_number(void)
{
	return rs_param_number(RDMASOCK_FAMILY_PARAM);
}

static inline int rs_ipproto_number(void)
{
	return rs_param_number(RDMASOCK_IPPROTO_PARAM);
}

/* The socket() family for a carrier and an address family (SO_DOMAIN says it too). */
static inline int carrier_family(enum carrier c, int af)
{
	return c == CARRIER_RDMASOCK ? rs_family_number() : af;
}

/* The socket() protocol (0: the family's default); SO_PROTOCOL says IPPROTO_TCP but for IPPROTO. */
static inline int carrier_protocol(enum carrier c)
{
	return c == CARRIER_IPPROTO ? rs_ipproto_number() : 0;
}

static inline int carrier_socket(enum carrier c, int af, int type)
{
	return socket(carrier_family(c, af), type, carrier_protocol(c));
}

/* The test host's own address on the RDMA-capable interface (127.0.0.1 has no RDMA path). */
static inline socklen_t host_addr(int af, struct sockaddr_storage *ss, unsigned short port)
{
	const char *v4 = getenv("RDMASOCK_ADDR"), *v6 = getenv("RDMASOCK_ADDR6");

	memset(ss, 0, sizeof(*ss));
	if (af == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		inet_pton(AF_INET, v4 ? v4 : "127.0.0.1", &sin->sin_addr);
		return sizeof(*sin);
	}
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(port);
	inet_pton(AF_INET6, v6 ? v6 : "::1", &sin6->sin6_addr);
	return sizeof(*sin6);
}

static inline unsigned short addr_port(const struct sockaddr_storage *ss)
{
	return ntohs(ss->ss_family == AF_INET ? ((struct sockaddr_in *)ss)->sin_port :
						((struct sockaddr_in6 *)ss)->sin6_port);
}

/* A listening socket on the host address, ephemeral port; *ss receives the bound address. */
static inline int make_listener(enum carrier c, int af, struct sockaddr_storage *ss, socklen_t *len)
{
	int one = 1, fd = carrier_socket(c, af, SOCK_STREAM);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	*len = host_addr(af, ss, 0);
	if (bind(fd, (struct sockaddr *)ss, *len) || listen(fd, 16) ||
	    getsockname(fd, (struct sockaddr *)ss, len)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A connected pair through a fresh listener: *cfd the client, *sfd the accepted end. */
static inline int make_pair(enum carrier c, int af, int *cfd, int *sfd)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int lfd = make_listener(c, af, &ss, &len);

	if (lfd < 0)
		return -1;
	*cfd = carrier_socket(c, af, SOCK_STREAM);
	if (*cfd < 0 || connect(*cfd, (struct sockaddr *)&ss, len)) {
		close(lfd);
		return -1;
	}
	*sfd = accept(lfd, NULL, NULL);
	close(lfd);
	return *sfd < 0 ? -1 : 0;
}

static inline int rs_getint(int fd, int opt)
{
	int val = -1;
	socklen_t len = sizeof(val);

	if (getsockopt(fd, SOL_RDMASOCK, opt, &val, &len))
		return -errno;
	return val;
}

/* For rdmasock: is this connection really carried by RDMA (no silent fallback)? */
static inline bool carried_as_expected(enum carrier c, int fd)
{
	int mode;

	if (c == CARRIER_TCP)
		return true;
	mode = rs_getint(fd, RDMASOCK_MODE);
	if (mode != RDMASOCK_MODE_RDMA)
		fprintf(stderr, "# fd %d is not on RDMA: mode %d, fallback reason %d\n", fd, mode,
			rs_getint(fd, RDMASOCK_FALLBACK_REASON));
	return mode == RDMASOCK_MODE_RDMA;
}

/* Lines of /proc/net/rdmasock below the header: this namespace's sockets (-1: no such file). */
static inline int proc_sockets(void)
{
	FILE *f = fopen("/proc/net/rdmasock", "r");
	char line[512];
	int n = -1;

	while (f && fgets(line, sizeof(line), f))
		n++;
	if (f)
		fclose(f);
	return n;
}

/*
 * poll() one fd for @events, up to @ms; returns revents (0 on timeout).  A signal's handler
 * (SIGURG, which can come before the urgent byte is readable) ends poll() with EINTR: poll again
 * for the time left, so that only the deadline means "not in @ms".
 */
/* Milliseconds on the monotonic clock (a start for ms_since()). */
static inline long long mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

static inline long long ms_since(long long start)
{
	return mono_ms() - start;
}

static inline short poll_one(int fd, short events, int ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	long long start = mono_ms();
	long long left = ms;
	int n;

	while ((n = poll(&p, 1, (int)left)) < 0 && errno == EINTR) {
		if (ms < 0)
			continue;	/* no deadline */
		left = ms - ms_since(start);
		if (left < 0)
			left = 0;
	}
	return n == 1 ? p.revents : 0;
}

/* Simple deterministic byte pattern for stream checks. */
static inline unsigned char pattern_byte(unsigned long long pos, unsigned int seed)
{
	unsigned long long x = (pos + 1) * 0x9E3779B97F4A7C15ULL ^ seed;

	return (unsigned char)(x >> 29);
}

/* Write all of @len bytes. */
static inline int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= n;
	}
	return 0;
}

/* Write @len bytes of pattern @seed (stream positions 0 on); -1 with errno set on an error. */
static inline int write_pattern(int fd, size_t len, unsigned int seed)
{
	unsigned char buf[32768];
	size_t done = 0;

	while (done < len) {
		size_t n = len - done < sizeof(buf) ? len - done : sizeof(buf);

		for (size_t i = 0; i < n; i++)
			buf[i] = pattern_byte(done + i, seed);
		if (write_all(fd, buf, n))
			return -1;
		done += n;
	}
	return 0;
}

/* Read exactly @len bytes (0 on success, -1 on error or early EOF). */
static inline int read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

/* Transfer sizes shrink on the debug kernel (KASAN under TCG is ~10x slower): RDMASOCK_SLOW=1. */
static inline size_t scaled(size_t bytes)
{
	return getenv("RDMASOCK_SLOW") ? bytes / 8 : bytes;
}

/* The number at the start of a /proc or /sys file, or -1. */
static inline long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* A line of /proc/net/rdmasock_stat ("name netns global"), both columns in one read; 0 or -1. */
static inline int rs_counter_both(const char *name, long long *netns, long long *global)
{
	FILE *f = fopen("/proc/net/rdmasock_stat", "r");
	char line[256], key[96];
	int found = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%95s %lld %lld", key, netns, global) == 3 && !strcmp(key, name)) {
			found = 0;
			break;
		}
	if (f)
		fclose(f);
	return found;
}

/* This namespace's value of a line of /proc/net/rdmasock_stat, or -1. */
static inline long long rs_counter(const char *name)
{
	long long netns, global;

	return rs_counter_both(name, &netns, &global) ? -1 : netns;
}

/*
 * The completion queues rdmasock holds on RDMA devices, from iproute2's `rdma resource show cq`
 * (a kernel CQ is named by the module that made it): how many, and in *users the QPs' uses of
 * them (a QP counts once for its send and once for its receive queue).  -1: the tool failed.
 */
static inline int rs_cqs(int *users)
{
	FILE *p = popen("rdma resource show cq", "r");
	char line[512], *u;
	int n = 0, k;

	*users = 0;
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		if (!strstr(line, "[rdmasock]"))
			continue;
		n++;
		u = strstr(line, " users ");
		if (u && sscanf(u, " users %d", &k) == 1)
			*users += k;
	}
	return pclose(p) ? -1 : n;
}

/*
 * A module parameter changed for one test and put back after it: @p keeps the old value.  Put
 * back from the fixture's teardown, which the harness runs after a failed assertion too, so a
 * failing test does not leave the setting for the tests after it.
 */
struct param_saved {
	const char *path;	/* NULL: nothing to put back */
	char old[32];
};

static inline int param_swap(struct param_saved *p, const char *path, const char *val)
{
	FILE *f = fopen(path, "r+");
	int ok;

	if (!f)
		return -1;
	ok = fgets(p->old, sizeof(p->old), f) && !fseek(f, 0, SEEK_SET) && fputs(val, f) >= 0;
	ok = !fclose(f) && ok;
	if (ok)
		p->path = path;
	return ok ? 0 : -1;
}

static inline int param_restore(struct param_saved *p)
{
	FILE *f;
	int ok;

	if (!p->path)
		return 0;
	f = fopen(p->path, "w");
	ok = f && fputs(p->old, f) >= 0;
	ok = f && !fclose(f) && ok;
	p->path = NULL;
	return ok ? 0 : -1;
}

#endif
