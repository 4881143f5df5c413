// SPDX-License-Identifier: GPL-2.0
/*
 * Failures injected into rdmasock's own steps, one call at a time, through the module's fault
 * points (the fail_point parameter and debugfs's fail_rdmasock/, built only with
 * CONFIG_FAULT_INJECTION_DEBUG_FS: the debug kernel).  On a kernel without them every test is
 * skipped.  (Not fail_function: its kprobe handler draws the kernel's random numbers in int3
 * context, which lockdep reports on 6.1, and lockdep is then off for every later test.)
 *
 * For each step a connection takes (the QP, a ring's pages, the control receive buffer, the device
 * attach, rdma_connect, rdma_accept, the REG_MR posts, READY, the receive posts, and every post to
 * the send queue: data, CONSUMED, FIN, RESIZE, SWITCH), the Nth call of it fails, for N = 0, 1,
 * 2, ... until a connection's whole life no longer makes an Nth call (and a reused QP's rekey,
 * at each end in turn: reopen_client, reopen_server).  Both
 * ends run in this VM, so N counts the client's and the server's calls: each end's failure at
 * each step comes in turn.  Whatever failed:
 *   - connect() and accept() succeed: a set-up that fails goes on over TCP, as a connection to a
 *     host without rdmasock would, with its reason recorded, and accept() returns that
 *     connection, never a dead RDMA child ahead of it; or the server failed once the client's
 *     connect() had succeeded: the client is reset and accept() sees nothing, as TCP's;
 *   - 256 KiB go each way (enough to grow the rings) and arrive whole and in order, then EOF; or,
 *     on a connection both ends had over RDMA, a call reports an error: never a short stream
 *     that ends in EOF, never a wrong byte, never a hang;
 *   - both ends say the same carrier, and a TCP one says why;
 *   - once closed, every socket goes (/proc/net/rdmasock is back where it was).
 * The injection must have fired for N = 0 (each step is one a connection takes), and the last N
 * tried must not have fired (every call of the step was failed once).  KASAN, lockdep and kmemleak
 * watch the failure paths.  To look at one case: FAULT_NTH=N runs that one alone, FAULT_VERBOSE=1
 * has the kernel log the stack of each injected failure.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include "lib.h"
#include "kselftest_harness.h"

#define FF "/sys/kernel/debug/fail_rdmasock/"
#define POINT_PARAM "/sys/module/rdmasock/parameters/fail_point"
#define NEG_PARAM "/sys/module/rdmasock/parameters/neg_cache_ttl_ms"
#define PARK_PARAM "/sys/module/rdmasock/parameters/park_ms"
#define XFER (256 << 10)
#define WAIT_MS 60000
#define MAX_NTH 3000

static int ff_write(const char *file, const char *val)
{
	char path[128];

	snprintf(path, sizeof(path), FF "%s", file);
	return write_file(path, val);
}

static long ff_read(const char *file)
{
	char path[128];

	snprintf(path, sizeof(path), FF "%s", file);
	return read_long(path);
}

/* Fail the @nth call (from 0) of fault point @fn, once (space: the calls let through, plus one). */
static int ff_arm(const char *fn, int nth)
{
	char v[16];

	snprintf(v, sizeof(v), "%d", nth + 1);
	return ff_write("times", "0") || ff_write("probability", "100") ||
	       ff_write("interval", "1") || ff_write("space", v) ||
	       ff_write("verbose", getenv("FAULT_VERBOSE") ? "2" : "0") ||
	       write_file(POINT_PARAM, fn) || ff_write("times", "1") ? -1 : 0;
}

static void ff_disarm(void)
{
	ff_write("times", "0");
	write_file(POINT_PARAM, "none");
}

struct pump {
	int fd;
	unsigned int seed;
	int err;		/* errno of a failed send or shutdown, 0 if none */
};

static void *pump_out(void *p)
{
	struct pump *w = p;

	if (write_pattern(w->fd, XFER, w->seed) || shutdown(w->fd, SHUT_WR))
		w->err = errno;
	return NULL;
}

enum outcome { WHOLE, ERROR, SHORT, WRONG, HUNG };

static const char *const outcome_name[] = { "whole", "error", "short", "wrong byte", "hung" };

/* Read @fd to its EOF, checking every byte against pattern @seed. */
static enum outcome read_check(int fd, unsigned int seed, size_t *got)
{
	unsigned char buf[16384];

	*got = 0;
	for (;;) {
		ssize_t n;

		if (!(poll_one(fd, POLLIN, WAIT_MS) & (POLLIN | POLLHUP | POLLERR)))
			return HUNG;
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0)
			return ERROR;
		if (!n)
			return *got == XFER ? WHOLE : SHORT;
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != pattern_byte(*got + i, seed))
				return WRONG;
		*got += n;
		if (*got > XFER)
			return WRONG;
	}
}

/* One direction: @from writes XFER bytes and shuts its write side, @to reads them. */
static enum outcome one_way(int from, int to, unsigned int seed)
{
	struct pump w = { .fd = from, .seed = seed };
	enum outcome o;
	pthread_t t;
	size_t got;

	if (pthread_create(&t, NULL, pump_out, &w))
		return HUNG;
	o = read_check(to, seed, &got);
	if (o != WHOLE) {
		/* Unblock the writer (its peer may read no more). */
		shutdown(from, SHUT_RDWR);
		shutdown(to, SHUT_RDWR);
	}
	pthread_join(t, NULL);
	/* A short stream is a loss unless a call said why. */
	if (o == SHORT && w.err)
		o = ERROR;
	if (o != WHOLE)
		fprintf(stderr, "#   %s after %zu bytes (writer errno %d)\n", outcome_name[o], got,
			w.err);
	return o;
}

static int wait_sockets(int want)
{
	long long start = mono_ms();

	while (proc_sockets() > want) {
		if (ms_since(start) > WAIT_MS)
			return -1;
		usleep(20000);
	}
	return 0;
}

/* WHOLE: @lfd has a connection to accept; ERROR: the client @c was reset first; HUNG: neither. */
static enum outcome wait_accept(int lfd, int c)
{
	struct pollfd p[2] = { { .fd = lfd, .events = POLLIN }, { .fd = c, .events = 0 } };
	long long start = mono_ms();

	while (ms_since(start) < WAIT_MS) {
		int n = poll(p, 2, WAIT_MS - ms_since(start));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return HUNG;
		if (p[0].revents & POLLIN)
			return WHOLE;
		if (p[1].revents & (POLLERR | POLLHUP))
			return ERROR;
	}
	return HUNG;
}

FIXTURE(fault) {
	struct param_saved neg;
	struct param_saved park;	/* reopen_fails() sets park_ms */
	int base;		/* this namespace's rdmasock sockets before the test */
};

FIXTURE_SETUP(fault)
{
	memset(&self->neg, 0, sizeof(self->neg));
	memset(&self->park, 0, sizeof(self->park));
	self->base = -1;
	if (access(FF "times", W_OK) || access(POINT_PARAM, W_OK))
		return;		/* every_call() skips */
	/* Every case must try RDMA: no destination is remembered as TCP-only. */
	ASSERT_EQ(0, param_swap(&self->neg, NEG_PARAM, "0"));
	self->base = proc_sockets();
	ASSERT_LE(0, self->base);
}

FIXTURE_TEARDOWN(fault)
{
	ff_disarm();
	param_restore(&self->neg);
	param_restore(&self->park);
}

/*
 * One connection's life with the @nth call of @fn failing: returns whether the injection fired,
 * or -1 when the connection misbehaved (each assertion says how).
 */
static int one_case(struct __test_metadata *_metadata, int base, const char *fn, int nth)
{
	struct sockaddr_storage ss;
	int lfd, c, s, cm, sm, cr;
	enum outcome o;
	socklen_t len;
	int fired, at_close, left;

	lfd = make_listener(CARRIER_RDMASOCK, AF_INET, &ss, &len);
	if (lfd < 0) {
		fprintf(stderr, "#   %s #%d: listener: %s\n", fn, nth, strerror(errno));
		return -1;
	}
	if (ff_arm(fn, nth)) {
		fprintf(stderr, "#   %s #%d: arming: %s\n", fn, nth, strerror(errno));
		close(lfd);
		return -1;
	}
	c = carrier_socket(CARRIER_RDMASOCK, AF_INET, SOCK_STREAM);
	if (c < 0 || connect(c, (struct sockaddr *)&ss, len)) {
		fprintf(stderr, "#   %s #%d: connect: %s\n", fn, nth, strerror(errno));
		if (c >= 0)
			close(c);
		close(lfd);
		return -1;
	}
	/*
	 * The listener's queue, or the client's reset: a server that failed after the client's
	 * connect() succeeded resets the client and never queues the child, as a TCP listener
	 * that drops a handshake's child (the client then sees a reset, accept() nothing).
	 */
	o = wait_accept(lfd, c);
	if (o == HUNG) {
		fprintf(stderr, "#   %s #%d: accept() never ready, the client not reset\n", fn, nth);
		close(c);
		close(lfd);
		return -1;
	}
	s = o == WHOLE ? accept(lfd, NULL, NULL) : -1;
	close(lfd);
	if (o == WHOLE && s < 0) {
		fprintf(stderr, "#   %s #%d: accept: %s\n", fn, nth, strerror(errno));
		close(c);
		return -1;
	}
	if (o == WHOLE)
		o = one_way(c, s, nth + 1);
	if (o == WHOLE)
		o = one_way(s, c, ~nth);
	cm = rs_getint(c, RDMASOCK_MODE);
	sm = s < 0 ? RDMASOCK_MODE_RDMA : rs_getint(s, RDMASOCK_MODE);
	cr = rs_getint(c, RDMASOCK_FALLBACK_REASON);
	/* Armed through close() too: its FIN or RESET, the orphan's probes, the last receives. */
	fired = ff_read("times") == 0;
	close(c);
	if (s >= 0)
		close(s);
	left = wait_sockets(base);
	at_close = !fired && ff_read("times") == 0;
	ff_disarm();
	if (o != WHOLE && o != ERROR) {
		fprintf(stderr, "#   %s #%d: %s\n", fn, nth, outcome_name[o]);
		return -1;
	}
	if (!fired && o != WHOLE) {
		fprintf(stderr, "#   %s #%d: failed with nothing injected\n", fn, nth);
		return -1;
	}
	/*
	 * Both ends on one carrier, always: a client that went on over TCP while the server's
	 * accept() returned a dead RDMA child (or the other way round) fails here.  An error only
	 * on a connection both ends had over RDMA (a reset, as TCP's after its handshake); a
	 * failed set-up goes on over TCP, whole, and says why.
	 */
	if (cm != sm || (cm != RDMASOCK_MODE_RDMA && cm != RDMASOCK_MODE_TCP) ||
	    (o == ERROR && cm != RDMASOCK_MODE_RDMA) ||
	    (cm == RDMASOCK_MODE_TCP && cr == RDMASOCK_REASON_NONE)) {
		fprintf(stderr, "#   %s #%d: %s, client mode %d (reason %d), server mode %d\n", fn,
			nth, outcome_name[o], cm, cr, sm);
		return -1;
	}
	if (!fired && cm != RDMASOCK_MODE_RDMA) {
		fprintf(stderr, "#   %s #%d: not on RDMA with nothing injected\n", fn, nth);
		return -1;
	}
	if (left) {
		fprintf(stderr, "#   %s #%d: sockets left after close: %d (before: %d)\n", fn, nth,
			proc_sockets(), base);
		return -1;
	}
	if (fired || at_close)
		fprintf(stderr, "#   %s #%d: %s%s, client %s (reason %d)\n", fn, nth,
			at_close ? "at close, " : "", outcome_name[o],
			cm == RDMASOCK_MODE_RDMA ? "rdma" : "tcp", cr);
	return fired || at_close;
}

/*
 * Every call of @fn in a connection's life, failed in turn: N = 0, 1, ..., each step once, up to
 * 16, then growing by half (a receive is posted per message: hundreds a connection) until N is
 * past the connection's last call; then each of the 8 calls before that N.
 */
static void every_call(struct __test_metadata *_metadata, int base, const char *fn)
{
	int nth = 0, fired, cases = 0, last = 0, k;

	if (base < 0)
		SKIP(return, "no fault points (not the debug kernel)");
	if (getenv("FAULT_NTH")) {	/* one case alone, to look at it */
		nth = atoi(getenv("FAULT_NTH"));
		ASSERT_LE(0, one_case(_metadata, base, fn, nth));
		return;
	}
	for (;;) {
		fired = one_case(_metadata, base, fn, nth);
		ASSERT_LE(0, fired) TH_LOG("%s: call #%d failed", fn, nth);
		if (!nth)
			ASSERT_EQ(1, fired) TH_LOG("%s: a connection never calls it", fn);
		if (!fired)
			break;
		cases++;
		last = nth;
		ASSERT_GT(MAX_NTH, nth) TH_LOG("%s: still called at #%d", fn, nth);
		nth = nth < 16 ? nth + 1 : nth + nth / 2;
	}
	/*
	 * The last calls of a connection's life, each: those of its close (the FIN, the last
	 * receives, an orphan's probe), which the steps by half skip.
	 */
	for (k = nth - 1; k > last && k >= nth - 8; k--) {
		fired = one_case(_metadata, base, fn, k);
		ASSERT_LE(0, fired) TH_LOG("%s: call #%d failed", fn, k);
		cases += fired;
	}
	TH_LOG("%s: %d failures injected (calls #0-#%d)", fn, cases, nth - 1);
}

/*
 * The keepalive probe of an idle connection refused by the QP (the only post such a connection
 * makes): the path is lost, reported at once rather than left to a completion that never comes.
 * The connection resumes over TCP and carries both streams whole.  (The persist timer's probe
 * takes the same path in keepalive.c.)
 */
static void probe_refused(struct __test_metadata *_metadata, int base)
{
	int c, s, one = 1, idle = 1;
	long long start;

	if (base < 0)
		SKIP(return, "no fault points (not the debug kernel)");
	ASSERT_EQ(0, make_pair(CARRIER_RDMASOCK, AF_INET, &c, &s));
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c, RDMASOCK_MODE));
	ASSERT_EQ(0, setsockopt(c, SOL_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)));
	ASSERT_EQ(0, setsockopt(c, SOL_TCP, TCP_KEEPINTVL, &idle, sizeof(idle)));
	ASSERT_EQ(0, ff_arm("post_send", 0));
	ASSERT_EQ(0, setsockopt(c, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)));
	start = mono_ms();
	while (ff_read("times") != 0 && ms_since(start) < WAIT_MS)
		usleep(20000);
	ASSERT_EQ(0, ff_read("times")) TH_LOG("no probe was posted");
	ff_disarm();
	EXPECT_EQ(WHOLE, one_way(c, s, 7));
	EXPECT_EQ(WHOLE, one_way(s, c, 8));
	EXPECT_EQ(RDMASOCK_REASON_RDMA_LOST, rs_getint(c, RDMASOCK_FALLBACK_REASON));
	EXPECT_EQ(RDMASOCK_MODE_TCP, rs_getint(c, RDMASOCK_MODE));
	close(c);
	close(s);
	EXPECT_EQ(0, wait_sockets(base));
}

/* A connection closed in order at both ends, so that its QP parks at both: 0 once both are. */
static int park_one(struct __test_metadata *_metadata, int lfd, struct sockaddr_storage *ss,
		    socklen_t len)
{
	int c, s;
	char ch;

	/* Earlier parked QPs gone (park_ms), so that the count below is this one's. */
	for (int i = 0; i < 300 && rs_counter("parked") > 0; i++)
		usleep(10000);
	if (rs_counter("parked"))
		return -1;
	c = carrier_socket(CARRIER_RDMASOCK, AF_INET, SOCK_STREAM);
	if (c < 0 || connect(c, (struct sockaddr *)ss, len))
		return -1;
	s = accept(lfd, NULL, NULL);
	if (s < 0 || send(c, "x", 1, 0) != 1 || recv(s, &ch, 1, 0) != 1)
		return -1;
	close(s);
	if (recv(c, &ch, 1, 0))
		return -1;
	close(c);
	for (int i = 0; i < 300 && rs_counter("parked") < 2; i++)
		usleep(10000);
	return rs_counter("parked") == 2 ? 0 : -1;
}

/*
 * A reused QP's rekey failing between its two WRs (the ring's old key invalidated, no new one
 * registered): the @nth call, #0 the client's (before its OPEN), #1 the server's (before its
 * ACCEPT).  The connection is made all the same, over RDMA on a fresh QP: the client's attempt
 * fails and it starts a CM one; the server's child goes with the QP, which the client takes as a
 * refusal.  It carries both streams whole, and every socket goes after.  A connect() may find
 * the parked QP not settled yet (its last FIN's completion; it waits 20 ms) and make a fresh one:
 * then nothing was tried, and the case is made again, up to five times.
 */
static void reopen_fails(struct __test_metadata *_metadata, FIXTURE_DATA(fault) *self, int nth)
{
	struct sockaddr_storage ss;
	long long reused;
	int lfd, c, s, tries;
	bool fired = false;
	socklen_t len;

	if (self->base < 0)
		SKIP(return, "no fault points (not the debug kernel)");
	ASSERT_EQ(0, param_swap(&self->park, PARK_PARAM, "1000"));
	lfd = make_listener(CARRIER_RDMASOCK, AF_INET, &ss, &len);
	ASSERT_LE(0, lfd);
	for (tries = 0; tries < 5 && !fired; tries++) {
		ASSERT_EQ(0, park_one(_metadata, lfd, &ss, len));
		reused = rs_counter("connections_reused");
		ASSERT_EQ(0, ff_arm("post_reopen", nth));
		c = carrier_socket(CARRIER_RDMASOCK, AF_INET, SOCK_STREAM);
		ASSERT_EQ(0, connect(c, (struct sockaddr *)&ss, len));
		ASSERT_EQ(WHOLE, wait_accept(lfd, c));
		s = accept(lfd, NULL, NULL);
		ASSERT_LE(0, s);
		fired = ff_read("times") == 0;
		ff_disarm();
		/* The client's OPEN counts once it is out: only the server's failure leaves one. */
		if (fired)
			EXPECT_EQ(reused + nth, rs_counter("connections_reused"));
		EXPECT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c, RDMASOCK_MODE));
		EXPECT_EQ(RDMASOCK_MODE_RDMA, rs_getint(s, RDMASOCK_MODE));
		EXPECT_EQ(WHOLE, one_way(c, s, 1));
		EXPECT_EQ(WHOLE, one_way(s, c, 2));
		close(c);
		close(s);
	}
	close(lfd);
	EXPECT_TRUE(fired) TH_LOG("the rekey was never tried in %d connections", tries);
	EXPECT_EQ(0, wait_sockets(self->base));
}

TEST_F_TIMEOUT(fault, qp_create, 900) { every_call(_metadata, self->base, "qp_create"); }
TEST_F_TIMEOUT(fault, ring_pages, 900) { every_call(_metadata, self->base, "ring_pages"); }
TEST_F_TIMEOUT(fault, resize_buf_alloc, 900)
{
	every_call(_metadata, self->base, "resize_buf");
}
TEST_F_TIMEOUT(fault, dev_attach, 900) { every_call(_metadata, self->base, "dev_attach"); }
TEST_F_TIMEOUT(fault, rdma_connect, 900) { every_call(_metadata, self->base, "rdma_connect"); }
TEST_F_TIMEOUT(fault, rdma_accept, 900) { every_call(_metadata, self->base, "rdma_accept"); }
TEST_F_TIMEOUT(fault, post_reg_ring, 900)
{
	every_call(_metadata, self->base, "post_reg_ring");
}
TEST_F_TIMEOUT(fault, post_ready, 900) { every_call(_metadata, self->base, "post_ready"); }
TEST_F_TIMEOUT(fault, post_recvs, 900) { every_call(_metadata, self->base, "post_recvs"); }
/* Every send-queue post of a connection's life: set-up, data, CONSUMED, FIN, RESIZE, SWITCH. */
TEST_F_TIMEOUT(fault, post_send, 900) { every_call(_metadata, self->base, "post_send"); }
TEST_F_TIMEOUT(fault, keepalive_probe, 120) { probe_refused(_metadata, self->base); }
TEST_F_TIMEOUT(fault, reopen_client, 300) { reopen_fails(_metadata, self, 0); }
TEST_F_TIMEOUT(fault, reopen_server, 300) { reopen_fails(_metadata, self, 1); }

#include "harness_main.h"
RS_TEST_MAIN
