// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock socket semantics, with TCP as the oracle: every test runs once per variant (TCP and
 * rdmasock, IPv4 and IPv6) and asserts the same observable behaviour.  rdmasock variants also check
 * that the connection really runs over RDMA, so a silent fallback fails them.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <linux/sockios.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <netinet/tcp.h>
#include <net/if.h>
#include "lib.h"
#include "kselftest_harness.h"

FIXTURE(pair) {
	int cfd;	/* client end */
	int sfd;	/* accepted end */
};

FIXTURE_VARIANT(pair) {
	enum carrier carrier;
	int af;
};

CARRIER_VARIANTS(pair);

FIXTURE_SETUP(pair)
{
	ASSERT_EQ(0, make_pair(variant->carrier, variant->af, &self->cfd, &self->sfd));
	ASSERT_TRUE(carried_as_expected(variant->carrier, self->cfd));
	ASSERT_TRUE(carried_as_expected(variant->carrier, self->sfd));
}

FIXTURE_TEARDOWN(pair)
{
	if (self->cfd >= 0)
		close(self->cfd);
	if (self->sfd >= 0)
		close(self->sfd);
}

static int getint(int fd, int level, int opt)
{
	int val = -1;
	socklen_t len = sizeof(val);

	return getsockopt(fd, level, opt, &val, &len) ? -errno : val;
}

static volatile sig_atomic_t sigpipes;

static void on_sigpipe(int sig)
{
	sigpipes++;
}

TEST_F(pair, send_recv_both_ways)
{
	char buf[64];

	ASSERT_EQ(5, send(self->cfd, "hello", 5, 0));
	ASSERT_EQ(5, recv(self->sfd, buf, 5, MSG_WAITALL));
	ASSERT_EQ(0, memcmp(buf, "hello", 5));
	ASSERT_EQ(6, write(self->sfd, "world!", 6));
	ASSERT_EQ(6, read(self->cfd, buf, 6));
	ASSERT_EQ(0, memcmp(buf, "world!", 6));
}

TEST_F(pair, zero_length)
{
	char c;

	ASSERT_EQ(0, send(self->cfd, "", 0, 0));
	ASSERT_EQ(-1, recv(self->sfd, &c, 0, MSG_DONTWAIT));
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ(-1, recv(self->sfd, &c, 1, MSG_DONTWAIT));
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ(1, send(self->cfd, "z", 1, 0));
	ASSERT_EQ(POLLIN, poll_one(self->sfd, POLLIN, 5000));
	ASSERT_EQ(0, recv(self->sfd, &c, 0, MSG_DONTWAIT));
	ASSERT_EQ(1, recv(self->sfd, &c, 1, MSG_DONTWAIT));
}

struct stream_arg {
	int fd;
	size_t len;
	unsigned int seed;
	size_t chunk;
	int err;
};

static void *stream_writer(void *p)
{
	struct stream_arg *a = p;
	unsigned char *buf = malloc(a->chunk);
	size_t done = 0;

	while (done < a->len) {
		size_t n = a->len - done < a->chunk ? a->len - done : a->chunk;

		for (size_t i = 0; i < n; i++)
			buf[i] = pattern_byte(done + i, a->seed);
		if (write_all(a->fd, buf, n)) {
			a->err = errno;
			break;
		}
		done += n;
	}
	free(buf);
	return NULL;
}

/*
 * Read @len bytes and check them against the pattern; returns the first bad offset or -1.  With
 * @peek_first, every chunk is peeked first and the read must return what the peek saw: the rings
 * may change (grow) anywhere in the stream, also between a peek and the read.
 */
static long long stream_check_how(int fd, size_t len, unsigned int seed, bool peek_first)
{
	unsigned char buf[65536], peeked[50000];
	size_t done = 0;

	while (done < len) {
		ssize_t n;

		if (peek_first) {
			n = recv(fd, peeked, sizeof(peeked), MSG_PEEK);
			if (n > 0 && (recv(fd, buf, n, 0) != n || memcmp(peeked, buf, n)))
				return done;
		} else {
			n = recv(fd, buf, sizeof(buf), 0);
		}
		if (n <= 0)
			return done;
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != pattern_byte(done + i, seed))
				return done + i;
		done += n;
	}
	return -1;
}

static long long stream_check(int fd, size_t len, unsigned int seed)
{
	return stream_check_how(fd, len, seed, false);
}

TEST_F(pair, large_transfer_in_order)
{
	/* Far larger than any ring, in odd-sized writes, so the cursors wrap many times. */
	struct stream_arg a = { .fd = self->cfd, .len = scaled(24 << 20), .seed = 7, .chunk = 77777 };
	pthread_t t;
	char c;

	ASSERT_EQ(0, pthread_create(&t, NULL, stream_writer, &a));
	ASSERT_EQ(-1, stream_check(self->sfd, a.len, a.seed));
	pthread_join(t, NULL);
	ASSERT_EQ(0, a.err);
	ASSERT_EQ(0, shutdown(self->cfd, SHUT_WR));
	ASSERT_EQ(0, recv(self->sfd, &c, 1, 0));
}

TEST_F(pair, both_directions_at_once)
{
	struct stream_arg a = { .fd = self->cfd, .len = scaled(6 << 20), .seed = 1, .chunk = 4096 };
	struct stream_arg b = { .fd = self->sfd, .len = scaled(6 << 20), .seed = 2, .chunk = 100000 };
	pthread_t ta, tb;

	ASSERT_EQ(0, pthread_create(&ta, NULL, stream_writer, &a));
	ASSERT_EQ(0, pthread_create(&tb, NULL, stream_writer, &b));
	ASSERT_EQ(-1, stream_check(self->cfd, b.len, b.seed));
	ASSERT_EQ(-1, stream_check(self->sfd, a.len, a.seed));
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	ASSERT_EQ(0, a.err);
	ASSERT_EQ(0, b.err);
}

/* Both rings of an rdmasock connection end, in bytes: {rx, tx}. */
static void ring_sizes(int fd, unsigned int sizes[2])
{
	struct rdmasock_info info;
	socklen_t len = sizeof(info);

	memset(&info, 0, sizeof(info));
	getsockopt(fd, SOL_RDMASOCK, RDMASOCK_INFO, &info, &len);
	sizes[0] = info.rx_ring_size;
	sizes[1] = info.tx_ring_size;
}

/* Wait (bounded) until @fd has at least @bytes queued to read. */
static int wait_queued(int fd, int bytes)
{
	int queued = 0;

	for (int i = 0; i < 2000; i++) {
		if (ioctl(fd, FIONREAD, &queued) || queued >= bytes)
			return queued >= bytes ? 0 : -1;
		usleep(10000);
	}
	return -1;
}

/*
 * An idle rdmasock connection pins two 16 KiB rings per end; a stream grows the receiver's ring
 * (and the writer's staging ring with it) towards SO_RCVBUF, with every byte in order, peeked or
 * read, and the other direction keeps its small rings until it carries a stream too.
 */
TEST_F(pair, rings_start_small_and_grow_with_a_stream)
{
	struct stream_arg a = { .fd = self->cfd, .len = scaled(4 << 20), .seed = 5, .chunk = 30000 };
	unsigned int c[2], s[2];
	pthread_t t;

	if (variant->carrier != CARRIER_TCP) {
		ring_sizes(self->cfd, c);
		ring_sizes(self->sfd, s);
		ASSERT_EQ(16384, c[0]);
		ASSERT_EQ(16384, c[1]);
		ASSERT_EQ(16384, s[0]);
		ASSERT_EQ(16384, s[1]);
	}
	ASSERT_EQ(0, pthread_create(&t, NULL, stream_writer, &a));
	/* A reader that keeps up never lets the ring fill (then it need not grow): let it fill. */
	ASSERT_EQ(0, wait_queued(self->sfd, 8192));
	ASSERT_EQ(-1, stream_check_how(self->sfd, a.len, a.seed, true));
	pthread_join(t, NULL);
	ASSERT_EQ(0, a.err);
	if (variant->carrier != CARRIER_TCP) {
		ring_sizes(self->cfd, c);
		ring_sizes(self->sfd, s);
		TH_LOG("after the stream: server rx %u, client tx %u", s[0], c[1]);
		ASSERT_LT(16384, s[0]);
		ASSERT_LT(16384, c[1]);
		ASSERT_EQ(16384, c[0]);
		ASSERT_EQ(16384, s[1]);
	}
	/* The grown connection carries on both ways. */
	a.fd = self->sfd;
	a.seed = 6;
	ASSERT_EQ(0, pthread_create(&t, NULL, stream_writer, &a));
	ASSERT_EQ(0, wait_queued(self->cfd, 8192));
	ASSERT_EQ(-1, stream_check(self->cfd, a.len, a.seed));
	pthread_join(t, NULL);
	ASSERT_EQ(0, a.err);
	a.fd = self->cfd;
	a.seed = 7;
	ASSERT_EQ(0, pthread_create(&t, NULL, stream_writer, &a));
	ASSERT_EQ(-1, stream_check(self->sfd, a.len, a.seed));
	pthread_join(t, NULL);
	ASSERT_EQ(0, a.err);
	if (variant->carrier != CARRIER_TCP) {
		ring_sizes(self->cfd, c);
		ASSERT_LT(16384, c[0]);
	}
}

/*
 * The writer's SO_SNDBUF bounds its staging ring, however large the ring the reader offers: the
 * peer cannot make us pin more than we allow.  The two rings then wrap at different sizes (128 KiB
 * staged into a 416 KiB ring): every byte still arrives in order.
 */
TEST_F(pair, staging_ring_bounded_by_sndbuf)
{
	struct stream_arg a = { .fd = self->cfd, .len = scaled(4 << 20), .seed = 9, .chunk = 30000 };
	int snd = 65536, rcv = 1 << 20, sndbuf;
	socklen_t len = sizeof(sndbuf);
	unsigned int c[2], s[2];
	pthread_t t;

	ASSERT_EQ(0, setsockopt(self->cfd, SOL_SOCKET, SO_SNDBUF, &snd, sizeof(snd)));
	ASSERT_EQ(0, setsockopt(self->sfd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv)));
	ASSERT_EQ(0, getsockopt(self->cfd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &len));
	ASSERT_EQ(0, pthread_create(&t, NULL, stream_writer, &a));
	ASSERT_EQ(0, wait_queued(self->sfd, 8192));	/* let the reader's ring fill and grow */
	ASSERT_EQ(-1, stream_check(self->sfd, a.len, a.seed));
	pthread_join(t, NULL);
	ASSERT_EQ(0, a.err);
	if (variant->carrier != CARRIER_TCP) {
		ring_sizes(self->cfd, c);
		ring_sizes(self->sfd, s);
		TH_LOG("reader's ring %u, writer's staging ring %u, SO_SNDBUF %d", s[0], c[1], sndbuf);
		ASSERT_LT((unsigned int)sndbuf, s[0]);
		ASSERT_EQ((unsigned int)sndbuf, c[1]);
	}
}

TEST_F(pair, peek_then_read)
{
	char buf[16];

	ASSERT_EQ(8, send(self->cfd, "abcdefgh", 8, 0));
	ASSERT_EQ(POLLIN, poll_one(self->sfd, POLLIN, 5000));
	ASSERT_EQ(4, recv(self->sfd, buf, 4, MSG_PEEK));
	ASSERT_EQ(0, memcmp(buf, "abcd", 4));
	ASSERT_EQ(8, recv(self->sfd, buf, 8, MSG_PEEK | MSG_WAITALL));
	ASSERT_EQ(8, recv(self->sfd, buf, sizeof(buf), MSG_WAITALL | MSG_DONTWAIT));
	ASSERT_EQ(0, memcmp(buf, "abcdefgh", 8));
}

TEST_F(pair, waitall_gathers_several_sends)
{
	char buf[12];
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (!pid) {
		for (int i = 0; i < 3; i++) {
			usleep(20000);
			if (send(self->cfd, "wxyz", 4, 0) != 4)
				_exit(1);
		}
		_exit(0);
	}
	ASSERT_EQ(12, recv(self->sfd, buf, sizeof(buf), MSG_WAITALL));
	ASSERT_EQ(0, memcmp(buf, "wxyzwxyzwxyz", 12));
	int status;

	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
}

TEST_F(pair, readv_writev)
{
	char a[3] = "abc", b[5] = "defgh", x[4], y[4];
	struct iovec out[2] = { { a, 3 }, { b, 5 } }, in[2] = { { x, 4 }, { y, 4 } };

	ASSERT_EQ(8, writev(self->cfd, out, 2));
	ASSERT_EQ(POLLIN, poll_one(self->sfd, POLLIN, 5000));
	ASSERT_EQ(8, readv(self->sfd, in, 2));
	ASSERT_EQ(0, memcmp(x, "abcd", 4));
	ASSERT_EQ(0, memcmp(y, "efgh", 4));
}

TEST_F(pair, fionread_and_outq)
{
	char buf[1000] = { 0 };
	int n = -1;

	ASSERT_EQ(0, ioctl(self->sfd, FIONREAD, &n));
	ASSERT_EQ(0, n);
	ASSERT_EQ(1000, send(self->cfd, buf, sizeof(buf), 0));
	ASSERT_EQ(POLLIN, poll_one(self->sfd, POLLIN, 5000));
	ASSERT_EQ(0, ioctl(self->sfd, SIOCINQ, &n));
	ASSERT_EQ(1000, n);
	ASSERT_EQ(0, ioctl(self->cfd, SIOCOUTQ, &n));
	ASSERT_LE(0, n);
	ASSERT_GE(1000, n);
}

TEST_F(pair, nonblocking_recv_eagain)
{
	char c;
	int fl = fcntl(self->sfd, F_GETFL);

	ASSERT_EQ(0, fcntl(self->sfd, F_SETFL, fl | O_NONBLOCK));
	ASSERT_EQ(-1, recv(self->sfd, &c, 1, 0));
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ(-1, recv(self->sfd, &c, 1, MSG_DONTWAIT));
	ASSERT_EQ(EAGAIN, errno);
}

TEST_F(pair, nonblocking_send_fills_then_drains)
{
	static char buf[65536];
	long long sent = 0, got = 0;
	ssize_t n;

	/* Fill everything the connection can buffer, then read it all back. */
	for (;;) {
		n = send(self->cfd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0)
			break;
		sent += n;
		ASSERT_GT(64LL << 20, sent);
	}
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_LT(0, sent);
	ASSERT_EQ(0, poll_one(self->cfd, POLLOUT, 0) & POLLOUT);
	ASSERT_EQ(0, shutdown(self->cfd, SHUT_WR));
	while ((n = recv(self->sfd, buf, sizeof(buf), 0)) > 0)
		got += n;
	ASSERT_EQ(0, n);
	ASSERT_EQ(sent, got);
}

/* TCP parity: MSG_ERRQUEUE reads the (empty) error queue, never the stream. */
TEST_F(pair, msg_errqueue_is_eagain_and_leaves_the_stream)
{
	char buf[8];

	ASSERT_EQ(3, send(self->sfd, "abc", 3, 0));
	ASSERT_EQ(POLLIN, poll_one(self->cfd, POLLIN, 5000));
	ASSERT_EQ(-1, recv(self->cfd, buf, sizeof(buf), MSG_ERRQUEUE));
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ(3, recv(self->cfd, buf, sizeof(buf), 0));
	ASSERT_EQ(0, memcmp(buf, "abc", 3));
}

/* TCP parity: MSG_TRUNC on a stream consumes the bytes and returns their count, copying none. */
TEST_F(pair, msg_trunc_discards_and_counts)
{
	char buf[8];

	ASSERT_EQ(6, send(self->sfd, "abcdef", 6, 0));
	memset(buf, 'x', sizeof(buf));
	ASSERT_EQ(2, recv(self->cfd, buf, 2, MSG_TRUNC | MSG_PEEK | MSG_WAITALL));
	ASSERT_EQ(3, recv(self->cfd, buf, 3, MSG_TRUNC | MSG_WAITALL));
	ASSERT_EQ(0, memcmp(buf, "xxxxxxxx", sizeof(buf)));
	ASSERT_EQ(3, recv(self->cfd, buf, 3, MSG_WAITALL));
	ASSERT_EQ(0, memcmp(buf, "def", 3));
}

/*
 * TCP parity (tcp_poll): in CLOSE_WAIT (the peer shut its write side) a socket is writable only
 * with room; a full one is not (an epoll writer would spin on EAGAIN), until the peer reads.
 */
TEST_F(pair, close_wait_is_writable_only_with_room)
{
	static char buf[65536];
	long long sent = 0, got = 0;
	ssize_t n;

	ASSERT_EQ(0, shutdown(self->sfd, SHUT_WR));
	ASSERT_EQ(0, recv(self->cfd, buf, 1, 0));
	ASSERT_EQ(POLLOUT, poll_one(self->cfd, POLLOUT, 0));
	while ((n = send(self->cfd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		sent += n;
		ASSERT_GT(64LL << 20, sent);
	}
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, poll_one(self->cfd, POLLOUT, 0));
	while (got < sent && (n = recv(self->sfd, buf, sizeof(buf), 0)) > 0)
		got += n;
	ASSERT_EQ(sent, got);
	ASSERT_EQ(POLLOUT, poll_one(self->cfd, POLLOUT, 10000));
}

/*
 * TCP parity: TCP_INFO with a negative length is EINVAL (do_tcp_getsockopt); the MSS fields hold
 * what one packet carries on the path (TCP: at most the loopback MTU; RDMA: at most 4096, the
 * largest RDMA MTU), not a buffer size.
 */
TEST_F(pair, tcp_info_length_and_mss)
{
	struct tcp_info info;
	socklen_t len = -1;
	unsigned int most = variant->carrier == CARRIER_TCP ? 65535 : 4096;

	ASSERT_EQ(-1, getsockopt(self->cfd, IPPROTO_TCP, TCP_INFO, &info, &len));
	ASSERT_EQ(EINVAL, errno);
	for (int i = 0; i < 2; i++) {
		int fd = i ? self->sfd : self->cfd;

		len = sizeof(info);
		ASSERT_EQ(0, getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len));
		ASSERT_EQ(TCP_ESTABLISHED, info.tcpi_state);
		ASSERT_LE(256, info.tcpi_snd_mss);
		ASSERT_GE(most, info.tcpi_snd_mss);
		ASSERT_LE(256, info.tcpi_rcv_mss);
		ASSERT_GE(most, info.tcpi_rcv_mss);
	}
}

/* "ADDR:PORT" as /proc/net/rdmasock writes an address ("[ADDR]:PORT" for IPv6). */
static void proc_addr(const struct sockaddr_storage *ss, char *out, size_t size)
{
	char a[INET6_ADDRSTRLEN] = "";

	if (ss->ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, a, sizeof(a));
		snprintf(out, size, "[%s]:%u", a, addr_port(ss));
	} else {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, a, sizeof(a));
		snprintf(out, size, "%s:%u", a, addr_port(ss));
	}
}

/* Is the rdmasock socket with local address @l and remote @r still in /proc/net/rdmasock? */
static bool rs_listed(const struct sockaddr_storage *l, const struct sockaddr_storage *r)
{
	char la[64], ra[64], want[140], line[512];
	FILE *f = fopen("/proc/net/rdmasock", "r");
	bool found = false;

	proc_addr(l, la, sizeof(la));
	proc_addr(r, ra, sizeof(ra));
	snprintf(want, sizeof(want), " %s %s ", la, ra);
	while (f && fgets(line, sizeof(line), f))
		found |= !!strstr(line, want);
	if (f)
		fclose(f);
	return found;
}

/*
 * TCP parity, pinning what TCP does on this machine: the peer closed (nothing unread) and we read
 * its EOF; our first send then succeeds (TCP: the peer answers it with a reset, back at once
 * here), after which the socket is shut (POLLHUP), sends fail with EPIPE and reads give EOF.
 * rdmasock: sent once the peer's close is complete (its socket gone from /proc/net/rdmasock), as
 * TCP's is when close() returns.
 */
TEST_F(pair, send_after_the_peer_closed)
{
	struct sockaddr_storage l, r;
	socklen_t ll = sizeof(l), rl = sizeof(r);
	char c;

	ASSERT_EQ(0, getsockname(self->sfd, (struct sockaddr *)&l, &ll));
	ASSERT_EQ(0, getpeername(self->sfd, (struct sockaddr *)&r, &rl));
	close(self->sfd);
	self->sfd = -1;
	ASSERT_EQ(0, recv(self->cfd, &c, 1, 0));
	if (variant->carrier != CARRIER_TCP)
		for (int i = 0; i < 400 && rs_listed(&l, &r); i++)
			poll_one(-1, 0, 50);
	ASSERT_EQ(5, send(self->cfd, "hello", 5, MSG_NOSIGNAL));
	ASSERT_EQ(POLLHUP, poll_one(self->cfd, POLLHUP, 20000) & POLLHUP);
	ASSERT_EQ(-1, send(self->cfd, "x", 1, MSG_NOSIGNAL));
	ASSERT_EQ(EPIPE, errno);
	ASSERT_EQ(-1, send(self->cfd, "x", 1, MSG_NOSIGNAL));
	ASSERT_EQ(EPIPE, errno);
	ASSERT_EQ(0, recv(self->cfd, &c, 1, 0));
}

/*
 * TCP parity: SO_RCVLOWAT above what the receive side holds now (TCP grows its buffer to twice the
 * mark, and under memory pressure reports readable below it): an epoll-style reader that reads
 * only once poll says so gets there, and every byte, never a deadlock with a writer that waits
 * for room.  (How much the first read gets depends on TCP's buffer autotuning: not pinned.)
 */
/* The stream, then our FIN: a reader below its SO_RCVLOWAT is woken by that (TCP's SOCK_DONE). */
static void *stream_then_shut(void *p)
{
	struct stream_arg *a = p;

	stream_writer(p);
	if (shutdown(a->fd, SHUT_WR) && !a->err)
		a->err = errno;
	return NULL;
}

TEST_F_TIMEOUT(pair, rcvlowat_larger_than_the_buffer, 120)
{
	struct stream_arg w = { .fd = self->sfd, .len = 1 << 20, .seed = 3, .chunk = 65536 };
	int lowat = 512 << 10, got_lowat;
	socklen_t olen = sizeof(got_lowat);
	static unsigned char buf[1 << 20];
	size_t got = 0;
	pthread_t t;
	ssize_t n;

	ASSERT_EQ(0, setsockopt(self->cfd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat)));
	ASSERT_EQ(0, getsockopt(self->cfd, SOL_SOCKET, SO_RCVLOWAT, &got_lowat, &olen));
	ASSERT_EQ(lowat, got_lowat);
	ASSERT_EQ(0, pthread_create(&t, NULL, stream_then_shut, &w));
	ASSERT_EQ(POLLIN, poll_one(self->cfd, POLLIN, 90000));
	/*
	 * TCP wakes a sleeping reader only at SO_RCVLOWAT (tcp_data_ready()), whatever it asked for:
	 * with less than the mark left to come, only the writer's FIN wakes it.
	 */
	n = recv(self->cfd, buf, sizeof(buf), MSG_DONTWAIT);
	ASSERT_LT(0, n);
	got = n;
	while (got < w.len && (n = recv(self->cfd, buf + got, sizeof(buf) - got, 0)) > 0)
		got += n;
	ASSERT_EQ(0, recv(self->cfd, buf, 1, 0));
	pthread_join(t, NULL);
	ASSERT_EQ(0, w.err);
	ASSERT_EQ(w.len, got);
	for (size_t i = 0; i < got; i++)
		ASSERT_EQ(pattern_byte(i, w.seed), buf[i]);
}

TEST_F(pair, poll_masks)
{
	char buf[8];

	/* Connected and idle. */
	ASSERT_EQ(POLLOUT, poll_one(self->cfd, POLLIN | POLLOUT | POLLRDHUP, 0));
	/* Data waiting. */
	ASSERT_EQ(3, send(self->sfd, "abc", 3, 0));
	ASSERT_EQ(POLLIN, poll_one(self->cfd, POLLIN, 5000));
	ASSERT_EQ(POLLIN | POLLOUT, poll_one(self->cfd, POLLIN | POLLOUT | POLLRDHUP, 0));
	ASSERT_EQ(3, recv(self->cfd, buf, sizeof(buf), 0));
	/* Peer shut down its sending side. */
	ASSERT_EQ(0, shutdown(self->sfd, SHUT_WR));
	ASSERT_EQ(POLLRDHUP, poll_one(self->cfd, POLLRDHUP, 5000));
	ASSERT_EQ(POLLIN | POLLOUT | POLLRDHUP, poll_one(self->cfd, POLLIN | POLLOUT | POLLRDHUP, 0));
	/* We shut down both: hang-up. */
	ASSERT_EQ(0, shutdown(self->cfd, SHUT_RDWR));
	ASSERT_EQ(POLLIN | POLLOUT | POLLRDHUP | POLLHUP,
		  poll_one(self->cfd, POLLIN | POLLOUT | POLLRDHUP, 0));
}

TEST_F(pair, shutdown_wr_then_peer_reads_rest)
{
	char buf[16];

	ASSERT_EQ(5, send(self->cfd, "12345", 5, 0));
	ASSERT_EQ(0, shutdown(self->cfd, SHUT_WR));
	ASSERT_EQ(5, recv(self->sfd, buf, 5, MSG_WAITALL));
	ASSERT_EQ(0, recv(self->sfd, buf, sizeof(buf), 0));
	ASSERT_EQ(0, recv(self->sfd, buf, sizeof(buf), 0));
	/* The other direction still works. */
	ASSERT_EQ(3, send(self->sfd, "xyz", 3, 0));
	ASSERT_EQ(3, recv(self->cfd, buf, 3, MSG_WAITALL));
	/* Writing after our own SHUT_WR: EPIPE. */
	ASSERT_EQ(-1, send(self->cfd, "a", 1, MSG_NOSIGNAL));
	ASSERT_EQ(EPIPE, errno);
}

TEST_F(pair, shutdown_rd_returns_eof)
{
	char c;

	ASSERT_EQ(0, shutdown(self->sfd, SHUT_RD));
	ASSERT_EQ(0, recv(self->sfd, &c, 1, 0));
	ASSERT_EQ(POLLIN | POLLOUT | POLLRDHUP, poll_one(self->sfd, POLLIN | POLLOUT | POLLRDHUP, 0));
}

TEST_F(pair, shutdown_invalid_how)
{
	ASSERT_EQ(-1, shutdown(self->cfd, 7));
	ASSERT_EQ(EINVAL, errno);
}

TEST_F(pair, close_peer_then_eof)
{
	char buf[8];

	ASSERT_EQ(4, send(self->sfd, "last", 4, 0));
	ASSERT_EQ(0, close(self->sfd));
	self->sfd = -1;
	ASSERT_EQ(4, recv(self->cfd, buf, sizeof(buf), MSG_WAITALL));
	ASSERT_EQ(0, recv(self->cfd, buf, sizeof(buf), 0));
}

/* After the peer closed, writing fails (EPIPE or ECONNRESET, as with TCP) within a few tries. */
static int write_until_error(int fd, int flags)
{
	for (int i = 0; i < 200; i++) {
		if (send(fd, "x", 1, flags) < 0)
			return errno;
		usleep(10000);
	}
	return 0;
}

TEST_F(pair, write_after_peer_close_epipe)
{
	int err;

	ASSERT_EQ(0, close(self->sfd));
	self->sfd = -1;
	err = write_until_error(self->cfd, MSG_NOSIGNAL);
	ASSERT_TRUE(err == EPIPE || err == ECONNRESET) TH_LOG("errno %d", err);
	/* Once the error has been reported, EPIPE for ever. */
	ASSERT_EQ(-1, send(self->cfd, "x", 1, MSG_NOSIGNAL));
	ASSERT_EQ(EPIPE, errno);
}

TEST_F(pair, write_after_peer_close_sigpipe)
{
	ASSERT_NE(SIG_ERR, signal(SIGPIPE, on_sigpipe));
	sigpipes = 0;
	ASSERT_EQ(0, close(self->sfd));
	self->sfd = -1;
	write_until_error(self->cfd, MSG_NOSIGNAL);
	ASSERT_EQ(-1, send(self->cfd, "x", 1, 0));
	ASSERT_EQ(EPIPE, errno);
	ASSERT_EQ(1, sigpipes);
}

TEST_F(pair, close_with_unread_data_resets_peer)
{
	char buf[8];

	ASSERT_EQ(3, send(self->cfd, "abc", 3, 0));
	ASSERT_EQ(POLLIN, poll_one(self->sfd, POLLIN, 5000));
	ASSERT_EQ(0, close(self->sfd));
	self->sfd = -1;
	ASSERT_NE(0, poll_one(self->cfd, POLLIN, 5000));
	ASSERT_EQ(-1, recv(self->cfd, buf, sizeof(buf), 0));
	ASSERT_EQ(ECONNRESET, errno);
}

TEST_F(pair, linger_zero_resets_peer)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };
	char buf[8];

	ASSERT_EQ(0, setsockopt(self->sfd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)));
	ASSERT_EQ(0, close(self->sfd));
	self->sfd = -1;
	ASSERT_NE(0, poll_one(self->cfd, POLLIN, 5000));
	ASSERT_EQ(-1, recv(self->cfd, buf, sizeof(buf), 0));
	ASSERT_EQ(ECONNRESET, errno);
	/* The error was reported by recv(): no POLLERR any more. */
	ASSERT_EQ(POLLIN | POLLOUT | POLLRDHUP | POLLHUP,
		  poll_one(self->cfd, POLLIN | POLLOUT | POLLRDHUP, 0));
}

TEST_F(pair, rcvtimeo)
{
	struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
	char c;

	ASSERT_EQ(0, setsockopt(self->sfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	ASSERT_EQ(-1, recv(self->sfd, &c, 1, 0));
	ASSERT_EQ(EAGAIN, errno);
}

TEST_F(pair, sndtimeo_on_a_full_connection)
{
	struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
	static char buf[65536];

	while (send(self->cfd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, setsockopt(self->cfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)));
	/*
	 * The timeout ends the call: with -1/EAGAIN, or with a count if space opened meanwhile
	 * (TCP grows its buffers as ACKs come in, rdmasock its ring once the first bytes filled
	 * it).  The peer never reads: EAGAIN soon.
	 */
	for (int i = 0; i < 64; i++) {
		ssize_t n = send(self->cfd, buf, sizeof(buf), 0);

		if (n < 0)
			break;
		ASSERT_GE(sizeof(buf), n);
	}
	ASSERT_EQ(EAGAIN, errno);
}

TEST_F(pair, connected_again_eisconn)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	ASSERT_EQ(0, getpeername(self->cfd, (struct sockaddr *)&ss, &len));
	ASSERT_EQ(-1, connect(self->cfd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(EISCONN, errno);
}

TEST_F(pair, names_match)
{
	struct sockaddr_storage cl, cp, sl, sp;
	socklen_t len;

	len = sizeof(cl);
	ASSERT_EQ(0, getsockname(self->cfd, (struct sockaddr *)&cl, &len));
	ASSERT_EQ(variant->af, cl.ss_family);
	len = sizeof(cp);
	ASSERT_EQ(0, getpeername(self->cfd, (struct sockaddr *)&cp, &len));
	ASSERT_EQ(variant->af == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6),
		  len);
	len = sizeof(sl);
	ASSERT_EQ(0, getsockname(self->sfd, (struct sockaddr *)&sl, &len));
	len = sizeof(sp);
	ASSERT_EQ(0, getpeername(self->sfd, (struct sockaddr *)&sp, &len));
	/* Each end's peer is the other end. */
	ASSERT_EQ(addr_port(&cp), addr_port(&sl));
	ASSERT_EQ(addr_port(&sp), addr_port(&cl));
}

/*
 * A reset: the reader gets the error even after a write took it.  TCP's error is one per socket:
 * its reader then gets 0, the peer's clean end of stream, which a program copying to EOF takes
 * for a whole stream; rdmasock owes the reader the error (docs/design.md, "A lost connection is
 * never a clean end of stream").  The one difference here on purpose: the poll masks, the write's
 * error and the read after it are TCP's.
 */
TEST_F(pair, reset_reads_an_error_after_a_write_took_it)
{
	char c = 'x';

	ASSERT_EQ(1, send(self->cfd, &c, 1, 0));
	ASSERT_EQ(1, recv(self->sfd, &c, 1, MSG_PEEK | MSG_WAITALL));
	close(self->sfd);	/* unread: a reset */
	self->sfd = -1;
	ASSERT_EQ(POLLIN | POLLERR | POLLHUP,
		  poll_one(self->cfd, POLLIN, 10000) & (POLLIN | POLLERR | POLLHUP));
	ASSERT_EQ(-1, send(self->cfd, &c, 1, MSG_NOSIGNAL));
	ASSERT_EQ(ECONNRESET, errno);
	if (variant->carrier == CARRIER_TCP) {
		ASSERT_EQ(0, recv(self->cfd, &c, 1, 0));
	} else {
		ASSERT_EQ(-1, recv(self->cfd, &c, 1, 0));
		ASSERT_EQ(ECONNRESET, errno);
		ASSERT_EQ(0, recv(self->cfd, &c, 1, 0));	/* then EOF, as TCP's after its error */
	}
	ASSERT_EQ(-1, send(self->cfd, &c, 1, MSG_NOSIGNAL));
	ASSERT_EQ(EPIPE, errno);
}

/* Peek at @len bytes (nonblocking): what the peek returned, as a string. */
static const char *peeked(int fd, size_t len)
{
	static char buf[64];
	ssize_t n = recv(fd, buf, len, MSG_PEEK | MSG_DONTWAIT);

	if (n < 0)
		snprintf(buf, sizeof(buf), "(%s)", strerror(errno));
	else
		buf[n] = 0;
	return buf;
}

/*
 * SO_PEEK_OFF as TCP's on each kernel: refused where TCP refuses it (before 6.9), else each peek
 * starts past what earlier peeks returned, and a read moves the offset back by what it took.
 */
TEST_F(pair, peek_offset)
{
	int zero = 0, tcp_says, err, t;
	char buf[16];

	ASSERT_EQ(8, send(self->cfd, "abcdefgh", 8, 0));
	ASSERT_EQ(8, recv(self->sfd, buf, 8, MSG_PEEK | MSG_WAITALL));
	/* TCP's answer on this kernel, from a TCP socket of our own. */
	t = socket(variant->af, SOCK_STREAM, 0);
	ASSERT_LE(0, t);
	tcp_says = setsockopt(t, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof(zero)) ? errno : 0;
	close(t);
	err = setsockopt(self->sfd, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof(zero)) ? errno : 0;
	ASSERT_EQ(tcp_says, err);
	if (err) {
		ASSERT_EQ(EOPNOTSUPP, err);
		ASSERT_EQ(-EOPNOTSUPP, getint(self->sfd, SOL_SOCKET, SO_PEEK_OFF));
		SKIP(return, "no SO_PEEK_OFF for TCP on this kernel");
	}
	ASSERT_STREQ("abc", peeked(self->sfd, 3));
	ASSERT_EQ(3, getint(self->sfd, SOL_SOCKET, SO_PEEK_OFF));
	ASSERT_STREQ("def", peeked(self->sfd, 3));
	ASSERT_EQ(2, recv(self->sfd, buf, 2, 0));
	ASSERT_EQ(0, memcmp(buf, "ab", 2));
	ASSERT_EQ(4, getint(self->sfd, SOL_SOCKET, SO_PEEK_OFF));
	ASSERT_STREQ("gh", peeked(self->sfd, 10));
	ASSERT_EQ(6, getint(self->sfd, SOL_SOCKET, SO_PEEK_OFF));
	/* Past the data: nothing yet, then what comes. */
	ASSERT_STREQ("(Resource temporarily unavailable)", peeked(self->sfd, 10));
	ASSERT_EQ(2, send(self->cfd, "ij", 2, 0));
	ASSERT_EQ(2, recv(self->sfd, buf, 2, MSG_PEEK));
	ASSERT_EQ(0, memcmp(buf, "ij", 2));
	ASSERT_EQ(8, getint(self->sfd, SOL_SOCKET, SO_PEEK_OFF));
	ASSERT_EQ(8, recv(self->sfd, buf, 8, 0));
	ASSERT_EQ(0, memcmp(buf, "cdefghij", 8));
	ASSERT_EQ(0, getint(self->sfd, SOL_SOCKET, SO_PEEK_OFF));
	/* -1: peeks start at the read position again. */
	zero = -1;
	ASSERT_EQ(0, setsockopt(self->sfd, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof(zero)));
	ASSERT_EQ(1, send(self->cfd, "k", 1, 0));
	ASSERT_EQ(1, recv(self->sfd, buf, 1, MSG_PEEK));
	ASSERT_STREQ("k", peeked(self->sfd, 5));
	ASSERT_EQ(-1, getint(self->sfd, SOL_SOCKET, SO_PEEK_OFF));
}

TEST_F(pair, socket_options_report_stream_tcp)
{
	int val;
	socklen_t len = sizeof(val);

	ASSERT_EQ(0, getsockopt(self->cfd, SOL_SOCKET, SO_TYPE, &val, &len));
	ASSERT_EQ(SOCK_STREAM, val);
	/* Both ends: an accepted socket is of its listener's kind. */
	for (int i = 0; i < 2; i++) {
		int fd = i ? self->sfd : self->cfd;

		ASSERT_EQ(0, getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &val, &len));
		/* An IPPROTO_RDMASOCK socket says so, as IPPROTO_MPTCP's do; the family's, TCP. */
		ASSERT_EQ(carrier_protocol(variant->carrier) ?: IPPROTO_TCP, val);
		ASSERT_EQ(0, getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &val, &len));
		ASSERT_EQ(carrier_family(variant->carrier, variant->af), val);
	}
	ASSERT_EQ(0, getsockopt(self->cfd, SOL_SOCKET, SO_ERROR, &val, &len));
	ASSERT_EQ(0, val);
	val = 1;
	ASSERT_EQ(0, setsockopt(self->cfd, IPPROTO_TCP, TCP_NODELAY, &val, sizeof(val)));
	val = 0;
	ASSERT_EQ(0, getsockopt(self->cfd, IPPROTO_TCP, TCP_NODELAY, &val, &len));
	ASSERT_EQ(1, val);
	ASSERT_EQ(-1, setsockopt(self->cfd, IPPROTO_TCP, TCP_NODELAY, &val, 1));
	ASSERT_EQ(EINVAL, errno);
}

TEST_F(pair, epoll_edge_triggered)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET }, out;
	int ep = epoll_create1(0);

	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, self->sfd, &ev));
	ASSERT_EQ(0, epoll_wait(ep, &out, 1, 0));
	ASSERT_EQ(1, send(self->cfd, "a", 1, 0));
	ASSERT_EQ(1, epoll_wait(ep, &out, 1, 5000));
	ASSERT_EQ(EPOLLIN, out.events);
	/* Edge-triggered: nothing new, no event, even though data is still unread. */
	ASSERT_EQ(0, epoll_wait(ep, &out, 1, 0));
	ASSERT_EQ(1, send(self->cfd, "b", 1, 0));
	ASSERT_EQ(1, epoll_wait(ep, &out, 1, 5000));
	close(ep);
}

TEST_F(pair, epoll_level_triggered_hup)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP }, out;
	int ep = epoll_create1(0);

	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, self->cfd, &ev));
	ASSERT_EQ(0, shutdown(self->sfd, SHUT_WR));
	ASSERT_EQ(1, epoll_wait(ep, &out, 1, 5000));
	ASSERT_EQ(EPOLLIN | EPOLLRDHUP, out.events);
	ASSERT_EQ(1, epoll_wait(ep, &out, 1, 0));
	close(ep);
}

TEST_F(pair, dup_shares_the_connection)
{
	int d = dup(self->cfd);
	char buf[4];

	ASSERT_LE(0, d);
	ASSERT_EQ(2, send(d, "hi", 2, 0));
	ASSERT_EQ(0, close(d));
	ASSERT_EQ(2, recv(self->sfd, buf, 2, MSG_WAITALL));
	ASSERT_EQ(2, send(self->cfd, "ok", 2, 0));
	ASSERT_EQ(2, recv(self->sfd, buf, 2, MSG_WAITALL));
}

TEST_F(pair, fork_child_writes_parent_reads)
{
	char buf[6];
	int status;
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (!pid)
		_exit(send(self->cfd, "child!", 6, 0) == 6 ? 0 : 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	ASSERT_EQ(6, recv(self->sfd, buf, 6, MSG_WAITALL));
	ASSERT_EQ(0, memcmp(buf, "child!", 6));
}

TEST_F(pair, sendfile_into_socket)
{
	char path[] = "/tmp/rdmasock-sendfile-XXXXXX", buf[100000];
	int fd = mkstemp(path);
	off_t off = 0;

	ASSERT_LE(0, fd);
	unlink(path);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = pattern_byte(i, 3);
	ASSERT_EQ(sizeof(buf), write(fd, buf, sizeof(buf)));
	ASSERT_EQ(sizeof(buf), sendfile(self->cfd, fd, &off, sizeof(buf)));
	close(fd);
	ASSERT_EQ(-1, stream_check(self->sfd, sizeof(buf), 3));
}

static void on_alarm(int sig)
{
}

TEST_F(pair, signal_interrupts_blocking_recv)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	char c;

	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));	/* no SA_RESTART */
	ualarm(100000, 0);
	ASSERT_EQ(-1, recv(self->sfd, &c, 1, 0));
	ASSERT_EQ(EINTR, errno);
}

TEST_F(pair, oob_einval_without_urgent_data)
{
	char c;

	ASSERT_EQ(-1, recv(self->sfd, &c, 1, MSG_OOB | MSG_DONTWAIT));
	ASSERT_EQ(EINVAL, errno);
}

static int at_mark(int fd)
{
	int v = -1;

	return ioctl(fd, SIOCATMARK, &v) ? -errno : v;
}

/*
 * TCP's urgent data: the last byte of a MSG_OOB send leaves the stream (recv(MSG_OOB) reads it),
 * POLLPRI and SIGURG say it came, a read stops at its mark (SIOCATMARK), the next skips its hole.
 */
static volatile sig_atomic_t sigurgs;

static void on_sigurg(int sig)
{
	sigurgs++;
}

TEST_F(pair, oob_byte_out_of_band)
{
	char buf[16];

	signal(SIGURG, on_sigurg);
	ASSERT_EQ(0, fcntl(self->sfd, F_SETOWN, getpid()));
	sigurgs = 0;
	ASSERT_EQ(3, send(self->cfd, "abc", 3, 0));
	ASSERT_EQ(3, send(self->cfd, "xyz", 3, MSG_OOB));
	if (!(poll_one(self->sfd, POLLPRI, 5000) & POLLPRI)) {
		/*
		 * (Failed once on the debug kernel when SIGURG, which comes with the URG before
		 * the byte, ended poll() with EINTR: poll_one() polls on since.)  What both ends
		 * hold, then whether the urgent byte is late or lost, within the harness's 30 s.
		 * It still fails.
		 */
		long long t0;
		short late;

		if (variant->carrier == CARRIER_RDMASOCK &&
		    system("sed 's/^/# /' /proc/net/rdmasock /proc/net/rdmasock_stat >&2"))
			TH_LOG("no /proc/net/rdmasock");
		t0 = mono_ms();
		late = poll_one(self->sfd, POLLPRI, 15000) & POLLPRI;
		TH_LOG("no POLLPRI in 5 s; %s %lld ms later", late ? "it came" : "none",
		       ms_since(t0));
		ASSERT_TRUE(false);
	}
	ASSERT_LT(0, sigurgs);
	ASSERT_EQ(0, at_mark(self->sfd));
	ASSERT_EQ(1, recv(self->sfd, buf, 1, MSG_OOB | MSG_PEEK));
	ASSERT_EQ('z', buf[0]);
	ASSERT_EQ(1, recv(self->sfd, buf, sizeof(buf), MSG_OOB));
	ASSERT_EQ('z', buf[0]);
	ASSERT_EQ(0, poll_one(self->sfd, POLLPRI, 0) & POLLPRI);
	ASSERT_EQ(-1, recv(self->sfd, buf, 1, MSG_OOB | MSG_DONTWAIT));
	ASSERT_EQ(EINVAL, errno);	/* read already */
	/* The read stops at the mark: the bytes before it, never the urgent one. */
	ASSERT_EQ(5, recv(self->sfd, buf, sizeof(buf), 0));
	ASSERT_EQ(0, memcmp(buf, "abcxy", 5));
	ASSERT_EQ(1, at_mark(self->sfd));
	ASSERT_EQ(2, send(self->cfd, "12", 2, 0));
	ASSERT_EQ(POLLIN, poll_one(self->sfd, POLLIN, 5000));
	ASSERT_EQ(2, recv(self->sfd, buf, 2, MSG_WAITALL));
	ASSERT_EQ(0, memcmp(buf, "12", 2));
	ASSERT_EQ(0, at_mark(self->sfd));
	signal(SIGURG, SIG_DFL);
}

/* With SO_OOBINLINE the urgent byte stays in the stream; a read still stops at its mark. */
TEST_F(pair, oob_inline_stays_in_the_stream)
{
	int one = 1;
	char buf[16];

	ASSERT_EQ(0, setsockopt(self->sfd, SOL_SOCKET, SO_OOBINLINE, &one, sizeof(one)));
	ASSERT_EQ(3, send(self->cfd, "xyz", 3, MSG_OOB));
	ASSERT_EQ(POLLPRI, poll_one(self->sfd, POLLPRI, 5000) & POLLPRI);
	ASSERT_EQ(-1, recv(self->sfd, buf, 1, MSG_OOB | MSG_DONTWAIT));
	ASSERT_EQ(EINVAL, errno);
	/* (That changed nothing: still urgent data, still POLLPRI.) */
	ASSERT_EQ(POLLPRI, poll_one(self->sfd, POLLPRI, 0) & POLLPRI);
	ASSERT_EQ(2, recv(self->sfd, buf, sizeof(buf), 0));
	ASSERT_EQ(0, memcmp(buf, "xy", 2));
	ASSERT_EQ(1, at_mark(self->sfd));
	ASSERT_EQ(1, recv(self->sfd, buf, sizeof(buf), 0));
	ASSERT_EQ('z', buf[0]);
	ASSERT_EQ(0, at_mark(self->sfd));
}

/* At the mark, a zero-length read returns 0 and leaves it: the urgent byte is still there. */
TEST_F(pair, oob_mark_survives_a_zero_length_read)
{
	char buf[8];

	ASSERT_EQ(3, send(self->cfd, "xyz", 3, MSG_OOB));
	ASSERT_EQ(POLLPRI, poll_one(self->sfd, POLLPRI, 5000) & POLLPRI);
	ASSERT_EQ(2, recv(self->sfd, buf, sizeof(buf), 0));
	ASSERT_EQ(1, at_mark(self->sfd));
	ASSERT_EQ(0, recv(self->sfd, buf, 0, 0));
	ASSERT_EQ(1, at_mark(self->sfd));
	ASSERT_EQ(POLLPRI, poll_one(self->sfd, POLLPRI, 0) & POLLPRI);
	ASSERT_EQ(1, recv(self->sfd, buf, 1, MSG_OOB));
	ASSERT_EQ('z', buf[0]);
}

/* After a reset, the urgent byte is gone with the rest: ENOTCONN (tcp_recv_urg()). */
TEST_F(pair, oob_after_a_reset)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	char buf[8];

	ASSERT_EQ(3, send(self->cfd, "xyz", 3, MSG_OOB));
	ASSERT_EQ(POLLPRI, poll_one(self->sfd, POLLPRI, 5000) & POLLPRI);
	ASSERT_EQ(0, setsockopt(self->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
	close(self->cfd);
	self->cfd = -1;
	/* (POLLIN is there already, the unread "xy": wait for the reset alone.) */
	ASSERT_TRUE(poll_one(self->sfd, 0, 5000) & POLLHUP);
	ASSERT_EQ(-1, recv(self->sfd, buf, 1, MSG_OOB | MSG_DONTWAIT));
	ASSERT_EQ(ENOTCONN, errno);
}

static void *stream_then_oob(void *p)
{
	struct stream_arg *a = p;

	stream_writer(p);
	if (!a->err && send(a->fd, "!", 1, MSG_OOB) != 1)
		a->err = errno;
	return NULL;
}

/* A reader that never asks for the urgent byte loses nothing else of the stream. */
TEST_F(pair, oob_after_a_long_stream)
{
	struct stream_arg w = { .fd = self->cfd, .len = 256 << 10, .seed = 9, .chunk = 4096 };
	pthread_t t;
	char c;

	ASSERT_EQ(0, pthread_create(&t, NULL, stream_then_oob, &w));
	ASSERT_EQ(-1, stream_check(self->sfd, w.len, w.seed));
	pthread_join(t, NULL);
	ASSERT_EQ(0, w.err);
	/* At the mark now: the urgent byte is not in the stream; read it apart. */
	ASSERT_EQ(POLLPRI, poll_one(self->sfd, POLLPRI, 5000) & POLLPRI);
	ASSERT_EQ(1, at_mark(self->sfd));
	ASSERT_EQ(1, recv(self->sfd, &c, 1, MSG_OOB));
	ASSERT_EQ('!', c);
}

TEST_F(pair, cork_holds_small_writes_until_uncorked)
{
	int on = 1, off = 0;
	char buf[100];

	ASSERT_EQ(0, setsockopt(self->cfd, IPPROTO_TCP, TCP_CORK, &on, sizeof(on)));
	ASSERT_EQ(60, send(self->cfd, "0123456789012345678901234567890123456789012345678901234567890", 60, 0));
	ASSERT_EQ(40, send(self->cfd, "abcdefghijabcdefghijabcdefghijabcdefghij", 40, 0));
	/* Held back (well inside the 200 ms ceiling)... */
	ASSERT_EQ(0, poll_one(self->sfd, POLLIN, 50));
	ASSERT_EQ(0, setsockopt(self->cfd, IPPROTO_TCP, TCP_CORK, &off, sizeof(off)));
	/* ...and sent as one piece when uncorked. */
	ASSERT_EQ(POLLIN, poll_one(self->sfd, POLLIN, 5000));
	ASSERT_EQ(100, recv(self->sfd, buf, sizeof(buf), 0));
	ASSERT_EQ(0, memcmp(buf + 60, "abcdefghij", 10));
}

TEST_F(pair, msg_more_joins_writes)
{
	char buf[16];

	ASSERT_EQ(3, send(self->cfd, "abc", 3, MSG_MORE));
	ASSERT_EQ(0, poll_one(self->sfd, POLLIN, 50));
	ASSERT_EQ(3, send(self->cfd, "def", 3, 0));
	ASSERT_EQ(POLLIN, poll_one(self->sfd, POLLIN, 5000));
	ASSERT_EQ(6, recv(self->sfd, buf, sizeof(buf), 0));
	ASSERT_EQ(0, memcmp(buf, "abcdef", 6));
}

TEST_F(pair, corked_bytes_precede_fin)
{
	int on = 1;
	char buf[16];

	ASSERT_EQ(0, setsockopt(self->cfd, IPPROTO_TCP, TCP_CORK, &on, sizeof(on)));
	ASSERT_EQ(5, send(self->cfd, "tail!", 5, 0));
	ASSERT_EQ(0, shutdown(self->cfd, SHUT_WR));
	ASSERT_EQ(0, read_all(self->sfd, buf, 5));
	ASSERT_EQ(0, memcmp(buf, "tail!", 5));
	ASSERT_EQ(0, recv(self->sfd, buf, sizeof(buf), 0));
}

/*
 * @from holds 4 bytes (sent with @flags, after whatever makes it hold them): setting TCP_NODELAY
 * must send them at once, as TCP's does, and not leave them to the hold's 200 ms ceiling (which
 * TCP has for TCP_CORK too).  1: shown; 0: this host was too slow to tell the two apart; -1: not
 * held, or not sent in time.  Each socket holds once in a test: a ceiling timer still running from
 * an earlier hold could send them in the window.
 */
static int nodelay_sends_held_bytes(int from, int to, int flags)
{
	int on = 1;
	long long t0;
	char buf[8];

	if (send(from, "held", 4, flags) != 4)
		return -1;
	t0 = mono_ms();
	if (poll_one(to, POLLIN, 50))
		return -1;
	if (setsockopt(from, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)))
		return -1;
	if (ms_since(t0) > 120)	/* too near the ceiling to tell: read them all the same */
		return poll_one(to, POLLIN, 5000) == POLLIN && recv(to, buf, sizeof(buf), 0) == 4 ?
		       0 : -1;
	if (poll_one(to, POLLIN, 180 - ms_since(t0)) != POLLIN)
		return -1;
	return recv(to, buf, sizeof(buf), 0) == 4 ? 1 : -1;
}

/* From each end (over rdmasock the accepted one has no TCP socket: the option is kept aside). */
TEST_F(pair, nodelay_sends_what_msg_more_held)
{
	int off = 0, shown = 0;

	for (int i = 0; i < 2; i++) {
		int from = i ? self->sfd : self->cfd, to = i ? self->cfd : self->sfd, r;

		ASSERT_EQ(0, setsockopt(from, IPPROTO_TCP, TCP_NODELAY, &off, sizeof(off)));
		r = nodelay_sends_held_bytes(from, to, MSG_MORE);
		ASSERT_LE(0, r) TH_LOG("from the %s end", i ? "accepted" : "client");
		shown += r;
	}
	if (shown < 2)
		SKIP(return, "the host too slow to tell a send from the ceiling's");
}

/*
 * As tcp(7) says: setting TCP_NODELAY sends what TCP_CORK holds, and the cork stays on.  The
 * accepted end is corked by its listener (inherited, as TCP's children inherit it): over rdmasock
 * it has no TCP socket, so the option is kept aside there.
 */
TEST_F(pair, nodelay_sends_what_the_cork_held)
{
	int lfd, c, s, on = 1, shown = 0;
	struct sockaddr_storage ss;
	socklen_t len;

	lfd = make_listener(variant->carrier, variant->af, &ss, &len);
	ASSERT_LE(0, lfd);
	ASSERT_EQ(0, setsockopt(lfd, IPPROTO_TCP, TCP_CORK, &on, sizeof(on)));
	c = carrier_socket(variant->carrier, variant->af, SOCK_STREAM);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, setsockopt(c, IPPROTO_TCP, TCP_CORK, &on, sizeof(on)));
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&ss, len));
	s = accept(lfd, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_TRUE(carried_as_expected(variant->carrier, s));
	for (int i = 0; i < 2; i++) {
		int from = i ? s : c, to = i ? c : s, r;

		r = nodelay_sends_held_bytes(from, to, 0);
		ASSERT_LE(0, r) TH_LOG("from the %s end", i ? "accepted" : "client");
		shown += r;
		ASSERT_EQ(1, getint(from, SOL_TCP, TCP_CORK));
		ASSERT_EQ(1, getint(from, SOL_TCP, TCP_NODELAY));
	}
	close(s);
	close(c);
	close(lfd);
	if (shown < 2)
		SKIP(return, "the host too slow to tell a send from the ceiling's");
}

TEST_F(pair, sndbuf_bounds_unsent_bytes)
{
	static char buf[65536];
	int val = 16384, sndbuf, outq;
	socklen_t len = sizeof(sndbuf);
	long long sent = 0, got = 0;
	ssize_t n;

	/* The peer does not read: what the writer may queue is bounded by its SO_SNDBUF. */
	ASSERT_EQ(0, setsockopt(self->cfd, SOL_SOCKET, SO_SNDBUF, &val, sizeof(val)));
	ASSERT_EQ(0, getsockopt(self->cfd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &len));
	ASSERT_EQ(2 * val, sndbuf);
	while ((n = send(self->cfd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		sent += n;
		ASSERT_GT(64LL << 20, sent);
	}
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, ioctl(self->cfd, SIOCOUTQ, &outq));
	ASSERT_LT(0, outq);
	/* TCP may overshoot its sndbuf by a segment or two (47 KiB for 32 KiB seen on 6.12). */
	ASSERT_GE(2 * sndbuf, outq);
	ASSERT_EQ(0, shutdown(self->cfd, SHUT_WR));
	while ((n = recv(self->sfd, buf, sizeof(buf), 0)) > 0)
		got += n;
	ASSERT_EQ(sent, got);
}

/* Idle with keepalive probing every second: the connection must stay up and carry data. */
TEST_F(pair, keepalive_probes_keep_a_live_connection)
{
	int one = 1, ka[3] = { TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT };
	long long probes = rs_counter("keepalive_probes");
	char c;

	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, setsockopt(self->cfd, IPPROTO_TCP, ka[i], &one, sizeof(one)));
	ASSERT_EQ(0, setsockopt(self->cfd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)));
	if (variant->carrier != CARRIER_TCP) {
		/* Wait for three probes: with TCP_KEEPCNT 1 a single unanswered one would abort. */
		for (int i = 0; i < 200 && rs_counter("keepalive_probes") < probes + 3; i++)
			usleep(50000);
		ASSERT_LE(probes + 3, rs_counter("keepalive_probes"));
	} else {
		struct tcp_info ti;
		socklen_t len = sizeof(ti);

		/* TCP's probes are not counted anywhere we can read: idle past three of them. */
		do {
			usleep(50000);
			ASSERT_EQ(0, getsockopt(self->cfd, IPPROTO_TCP, TCP_INFO, &ti, &len));
		} while (ti.tcpi_last_data_recv < 3000);
	}
	ASSERT_EQ(0, poll_one(self->cfd, POLLIN | POLLERR, 0));
	ASSERT_EQ(1, send(self->cfd, "k", 1, 0));
	ASSERT_EQ(1, recv(self->sfd, &c, 1, 0));
	ASSERT_EQ(1, send(self->sfd, "a", 1, 0));
	ASSERT_EQ(1, recv(self->cfd, &c, 1, 0));
}

/* ---- sockets that are not (yet) connected ---- */

FIXTURE(lone) {
	int fd;
};

FIXTURE_VARIANT(lone) {
	enum carrier carrier;
	int af;
};

CARRIER_VARIANTS(lone);

FIXTURE_SETUP(lone)
{
	self->fd = carrier_socket(variant->carrier, variant->af, SOCK_STREAM);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(lone)
{
	close(self->fd);
}

TEST_F(lone, bad_type_and_protocol)
{
	int fam = carrier_family(variant->carrier, variant->af);
	int proto = carrier_protocol(variant->carrier);

	ASSERT_EQ(-1, socket(fam, SOCK_STREAM, IPPROTO_UDP));
	ASSERT_EQ(EPROTONOSUPPORT, errno);
	ASSERT_EQ(-1, socket(fam, SOCK_SEQPACKET, proto));
	ASSERT_EQ(ESOCKTNOSUPPORT, errno);
	int fd = socket(fam, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, proto ?: IPPROTO_TCP);

	ASSERT_LE(0, fd);
	ASSERT_TRUE(fcntl(fd, F_GETFL) & O_NONBLOCK);
	ASSERT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
}

/*
 * An AF_INET socket takes AF_INET addresses only, an AF_INET6 socket AF_INET6 ones, with TCP's
 * errors (length first).  The family's sockets take both: the first address decides.
 */
TEST_F(lone, address_of_the_other_family)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int other = variant->af == AF_INET ? AF_INET6 : AF_INET, want;

	if (variant->carrier == CARRIER_RDMASOCK)
		SKIP(return, "a socket of the family takes both families");
	len = host_addr(other, &ss, 9);
	want = variant->af == AF_INET ? EAFNOSUPPORT : EINVAL;	/* sockaddr_in is too short */
	ASSERT_EQ(-1, bind(self->fd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(want, errno);
	ASSERT_EQ(-1, connect(self->fd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(want, errno);
	/* Long enough, still the other family. */
	ASSERT_EQ(-1, bind(self->fd, (struct sockaddr *)&ss, sizeof(ss)));
	ASSERT_EQ(EAFNOSUPPORT, errno);
	ASSERT_EQ(-1, connect(self->fd, (struct sockaddr *)&ss, sizeof(ss)));
	ASSERT_EQ(EAFNOSUPPORT, errno);
	/* inet_bind's compatibility: AF_UNSPEC with INADDR_ANY binds an AF_INET socket. */
	if (variant->af == AF_INET) {
		struct sockaddr_in sin = { .sin_family = AF_UNSPEC };

		ASSERT_EQ(0, bind(self->fd, (struct sockaddr *)&sin, sizeof(sin)));
		len = sizeof(ss);
		ASSERT_EQ(0, getsockname(self->fd, (struct sockaddr *)&ss, &len));
		ASSERT_EQ(AF_INET, ss.ss_family);
		ASSERT_NE(0, addr_port(&ss));
	}
	/* Still usable for its own family. */
	ASSERT_EQ(POLLOUT | POLLHUP, poll_one(self->fd, POLLIN | POLLOUT, 0));
}

/*
 * A dual-stack AF_INET6 listener names an IPv4 client v4-mapped, as TCP does, whichever carrier
 * the connection took.  (The family's sockets name it as it came: AF_INET.)
 */
TEST_F(lone, dual_stack_listener_names_ipv4_clients_v4_mapped)
{
	struct sockaddr_in6 any = { .sin6_family = AF_INET6 }, *peer;
	struct sockaddr_storage ss, to;
	socklen_t len = sizeof(any), tolen;
	int zero = 0, c, s;

	if (variant->af != AF_INET6 || variant->carrier == CARRIER_RDMASOCK)
		SKIP(return, "an AF_INET6 socket's case");
	ASSERT_EQ(0, setsockopt(self->fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)));
	ASSERT_EQ(0, bind(self->fd, (struct sockaddr *)&any, sizeof(any)));
	ASSERT_EQ(0, listen(self->fd, 4));
	ASSERT_EQ(0, getsockname(self->fd, (struct sockaddr *)&any, &len));
	tolen = host_addr(AF_INET, &to, ntohs(any.sin6_port));
	c = carrier_socket(variant->carrier, AF_INET, SOCK_STREAM);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&to, tolen));
	len = sizeof(ss);
	s = accept(self->fd, (struct sockaddr *)&ss, &len);
	ASSERT_LE(0, s);
	ASSERT_EQ(sizeof(struct sockaddr_in6), len);
	peer = (struct sockaddr_in6 *)&ss;
	ASSERT_EQ(AF_INET6, peer->sin6_family);
	ASSERT_TRUE(IN6_IS_ADDR_V4MAPPED(&peer->sin6_addr));
	ASSERT_EQ(0, memcmp(&peer->sin6_addr.s6_addr[12], &((struct sockaddr_in *)&to)->sin_addr, 4));
	len = sizeof(ss);
	ASSERT_EQ(0, getsockname(s, (struct sockaddr *)&ss, &len));
	ASSERT_EQ(AF_INET6, ss.ss_family);
	ASSERT_TRUE(IN6_IS_ADDR_V4MAPPED(&((struct sockaddr_in6 *)&ss)->sin6_addr));
	ASSERT_EQ(1, send(c, "4", 1, 0));
	ASSERT_EQ(1, recv(s, &zero, 1, 0));
	ASSERT_TRUE(carried_as_expected(variant->carrier, s));
	close(s);
	close(c);
}

TEST_F(lone, unbound_getsockname_is_its_family)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (variant->carrier == CARRIER_RDMASOCK)
		SKIP(return, "a socket of the family has no family until its first address");
	memset(&ss, 0xa5, sizeof(ss));
	ASSERT_EQ(0, getsockname(self->fd, (struct sockaddr *)&ss, &len));
	ASSERT_EQ(variant->af, ss.ss_family);
	ASSERT_EQ(variant->af == AF_INET ? sizeof(struct sockaddr_in) :
		  sizeof(struct sockaddr_in6), len);
	ASSERT_EQ(0, addr_port(&ss));
}

TEST_F(lone, fresh_socket_poll_and_errors)
{
	char c;

	ASSERT_EQ(POLLOUT | POLLHUP, poll_one(self->fd, POLLIN | POLLOUT, 0));
	ASSERT_EQ(-1, recv(self->fd, &c, 1, 0));
	ASSERT_EQ(ENOTCONN, errno);
	ASSERT_EQ(-1, send(self->fd, "x", 1, MSG_NOSIGNAL));
	ASSERT_EQ(EPIPE, errno);
	ASSERT_EQ(-1, shutdown(self->fd, SHUT_WR));
	ASSERT_EQ(ENOTCONN, errno);
	ASSERT_EQ(-1, accept(self->fd, NULL, NULL));
	ASSERT_EQ(EINVAL, errno);
}

TEST_F(lone, bad_addresses)
{
	struct sockaddr_storage ss;
	socklen_t len = host_addr(variant->af, &ss, 0);

	ASSERT_EQ(-1, bind(self->fd, (struct sockaddr *)&ss, 1));
	ASSERT_EQ(EINVAL, errno);
	ss.ss_family = AF_UNIX;
	ASSERT_EQ(-1, connect(self->fd, (struct sockaddr *)&ss, len));
	ASSERT_TRUE(errno == EAFNOSUPPORT || errno == EINVAL);
}

TEST_F(lone, connect_refused_when_nobody_listens)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int lfd = make_listener(CARRIER_TCP, variant->af, &ss, &len);

	/* A port that was just free: nothing listens there any more. */
	ASSERT_LE(0, lfd);
	close(lfd);
	ASSERT_EQ(-1, connect(self->fd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(ECONNREFUSED, errno);
}

TEST_F(lone, bind_conflicts_and_reuse)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int lfd = make_listener(variant->carrier, variant->af, &ss, &len);

	ASSERT_LE(0, lfd);
	ASSERT_EQ(-1, bind(self->fd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(EADDRINUSE, errno);
	/* The port stays taken for plain TCP too: one port space. */
	int t = socket(variant->af, SOCK_STREAM, 0);

	ASSERT_EQ(-1, bind(t, (struct sockaddr *)&ss, len));
	ASSERT_EQ(EADDRINUSE, errno);
	close(t);
	close(lfd);
	/* Bound twice: EINVAL. */
	ASSERT_EQ(0, bind(self->fd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(-1, bind(self->fd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(EINVAL, errno);
}

TEST_F(lone, bind_then_connect_keeps_the_bound_port)
{
	struct sockaddr_storage ss, me, bound;
	socklen_t len, l;
	int lfd = make_listener(variant->carrier, variant->af, &ss, &len), s;
	char c;

	ASSERT_LE(0, lfd);
	l = host_addr(variant->af, &bound, 0);
	ASSERT_EQ(0, bind(self->fd, (struct sockaddr *)&bound, l));
	ASSERT_EQ(0, getsockname(self->fd, (struct sockaddr *)&bound, &l));
	ASSERT_NE(0, addr_port(&bound));
	ASSERT_EQ(0, connect(self->fd, (struct sockaddr *)&ss, len));
	ASSERT_TRUE(carried_as_expected(variant->carrier, self->fd));
	l = sizeof(me);
	ASSERT_EQ(0, getsockname(self->fd, (struct sockaddr *)&me, &l));
	ASSERT_EQ(addr_port(&bound), addr_port(&me));
	s = accept(lfd, NULL, NULL);
	ASSERT_EQ(1, send(self->fd, "b", 1, 0));
	ASSERT_EQ(1, recv(s, &c, 1, 0));
	close(s);
	close(lfd);
}

/*
 * A connected socket's port is taken for TCP too: one port space.  (An RDMA connection's port is
 * its TCP socket's, so TCP gives none of our listeners a port an id of ours holds in rdma_cm's
 * space, where the listener could not have it: its clients would fall back.)
 */
TEST_F(lone, connected_port_is_taken_for_tcp_too)
{
	struct sockaddr_storage ss, me, peer, any = { .ss_family = variant->af };
	socklen_t len, l = sizeof(me), pl = sizeof(peer);
	int lfd = make_listener(variant->carrier, variant->af, &ss, &len), s, t;

	ASSERT_LE(0, lfd);
	ASSERT_EQ(0, connect(self->fd, (struct sockaddr *)&ss, len));
	ASSERT_TRUE(carried_as_expected(variant->carrier, self->fd));
	s = accept(lfd, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, getsockname(self->fd, (struct sockaddr *)&me, &l));
	ASSERT_EQ(0, getpeername(s, (struct sockaddr *)&peer, &pl));
	ASSERT_NE(0, addr_port(&me));
	ASSERT_EQ(addr_port(&me), addr_port(&peer));
	if (variant->af == AF_INET)
		((struct sockaddr_in *)&any)->sin_port = htons(addr_port(&me));
	else
		((struct sockaddr_in6 *)&any)->sin6_port = htons(addr_port(&me));
	t = socket(variant->af, SOCK_STREAM, 0);
	ASSERT_LE(0, t);
	ASSERT_EQ(-1, bind(t, (struct sockaddr *)&any, l));
	ASSERT_EQ(EADDRINUSE, errno);
	close(t);
	close(s);
	close(lfd);
}

/* The link-local address of the interface that has this host's address (@ss: its scope too). */
static int own_link_local(struct sockaddr_in6 *ss)
{
	struct ifaddrs *ifa, *i;
	char name[IF_NAMESIZE] = "";
	int found = -1;

	if (getifaddrs(&ifa))
		return -1;
	for (i = ifa; i; i = i->ifa_next) {
		const char *want = getenv("RDMASOCK_ADDR6");
		char a[INET6_ADDRSTRLEN];

		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET6 && want &&
		    inet_ntop(AF_INET6, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, a,
			      sizeof(a)) && !strcmp(a, want))
			snprintf(name, sizeof(name), "%s", i->ifa_name);
	}
	for (i = ifa; i && name[0]; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET6 && !strcmp(i->ifa_name, name) &&
		    IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr)) {
			*ss = *(struct sockaddr_in6 *)i->ifa_addr;
			ss->sin6_scope_id = if_nametoindex(name);
			found = 0;
			break;
		}
	freeifaddrs(ifa);
	return found;
}

/*
 * A link-local peer (fe80::...%eth0): carried as any other, from a port TCP holds too, as for
 * every RDMA client (it used to take rdma_cm's random choice, unknown to TCP); both ends' names
 * carry the interface, as TCP's.  Without a scope, connect() fails as TCP's does.
 */
TEST_F(lone, link_local_peer_connects_from_a_port_tcp_holds)
{
	struct sockaddr_in6 ll, me, peer, noscope, any = { .sin6_family = AF_INET6 };
	socklen_t l = sizeof(me), pl = sizeof(peer);
	int one = 1, lfd, s, t;

	if (variant->af != AF_INET6)
		SKIP(return, "IPv6 only");
	if (own_link_local(&ll))
		SKIP(return, "no link-local address on the test interface");
	lfd = carrier_socket(variant->carrier, AF_INET6, SOCK_STREAM);
	ASSERT_LE(0, lfd);
	ASSERT_EQ(0, setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	ll.sin6_port = 0;
	ASSERT_EQ(0, bind(lfd, (struct sockaddr *)&ll, sizeof(ll)));
	ASSERT_EQ(0, listen(lfd, 4));
	ASSERT_EQ(0, getsockname(lfd, (struct sockaddr *)&ll, &l));
	l = sizeof(me);
	noscope = ll;
	noscope.sin6_scope_id = 0;
	t = carrier_socket(variant->carrier, AF_INET6, SOCK_STREAM);
	ASSERT_LE(0, t);
	ASSERT_EQ(-1, connect(t, (struct sockaddr *)&noscope, sizeof(noscope)));
	ASSERT_EQ(EINVAL, errno);
	close(t);
	/* An RFC 2133 name (24 bytes) has no scope, whatever follows it in the caller's memory. */
	t = carrier_socket(variant->carrier, AF_INET6, SOCK_STREAM);
	ASSERT_LE(0, t);
	ASSERT_EQ(-1, connect(t, (struct sockaddr *)&ll, 24));
	ASSERT_EQ(EINVAL, errno);
	close(t);
	ASSERT_EQ(0, connect(self->fd, (struct sockaddr *)&ll, sizeof(ll)));
	ASSERT_TRUE(carried_as_expected(variant->carrier, self->fd));
	s = accept(lfd, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_EQ(5, send(self->fd, "hello", 5, 0));
	ASSERT_EQ(5, recv(s, (char[8]){ 0 }, 5, MSG_WAITALL));
	ASSERT_EQ(0, getsockname(self->fd, (struct sockaddr *)&me, &l));
	ASSERT_EQ(0, getpeername(s, (struct sockaddr *)&peer, &pl));
	ASSERT_NE(0, me.sin6_port);
	ASSERT_EQ(me.sin6_port, peer.sin6_port);
	EXPECT_EQ(ll.sin6_scope_id, me.sin6_scope_id);
	EXPECT_EQ(ll.sin6_scope_id, peer.sin6_scope_id);
	pl = sizeof(peer);
	ASSERT_EQ(0, getpeername(self->fd, (struct sockaddr *)&peer, &pl));
	EXPECT_EQ(ll.sin6_scope_id, peer.sin6_scope_id);
	pl = sizeof(peer);
	ASSERT_EQ(0, getsockname(s, (struct sockaddr *)&peer, &pl));
	EXPECT_EQ(ll.sin6_scope_id, peer.sin6_scope_id);
	any.sin6_port = me.sin6_port;
	t = socket(AF_INET6, SOCK_STREAM, 0);
	ASSERT_LE(0, t);
	ASSERT_EQ(-1, bind(t, (struct sockaddr *)&any, sizeof(any)));
	ASSERT_EQ(EADDRINUSE, errno);
	close(t);
	close(s);
	close(lfd);
}

/* A connection from @c to @lfd, accepted, carried as its carrier's and carrying "hi". */
static int accept_and_check(int lfd, int c, enum carrier carrier)
{
	char buf[2];
	int s = accept(lfd, NULL, NULL);

	if (s < 0 || !carried_as_expected(carrier, c) || send(c, "hi", 2, 0) != 2 ||
	    recv(s, buf, 2, MSG_WAITALL) != 2 || memcmp(buf, "hi", 2)) {
		if (s >= 0)
			close(s);
		return -1;
	}
	close(s);
	return 0;
}

/*
 * A device binding is the route's, as TCP's: with SO_BINDTODEVICE, or bound to a link-local
 * address, a link-local peer needs no scope of its own (RDMA used to leave these to TCP), one of
 * another interface is refused (EINVAL), and a global peer on the bound interface is carried as
 * without the binding.
 */
TEST_F(lone, device_binding_is_the_route_s)
{
	struct sockaddr_in6 ll, noscope, src;
	struct sockaddr_storage ss;
	char ifname[IF_NAMESIZE];
	int one = 1, lfd, glfd, t;
	socklen_t l = sizeof(ll), len;

	if (variant->af != AF_INET6)
		SKIP(return, "IPv6 only");
	if (own_link_local(&ll) || !if_indextoname(ll.sin6_scope_id, ifname))
		SKIP(return, "no link-local address on the test interface");
	lfd = carrier_socket(variant->carrier, AF_INET6, SOCK_STREAM);
	ASSERT_LE(0, lfd);
	ASSERT_EQ(0, setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	src = ll;
	ll.sin6_port = 0;
	ASSERT_EQ(0, bind(lfd, (struct sockaddr *)&ll, sizeof(ll)));
	ASSERT_EQ(0, listen(lfd, 4));
	ASSERT_EQ(0, getsockname(lfd, (struct sockaddr *)&ll, &l));
	noscope = ll;
	noscope.sin6_scope_id = 0;

	/* SO_BINDTODEVICE gives an unscoped link-local peer its interface. */
	t = carrier_socket(variant->carrier, AF_INET6, SOCK_STREAM);
	ASSERT_LE(0, t);
	ASSERT_EQ(0, setsockopt(t, SOL_SOCKET, SO_BINDTODEVICE, ifname, strlen(ifname)));
	ASSERT_EQ(0, connect(t, (struct sockaddr *)&noscope, sizeof(noscope)));
	ASSERT_EQ(0, accept_and_check(lfd, t, variant->carrier));
	close(t);

	/* So does a bound link-local source. */
	t = carrier_socket(variant->carrier, AF_INET6, SOCK_STREAM);
	ASSERT_LE(0, t);
	src.sin6_port = 0;
	ASSERT_EQ(0, bind(t, (struct sockaddr *)&src, sizeof(src)));
	ASSERT_EQ(0, connect(t, (struct sockaddr *)&noscope, sizeof(noscope)));
	ASSERT_EQ(0, accept_and_check(lfd, t, variant->carrier));
	close(t);

	/* A scope that is not the bound interface's: EINVAL. */
	t = carrier_socket(variant->carrier, AF_INET6, SOCK_STREAM);
	ASSERT_LE(0, t);
	ASSERT_EQ(0, setsockopt(t, SOL_SOCKET, SO_BINDTODEVICE, "lo", 2));
	ASSERT_EQ(-1, connect(t, (struct sockaddr *)&ll, sizeof(ll)));
	ASSERT_EQ(EINVAL, errno);
	close(t);

	/* A global peer on the bound interface. */
	glfd = make_listener(variant->carrier, AF_INET6, &ss, &len);
	ASSERT_LE(0, glfd);
	t = carrier_socket(variant->carrier, AF_INET6, SOCK_STREAM);
	ASSERT_LE(0, t);
	ASSERT_EQ(0, setsockopt(t, SOL_SOCKET, SO_BINDTODEVICE, ifname, strlen(ifname)));
	ASSERT_EQ(0, connect(t, (struct sockaddr *)&ss, len));
	ASSERT_EQ(0, accept_and_check(glfd, t, variant->carrier));
	close(t);
	close(glfd);
	close(lfd);
}

/* As TCP: close() gives a bound socket's port back at once; the next socket listens there. */
TEST_F(lone, port_of_a_closed_bound_socket_is_free_at_once)
{
	struct sockaddr_storage b, ss;
	socklen_t bl = host_addr(variant->af, &b, 0), len = sizeof(ss);
	int lfd, c, s;

	for (int i = 0; i < 20; i++) {
		ASSERT_EQ(0, bind(self->fd, (struct sockaddr *)&b, bl));
		ASSERT_EQ(0, getsockname(self->fd, (struct sockaddr *)&ss, &len));
		close(self->fd);
		lfd = carrier_socket(variant->carrier, variant->af, SOCK_STREAM);
		ASSERT_LE(0, lfd);
		ASSERT_EQ(0, bind(lfd, (struct sockaddr *)&ss, len)) TH_LOG("round %d", i);
		ASSERT_EQ(0, listen(lfd, 1)) TH_LOG("round %d: errno %d", i, errno);
		c = carrier_socket(variant->carrier, variant->af, SOCK_STREAM);
		ASSERT_LE(0, c);
		ASSERT_EQ(0, connect(c, (struct sockaddr *)&ss, len));
		ASSERT_TRUE(carried_as_expected(variant->carrier, c)) TH_LOG("round %d", i);
		s = accept(lfd, NULL, NULL);
		ASSERT_LE(0, s);
		close(s);
		close(c);
		close(lfd);
		self->fd = carrier_socket(variant->carrier, variant->af, SOCK_STREAM);
		ASSERT_LE(0, self->fd);
	}
}

TEST_F(lone, nonblocking_connect_completes_through_poll)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int err, lfd = make_listener(variant->carrier, variant->af, &ss, &len);
	socklen_t elen = sizeof(err);

	ASSERT_LE(0, lfd);
	ASSERT_EQ(0, fcntl(self->fd, F_SETFL, O_NONBLOCK));
	ASSERT_EQ(-1, connect(self->fd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(POLLOUT, poll_one(self->fd, POLLOUT, 10000));
	ASSERT_EQ(0, getsockopt(self->fd, SOL_SOCKET, SO_ERROR, &err, &elen));
	ASSERT_EQ(0, err);
	/* As TCP: the first connect() after completion reports success, the next one EISCONN. */
	ASSERT_EQ(0, connect(self->fd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(-1, connect(self->fd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(EISCONN, errno);
	int s = accept(lfd, NULL, NULL);

	ASSERT_LE(0, s);
	ASSERT_TRUE(carried_as_expected(variant->carrier, self->fd));
	ASSERT_EQ(2, send(self->fd, "nb", 2, 0));
	char buf[2];

	ASSERT_EQ(2, recv(s, buf, 2, MSG_WAITALL));
	close(s);
	close(lfd);
}

TEST_F(lone, accept_in_arrival_order_and_nonblocking)
{
	struct sockaddr_storage ss, me, peer;
	socklen_t len, l;
	int lfd = make_listener(variant->carrier, variant->af, &ss, &len);
	int c[3];

	ASSERT_LE(0, lfd);
	ASSERT_EQ(0, fcntl(lfd, F_SETFL, O_NONBLOCK));
	ASSERT_EQ(-1, accept(lfd, NULL, NULL));
	ASSERT_EQ(EAGAIN, errno);
	for (int i = 0; i < 3; i++) {
		c[i] = carrier_socket(variant->carrier, variant->af, SOCK_STREAM);
		ASSERT_EQ(0, connect(c[i], (struct sockaddr *)&ss, len));
	}
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(POLLIN, poll_one(lfd, POLLIN, 5000));
		l = sizeof(peer);
		int s = accept4(lfd, (struct sockaddr *)&peer, &l, SOCK_CLOEXEC);

		ASSERT_LE(0, s);
		ASSERT_TRUE(carried_as_expected(variant->carrier, s));
		l = sizeof(me);
		ASSERT_EQ(0, getsockname(c[i], (struct sockaddr *)&me, &l));
		ASSERT_EQ(addr_port(&me), addr_port(&peer));
		close(s);
		close(c[i]);
	}
	close(lfd);
}

TEST_F(lone, pre_fork_children_accept_from_one_listener)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int lfd = make_listener(variant->carrier, variant->af, &ss, &len), status;
	pid_t kids[2];

	ASSERT_LE(0, lfd);
	for (int i = 0; i < 2; i++) {
		kids[i] = fork();
		ASSERT_LE(0, kids[i]);
		if (!kids[i]) {
			int s;
			char c;

			/* Gone with the test if it fails: never left blocked in accept(). */
			if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() == 1)
				_exit(1);
			s = accept(lfd, NULL, NULL);

			if (s < 0 || !carried_as_expected(variant->carrier, s) || recv(s, &c, 1, 0) != 1 ||
			    send(s, &c, 1, 0) != 1)
				_exit(1);
			_exit(0);
		}
	}
	for (int i = 0; i < 2; i++) {
		int c = carrier_socket(variant->carrier, variant->af, SOCK_STREAM);
		char ch = 'a' + i;

		ASSERT_EQ(0, connect(c, (struct sockaddr *)&ss, len));
		ASSERT_TRUE(carried_as_expected(variant->carrier, c)) TH_LOG("client %d", i);
		ASSERT_EQ(1, send(c, &ch, 1, 0));
		ASSERT_EQ(1, recv(c, &ch, 1, 0));
		ASSERT_EQ('a' + i, ch);
		close(c);
	}
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(kids[i], waitpid(kids[i], &status, 0));
		ASSERT_EQ(0, status);
	}
	close(lfd);
}

TEST_F(lone, listener_shut_rd_stops_accept)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int lfd = make_listener(variant->carrier, variant->af, &ss, &len);

	ASSERT_LE(0, lfd);
	ASSERT_EQ(0, shutdown(lfd, SHUT_RD));
	ASSERT_EQ(-1, accept(lfd, NULL, NULL));
	ASSERT_EQ(EINVAL, errno);
	close(lfd);
}

/* A host on the subnet that does not exist: the neighbour lookup fails, for both carriers alike. */
TEST_F_TIMEOUT(lone, connect_to_an_absent_host_is_unreachable, 60)
{
	struct sockaddr_storage ss;
	socklen_t len = host_addr(variant->af, &ss, 7);

	if (variant->af == AF_INET)
		inet_pton(AF_INET, "10.11.0.99", &((struct sockaddr_in *)&ss)->sin_addr);
	else
		inet_pton(AF_INET6, "fd11::99", &((struct sockaddr_in6 *)&ss)->sin6_addr);
	ASSERT_EQ(-1, connect(self->fd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(EHOSTUNREACH, errno);
}

/*
 * shutdown() while a connect is in progress abandons it, as TCP's inet_shutdown() disconnects a
 * connecting socket: it returns 0, and the same socket connects elsewhere afterwards.
 */
TEST_F_TIMEOUT(lone, shutdown_while_connecting_abandons_the_connect, 60)
{
	struct sockaddr_storage ss, ls;
	socklen_t len = host_addr(variant->af, &ss, 9), llen;
	int lfd, s, err = -1, fl = fcntl(self->fd, F_GETFL);
	socklen_t elen = sizeof(err);
	char b[2];

	/* (Not the absent host of the test before: its failure sits in the negative cache.) */
	if (variant->af == AF_INET)
		inet_pton(AF_INET, "10.11.0.98", &((struct sockaddr_in *)&ss)->sin_addr);
	else
		inet_pton(AF_INET6, "fd11::98", &((struct sockaddr_in6 *)&ss)->sin6_addr);
	ASSERT_EQ(0, fcntl(self->fd, F_SETFL, fl | O_NONBLOCK));
	ASSERT_EQ(-1, connect(self->fd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(EINPROGRESS, errno);
	if (variant->carrier != CARRIER_TCP)	/* still the RDMA attempt */
		ASSERT_EQ(RDMASOCK_MODE_NONE, rs_getint(self->fd, RDMASOCK_MODE));
	ASSERT_EQ(0, shutdown(self->fd, SHUT_RDWR));
	/* The socket is unconnected again: it connects to a listener that is there. */
	lfd = make_listener(variant->carrier, variant->af, &ls, &llen);
	ASSERT_LE(0, lfd);
	if (connect(self->fd, (struct sockaddr *)&ls, llen))
		ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(POLLOUT, poll_one(self->fd, POLLOUT, 20000) & POLLOUT);
	ASSERT_EQ(0, getsockopt(self->fd, SOL_SOCKET, SO_ERROR, &err, &elen));
	ASSERT_EQ(0, err);
	s = accept(lfd, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_TRUE(carried_as_expected(variant->carrier, self->fd));
	ASSERT_EQ(2, send(self->fd, "ok", 2, 0));
	ASSERT_EQ(2, recv(s, b, 2, MSG_WAITALL));
	close(s);
	close(lfd);
}

struct storm {
	int lfd;
	int n;
	int who[16];
	int err;
};

/* The server side of the storm: accept every connection, then read each client's number. */
static void *storm_acceptor(void *p)
{
	struct storm *st = p;
	int fds[16];

	for (int i = 0; i < st->n; i++) {
		fds[i] = poll_one(st->lfd, POLLIN, 120000) ? accept(st->lfd, NULL, NULL) : -1;
		if (fds[i] < 0) {
			st->err = ETIMEDOUT;
			return NULL;
		}
	}
	for (int i = 0; i < st->n; i++) {
		if (read_all(fds[i], &st->who[i], sizeof(int)))
			st->err = errno;
		close(fds[i]);
	}
	return NULL;
}

/*
 * More connects at once than the backlog holds, while the server accepts: as with TCP, every one
 * completes (TCP's dropped SYNs are retried; a busy rdmasock listener's REJ makes the client retry
 * RDMA) and carries its data.  Each client writes at once, as TCP needs with syncookies.
 */
TEST_F_TIMEOUT(lone, accept_storm_beyond_the_backlog, 300)
{
	enum { N = 12 };
	int fam = carrier_family(variant->carrier, variant->af), one = 1, fds[N];
	int proto = carrier_protocol(variant->carrier);
	long long busy = rs_counter("fallback_peer_busy");
	struct storm st = { .n = N };
	struct sockaddr_storage ss;
	socklen_t len = host_addr(variant->af, &ss, 0);
	bool seen[N] = { false };
	pthread_t t;

	st.lfd = socket(fam, SOCK_STREAM, proto);
	ASSERT_LE(0, st.lfd);
	ASSERT_EQ(0, setsockopt(st.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	ASSERT_EQ(0, bind(st.lfd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(0, listen(st.lfd, 2));
	ASSERT_EQ(0, getsockname(st.lfd, (struct sockaddr *)&ss, &len));
	for (int i = 0; i < N; i++) {
		fds[i] = socket(fam, SOCK_STREAM | SOCK_NONBLOCK, proto);
		ASSERT_LE(0, fds[i]);
		if (connect(fds[i], (struct sockaddr *)&ss, len))
			ASSERT_EQ(EINPROGRESS, errno);
	}
	ASSERT_EQ(0, pthread_create(&t, NULL, storm_acceptor, &st));
	for (int i = 0; i < N; i++) {
		int err;
		socklen_t elen = sizeof(err);

		ASSERT_EQ(POLLOUT, poll_one(fds[i], POLLOUT, 120000) & POLLOUT) {
			TH_LOG("client %d: mode %d reason %d", i, rs_getint(fds[i], RDMASOCK_MODE),
			       rs_getint(fds[i], RDMASOCK_FALLBACK_REASON));
		}
		ASSERT_EQ(0, getsockopt(fds[i], SOL_SOCKET, SO_ERROR, &err, &elen));
		ASSERT_EQ(0, err);
		ASSERT_TRUE(carried_as_expected(variant->carrier, fds[i])) {
			TH_LOG("client %d: fallback reason %d", i, rs_getint(fds[i], RDMASOCK_FALLBACK_REASON));
		}
		ASSERT_EQ(sizeof(i), send(fds[i], &i, sizeof(i), 0));
	}
	pthread_join(t, NULL);
	ASSERT_EQ(0, st.err);
	for (int i = 0; i < N; i++) {
		ASSERT_TRUE(st.who[i] >= 0 && st.who[i] < N && !seen[st.who[i]]);
		seen[st.who[i]] = true;
		close(fds[i]);
	}
	EXPECT_EQ(busy, rs_counter("fallback_peer_busy"));
	close(st.lfd);
}

/* Absurd buffer sizes are clamped as TCP clamps them, and the connection still works. */
TEST_F(lone, absurd_buffer_sizes_are_clamped)
{
	int rmem_max = read_long("/proc/sys/net/core/rmem_max");
	int wmem_max = read_long("/proc/sys/net/core/wmem_max");
	int huge = INT_MAX, neg = -1, zero = 0, val, s, lfd;
	struct stream_arg a = { .len = 1 << 20, .seed = 3, .chunk = 4000 };
	struct sockaddr_storage ss;
	socklen_t len, vlen = sizeof(val);
	pthread_t t;

	ASSERT_LT(0, rmem_max);
	lfd = make_listener(variant->carrier, variant->af, &ss, &len);
	ASSERT_LE(0, lfd);
	ASSERT_EQ(0, setsockopt(self->fd, SOL_SOCKET, SO_RCVBUF, &huge, sizeof(huge)));
	ASSERT_EQ(0, getsockopt(self->fd, SOL_SOCKET, SO_RCVBUF, &val, &vlen));
	ASSERT_EQ(2 * rmem_max, val);
	ASSERT_EQ(0, setsockopt(self->fd, SOL_SOCKET, SO_SNDBUF, &neg, sizeof(neg)));
	ASSERT_EQ(0, getsockopt(self->fd, SOL_SOCKET, SO_SNDBUF, &val, &vlen));
	ASSERT_EQ(2 * wmem_max, val);
	ASSERT_EQ(0, setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &zero, sizeof(zero)));
	ASSERT_EQ(0, setsockopt(lfd, SOL_SOCKET, SO_SNDBUF, &zero, sizeof(zero)));
	ASSERT_EQ(0, getsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &val, &vlen));
	ASSERT_LT(0, val);
	ASSERT_EQ(0, connect(self->fd, (struct sockaddr *)&ss, len));
	s = accept(lfd, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_TRUE(carried_as_expected(variant->carrier, self->fd));
	ASSERT_TRUE(carried_as_expected(variant->carrier, s));
	if (variant->carrier != CARRIER_TCP) {
		struct rdmasock_info info;
		socklen_t ilen = sizeof(info);

		ASSERT_EQ(0, getsockopt(self->fd, SOL_RDMASOCK, RDMASOCK_INFO, &info, &ilen));
		ASSERT_GE(4u << 20, info.rx_ring_size);	/* the protocol's maximum */
		ASSERT_LE(16u << 10, info.tx_ring_size);	/* the tiny end's ring: the minimum */
	}
	/* Both ways: the tiny end writes to the huge one and back. */
	a.fd = s;
	ASSERT_EQ(0, pthread_create(&t, NULL, stream_writer, &a));
	ASSERT_EQ(-1, stream_check(self->fd, a.len, a.seed));
	pthread_join(t, NULL);
	ASSERT_EQ(0, a.err);
	a.fd = self->fd;
	a.seed = 4;
	ASSERT_EQ(0, pthread_create(&t, NULL, stream_writer, &a));
	ASSERT_EQ(-1, stream_check(s, a.len, a.seed));
	pthread_join(t, NULL);
	ASSERT_EQ(0, a.err);
	close(s);
	close(lfd);
}

/* ---- socket options: set late, inherited, and on the TCP socket that carries the bytes ---- */

/* What the kernel's TCP socket with @fd's addresses holds (sock_diag, as ss(8) shows it). */
struct tcp_diag {
	unsigned int ifindex, mark, priority, rcvbuf, sndbuf;
};

/* 0, -1 (no such socket), or -2: the kernel has no inet_diag (the debug kernel's defconfig). */
static int tcp_diag(int fd, struct tcp_diag *out)
{
	struct sockaddr_storage me, peer;
	socklen_t l = sizeof(me);
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 req;
	} q = {
		.nh = { .nlmsg_len = sizeof(q), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		.req = { .sdiag_protocol = IPPROTO_TCP, .idiag_states = ~0U,
			 .idiag_ext = 1 << (INET_DIAG_SKMEMINFO - 1) | 1 << (INET_DIAG_TCLASS - 1) },
	};
	static char buf[1 << 16];
	int nl, found = -1;
	ssize_t n;

	if (getsockname(fd, (struct sockaddr *)&me, &l))
		return -1;
	l = sizeof(peer);
	if (getpeername(fd, (struct sockaddr *)&peer, &l))
		return -1;
	q.req.sdiag_family = me.ss_family;
	nl = socket(AF_NETLINK, SOCK_DGRAM, NETLINK_SOCK_DIAG);
	if (nl < 0 || send(nl, &q, sizeof(q), 0) != sizeof(q)) {
		found = -2;
		goto out;
	}
	while ((n = recv(nl, buf, sizeof(buf), 0)) > 0) {
		for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
			struct inet_diag_msg *m = NLMSG_DATA(h);
			int alen = h->nlmsg_len - NLMSG_LENGTH(sizeof(*m));

			if (h->nlmsg_type == NLMSG_ERROR)	/* no inet_diag in this kernel */
				found = found < 0 ? -2 : found;
			if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR)
				goto out;
			if (ntohs(m->id.idiag_sport) != addr_port(&me) ||
			    ntohs(m->id.idiag_dport) != addr_port(&peer))
				continue;
			memset(out, 0, sizeof(*out));
			out->ifindex = m->id.idiag_if;
			for (struct rtattr *a = (void *)(m + 1); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
				unsigned int *v = RTA_DATA(a);

				if (a->rta_type == INET_DIAG_MARK)
					out->mark = *v;
				else if (a->rta_type == INET_DIAG_CLASS_ID)
					out->priority = *v;
				else if (a->rta_type == INET_DIAG_SKMEMINFO) {
					out->rcvbuf = v[SK_MEMINFO_RCVBUF];
					out->sndbuf = v[SK_MEMINFO_SNDBUF];
				}
			}
			found = 0;
		}
	}
out:
	if (nl >= 0)
		close(nl);
	return found;
}

/*
 * TCP (its clone of the listener, then tcp_create_openreq_child()): an accepted socket starts with
 * its listener's socket options and TCP settings, but SO_PRIORITY (sk_clone_lock() clears it).  Set
 * before and after listen(): a child takes what its listener had when it connected.
 */
static const struct { int level, opt, val; } inherited[] = {
	{ SOL_SOCKET, SO_KEEPALIVE, 1 }, { SOL_SOCKET, SO_RCVBUF, 48000 },
	{ SOL_SOCKET, SO_SNDBUF, 56000 }, { SOL_SOCKET, SO_MARK, 0x2a },
	{ SOL_SOCKET, SO_RCVLOWAT, 3 }, { SOL_SOCKET, SO_OOBINLINE, 1 },
	{ SOL_TCP, TCP_NODELAY, 1 }, { SOL_TCP, TCP_KEEPIDLE, 77 }, { SOL_TCP, TCP_KEEPINTVL, 11 },
	{ SOL_TCP, TCP_KEEPCNT, 4 }, { SOL_TCP, TCP_USER_TIMEOUT, 23000 },
};

static void check_inherited(struct __test_metadata *_metadata, int lfd, int s)
{
	struct timeval tv, ltv;
	struct linger lg;
	socklen_t l;

	for (size_t i = 0; i < sizeof(inherited) / sizeof(inherited[0]); i++) {
		TH_LOG("option %d/%d", inherited[i].level, inherited[i].opt);
		ASSERT_EQ(getint(lfd, inherited[i].level, inherited[i].opt),
			  getint(s, inherited[i].level, inherited[i].opt));
	}
	l = sizeof(tv);
	ASSERT_EQ(0, getsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, &l));
	ASSERT_EQ(0, getsockopt(lfd, SOL_SOCKET, SO_RCVTIMEO, &ltv, &l));
	ASSERT_EQ(ltv.tv_sec, tv.tv_sec);
	ASSERT_EQ(0, getsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, &l));
	ASSERT_EQ(3, tv.tv_sec);
	l = sizeof(lg);
	ASSERT_EQ(0, getsockopt(s, SOL_SOCKET, SO_LINGER, &lg, &l));
	ASSERT_EQ(1, lg.l_onoff);
	ASSERT_EQ(9, lg.l_linger);
	ASSERT_EQ(5, getint(lfd, SOL_SOCKET, SO_PRIORITY));
	ASSERT_EQ(0, getint(s, SOL_SOCKET, SO_PRIORITY));
}

TEST_F(lone, accepted_children_inherit_the_listeners_options)
{
	struct timeval rcv = { .tv_sec = 7 }, snd = { .tv_sec = 3 };
	struct linger lg = { .l_onoff = 1, .l_linger = 9 };
	struct sockaddr_storage ss;
	socklen_t len = host_addr(variant->af, &ss, 0);
	struct tcp_diag d;
	size_t half = sizeof(inherited) / sizeof(inherited[0]) / 2;
	int prio = 5, dr;

	ASSERT_EQ(0, setsockopt(self->fd, SOL_SOCKET, SO_PRIORITY, &prio, sizeof(prio)));
	for (size_t i = 0; i < half; i++)
		ASSERT_EQ(0, setsockopt(self->fd, inherited[i].level, inherited[i].opt,
					&inherited[i].val, sizeof(int)));
	ASSERT_EQ(0, setsockopt(self->fd, SOL_SOCKET, SO_RCVTIMEO, &rcv, sizeof(rcv)));
	ASSERT_EQ(0, bind(self->fd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(0, listen(self->fd, 4));
	ASSERT_EQ(0, getsockname(self->fd, (struct sockaddr *)&ss, &len));
	for (size_t i = half; i < sizeof(inherited) / sizeof(inherited[0]); i++)
		ASSERT_EQ(0, setsockopt(self->fd, inherited[i].level, inherited[i].opt,
					&inherited[i].val, sizeof(int)));
	ASSERT_EQ(0, setsockopt(self->fd, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof(snd)));
	ASSERT_EQ(0, setsockopt(self->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
	/* A client of the variant's carrier; for rdmasock also a plain TCP one (a TCP child). */
	for (int k = 0; k < (variant->carrier == CARRIER_TCP ? 1 : 2); k++) {
		enum carrier cc = k ? CARRIER_TCP : variant->carrier;
		int c = carrier_socket(cc, variant->af, SOCK_STREAM), s;

		ASSERT_EQ(0, connect(c, (struct sockaddr *)&ss, len));
		s = accept(self->fd, NULL, NULL);
		ASSERT_LE(0, s);
		ASSERT_TRUE(carried_as_expected(cc, s));
		check_inherited(_metadata, self->fd, s);
		if (cc == CARRIER_TCP) {
			/* And the TCP socket carrying the bytes has them (rdmasock: behind s). */
			ASSERT_EQ(1, send(s, "i", 1, 0));
			dr = tcp_diag(s, &d);
			if (dr == -2)
				SKIP(return, "no inet_diag: the TCP socket's own options not read");
			ASSERT_EQ(0, dr);
			ASSERT_EQ(0x2a, d.mark);
			ASSERT_EQ(0, d.priority);
			ASSERT_EQ(96000, d.rcvbuf);
			ASSERT_EQ(112000, d.sndbuf);
		}
		close(s);
		close(c);
	}
}

/*
 * SOL_SOCKET options set once the connection is up reach the TCP socket under it, as they do on
 * TCP (rdmasock: a connection that fell back to TCP; where SOL_SOCKET does not come to the family,
 * 6.1, they reach it with the next call, here the send).  Binding the connection to "lo" last: TCP
 * then loses its way to the peer's address on eth0, so nothing is sent after it.
 */
TEST_F(lone, options_set_on_a_connection_reach_its_tcp_socket)
{
	int prio = 4, mark = 0x33, rb = 20000, sb = 30000, s, dr;
	struct sockaddr_storage ss;
	socklen_t len;
	int lfd = make_listener(CARRIER_TCP, variant->af, &ss, &len);
	struct tcp_diag d;
	char c;

	ASSERT_LE(0, lfd);
	ASSERT_EQ(0, connect(self->fd, (struct sockaddr *)&ss, len));
	if (variant->carrier != CARRIER_TCP)
		ASSERT_EQ(RDMASOCK_MODE_TCP, rs_getint(self->fd, RDMASOCK_MODE));
	s = accept(lfd, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, setsockopt(self->fd, SOL_SOCKET, SO_PRIORITY, &prio, sizeof(prio)));
	ASSERT_EQ(0, setsockopt(self->fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)));
	ASSERT_EQ(0, setsockopt(self->fd, SOL_SOCKET, SO_RCVBUF, &rb, sizeof(rb)));
	ASSERT_EQ(0, setsockopt(self->fd, SOL_SOCKET, SO_SNDBUF, &sb, sizeof(sb)));
	ASSERT_EQ(1, send(self->fd, "o", 1, 0));
	ASSERT_EQ(1, recv(s, &c, 1, 0));
	dr = tcp_diag(self->fd, &d);
	if (dr == -2)
		SKIP(return, "no inet_diag: the TCP socket's options cannot be read");
	ASSERT_EQ(0, dr);
	ASSERT_EQ(mark, d.mark);
	ASSERT_EQ(prio, d.priority);
	ASSERT_EQ(2 * rb, d.rcvbuf);
	ASSERT_EQ(2 * sb, d.sndbuf);
	ASSERT_EQ(0, d.ifindex);
	ASSERT_EQ(0, setsockopt(self->fd, SOL_SOCKET, SO_BINDTODEVICE, "lo", 3));
	ASSERT_EQ(-1, recv(self->fd, &c, 1, MSG_DONTWAIT));	/* (the next call, on 6.1) */
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, tcp_diag(self->fd, &d));
	ASSERT_EQ(if_nametoindex("lo"), d.ifindex);
	close(s);
	close(lfd);
}

/* As on TCP, IP_TOS sets the priority too (ip_sockglue.c: rt_tos2priority()); ours reports it. */
TEST_F(lone, ip_tos_sets_the_priority)
{
	int tos = 0x10, fd, dr;	/* IPTOS_LOWDELAY: TC_PRIO_INTERACTIVE */

	ASSERT_EQ(0, setsockopt(self->fd, SOL_IP, IP_TOS, &tos, sizeof(tos)));
	ASSERT_EQ(6, getint(self->fd, SOL_SOCKET, SO_PRIORITY));
	/* And a connection keeps it on the TCP socket that carries it (rdmasock: a fallback). */
	struct sockaddr_storage ss;
	socklen_t len;
	int lfd = make_listener(CARRIER_TCP, variant->af, &ss, &len);
	struct tcp_diag d;

	ASSERT_LE(0, lfd);
	ASSERT_EQ(0, connect(self->fd, (struct sockaddr *)&ss, len));
	fd = accept(lfd, NULL, NULL);
	ASSERT_EQ(1, send(self->fd, "t", 1, 0));
	dr = tcp_diag(self->fd, &d);
	if (dr == -2)
		SKIP(return, "no inet_diag: the TCP socket's priority cannot be read");
	ASSERT_EQ(0, dr);
	ASSERT_EQ(6, d.priority);
	close(fd);
	close(lfd);
}

/* SO_RCVLOWAT is capped as tcp_set_rcvlowat() caps it: half a locked SO_RCVBUF. */
TEST_F(pair, rcvlowat_capped_by_a_locked_rcvbuf)
{
	int rb = 4096, lowat = 1 << 20;

	for (int i = 0; i < 2; i++) {
		int fd = i ? self->sfd : self->cfd;

		ASSERT_EQ(0, setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rb, sizeof(rb)));
		ASSERT_EQ(0, setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat)));
		ASSERT_EQ(getint(fd, SOL_SOCKET, SO_RCVBUF) / 2,
			  getint(fd, SOL_SOCKET, SO_RCVLOWAT));
	}
}

/*
 * TCP_NODELAY where rdmasock has no TCP socket yet (before connect(); an accepted RDMA connection
 * has none at all) is kept aside for the one made later: TCP's checks, its values before and
 * after connect(), and a small write on the accepted end still goes out at once.
 */
TEST_F(pair, nodelay_set_before_a_tcp_socket_exists)
{
	struct sockaddr_storage ss;
	int lfd, c[2], s[2], val = 1;
	socklen_t len;
	char buf[3];

	lfd = make_listener(variant->carrier, variant->af, &ss, &len);
	ASSERT_LE(0, lfd);
	for (int i = 0; i < 2; i++) {
		c[i] = carrier_socket(variant->carrier, variant->af, SOCK_STREAM);
		ASSERT_LE(0, c[i]);
		ASSERT_EQ(-1, setsockopt(c[i], IPPROTO_TCP, TCP_NODELAY, &val, 1));
		ASSERT_EQ(EINVAL, errno);
		ASSERT_EQ(-1, setsockopt(c[i], IPPROTO_TCP, TCP_NODELAY, (void *)8, sizeof(int)));
		ASSERT_EQ(EFAULT, errno);
		val = 1;
		ASSERT_EQ(0, setsockopt(c[i], IPPROTO_TCP, TCP_NODELAY, &val, sizeof(val)));
		/* The second client turns it off again before connect(): the last value counts. */
		val = 0;
		if (i)
			ASSERT_EQ(0, setsockopt(c[i], IPPROTO_TCP, TCP_NODELAY, &val, sizeof(val)));
		ASSERT_EQ(0, connect(c[i], (struct sockaddr *)&ss, len));
		s[i] = accept(lfd, NULL, NULL);
		ASSERT_LE(0, s[i]);
		ASSERT_TRUE(carried_as_expected(variant->carrier, c[i]));
		ASSERT_TRUE(carried_as_expected(variant->carrier, s[i]));
		ASSERT_EQ(!i, getint(c[i], SOL_TCP, TCP_NODELAY));
	}
	/* The accepted end: on, off, on again, each read back; then a 3-byte write arrives. */
	for (int v = 1; v >= -1; v--) {
		val = !!v;
		ASSERT_EQ(0, setsockopt(s[0], IPPROTO_TCP, TCP_NODELAY, &val, sizeof(val)));
		ASSERT_EQ(val, getint(s[0], SOL_TCP, TCP_NODELAY));
	}
	ASSERT_EQ(1, send(s[0], "a", 1, 0));
	ASSERT_EQ(2, send(s[0], "bc", 2, 0));
	ASSERT_EQ(3, recv(c[0], buf, 3, MSG_WAITALL));
	ASSERT_EQ(0, memcmp(buf, "abc", 3));
	ASSERT_EQ(-1, setsockopt(s[1], IPPROTO_TCP, TCP_NODELAY, &val, 2));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(0, getint(s[1], SOL_TCP, TCP_NODELAY));
	for (int i = 0; i < 2; i++) {
		close(c[i]);
		close(s[i]);
	}
	close(lfd);
}

/*
 * Protocol options read before connect() change nothing: reads of other levels once made
 * rdmasock's family socket replace its TCP socket by the other family's, losing the traffic class
 * set on it.
 */
TEST_F(pair, option_reads_before_connect_lose_nothing)
{
	int v4 = variant->af == AF_INET, lvl = v4 ? SOL_IP : SOL_IPV6, opt = v4 ? IP_TOS : IPV6_TCLASS;
	int tos = 0x20, lfd, c, s;
	struct sockaddr_storage ss;
	struct tcp_info ti;
	socklen_t len, l = sizeof(ti);

	lfd = make_listener(variant->carrier, variant->af, &ss, &len);
	ASSERT_LE(0, lfd);
	c = carrier_socket(variant->carrier, variant->af, SOCK_STREAM);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, setsockopt(c, lvl, opt, &tos, sizeof(tos)));
	ASSERT_EQ(0, getsockopt(c, IPPROTO_TCP, TCP_INFO, &ti, &l));
	ASSERT_EQ(0, getint(c, SOL_TCP, TCP_NODELAY));
	if (!v4)	/* an IPv6 socket answers IPv4's level too */
		ASSERT_LE(0, getint(c, SOL_IP, IP_TOS));
	ASSERT_EQ(tos, getint(c, lvl, opt));
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&ss, len));
	s = accept(lfd, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_TRUE(carried_as_expected(variant->carrier, c));
	EXPECT_EQ(tos, getint(c, lvl, opt));
	close(s);
	close(c);
	close(lfd);
}

/* SO_REUSEPORT; a kernel before 6.6 refuses it to our family: then as librdmasock-preload.so does. */
static int set_reuseport(int fd)
{
	int one = 1;

	if (!setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)))
		return 0;
	if (errno != EOPNOTSUPP)
		return -1;
	return setsockopt(fd, SOL_RDMASOCK, RDMASOCK_REUSEPORT, &one, sizeof(one));
}

/*
 * SO_REUSEPORT groups (pre-fork servers, nginx "reuseport"): every listener on the port serves,
 * clients are spread across them as the kernel spreads TCP's (by a hash of the client's address),
 * each accepted once; the group outlives its first member.
 */
TEST_F(lone, reuseport_group_spreads_clients)
{
	enum { LISTENERS = 3, CLIENTS = 24 };
	int l[LISTENERS], c[CLIENTS], got[LISTENERS] = { 0 }, served = 0, used = 0;
	struct sockaddr_storage ss;
	socklen_t len = host_addr(variant->af, &ss, 0);
	int fam = carrier_family(variant->carrier, variant->af);
	int proto = carrier_protocol(variant->carrier);
	char ch;

	for (int i = 0; i < LISTENERS; i++) {
		l[i] = i ? socket(fam, SOCK_STREAM, proto) : self->fd;
		ASSERT_EQ(0, set_reuseport(l[i]));
		ASSERT_EQ(1, getint(l[i], SOL_SOCKET, SO_REUSEPORT));
		ASSERT_EQ(0, bind(l[i], (struct sockaddr *)&ss, len));
		if (!i)
			ASSERT_EQ(0, getsockname(l[i], (struct sockaddr *)&ss, &len));
		ASSERT_EQ(0, listen(l[i], CLIENTS));
	}
	for (int k = 0; k < CLIENTS; k++) {
		int s = -1;

		c[k] = socket(fam, SOCK_STREAM, proto);
		ASSERT_EQ(0, connect(c[k], (struct sockaddr *)&ss, len));
		ASSERT_EQ(1, send(c[k], "r", 1, 0));
		/* Exactly one listener has it: whichever TCP's choice (or ours) made. */
		for (int t = 0; t < 200 && s < 0; t++) {
			struct pollfd p[LISTENERS];

			for (int i = 0; i < LISTENERS; i++)
				p[i] = (struct pollfd){ .fd = l[i], .events = POLLIN };
			ASSERT_LT(0, poll(p, LISTENERS, 100));
			for (int i = 0; i < LISTENERS && s < 0; i++) {
				if (!(p[i].revents & POLLIN))
					continue;
				s = accept4(l[i], NULL, NULL, SOCK_NONBLOCK);
				if (s >= 0)
					got[i]++;
			}
		}
		ASSERT_LE(0, s);
		ASSERT_TRUE(carried_as_expected(variant->carrier, s));
		ASSERT_EQ(POLLIN, poll_one(s, POLLIN, 5000));
		ASSERT_EQ(1, recv(s, &ch, 1, 0));
		served++;
		close(s);
	}
	for (int i = 0; i < LISTENERS; i++) {
		TH_LOG("listener %d: %d clients", i, got[i]);
		used += !!got[i];
	}
	ASSERT_EQ(CLIENTS, served);
	ASSERT_LT(1, used);
	/* The first member goes: the others still serve, over RDMA for rdmasock. */
	close(l[0]);
	self->fd = socket(fam, SOCK_STREAM, proto);
	for (int k = 0; k < 4; k++) {
		int n = socket(fam, SOCK_STREAM, proto), s = -1;

		ASSERT_EQ(0, connect(n, (struct sockaddr *)&ss, len));
		for (int t = 0; t < 200 && s < 0; t++) {
			struct pollfd p[2] = { { .fd = l[1], .events = POLLIN },
					       { .fd = l[2], .events = POLLIN } };

			ASSERT_LT(0, poll(p, 2, 100));
			s = accept4(p[0].revents & POLLIN ? l[1] : l[2], NULL, NULL, SOCK_NONBLOCK);
		}
		ASSERT_LE(0, s);
		ASSERT_TRUE(carried_as_expected(variant->carrier, s));
		close(s);
		close(n);
	}
	for (int k = 0; k < CLIENTS; k++)
		close(c[k]);
	close(l[1]);
	close(l[2]);
}

/*
 * A reuseport group with a plain TCP listener in it (another program on the port): every client is
 * served; rdmasock clients that TCP's choice sends to the plain one go TCP at once (peer_tcp), and
 * the rest still ride RDMA: the destination is not remembered as TCP-only.
 */
TEST_F(lone, reuseport_group_with_a_plain_tcp_member)
{
	enum { CLIENTS = 16 };
	int l[2] = { self->fd, socket(variant->af, SOCK_STREAM, 0) }, rdma = 0, tcp = 0;
	int fam = carrier_family(variant->carrier, variant->af);
	int proto = carrier_protocol(variant->carrier);
	long long cached = rs_counter("fallback_neg_cache");
	struct sockaddr_storage ss;
	socklen_t len = host_addr(variant->af, &ss, 0);
	char ch;

	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, set_reuseport(l[i]));
		ASSERT_EQ(0, bind(l[i], (struct sockaddr *)&ss, len));
		if (!i)
			ASSERT_EQ(0, getsockname(l[i], (struct sockaddr *)&ss, &len));
		ASSERT_EQ(0, listen(l[i], CLIENTS));
	}
	for (int k = 0; k < CLIENTS; k++) {
		int c = socket(fam, SOCK_STREAM, proto), s = -1;
		struct pollfd p[2] = { { .fd = l[0], .events = POLLIN },
				       { .fd = l[1], .events = POLLIN } };

		ASSERT_EQ(0, connect(c, (struct sockaddr *)&ss, len));
		ASSERT_LT(0, poll(p, 2, 5000));
		s = accept(p[0].revents & POLLIN ? l[0] : l[1], NULL, NULL);
		ASSERT_LE(0, s);
		ASSERT_EQ(1, send(c, "p", 1, 0));
		ASSERT_EQ(1, recv(s, &ch, 1, 0));
		if (variant->carrier != CARRIER_TCP) {
			if (rs_getint(c, RDMASOCK_MODE) == RDMASOCK_MODE_RDMA) {
				rdma++;
			} else {
				tcp++;
				ASSERT_EQ(RDMASOCK_REASON_PEER_TCP,
					  rs_getint(c, RDMASOCK_FALLBACK_REASON));
			}
		}
		close(s);
		close(c);
	}
	TH_LOG("%d clients over RDMA, %d sent to TCP", rdma, tcp);
	if (variant->carrier != CARRIER_TCP) {
		ASSERT_LT(0, rdma);
		ASSERT_EQ(cached, rs_counter("fallback_neg_cache"));
	}
	close(l[1]);
}

/*
 * The restart of a server whose old connection is still open: SO_REUSEADDR lets the new listener
 * bind the port (TCP: inet_csk_bind_conflict()), also when a protocol option came first.
 */
TEST_F(lone, reuseaddr_after_a_protocol_option_lets_a_server_restart)
{
	int one = 1, zero = 0, tos = 0x10, c, s, n, a;
	struct sockaddr_storage ss;
	socklen_t len = host_addr(variant->af, &ss, 0);
	char ch;

	ASSERT_EQ(0, setsockopt(self->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	ASSERT_EQ(0, bind(self->fd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(0, listen(self->fd, 4));
	ASSERT_EQ(0, getsockname(self->fd, (struct sockaddr *)&ss, &len));
	/* A plain TCP client: its accepted end is a TCP socket on the port, for every variant. */
	c = socket(variant->af, SOCK_STREAM, 0);
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&ss, len));
	s = accept(self->fd, NULL, NULL);
	ASSERT_LE(0, s);
	close(self->fd);
	self->fd = carrier_socket(variant->carrier, variant->af, SOCK_STREAM);
	if (variant->af == AF_INET6)
		n = setsockopt(self->fd, SOL_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	else
		n = setsockopt(self->fd, SOL_IP, IP_TOS, &tos, sizeof(tos));
	ASSERT_EQ(0, n);
	ASSERT_EQ(0, setsockopt(self->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	ASSERT_EQ(0, bind(self->fd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(0, listen(self->fd, 4));
	n = carrier_socket(variant->carrier, variant->af, SOCK_STREAM);
	ASSERT_EQ(0, connect(n, (struct sockaddr *)&ss, len));
	a = accept(self->fd, NULL, NULL);
	ASSERT_LE(0, a);
	ASSERT_TRUE(carried_as_expected(variant->carrier, a));
	ASSERT_EQ(1, send(n, "r", 1, 0));
	ASSERT_EQ(1, recv(a, &ch, 1, 0));
	/* The old connection is untouched. */
	ASSERT_EQ(1, send(c, "o", 1, 0));
	ASSERT_EQ(1, recv(s, &ch, 1, 0));
	ASSERT_EQ('o', ch);
	close(a);
	close(n);
	close(s);
	close(c);
}

#include "harness_main.h"
RS_TEST_MAIN
