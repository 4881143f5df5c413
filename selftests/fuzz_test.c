// SPDX-License-Identifier: GPL-2.0
/*
 * A bounded random syscall fuzzer over rdmasock sockets in every state (fresh, bound, listening,
 * connecting, connected, shut down, reset).  Thousands of calls with random arguments and flags,
 * all nonblocking so nothing can hang; the seed is logged (RDMASOCK_FUZZ_SEED replays a run).
 * The kernel must not warn (the VM runner checks), every call must return, the module must unload
 * afterwards (guest-init checks), and an honest connection must still work at the end.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <sys/uio.h>
#include <time.h>
#include "lib.h"
#include "kselftest_harness.h"

#define POOL		24
#define ITERATIONS	4000
#define PORTS		4

static unsigned int seed;
static unsigned int ops_mask = 0xffff;	/* RDMASOCK_FUZZ_OPS: which of the 16 call kinds to make */
static int fds[POOL];
static unsigned short ports[PORTS];

static unsigned int rnd(unsigned int n)
{
	return n ? (unsigned int)rand_r(&seed) % n : 0;
}

static socklen_t random_addr(struct sockaddr_storage *ss)
{
	int af = rnd(2) ? AF_INET : AF_INET6;
	socklen_t len;

	switch (rnd(8)) {
	case 0:		/* garbage */
		for (size_t i = 0; i < sizeof(*ss); i++)
			((unsigned char *)ss)[i] = rnd(256);
		return rnd(sizeof(*ss) + 1);
	case 1:		/* loopback: no RDMA path */
		memset(ss, 0, sizeof(*ss));
		ss->ss_family = af;
		if (af == AF_INET) {
			((struct sockaddr_in *)ss)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			((struct sockaddr_in *)ss)->sin_port = htons(ports[rnd(PORTS)]);
			return sizeof(struct sockaddr_in);
		}
		((struct sockaddr_in6 *)ss)->sin6_addr = in6addr_loopback;
		((struct sockaddr_in6 *)ss)->sin6_port = htons(ports[rnd(PORTS)]);
		return sizeof(struct sockaddr_in6);
	default:	/* the host, on one of a few ports (so listeners get hit) or port 0 */
		len = host_addr(af, ss, rnd(5) ? ports[rnd(PORTS)] : 0);
		return rnd(10) ? len : rnd(len + 1);
	}
}

static void new_socket(int i)
{
	if (fds[i] >= 0)
		close(fds[i]);
	fds[i] = socket(rs_family_number(), SOCK_STREAM | SOCK_NONBLOCK, rnd(4) ? 0 : IPPROTO_TCP);
}

static const int levels[] = { SOL_SOCKET, IPPROTO_TCP, IPPROTO_IP, IPPROTO_IPV6, SOL_RDMASOCK, 12345 };

static void fuzz_sockopt(int fd, bool set)
{
	int level = levels[rnd(sizeof(levels) / sizeof(levels[0]))], name = rnd(80);
	unsigned char buf[256];
	socklen_t len = rnd(sizeof(buf) + 1);

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = rnd(4) ? 0 : rnd(256);
	if (level == SOL_SOCKET && (name == SO_LINGER || name == SO_RCVTIMEO || name == SO_SNDTIMEO ||
				    name == SO_RCVTIMEO_NEW || name == SO_SNDTIMEO_NEW))
		memset(buf, 0, sizeof(buf));	/* bounded waits only: everything is nonblocking */
	if (set)
		setsockopt(fd, level, name, buf, len);
	else
		getsockopt(fd, level, name, buf, &len);
}

static void one_call(int i)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char buf[8192];
	int fd = fds[i], flags = rnd(2) ? MSG_DONTWAIT : 0;
	unsigned int f = rnd(64), op;

	flags |= MSG_DONTWAIT | MSG_NOSIGNAL;
	op = rnd(16);
	if (!(ops_mask & (1u << op)))
		return;
	if (f & 1)
		flags |= MSG_PEEK;
	if (f & 2)
		flags |= MSG_WAITALL;
	if (f & 4)
		flags |= MSG_MORE;
	if (f & 8)
		flags |= MSG_OOB;
	if (f & 16)
		flags |= MSG_TRUNC;
	switch (op) {
	case 0:
		new_socket(i);
		break;
	case 1:
		len = random_addr(&ss);
		bind(fd, (struct sockaddr *)&ss, len);
		break;
	case 2:
		listen(fd, rnd(8) - 1);
		break;
	case 3:
	case 4:
		len = random_addr(&ss);
		connect(fd, (struct sockaddr *)&ss, len);
		break;
	case 5: {
		int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK);

		if (c >= 0) {
			int j = rnd(POOL);

			if (fds[j] >= 0)
				close(fds[j]);
			fds[j] = c;
		}
		break;
	}
	case 6:
		fuzz_sockopt(fd, true);
		break;
	case 7:
		fuzz_sockopt(fd, false);
		break;
	case 8: {
		int v;
		unsigned long cmds[] = { FIONREAD, SIOCOUTQ, FIONBIO, SIOCATMARK, 0x89ff, rnd(0x10000) };
		unsigned long cmd = cmds[rnd(6)];

		/*
		 * Not the 0x89xx socket ioctls at random: as root they reconfigure interfaces,
		 * routes and ARP (SIOCSIFFLAGS, SIOCDELRT...), which breaks the test host, not us.
		 */
		if ((cmd & 0xff00) == 0x8900 && cmd != SIOCOUTQ && cmd != SIOCATMARK && cmd != 0x89ff)
			cmd = FIONREAD;
		v = cmd == FIONBIO ? 1 : 0;
		ioctl(fd, cmd, &v);
		break;
	}
	case 9:
	case 10: {
		struct iovec iov[3] = { { buf, rnd(4096) }, { buf + 4096, rnd(4096) }, { NULL, 0 } };
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = 1 + rnd(3) };

		sendmsg(fd, &m, flags);
		break;
	}
	case 11:
	case 12: {
		struct iovec iov = { buf, rnd(sizeof(buf)) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

		recvmsg(fd, &m, flags);
		break;
	}
	case 13: {
		struct pollfd p = { .fd = fd, .events = rnd(0x10000) };

		poll(&p, 1, 0);
		break;
	}
	case 14:
		shutdown(fd, rnd(4));
		break;
	case 15:
		if (rnd(4) == 0) {
			close(fd);
			fds[i] = -1;
		}
		break;
	}
}

FIXTURE(fuzz) {
	int unused;
};

FIXTURE_SETUP(fuzz)
{
}

FIXTURE_TEARDOWN(fuzz)
{
}

TEST_F_TIMEOUT(fuzz, random_calls_on_sockets_in_all_states, 600)
{
	const char *s = getenv("RDMASOCK_FUZZ_SEED");
	int c, d;
	char b[2];

	seed = s ? strtoul(s, NULL, 0) : (unsigned int)time(NULL);
	s = getenv("RDMASOCK_FUZZ_OPS");
	if (s)
		ops_mask = strtoul(s, NULL, 0);
	TH_LOG("seed %u (RDMASOCK_FUZZ_SEED=%u replays this run)", seed, seed);
	for (int i = 0; i < PORTS; i++)
		ports[i] = 20000 + rnd(20000);
	for (int i = 0; i < POOL; i++) {
		fds[i] = -1;
		new_socket(i);
	}
	for (int n = 0; n < ITERATIONS; n++) {
		int i = rnd(POOL);

		if (fds[i] < 0)
			new_socket(i);
		if (fds[i] >= 0)
			one_call(i);
	}
	for (int i = 0; i < POOL; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	/* Still sane: an honest connection over RDMA. */
	ASSERT_EQ(0, make_pair(CARRIER_RDMASOCK, AF_INET, &c, &d));
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c, RDMASOCK_MODE));
	ASSERT_EQ(2, send(c, "ok", 2, 0));
	ASSERT_EQ(2, recv(d, b, 2, MSG_WAITALL));
	close(c);
	close(d);
}

TEST_HARNESS_MAIN
