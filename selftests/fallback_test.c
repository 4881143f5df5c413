// SPDX-License-Identifier: GPL-2.0
/*
 * Transparent TCP fallback: an rdmasock socket talks to anything TCP talks to, in both directions,
 * and says why it is not using RDMA.  Reasons and counters are checked, never timings.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include "lib.h"
#include "kselftest_harness.h"

/* Round trip a few bytes each way between two connected fds. */
static int exchange(int a, int b)
{
	char buf[16];

	if (send(a, "ping", 4, 0) != 4 || recv(b, buf, 4, MSG_WAITALL) != 4 || memcmp(buf, "ping", 4))
		return -1;
	if (send(b, "pong", 4, 0) != 4 || recv(a, buf, 4, MSG_WAITALL) != 4 || memcmp(buf, "pong", 4))
		return -1;
	return 0;
}

static int rs_socket(void)
{
	return socket(rs_family_number(), SOCK_STREAM, 0);
}

FIXTURE(fb) {
	int lfd;
	struct sockaddr_storage ss;
	socklen_t len;
};

FIXTURE_VARIANT(fb) {
	int af;
};

FIXTURE_VARIANT_ADD(fb, ipv4) { .af = AF_INET };
FIXTURE_VARIANT_ADD(fb, ipv6) { .af = AF_INET6 };

FIXTURE_SETUP(fb)
{
	self->lfd = -1;
}

FIXTURE_TEARDOWN(fb)
{
	if (self->lfd >= 0)
		close(self->lfd);
}

TEST_F(fb, rdmasock_client_plain_tcp_server)
{
	long long rejects = rs_counter("fallback_peer_reject");
	int c, s;

	self->lfd = make_listener(CARRIER_TCP, variant->af, &self->ss, &self->len);
	ASSERT_LE(0, self->lfd);
	c = rs_socket();
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&self->ss, self->len));
	s = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_EQ(RDMASOCK_MODE_TCP, rs_getint(c, RDMASOCK_MODE));
	ASSERT_EQ(RDMASOCK_REASON_PEER_REJECT, rs_getint(c, RDMASOCK_FALLBACK_REASON));
	ASSERT_EQ(rejects + 1, rs_counter("fallback_peer_reject"));
	ASSERT_EQ(0, exchange(c, s));
	close(c);
	close(s);

	/* The same destination again: the negative cache skips the RDMA attempt. */
	c = rs_socket();
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&self->ss, self->len));
	ASSERT_EQ(RDMASOCK_REASON_NEG_CACHE, rs_getint(c, RDMASOCK_FALLBACK_REASON));
	s = accept(self->lfd, NULL, NULL);
	ASSERT_EQ(0, exchange(c, s));
	close(c);
	close(s);
	if (variant->af != AF_INET6)
		return;

	/*
	 * A scope on a global address is ignored, by TCP and so by the cache: the same destination
	 * (before, a scope the entry did not have missed it and paid another RDMA attempt).
	 */
	((struct sockaddr_in6 *)&self->ss)->sin6_scope_id = 1;
	c = rs_socket();
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&self->ss, self->len));
	ASSERT_EQ(RDMASOCK_REASON_NEG_CACHE, rs_getint(c, RDMASOCK_FALLBACK_REASON));
	ASSERT_EQ(rejects + 1, rs_counter("fallback_peer_reject"));
	s = accept(self->lfd, NULL, NULL);
	ASSERT_EQ(0, exchange(c, s));
	close(c);
	close(s);
}

/*
 * A plain TCP listener refuses an rdmasock client's RDMA attempt (the port goes in the negative
 * cache), serves it over TCP, and goes; then an rdmasock listener takes the same port
 * (SO_REUSEADDR: the closed connection's TIME_WAIT holds it), TCP only if @force_tcp.
 */
static int cached_port_listener(struct __test_metadata *_metadata, FIXTURE_DATA(fb) *self,
				int af, bool force_tcp)
{
	int lfd, c, s, one = 1;

	self->lfd = make_listener(CARRIER_TCP, af, &self->ss, &self->len);
	ASSERT_LE(0, self->lfd);
	c = rs_socket();
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&self->ss, self->len));
	ASSERT_EQ(RDMASOCK_REASON_PEER_REJECT, rs_getint(c, RDMASOCK_FALLBACK_REASON));
	s = accept(self->lfd, NULL, NULL);
	ASSERT_EQ(0, exchange(c, s));
	close(c);
	close(s);
	close(self->lfd);
	self->lfd = -1;
	lfd = carrier_socket(CARRIER_RDMASOCK, af, SOCK_STREAM);
	ASSERT_LE(0, lfd);
	ASSERT_EQ(0, setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	if (force_tcp)
		ASSERT_EQ(0, setsockopt(lfd, SOL_RDMASOCK, RDMASOCK_FORCE_TCP, &one, sizeof(one)));
	ASSERT_EQ(0, bind(lfd, (struct sockaddr *)&self->ss, self->len)) TH_LOG("%d", errno);
	ASSERT_EQ(0, listen(lfd, 4));
	return lfd;
}

/*
 * A port the negative cache holds gets an rdmasock listener of this host: its clients ride RDMA
 * at once, not TCP for the rest of the entry's 10 s.
 */
TEST_F(fb, new_listener_on_a_cached_port_gets_rdma_clients)
{
	int c, s;

	self->lfd = cached_port_listener(_metadata, self, variant->af, false);
	c = rs_socket();
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&self->ss, self->len));
	ASSERT_TRUE(carried_as_expected(CARRIER_RDMASOCK, c));
	ASSERT_EQ(RDMASOCK_REASON_NONE, rs_getint(c, RDMASOCK_FALLBACK_REASON));
	s = accept(self->lfd, NULL, NULL);
	ASSERT_EQ(0, exchange(c, s));
	close(c);
	close(s);
}

/* ... but one that serves TCP only keeps the entry: its clients go straight to TCP, as before. */
TEST_F(fb, tcp_only_listener_on_a_cached_port_keeps_the_entry)
{
	long long rejects;
	int c, s;

	self->lfd = cached_port_listener(_metadata, self, variant->af, true);
	rejects = rs_counter("fallback_peer_reject");
	c = rs_socket();
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&self->ss, self->len));
	ASSERT_EQ(RDMASOCK_MODE_TCP, rs_getint(c, RDMASOCK_MODE));
	ASSERT_EQ(RDMASOCK_REASON_NEG_CACHE, rs_getint(c, RDMASOCK_FALLBACK_REASON));
	ASSERT_EQ(rejects, rs_counter("fallback_peer_reject"));
	s = accept(self->lfd, NULL, NULL);
	ASSERT_EQ(0, exchange(c, s));
	close(c);
	close(s);
}

TEST_F(fb, plain_tcp_client_rdmasock_server)
{
	int c, s;

	self->lfd = make_listener(CARRIER_RDMASOCK, variant->af, &self->ss, &self->len);
	ASSERT_LE(0, self->lfd);
	c = socket(variant->af, SOCK_STREAM, 0);
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&self->ss, self->len));
	s = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_EQ(RDMASOCK_MODE_TCP, rs_getint(s, RDMASOCK_MODE));
	ASSERT_EQ(RDMASOCK_REASON_PEER_TCP, rs_getint(s, RDMASOCK_FALLBACK_REASON));
	ASSERT_EQ(0, exchange(c, s));
	/* Close semantics pass through: the TCP peer sees EOF. */
	close(s);
	char ch;

	ASSERT_EQ(0, recv(c, &ch, 1, 0));
	close(c);
}

TEST_F(fb, mixed_clients_on_one_listener)
{
	int c[4], s;

	self->lfd = make_listener(CARRIER_RDMASOCK, variant->af, &self->ss, &self->len);
	ASSERT_LE(0, self->lfd);
	for (int i = 0; i < 4; i++) {
		c[i] = i % 2 ? socket(variant->af, SOCK_STREAM, 0) : rs_socket();
		ASSERT_EQ(0, connect(c[i], (struct sockaddr *)&self->ss, self->len));
	}
	int rdma = 0, tcp = 0;

	for (int i = 0; i < 4; i++) {
		struct sockaddr_storage peer, me;
		socklen_t l = sizeof(peer);
		int j;

		s = accept(self->lfd, (struct sockaddr *)&peer, &l);
		ASSERT_LE(0, s);
		for (j = 0; j < 4; j++) {
			l = sizeof(me);
			ASSERT_EQ(0, getsockname(c[j], (struct sockaddr *)&me, &l));
			if (addr_port(&me) == addr_port(&peer))
				break;
		}
		ASSERT_GT(4, j);
		ASSERT_EQ(0, exchange(c[j], s));
		if (rs_getint(s, RDMASOCK_MODE) == RDMASOCK_MODE_RDMA)
			rdma++;
		else
			tcp++;
		ASSERT_EQ(j % 2 ? RDMASOCK_MODE_TCP : RDMASOCK_MODE_RDMA, rs_getint(s, RDMASOCK_MODE));
		close(s);
	}
	ASSERT_EQ(2, rdma);
	ASSERT_EQ(2, tcp);
	for (int i = 0; i < 4; i++)
		close(c[i]);
}

TEST_F(fb, loopback_address_has_no_rdma)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int c, s, one = 1;

	self->lfd = socket(variant->af, SOCK_STREAM, 0);
	setsockopt(self->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&ss, 0, sizeof(ss));
	if (variant->af == AF_INET) {
		struct sockaddr_in *sin = (void *)&ss;

		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (void *)&ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_addr = in6addr_loopback;
		len = sizeof(*sin6);
	}
	ASSERT_EQ(0, bind(self->lfd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(0, listen(self->lfd, 4));
	ASSERT_EQ(0, getsockname(self->lfd, (struct sockaddr *)&ss, &len));
	c = rs_socket();
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&ss, len));
	ASSERT_EQ(RDMASOCK_MODE_TCP, rs_getint(c, RDMASOCK_MODE));
	ASSERT_EQ(RDMASOCK_REASON_NO_DEVICE, rs_getint(c, RDMASOCK_FALLBACK_REASON));
	s = accept(self->lfd, NULL, NULL);
	ASSERT_EQ(0, exchange(c, s));
	close(s);
	close(c);
}

TEST_F(fb, no_fallback_gives_the_real_error)
{
	int c, one = 1;

	self->lfd = make_listener(CARRIER_TCP, variant->af, &self->ss, &self->len);
	ASSERT_LE(0, self->lfd);
	c = rs_socket();
	ASSERT_EQ(0, setsockopt(c, SOL_RDMASOCK, RDMASOCK_NO_FALLBACK, &one, sizeof(one)));
	ASSERT_EQ(1, rs_getint(c, RDMASOCK_NO_FALLBACK));
	ASSERT_EQ(-1, connect(c, (struct sockaddr *)&self->ss, self->len));
	ASSERT_EQ(ECONNREFUSED, errno);
	ASSERT_NE(RDMASOCK_MODE_TCP, rs_getint(c, RDMASOCK_MODE));
	close(c);
}

/*
 * @fd connects to a new rdmasock listener of family @af, rides as @carrier should, and carries
 * bytes both ways: 0, or -1 (said why on stderr).
 */
static int connect_and_exchange(int fd, int carrier, int af)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int lfd, s, err = -1;

	lfd = make_listener(CARRIER_RDMASOCK, af, &ss, &len);
	if (lfd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&ss, len)) {
		fprintf(stderr, "# connect: errno %d\n", errno);
		goto out;
	}
	if (!carried_as_expected(carrier, fd))
		goto out;
	s = accept(lfd, NULL, NULL);
	if (s >= 0) {
		err = exchange(fd, s);
		close(s);
	}
out:
	close(lfd);
	return err;
}

/*
 * A refused attempt leaves no port behind, as TCP's failed connect() gives its port back: the
 * socket connects again, to the other family too (an AF_RDMASOCK socket takes its address's), or
 * binds, and then rides RDMA.
 */
TEST_F(fb, no_fallback_refusal_leaves_no_port)
{
	int other = variant->af == AF_INET ? AF_INET6 : AF_INET;
	struct sockaddr_storage b;
	socklen_t bl;
	int c[2], one = 1;

	self->lfd = make_listener(CARRIER_TCP, variant->af, &self->ss, &self->len);
	ASSERT_LE(0, self->lfd);
	for (int i = 0; i < 2; i++) {
		c[i] = rs_socket();
		ASSERT_LE(0, c[i]);
		ASSERT_EQ(0, setsockopt(c[i], SOL_RDMASOCK, RDMASOCK_NO_FALLBACK, &one, sizeof(one)));
		ASSERT_EQ(-1, connect(c[i], (struct sockaddr *)&self->ss, self->len));
		ASSERT_EQ(ECONNREFUSED, errno);
	}
	/* 0: to the other family. */
	ASSERT_EQ(0, connect_and_exchange(c[0], CARRIER_RDMASOCK, other));
	/* 1: bound first, to a port of TCP's choice. */
	bl = host_addr(variant->af, &b, 0);
	ASSERT_EQ(0, bind(c[1], (struct sockaddr *)&b, bl)) TH_LOG("errno %d", errno);
	ASSERT_EQ(0, connect_and_exchange(c[1], CARRIER_RDMASOCK, variant->af));
	close(c[0]);
	close(c[1]);
}

TEST_F(fb, force_tcp)
{
	int c, s, one = 1;

	self->lfd = make_listener(CARRIER_RDMASOCK, variant->af, &self->ss, &self->len);
	ASSERT_LE(0, self->lfd);
	c = rs_socket();
	ASSERT_EQ(0, setsockopt(c, SOL_RDMASOCK, RDMASOCK_FORCE_TCP, &one, sizeof(one)));
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&self->ss, self->len));
	ASSERT_EQ(RDMASOCK_MODE_TCP, rs_getint(c, RDMASOCK_MODE));
	ASSERT_EQ(RDMASOCK_REASON_FORCED, rs_getint(c, RDMASOCK_FALLBACK_REASON));
	ASSERT_EQ(-1, setsockopt(c, SOL_RDMASOCK, RDMASOCK_FORCE_TCP, &one, sizeof(one)));
	ASSERT_EQ(EISCONN, errno);
	s = accept(self->lfd, NULL, NULL);
	ASSERT_EQ(RDMASOCK_MODE_TCP, rs_getint(s, RDMASOCK_MODE));
	ASSERT_EQ(0, exchange(c, s));
	close(s);
	close(c);
}

/* connections_tcp counts connections: a TCP connect that is refused is a fallback, not one. */
TEST_F(fb, connections_tcp_counts_connections_not_attempts)
{
	long long conns = rs_counter("connections_tcp");
	long long forced = rs_counter("fallback_forced");
	struct sockaddr_storage gone;
	socklen_t glen;
	int c, s, one = 1;

	/* A port nobody listens on any more. */
	self->lfd = make_listener(CARRIER_TCP, variant->af, &gone, &glen);
	ASSERT_LE(0, self->lfd);
	close(self->lfd);
	c = rs_socket();
	ASSERT_EQ(0, setsockopt(c, SOL_RDMASOCK, RDMASOCK_FORCE_TCP, &one, sizeof(one)));
	ASSERT_EQ(-1, connect(c, (struct sockaddr *)&gone, glen));
	ASSERT_EQ(ECONNREFUSED, errno);
	close(c);
	ASSERT_EQ(forced + 1, rs_counter("fallback_forced"));
	ASSERT_EQ(conns, rs_counter("connections_tcp"));

	/* One that succeeds: the client counts it; a plain TCP listener counts nothing. */
	self->lfd = make_listener(CARRIER_TCP, variant->af, &self->ss, &self->len);
	ASSERT_LE(0, self->lfd);
	c = rs_socket();
	ASSERT_EQ(0, setsockopt(c, SOL_RDMASOCK, RDMASOCK_FORCE_TCP, &one, sizeof(one)));
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&self->ss, self->len));
	s = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, exchange(c, s));
	close(s);
	close(c);
	ASSERT_EQ(conns + 1, rs_counter("connections_tcp"));
}

TEST_F(fb, nonblocking_connect_falls_back_through_poll)
{
	int c, s, err;
	socklen_t elen = sizeof(err);

	self->lfd = make_listener(CARRIER_TCP, variant->af, &self->ss, &self->len);
	ASSERT_LE(0, self->lfd);
	c = socket(rs_family_number(), SOCK_STREAM | SOCK_NONBLOCK, 0);
	/* Before connect() the epoll/poll waiter is registered; the fallback must still wake it. */
	ASSERT_EQ(-1, connect(c, (struct sockaddr *)&self->ss, self->len));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(POLLOUT, poll_one(c, POLLOUT, 10000));
	ASSERT_EQ(0, getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &elen));
	ASSERT_EQ(0, err);
	ASSERT_EQ(RDMASOCK_MODE_TCP, rs_getint(c, RDMASOCK_MODE));
	s = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, fcntl(c, F_SETFL, 0));
	ASSERT_EQ(0, exchange(c, s));
	close(s);
	close(c);
}

TEST_F(fb, blocking_send_and_recv_during_connect_follow_the_fallback)
{
	int c, s;
	char buf[4];

	self->lfd = make_listener(CARRIER_TCP, variant->af, &self->ss, &self->len);
	ASSERT_LE(0, self->lfd);
	c = socket(rs_family_number(), SOCK_STREAM | SOCK_NONBLOCK, 0);
	ASSERT_EQ(-1, connect(c, (struct sockaddr *)&self->ss, self->len));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(0, fcntl(c, F_SETFL, 0));
	/* Issued while the RDMA attempt is still running: they wait for it, then go to TCP. */
	ASSERT_EQ(4, send(c, "data", 4, 0));
	s = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_EQ(4, recv(s, buf, 4, MSG_WAITALL));
	ASSERT_EQ(4, send(s, "back", 4, 0));
	ASSERT_EQ(4, recv(c, buf, 4, MSG_WAITALL));
	ASSERT_EQ(0, memcmp(buf, "back", 4));
	ASSERT_EQ(RDMASOCK_MODE_TCP, rs_getint(c, RDMASOCK_MODE));
	close(s);
	close(c);
}

TEST_F(fb, unread_options_survive_fallback)
{
	struct timeval tv = { .tv_sec = 0, .tv_usec = 100000 };
	int c, s, one = 1, val;
	socklen_t l = sizeof(val);
	char ch;

	self->lfd = make_listener(CARRIER_TCP, variant->af, &self->ss, &self->len);
	ASSERT_LE(0, self->lfd);
	c = rs_socket();
	ASSERT_EQ(0, setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)));
	ASSERT_EQ(0, setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&self->ss, self->len));
	ASSERT_EQ(RDMASOCK_MODE_TCP, rs_getint(c, RDMASOCK_MODE));
	ASSERT_EQ(0, getsockopt(c, IPPROTO_TCP, TCP_NODELAY, &val, &l));
	ASSERT_EQ(1, val);
	/* SO_RCVTIMEO set before the fallback still bounds a blocking read. */
	ASSERT_EQ(-1, recv(c, &ch, 1, 0));
	ASSERT_EQ(EAGAIN, errno);
	s = accept(self->lfd, NULL, NULL);
	close(s);
	close(c);
}

/* IP and TCP options set before connect() are the TCP socket's: a fallback or a refusal keeps them. */
static int set_opts(int fd, int af)
{
	int tos = 0x20;

	if (af == AF_INET ? setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)) :
			    setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos)))
		return -1;
	return setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, "reno", 4);
}

static bool opts_kept(int fd, int af)
{
	char cc[16] = "";
	socklen_t l = sizeof(int), cl = sizeof(cc);
	int tos = 0;

	if (af == AF_INET ? getsockopt(fd, IPPROTO_IP, IP_TOS, &tos, &l) :
			    getsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, &l))
		return false;
	if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, &cl))
		return false;
	tos &= ~3;	/* (the ECN bits are TCP's, if net.ipv4.tcp_ecn is on) */
	if (tos != 0x20 || strcmp(cc, "reno"))
		fprintf(stderr, "# tos %#x, congestion control %s\n", tos, cc);
	return tos == 0x20 && !strcmp(cc, "reno");
}

TEST_F(fb, ip_and_tcp_options_survive_fallback_and_refusal)
{
	struct sockaddr_storage ss, b;
	socklen_t len, bl;
	int c, d, s, lfd, one = 1;

	self->lfd = make_listener(CARRIER_TCP, variant->af, &self->ss, &self->len);
	ASSERT_LE(0, self->lfd);
	/* Falls back: the TCP connection has them. */
	c = carrier_socket(CARRIER_IPPROTO, variant->af, SOCK_STREAM);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, set_opts(c, variant->af));
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&self->ss, self->len));
	ASSERT_EQ(RDMASOCK_MODE_TCP, rs_getint(c, RDMASOCK_MODE));
	/* (An attempt was made: not a negative-cache hit.) */
	ASSERT_EQ(RDMASOCK_REASON_PEER_REJECT, rs_getint(c, RDMASOCK_FALLBACK_REASON));
	ASSERT_TRUE(opts_kept(c, variant->af));
	s = accept(self->lfd, NULL, NULL);
	ASSERT_EQ(0, exchange(c, s));
	close(s);
	close(c);
	/*
	 * Refused (no fallback) by a TCP listener not seen before (so an attempt is made, and a port
	 * taken), then connected over RDMA: still there.
	 */
	lfd = make_listener(CARRIER_TCP, variant->af, &ss, &len);
	ASSERT_LE(0, lfd);
	d = carrier_socket(CARRIER_IPPROTO, variant->af, SOCK_STREAM);
	ASSERT_LE(0, d);
	ASSERT_EQ(0, set_opts(d, variant->af));
	ASSERT_EQ(0, setsockopt(d, SOL_RDMASOCK, RDMASOCK_NO_FALLBACK, &one, sizeof(one)));
	ASSERT_EQ(-1, connect(d, (struct sockaddr *)&ss, len));
	ASSERT_EQ(ECONNREFUSED, errno);
	ASSERT_EQ(RDMASOCK_REASON_PEER_REJECT, rs_getint(d, RDMASOCK_FALLBACK_REASON));
	close(lfd);
	ASSERT_TRUE(opts_kept(d, variant->af));
	/* The port went back with the attempt: the socket binds, as TCP's would. */
	bl = host_addr(variant->af, &b, 0);
	ASSERT_EQ(0, bind(d, (struct sockaddr *)&b, bl)) TH_LOG("errno %d", errno);
	ASSERT_EQ(0, connect_and_exchange(d, CARRIER_IPPROTO, variant->af));
	ASSERT_TRUE(opts_kept(d, variant->af));
	close(d);
}

#include "harness_main.h"
RS_TEST_MAIN
