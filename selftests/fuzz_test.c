// SPDX-License-Identifier: GPL-2.0
/*
 * A bounded random syscall fuzzer over rdmasock sockets in every state (fresh, bound, listening,
 * connecting, connected, shut down, reset).  Thousands of calls with random arguments and flags;
 * the seed is logged (RDMASOCK_FUZZ_SEED replays a run's choices).
 *
 *   random_calls_on_sockets_in_all_states: one thread, every call nonblocking.
 *   concurrent_calls_on_shared_sockets: RDMASOCK_FUZZ_THREADS (3) threads on one shared pool,
 *     which also holds honest connected pairs; calls may block (every socket has 20 ms send and
 *     receive timeouts), so they sleep and drop their locks while the others close, shut down,
 *     re-make or reconnect the same socket.  The interleaving is not replayable, the choices
 *     are.  RDMASOCK_FUZZ_ITER sets the calls per thread (make soak runs it for long).
 *
 * The kernel must not warn (the VM runner fails on any Oops, KASAN, lockdep report), every call
 * must return, the module must unload afterwards (guest-init checks), and an honest connection
 * must still work at the end.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <sys/uio.h>
#include <pthread.h>
#include <time.h>
#include "lib.h"
#include "kselftest_harness.h"

#define POOL		24
#define ITERATIONS	4000
#define PORTS		4

static __thread unsigned int seed;	/* each thread its own choices */
static unsigned int ops_mask = 0xffff;	/* RDMASOCK_FUZZ_OPS: which of the 16 call kinds to make */
static int fds[POOL];			/* shared by the threads: read and written atomically */
static unsigned short ports[PORTS];
static bool may_block;			/* the concurrent run: calls may wait (bounded) */
static int hot;				/* the concurrent run: the slot most calls go to now */
static int burst_kind;			/* the concurrent run: kind << 8 | calls left, or 0 */

static int fd_at(int i)
{
	return __atomic_load_n(&fds[i], __ATOMIC_RELAXED);
}

/* Bounded waits for every socket of the concurrent run, accepted ones too. */
static void bound_waits(int fd)
{
	struct timeval tv = { .tv_sec = 0, .tv_usec = 20000 };

	if (fd < 0 || !may_block)
		return;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* Put @fd in slot @i, closing what was there (another thread may still be using it). */
static void put_fd(int i, int fd)
{
	int old = __atomic_exchange_n(&fds[i], fd, __ATOMIC_RELAXED);

	if (old >= 0)
		close(old);
}

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
	int type = SOCK_STREAM | (may_block && rnd(2) ? 0 : SOCK_NONBLOCK), fd;

	/* The family's sockets, and a third of the time IPPROTO_RDMASOCK ones of either family. */
	if (rnd(3) || rs_ipproto_number() <= 0)
		fd = socket(rs_family_number(), type, rnd(4) ? 0 : IPPROTO_TCP);
	else
		fd = socket(rnd(2) ? AF_INET : AF_INET6, type, rs_ipproto_number());

	bound_waits(fd);
	put_fd(i, fd);
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
				    name == SO_RCVTIMEO_NEW || name == SO_SNDTIMEO_NEW)) {
		/* Bounded waits only: a zero timeout is none, a random one may be hours. */
		if (set && may_block)
			return;
		memset(buf, 0, sizeof(buf));
	}
	if (set)
		setsockopt(fd, level, name, buf, len);
	else
		getsockopt(fd, level, name, buf, &len);
}

/* One call on slot @i: of kind @op, or of a random kind when @op < 0. */
static void one_call(int i, int op_kind)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char buf[8192];
	int fd = fd_at(i), flags = rnd(2) ? MSG_DONTWAIT : 0;
	unsigned int f = rnd(64), op;

	flags |= MSG_NOSIGNAL;
	if (!may_block)
		flags |= MSG_DONTWAIT;
	op = op_kind < 0 ? rnd(16) : (unsigned int)op_kind;
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
			bound_waits(c);
			put_fd(rnd(POOL), c);
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
		if (rnd(4) == 0)
			put_fd(i, -1);
		break;
	}
}

/* Still sane: an honest connection over RDMA. */
static int honest_connection_works(void)
{
	int c, d, ok;
	char b[2];

	if (make_pair(CARRIER_RDMASOCK, AF_INET, &c, &d))
		return 0;
	ok = rs_getint(c, RDMASOCK_MODE) == RDMASOCK_MODE_RDMA && send(c, "ok", 2, 0) == 2 &&
	     recv(d, b, 2, MSG_WAITALL) == 2 && !memcmp(b, "ok", 2);
	close(c);
	close(d);
	return ok;
}

static unsigned int start_seed(void)
{
	const char *s = getenv("RDMASOCK_FUZZ_SEED");

	seed = s ? strtoul(s, NULL, 0) : (unsigned int)time(NULL);
	s = getenv("RDMASOCK_FUZZ_OPS");
	if (s)
		ops_mask = strtoul(s, NULL, 0);
	return seed;
}

static long env_long(const char *name, long def)
{
	const char *s = getenv(name);

	return s ? strtol(s, NULL, 0) : def;
}

struct fuzz_thread {
	unsigned int seed;
	long calls;
};

static void *fuzz_thread(void *arg)
{
	struct fuzz_thread *t = arg;
	int burst;

	seed = t->seed;
	for (long n = 0; n < t->calls; n++) {
		/* Half the calls go to one socket all threads share for a while: same-socket races. */
		int i = rnd(2) ? __atomic_load_n(&hot, __ATOMIC_RELAXED) : rnd(POOL);

		if (!rnd(32) && !__atomic_load_n(&burst_kind, __ATOMIC_RELAXED))
			__atomic_store_n(&hot, rnd(POOL), __ATOMIC_RELAXED);

		if (fd_at(i) < 0)
			new_socket(i);
		/*
		 * Now and then every thread makes a burst of one kind of call (option levels,
		 * reads, closes ...), mostly on the shared socket: the windows where one call
		 * sleeps or drops a lock are short.  burst_kind: kind << 8 | calls left.
		 */
		if (!rnd(128)) {
			/* Options and reads most: their calls drop the socket lock inside. */
			static const int kinds[] = { 6, 7, 6, 7, 11, 12, 9, 14, 3, 5, 8, 13, 15 };
			int k = kinds[rnd(sizeof(kinds) / sizeof(kinds[0]))];

			if (k == 6 || k == 7)	/* on a fresh socket, whose TCP socket is re-made */
				new_socket(__atomic_load_n(&hot, __ATOMIC_RELAXED));
			__atomic_store_n(&burst_kind, k << 8 | (16 + rnd(64)), __ATOMIC_RELAXED);
		}
		burst = __atomic_load_n(&burst_kind, __ATOMIC_RELAXED);
		if (burst & 0xff)
			__atomic_compare_exchange_n(&burst_kind, &burst, burst - 1, false,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		if (burst & 0xff)
			i = __atomic_load_n(&hot, __ATOMIC_RELAXED);
		if (fd_at(i) >= 0)
			one_call(i, burst & 0xff ? burst >> 8 : -1);
	}
	return NULL;
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
	unsigned int s0 = start_seed();

	TH_LOG("seed %u (RDMASOCK_FUZZ_SEED=%u replays this run)", s0, s0);
	may_block = false;
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
			one_call(i, -1);
	}
	for (int i = 0; i < POOL; i++)
		put_fd(i, -1);
	ASSERT_TRUE(honest_connection_works());
}

TEST_F_TIMEOUT(fuzz, concurrent_calls_on_shared_sockets, 1800)
{
	int nthreads = env_long("RDMASOCK_FUZZ_THREADS", 3);
	long calls = env_long("RDMASOCK_FUZZ_ITER", 1500);
	unsigned int s0 = start_seed();
	struct fuzz_thread t[8];
	pthread_t tid[8];

	if (nthreads < 2 || nthreads > 8)
		nthreads = 3;
	TH_LOG("seed %u, %d threads, %ld calls each (RDMASOCK_FUZZ_SEED=%u replays the choices)",
	       s0, nthreads, calls, s0);
	may_block = true;
	for (int i = 0; i < PORTS; i++)
		ports[i] = 20000 + rnd(20000);
	for (int i = 0; i < POOL; i++) {
		fds[i] = -1;
		new_socket(i);
	}
	/* Honest connected pairs in the pool: data, peers that read, write and go away. */
	for (int i = 0; i + 1 < POOL && i < 8; i += 2) {
		int c, d;

		if (make_pair(CARRIER_RDMASOCK, rnd(2) ? AF_INET : AF_INET6, &c, &d))
			continue;
		bound_waits(c);
		bound_waits(d);
		put_fd(i, c);
		put_fd(i + 1, d);
	}
	for (int i = 0; i < nthreads; i++) {
		t[i] = (struct fuzz_thread){ .seed = s0 + 7919 * (i + 1), .calls = calls };
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, fuzz_thread, &t[i]));
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(tid[i], NULL);
	for (int i = 0; i < POOL; i++)
		put_fd(i, -1);
	ASSERT_TRUE(honest_connection_works());
}

#include "harness_main.h"
RS_TEST_MAIN
