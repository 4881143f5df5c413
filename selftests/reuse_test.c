// SPDX-License-Identifier: GPL-2.0
/*
 * Reused connections (#22, kmod/park.c): with park_ms set, a connection that closed in order at
 * both ends leaves its QP parked at both, and the next connection from an unbound client socket to
 * the same listener rides it (OPEN, ACCEPT: each its sender's READY) instead of the CM's exchange.  Each
 * test runs on TCP too, the oracle: the same bytes, EOFs and errors.  Over rdmasock it also checks
 * that the reused connection is on the same RC QP as the one before (RDMASOCK_INFO's QP numbers),
 * that both ends counted it (connections_reused), and that the client kept its port.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>
#include "lib.h"
#include "kselftest_harness.h"

#define PARK_PARAM "/sys/module/rdmasock/parameters/park_ms"
#define ROUNDS 12
/* Less than half the first ring: a ring that grew is not parked (the stream tests grow them). */
#define XFER 6000

FIXTURE(reuse) {
	struct param_saved park;
	struct sockaddr_storage ss;
	socklen_t len;
	int lfd;
};

FIXTURE_VARIANT(reuse) {
	enum carrier carrier;
	int af;
};

CARRIER_VARIANTS(reuse);

FIXTURE_SETUP(reuse)
{
	memset(&self->park, 0, sizeof(self->park));
	ASSERT_EQ(0, param_swap(&self->park, PARK_PARAM, "1000"));
	self->lfd = make_listener(variant->carrier, variant->af, &self->ss, &self->len);
	ASSERT_LE(0, self->lfd);
}

FIXTURE_TEARDOWN(reuse)
{
	if (self->lfd >= 0)
		close(self->lfd);
	param_restore(&self->park);
}

static bool is_rdma(enum carrier c)
{
	return c != CARRIER_TCP;
}

static struct rdmasock_info info_of(int fd)
{
	struct rdmasock_info info = {};
	socklen_t len = sizeof(info);

	getsockopt(fd, SOL_RDMASOCK, RDMASOCK_INFO, &info, &len);
	return info;
}

/* Read @fd to EOF: exactly @n bytes of pattern @seed. */
static int read_to_eof(int fd, size_t n, unsigned int seed)
{
	unsigned char buf[8192];
	size_t got = 0;

	for (;;) {
		ssize_t r = recv(fd, buf, sizeof(buf), 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (!r)
			return got == n ? 0 : -1;
		for (ssize_t i = 0; i < r; i++)
			if (got + i >= n || buf[i] != pattern_byte(got + i, seed))
				return -1;
		got += r;
	}
}

/* Exactly @n bytes of pattern @seed from @fd. */
static int read_bytes(int fd, size_t n, unsigned int seed)
{
	unsigned char buf[XFER];

	if (n > sizeof(buf) || read_all(fd, buf, n))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (buf[i] != pattern_byte(i, seed))
			return -1;
	return 0;
}

/*
 * One connection's life: the client sends XFER bytes and its FIN, the server answers with XFER
 * bytes of its own; @server_first: the server closes, the client reads to EOF and closes; else
 * the client reads the bytes and closes, then the server.  Returns the client's port, and in
 * *@qpn the client's QP number.
 */
static int one_connection(struct __test_metadata *_metadata, FIXTURE_DATA(reuse) *self,
			  const FIXTURE_VARIANT(reuse) *variant, unsigned int seed,
			  bool server_first, unsigned int *qpn)
{
	struct sockaddr_storage name;
	socklen_t nlen = sizeof(name);
	int c, s, port;

	c = carrier_socket(variant->carrier, variant->af, SOCK_STREAM);
	EXPECT_LE(0, c);
	EXPECT_EQ(0, connect(c, (struct sockaddr *)&self->ss, self->len)) TH_LOG("errno %d", errno);
	s = accept(self->lfd, NULL, NULL);
	EXPECT_LE(0, s);
	if (c < 0 || s < 0)
		return -1;
	EXPECT_TRUE(carried_as_expected(variant->carrier, c));
	EXPECT_TRUE(carried_as_expected(variant->carrier, s));
	*qpn = is_rdma(variant->carrier) ? info_of(c).local_qpn : 0;
	EXPECT_EQ(0, getsockname(c, (struct sockaddr *)&name, &nlen));
	port = addr_port(&name);
	EXPECT_EQ(0, write_pattern(c, XFER, seed));
	EXPECT_EQ(0, shutdown(c, SHUT_WR));
	EXPECT_EQ(0, read_to_eof(s, XFER, seed));
	EXPECT_EQ(0, write_pattern(s, XFER, ~seed));
	if (server_first) {
		EXPECT_EQ(0, close(s));
		EXPECT_EQ(0, read_to_eof(c, XFER, ~seed));
		EXPECT_EQ(0, close(c));
		return port;
	}
	EXPECT_EQ(0, read_bytes(c, XFER, ~seed));
	EXPECT_EQ(0, close(c));
	EXPECT_EQ(0, close(s));
	return port;
}

/*
 * Connections one after another, closed by either end first: every one whole, and over rdmasock
 * most on a QP an earlier one parked, each from the port that QP's last connection had (the port
 * goes with the id).  Not every one: a connect() right after close() may come before the closed
 * socket's close_work parked its QP (a work item on a busy CPU), and makes its own.
 */
TEST_F_TIMEOUT(reuse, serial_connections_ride_parked_qps, 300)
{
	long long before = rs_counter("connections_reused");
	unsigned int qpn = 0, qpns[ROUNDS];
	int port, ports[ROUNDS], reused = 0;

	for (int i = 0; i < ROUNDS; i++) {
		port = one_connection(_metadata, self, variant, i + 1, i % 2, &qpn);
		ASSERT_LT(0, port);
		qpns[i] = qpn;
		ports[i] = port;
		for (int k = i - 1; is_rdma(variant->carrier) && k >= 0; k--) {
			if (qpns[k] != qpn)
				continue;
			EXPECT_EQ(ports[k], port) TH_LOG("round %d: QP %u from another port", i, qpn);
			reused++;
			break;
		}
	}
	if (is_rdma(variant->carrier)) {
		/* Most of them, at both ends: the counter says each end took its QP. */
		EXPECT_LE(ROUNDS / 2, reused) TH_LOG("%d of %d reused", reused, ROUNDS - 1);
		EXPECT_LE(before + 2 * reused, rs_counter("connections_reused"));
		EXPECT_GE(before + 2 * (ROUNDS - 1), rs_counter("connections_reused"));
	}
}

/* The listener is gone: connect() is refused, as TCP's, whatever was parked for it. */
TEST_F_TIMEOUT(reuse, closed_listener_refuses, 120)
{
	unsigned int qpn;
	int c;

	ASSERT_LT(0, one_connection(_metadata, self, variant, 7, true, &qpn));
	close(self->lfd);
	self->lfd = -1;
	c = carrier_socket(variant->carrier, variant->af, SOCK_STREAM);
	ASSERT_LE(0, c);
	EXPECT_EQ(-1, connect(c, (struct sockaddr *)&self->ss, self->len));
	EXPECT_EQ(ECONNREFUSED, errno);
	close(c);
}

/* A client bound to a port of its own never takes a parked QP: it makes its own. */
TEST_F_TIMEOUT(reuse, bound_client_makes_its_own, 120)
{
	long long before;
	struct sockaddr_storage me;
	unsigned int qpn, qpn2;
	int c, s;

	ASSERT_LT(0, one_connection(_metadata, self, variant, 9, true, &qpn));
	before = rs_counter("connections_reused");
	c = carrier_socket(variant->carrier, variant->af, SOCK_STREAM);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, bind(c, (struct sockaddr *)&me, host_addr(variant->af, &me, 0)));
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&self->ss, self->len));
	s = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_TRUE(carried_as_expected(variant->carrier, c));
	ASSERT_EQ(0, write_pattern(c, 1000, 3));
	ASSERT_EQ(0, shutdown(c, SHUT_WR));
	ASSERT_EQ(0, read_to_eof(s, 1000, 3));
	if (is_rdma(variant->carrier)) {
		qpn2 = info_of(c).local_qpn;
		EXPECT_NE(qpn, qpn2);
		EXPECT_EQ(before, rs_counter("connections_reused"));
	}
	close(s);
	close(c);
}

/*
 * The server shut its side but keeps its socket open (both FINs done): the client end parked its
 * QP, and the next connect()'s OPEN waits for the server's close, which does not come; the client
 * gives up on it (after 250 ms), resets the OPEN and makes a fresh connection.  As over TCP: the
 * new connection is whole, the old socket sees no error, and accept() gets nothing more.
 */
TEST_F_TIMEOUT(reuse, server_slow_to_close_keeps_its_socket, 120)
{
	int c1, s1, c2, s2, err = -1;
	socklen_t elen = sizeof(err);

	/* Earlier tests' parked QPs gone (park_ms): the one parked below is c1's. */
	for (int i = 0; is_rdma(variant->carrier) && i < 500 && rs_counter("parked") > 0; i++)
		poll_one(self->lfd, POLLIN, 10);
	c1 = carrier_socket(variant->carrier, variant->af, SOCK_STREAM);
	ASSERT_LE(0, c1);
	ASSERT_EQ(0, connect(c1, (struct sockaddr *)&self->ss, self->len));
	s1 = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, s1);
	ASSERT_EQ(0, write_pattern(c1, XFER, 5));
	ASSERT_EQ(0, shutdown(c1, SHUT_WR));
	ASSERT_EQ(0, read_to_eof(s1, XFER, 5));
	ASSERT_EQ(0, write_pattern(s1, XFER, 6));
	ASSERT_EQ(0, shutdown(s1, SHUT_WR));
	ASSERT_EQ(0, read_to_eof(c1, XFER, 6));
	ASSERT_EQ(0, close(c1));
	/* rdmasock: until the client end is parked (its close_work), so that c2 takes it. */
	for (int i = 0; is_rdma(variant->carrier) && i < 200 && rs_counter("parked") < 1; i++)
		poll_one(self->lfd, POLLIN, 10);
	if (is_rdma(variant->carrier))
		ASSERT_LE(1, rs_counter("parked"));
	c2 = carrier_socket(variant->carrier, variant->af, SOCK_STREAM);
	ASSERT_LE(0, c2);
	ASSERT_EQ(0, connect(c2, (struct sockaddr *)&self->ss, self->len)) TH_LOG("errno %d", errno);
	s2 = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, s2);
	EXPECT_TRUE(carried_as_expected(variant->carrier, c2));
	EXPECT_EQ(0, write_pattern(c2, XFER, 7));
	EXPECT_EQ(0, shutdown(c2, SHUT_WR));
	EXPECT_EQ(0, read_to_eof(s2, XFER, 7));
	EXPECT_EQ(0, getsockopt(s1, SOL_SOCKET, SO_ERROR, &err, &elen));
	EXPECT_EQ(0, err);
	EXPECT_EQ(0, poll_one(s1, POLLIN, 0) & POLLERR);
	EXPECT_EQ(0, poll_one(self->lfd, POLLIN, 300) & POLLIN);
	close(s1);
	close(s2);
	close(c2);
}

#define THREADS 4
#define PER_THREAD 15

struct client_run {
	const struct sockaddr_storage *ss;
	socklen_t len;
	enum carrier carrier;
	int af, id;
	int failed;		/* connections that were not whole */
};

/* One client thread: connections one after another, each sending its own bytes and reading the echo. */
static void *client_thread(void *p)
{
	struct client_run *r = p;

	for (int i = 0; i < PER_THREAD; i++) {
		unsigned int seed = r->id * 1000 + i;
		int c = carrier_socket(r->carrier, r->af, SOCK_STREAM);

		if (c < 0 || connect(c, (const struct sockaddr *)r->ss, r->len) ||
		    write_pattern(c, XFER, seed) || shutdown(c, SHUT_WR) ||
		    read_to_eof(c, XFER, seed))
			r->failed++;
		if (c >= 0)
			close(c);
	}
	return NULL;
}

/* The server side: accept, echo each connection to its EOF, close; until @n were served. */
static void *echo_server(void *p)
{
	struct client_run *r = p;

	for (int n = 0; n < THREADS * PER_THREAD; n++) {
		char buf[XFER];
		size_t got = 0;
		int s = accept(r->id, NULL, NULL);

		if (s < 0) {
			r->failed++;
			continue;
		}
		for (;;) {
			ssize_t k = recv(s, buf + got, sizeof(buf) - got, 0);

			if (k <= 0)
				break;
			got += k;
		}
		if (got != XFER || write_all(s, buf, got))
			r->failed++;
		close(s);
	}
	return NULL;
}

/*
 * Clients in several threads connect to one listener over and over at once: they race for the
 * parked QPs (each taken once), the server's parked ends take OPENs while it accepts new ones.
 * Every connection whole; over rdmasock some reused.
 */
TEST_F_TIMEOUT(reuse, concurrent_clients_race_for_parked_qps, 600)
{
	struct client_run runs[THREADS], srv = { .id = self->lfd };
	long long before = rs_counter("connections_reused");
	pthread_t t[THREADS], st;

	ASSERT_EQ(0, pthread_create(&st, NULL, echo_server, &srv));
	for (int i = 0; i < THREADS; i++) {
		runs[i] = (struct client_run){ &self->ss, self->len, variant->carrier, variant->af,
					       i + 1, 0 };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, client_thread, &runs[i]));
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, runs[i].failed) TH_LOG("client %d", i);
	}
	pthread_join(st, NULL);
	EXPECT_EQ(0, srv.failed);
	if (is_rdma(variant->carrier))
		EXPECT_LT(before, rs_counter("connections_reused"));
}

/*
 * A child in a fresh network namespace (made before, so that its making is not in the window):
 * on a byte from @go, the "parked" gauge, both columns in one read.  Exit codes: 0 if this
 * namespace's count is 0 while all namespaces' is not; 2 if all are 0 (the parent's parked QPs
 * were gone before the look, park_ms passed: try again); 1 else.
 */
static int parked_in_new_netns(int ready, int go)
{
	long long mine, all;
	char b;

	if (unshare(CLONE_NEWNET) || write(ready, "r", 1) != 1 || read(go, &b, 1) != 1 ||
	    rs_counter_both("parked", &mine, &all))
		return 1;
	if (all == 0)
		return 2;
	return mine == 0 ? 0 : 1;
}

/*
 * Parked QPs are counted in their namespace (park.c's table is per namespace): a fresh one's
 * gauge is 0 while all namespaces' is not, in one read each.  (Only the count: the fresh
 * namespace has no RDMA device to reach the peer with, so it could not take them anyway.)
 */
TEST_F_TIMEOUT(reuse, parked_qps_stay_in_their_namespace, 120)
{
	int status = 2;
	unsigned int qpn;

	if (!is_rdma(variant->carrier))
		SKIP(return, "TCP parks nothing");
	for (int round = 0; round < 3 && status == 2; round++) {
		long long mine = 0, all = 0;
		int ready[2], go[2];
		pid_t pid;
		char b;

		ASSERT_EQ(0, pipe(ready));
		ASSERT_EQ(0, pipe(go));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid)
			_exit(parked_in_new_netns(ready[1], go[0]));
		ASSERT_EQ(1, read(ready[0], &b, 1));	/* its namespace is made */
		ASSERT_LT(0, one_connection(_metadata, self, variant, 11, round % 2, &qpn));
		for (int i = 0; i < 200 && !rs_counter_both("parked", &mine, &all) && mine < 1; i++)
			poll_one(self->lfd, POLLIN, 10);
		EXPECT_LE(mine, all);
		ASSERT_EQ(1, write(go[1], "g", 1));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		status = WEXITSTATUS(status);
		if (mine < 1)
			status = 2;	/* (none parked, or gone already: park_ms passed) */
		for (int k = 0; k < 2; k++) {
			close(ready[k]);
			close(go[k]);
		}
	}
	EXPECT_EQ(0, status);
}

#include "harness_main.h"
RS_TEST_MAIN
