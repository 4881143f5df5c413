// SPDX-License-Identifier: GPL-2.0
/*
 * Device removal: `rdma link delete` while connections carry data.
 *   With resume (the default), every connection carries on over TCP where its stream stood: four
 *   checksummed streams (two connections, both ways, random write sizes, blocking and epoll
 *   readers) arrive whole and in order, no call fails, and every end is then TCP, reason
 *   rdma_lost; a hundred connections losing their path at once all resume; close() of one whose
 *   resume attempt cannot get through returns at once.
 *   With resume=N, every socket on the device fails promptly with an error (no hang), the
 *   deletion completes, a listener bound to the device's address keeps serving TCP.
 * Each time the device comes back, new connections use RDMA again.  Runs last: it takes rxe0 away
 * and puts it back.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <linux/sockios.h>
#include "lib.h"
#include "kselftest_harness.h"

#define RESUME_PARAM "/sys/module/rdmasock/parameters/resume"
#define TIMEOUT_PARAM "/sys/module/rdmasock/parameters/resume_timeout_ms"
#define PORT_PARAM "/sys/module/rdmasock/parameters/resume_port"

struct flow {
	int fd;
	volatile long long bytes;
	int err;	/* errno of the call that failed, 0 if none */
};

static void *pump_out(void *p)
{
	struct flow *f = p;
	char buf[16384] = { 0 };

	for (;;) {
		ssize_t n = send(f->fd, buf, sizeof(buf), MSG_NOSIGNAL);

		if (n < 0) {
			f->err = errno;
			return NULL;
		}
		f->bytes += n;
	}
}

static void *pump_in(void *p)
{
	struct flow *f = p;
	char buf[16384];

	for (;;) {
		ssize_t n = recv(f->fd, buf, sizeof(buf), 0);

		if (n <= 0) {
			f->err = n < 0 ? errno : 0;
			return NULL;
		}
		f->bytes += n;
	}
}

static int run(const char *cmd)
{
	int st = system(cmd);

	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Both of our GIDs back in rxe0's table (selftests/vm/wait-gids): the IPv6 one comes later. */
static int wait_for_gids(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "%s/selftests/vm/wait-gids", getenv("RDMASOCK_TOP") ? : ".");
	return run(cmd);
}

/*
 * `rdma link delete rxe0`, bounded: a removal still stuck then has its blocked tasks' stacks
 * dumped into the kernel log (sysrq w) and the CM's send counters printed twice, 5 s apart, so
 * that the run says who holds it.
 */
static int delete_device(int secs)
{
	char cmd[64];
	int st;

	snprintf(cmd, sizeof(cmd), "timeout %d rdma link delete rxe0", secs);
	st = run(cmd);
	if (st) {
		write_file("/proc/sysrq-trigger", "w");
		/*
		 * A CM message still retried holds its cm_id, and so the removal: REP retries that
		 * keep rising name an orphaned REP (ib_cm's REP is not cancelled when a notified
		 * connection gets a DREQ before the CM's own work runs; docs/testing.md).
		 */
		for (int i = 0; i < 2; i++) {
			run("cd /sys/class/infiniband_cm/rxe0/1 2>/dev/null && "
			    "grep -H . cm_tx_retries/* cm_tx_msgs/* | sed 's/^/# /' >&2");
			if (!i)
				sleep(5);
		}
	}
	return st;
}

/* One checksummed stream: @total bytes of pattern @seed, written in random sizes, then FIN. */
struct stream {
	int wfd, rfd;
	unsigned int seed;
	size_t total;
	bool epoll;			/* the reader waits in epoll_wait() on a nonblocking socket */
	volatile size_t got;		/* bytes read, all of them checked */
	int werr, rerr;			/* errno of a failed call, or -1 for a wrong byte / early EOF */
	bool eof;
};

static void *stream_write(void *p)
{
	struct stream *st = p;
	static __thread unsigned char buf[65536];
	unsigned int r = st->seed;
	size_t done = 0;

	while (done < st->total) {
		size_t n = 1 + rand_r(&r) % sizeof(buf);

		if (n > st->total - done)
			n = st->total - done;
		for (size_t i = 0; i < n; i++)
			buf[i] = pattern_byte(done + i, st->seed);
		if (write_all(st->wfd, buf, n)) {
			st->werr = errno;
			fprintf(stderr, "# stream %u: write at %zu: %s\n", st->seed, done,
				strerror(errno));
			return NULL;
		}
		done += n;
	}
	if (shutdown(st->wfd, SHUT_WR))
		st->werr = errno;
	return NULL;
}

static void *stream_read(void *p)
{
	struct stream *st = p;
	static __thread unsigned char buf[65536];
	unsigned int r = st->seed * 7;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	int ep = -1;

	if (st->epoll) {
		/* (Nonblocking reads, not a nonblocking fd: the other stream writes on it.) */
		ep = epoll_create1(0);
		epoll_ctl(ep, EPOLL_CTL_ADD, st->rfd, &ev);
	}
	for (;;) {
		size_t want = 1 + rand_r(&r) % sizeof(buf);
		ssize_t n = recv(st->rfd, buf, want, st->epoll ? MSG_DONTWAIT : 0);

		if (n < 0 && st->epoll && errno == EAGAIN) {
			if (epoll_wait(ep, &ev, 1, 60000) != 1) {
				st->rerr = ETIMEDOUT;
				break;
			}
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			st->rerr = errno;
			fprintf(stderr, "# stream %u: read at %zu: %s\n", st->seed, (size_t)st->got,
				strerror(errno));
			break;
		}
		if (!n) {
			st->eof = true;
			if (st->got != st->total) {
				fprintf(stderr, "# stream %u: EOF at %zu\n", st->seed, (size_t)st->got);
				st->rerr = -1;
			}
			break;
		}
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != pattern_byte(st->got + i, st->seed)) {
				fprintf(stderr, "# stream %u: byte %zu wrong\n", st->seed, st->got + i);
				st->rerr = -1;
				break;
			}
		}
		if (st->rerr)
			break;
		st->got += n;
	}
	if (ep >= 0)
		close(ep);
	return NULL;
}

static void device_back(struct __test_metadata *_metadata)
{
	int c, s;
	char buf[5];

	ASSERT_EQ(0, run("rdma link add rxe0 type rxe netdev eth0"));
	ASSERT_EQ(0, wait_for_gids());
	ASSERT_EQ(0, make_pair(CARRIER_RDMASOCK, AF_INET, &c, &s));
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c, RDMASOCK_MODE));
	ASSERT_EQ(5, send(c, "again", 5, 0));
	ASSERT_EQ(5, recv(s, buf, 5, MSG_WAITALL));
	close(c);
	close(s);
}

/*
 * rxe0 there at a test's start, loopback not dropping: a test that failed before it put them
 * back would otherwise fail every test after it too.
 */
static void device_present(struct __test_metadata *_metadata)
{
	run("tc qdisc del dev lo root 2>/dev/null");
	if (!access("/sys/class/infiniband/rxe0", F_OK))
		return;
	TH_LOG("rxe0 missing (a test before failed with it deleted): adding it back");
	ASSERT_EQ(0, run("rdma link add rxe0 type rxe netdev eth0"));
	ASSERT_EQ(0, wait_for_gids());
}

static int getint_so_error(int fd)
{
	int val = 0;
	socklen_t len = sizeof(val);

	return getsockopt(fd, SOL_SOCKET, SO_ERROR, &val, &len) ? -errno : val;
}

/*
 * No resume gets through (loopback drops every packet), and resume_timeout_ms is @ms; *@saved
 * keeps the value to put back (resume_unblocked()).  False, nothing changed, without netem.
 */
static bool resume_blocked(const char *ms, char saved[24])
{
	snprintf(saved, 24, "%ld", read_long(TIMEOUT_PARAM));
	if (write_file(TIMEOUT_PARAM, ms))
		return false;
	if (run("tc qdisc add dev lo root netem loss 100% 2>/dev/null")) {
		write_file(TIMEOUT_PARAM, saved);
		return false;
	}
	return true;
}

static void resume_unblocked(const char *saved)
{
	run("tc qdisc del dev lo root");
	write_file(TIMEOUT_PARAM, saved);
}

/* Every resume counter, when a resume failed: the kind of failure says where to look. */
static void resume_counters(void)
{
	run("grep -E '^(resume|device_removals)' /proc/net/rdmasock_stat | sed 's/^/# /' >&2");
}

TEST(resume_streams_on_device_delete)
{
	long long resumes = rs_counter("resumes"), failures = rs_counter("resume_failures");
	long long replayed = rs_counter("resume_bytes_replayed");
	struct stream st[4];
	pthread_t w[4], r[4];
	int fd[4];

	device_present(_metadata);
	ASSERT_EQ(0, make_pair(CARRIER_RDMASOCK, AF_INET, &fd[0], &fd[1]));
	ASSERT_EQ(0, make_pair(CARRIER_RDMASOCK, AF_INET6, &fd[2], &fd[3]));
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(fd[i], RDMASOCK_MODE));
	for (int i = 0; i < 4; i++) {
		/* 0: c1 -> s1, 1: s1 -> c1, 2: c2 -> s2, 3: s2 -> c2; readers 1 and 3 use epoll. */
		int a = i < 2 ? 0 : 2;

		st[i] = (struct stream){ .wfd = fd[a + (i & 1)], .rfd = fd[a + !(i & 1)],
					 .seed = 11 + i, .total = scaled(96 << 20),
					 .epoll = i & 1 };
		ASSERT_EQ(0, pthread_create(&r[i], NULL, stream_read, &st[i]));
		ASSERT_EQ(0, pthread_create(&w[i], NULL, stream_write, &st[i]));
	}
	/* Every stream under way, most of them far from done: then the device goes. */
	for (int i = 0; i < 400; i++) {
		bool all = true;

		for (int j = 0; j < 4; j++)
			all = all && st[j].got >= (256 << 10);
		if (all)
			break;
		usleep(25000);
	}
	int running = 0;

	for (int j = 0; j < 4; j++) {
		TH_LOG("stream %d: %zu bytes before the delete", j, (size_t)st[j].got);
		running += st[j].got < st[j].total / 2;
	}
	ASSERT_LE(3, running);
	ASSERT_EQ(0, delete_device(60));
	for (int i = 0; i < 4; i++) {
		pthread_join(w[i], NULL);
		pthread_join(r[i], NULL);
		TH_LOG("stream %d: %zu of %zu bytes, writer errno %d, reader %d", i, st[i].got,
		       st[i].total, st[i].werr, st[i].rerr);
		EXPECT_EQ(0, st[i].werr);
		EXPECT_EQ(0, st[i].rerr);
		EXPECT_EQ(st[i].total, st[i].got);
		EXPECT_TRUE(st[i].eof);
	}
	for (int i = 0; i < 4; i++) {
		EXPECT_EQ(RDMASOCK_MODE_TCP, rs_getint(fd[i], RDMASOCK_MODE));
		EXPECT_EQ(RDMASOCK_REASON_RDMA_LOST, rs_getint(fd[i], RDMASOCK_FALLBACK_REASON));
		close(fd[i]);
	}
	EXPECT_EQ(resumes + 4, rs_counter("resumes"));
	EXPECT_EQ(failures, rs_counter("resume_failures"));
	TH_LOG("replayed %lld bytes", rs_counter("resume_bytes_replayed") - replayed);
	device_back(_metadata);
}

/* Half-closed both ways round: the client shut its writes, the server's FIN came with its bytes. */
TEST(half_closed_connections_resume)
{
	char out[1000], buf[1000];
	int c, s, c2, s2;

	device_present(_metadata);
	for (int i = 0; i < (int)sizeof(out); i++)
		out[i] = pattern_byte(i, 3);
	/* 1: the client wrote and shut down; the server read half and writes on. */
	ASSERT_EQ(0, make_pair(CARRIER_RDMASOCK, AF_INET, &c, &s));
	ASSERT_EQ(1000, send(c, out, 1000, 0));
	ASSERT_EQ(0, shutdown(c, SHUT_WR));
	ASSERT_EQ(500, recv(s, buf, 500, MSG_WAITALL));
	ASSERT_EQ(100, send(s, out, 100, 0));
	/* 2: the server wrote and shut down; the client read part of it and writes on. */
	ASSERT_EQ(0, make_pair(CARRIER_RDMASOCK, AF_INET6, &c2, &s2));
	ASSERT_EQ(1000, send(s2, out, 1000, 0));
	ASSERT_EQ(0, shutdown(s2, SHUT_WR));
	ASSERT_EQ(300, recv(c2, buf, 300, MSG_WAITALL));
	ASSERT_EQ(100, send(c2, out, 100, 0));
	ASSERT_EQ(0, delete_device(60));

	ASSERT_EQ(500, recv(s, buf, 500, MSG_WAITALL));
	ASSERT_EQ(0, memcmp(buf, out + 500, 500));
	ASSERT_EQ(0, recv(s, buf, 1, 0));	/* the client's FIN, after its bytes */
	ASSERT_EQ(100, send(s, out + 100, 100, 0));
	ASSERT_EQ(200, recv(c, buf, 200, MSG_WAITALL));
	ASSERT_EQ(0, memcmp(buf, out, 200));
	ASSERT_EQ(-1, send(c, "x", 1, MSG_NOSIGNAL));
	ASSERT_EQ(EPIPE, errno);
	ASSERT_EQ(0, shutdown(s, SHUT_WR));
	ASSERT_EQ(0, recv(c, buf, 1, 0));

	ASSERT_EQ(700, recv(c2, buf, 700, MSG_WAITALL));
	ASSERT_EQ(0, memcmp(buf, out + 300, 700));
	ASSERT_EQ(0, recv(c2, buf, 1, 0));	/* the server's FIN, again after its bytes */
	ASSERT_EQ(100, recv(s2, buf, 100, MSG_WAITALL));
	ASSERT_EQ(0, memcmp(buf, out, 100));
	ASSERT_EQ(5, send(c2, "later", 5, 0));
	ASSERT_EQ(5, recv(s2, buf, 5, MSG_WAITALL));
	for (int i = 0; i < 4; i++) {
		int fd = (int[]){ c, s, c2, s2 }[i];

		EXPECT_EQ(RDMASOCK_MODE_TCP, rs_getint(fd, RDMASOCK_MODE));
		EXPECT_EQ(RDMASOCK_REASON_RDMA_LOST, rs_getint(fd, RDMASOCK_FALLBACK_REASON));
		close(fd);
	}
	device_back(_metadata);
}

enum urg_case { URG_UNREAD, URG_READ_AHEAD, URG_READ_AT_MARK, URG_INLINE };

/*
 * "abc", an urgent "U", "def" over RDMA; the reader took @how much of it when the device went.
 * Over TCP after the resume it finds what TCP would have given it.
 */
static void urgent_across_a_resume(struct __test_metadata *_metadata, enum urg_case how,
				   bool client_reads)
{
	struct pollfd p = { .events = POLLPRI };
	int c, s, one = 1, mark = 0;
	char buf[8] = "";

	device_present(_metadata);
	ASSERT_EQ(0, make_pair(CARRIER_RDMASOCK, AF_INET, &c, &s));
	if (client_reads) {	/* (the server's replay then follows the client's PROOF) */
		int t = c;

		c = s;
		s = t;
	}
	p.fd = s;
	if (how == URG_INLINE)
		ASSERT_EQ(0, setsockopt(s, SOL_SOCKET, SO_OOBINLINE, &one, sizeof(one)));
	ASSERT_EQ(3, send(c, "abc", 3, 0));
	ASSERT_EQ(1, send(c, "U", 1, MSG_OOB));
	ASSERT_EQ(3, send(c, "def", 3, 0));
	/* Over RDMA first: the mark came (POLLPRI). */
	ASSERT_EQ(1, poll(&p, 1, 10000));
	if (how == URG_READ_AT_MARK) {
		ASSERT_EQ(3, recv(s, buf, sizeof(buf), 0));	/* (a read stops at the mark) */
		ASSERT_EQ(0, ioctl(s, SIOCATMARK, &mark));
		ASSERT_EQ(1, mark);
	}
	if (how == URG_READ_AHEAD || how == URG_READ_AT_MARK) {
		ASSERT_EQ(1, recv(s, buf, 1, MSG_OOB));
		ASSERT_EQ('U', buf[0]);
	}
	ASSERT_EQ(0, delete_device(60));
	/* Reads wait through the resume; then TCP's replay gives the rest. */
	if (how != URG_READ_AT_MARK) {
		ASSERT_EQ(3, recv(s, buf, 3, MSG_WAITALL));
		ASSERT_EQ(0, memcmp(buf, "abc", 3));
	}
	if (how == URG_UNREAD || how == URG_INLINE) {
		/* The mark again, where the read stopped. */
		ASSERT_EQ(1, poll(&p, 1, 10000));
		ASSERT_EQ(0, ioctl(s, SIOCATMARK, &mark));
		EXPECT_EQ(1, mark);
	}
	if (how == URG_UNREAD) {
		ASSERT_EQ(1, recv(s, buf, 1, MSG_OOB));
		EXPECT_EQ('U', buf[0]);
	}
	if (how == URG_INLINE) {
		ASSERT_EQ(4, recv(s, buf, 4, MSG_WAITALL));
		EXPECT_EQ(0, memcmp(buf, "Udef", 4));
	} else {
		/*
		 * Once only: "def" there (a peek, which leaves a mark as it is) means a replayed
		 * urgent byte would be too, and MSG_OOB would give it.
		 */
		ASSERT_EQ(3, recv(s, buf, 3, MSG_WAITALL | MSG_PEEK));
		EXPECT_EQ(0, memcmp(buf, "def", 3));
		EXPECT_EQ(-1, recv(s, buf, 1, MSG_OOB | MSG_DONTWAIT));
		EXPECT_EQ(EINVAL, errno);
		ASSERT_EQ(3, recv(s, buf, 3, MSG_WAITALL));
		EXPECT_EQ(0, memcmp(buf, "def", 3));
	}
	/* (After a read that waited through the resume: the attach comes after the removal.) */
	EXPECT_EQ(RDMASOCK_MODE_TCP, rs_getint(s, RDMASOCK_MODE));
	EXPECT_EQ(RDMASOCK_REASON_RDMA_LOST, rs_getint(s, RDMASOCK_FALLBACK_REASON));
	close(c);
	close(s);
	device_back(_metadata);
}

/* Not reached yet when the path went: urgent again over TCP, out of the stream. */
TEST(unread_urgent_byte_stays_urgent_across_a_resume)
{
	urgent_across_a_resume(_metadata, URG_UNREAD, false);
}

/* Taken with MSG_OOB before the reader reached it: not given again, not put in the stream. */
TEST(urgent_byte_read_ahead_is_not_replayed)
{
	urgent_across_a_resume(_metadata, URG_READ_AHEAD, false);
}

/* Taken with MSG_OOB at the mark (the usual loop: read to SIOCATMARK, then MSG_OOB). */
TEST(urgent_byte_read_at_the_mark_is_not_replayed)
{
	urgent_across_a_resume(_metadata, URG_READ_AT_MARK, false);
}

/* SO_OOBINLINE: the byte stays in the stream, at the mark. */
TEST(inline_urgent_byte_stays_in_the_stream_across_a_resume)
{
	urgent_across_a_resume(_metadata, URG_INLINE, false);
}

/* The same with the client reading: the server leaves out what the client's PROOF names. */
TEST(urgent_byte_the_client_read_ahead_is_not_replayed)
{
	urgent_across_a_resume(_metadata, URG_READ_AHEAD, true);
}

TEST(hundred_connections_resume_at_once)
{
	enum { N = 100 };
	long long resumes = rs_counter("resumes");
	int c[N], s[N];
	char buf[8];

	device_present(_metadata);
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(0, make_pair(CARRIER_RDMASOCK, i & 1 ? AF_INET6 : AF_INET, &c[i], &s[i]));
		ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c[i], RDMASOCK_MODE))
			TH_LOG("connection %d: fallback reason %d", i,
			       rs_getint(c[i], RDMASOCK_FALLBACK_REASON));
		/* Something in flight each way, unread when the path goes. */
		ASSERT_EQ(4, send(c[i], "ping", 4, 0));
		ASSERT_EQ(4, send(s[i], "pong", 4, 0));
	}
	ASSERT_EQ(0, delete_device(120));
	for (int i = 0; i < N; i++) {
		ssize_t n = recv(s[i], buf, 4, MSG_WAITALL);

		if (n != 4) {
			TH_LOG("connection %d: %s; the resume counters:", i, strerror(errno));
			resume_counters();
		}
		ASSERT_EQ(4, n);
		ASSERT_EQ(0, memcmp(buf, "ping", 4));
		ASSERT_EQ(4, recv(c[i], buf, 4, MSG_WAITALL));
		ASSERT_EQ(0, memcmp(buf, "pong", 4));
		ASSERT_EQ(5, send(c[i], "after", 5, 0));
		ASSERT_EQ(5, recv(s[i], buf, 5, MSG_WAITALL));
		ASSERT_EQ(0, memcmp(buf, "after", 5));
		ASSERT_EQ(RDMASOCK_MODE_TCP, rs_getint(c[i], RDMASOCK_MODE));
		ASSERT_EQ(RDMASOCK_MODE_TCP, rs_getint(s[i], RDMASOCK_MODE));
	}
	for (int i = 0; i < N; i++) {
		close(c[i]);
		close(s[i]);
	}
	EXPECT_EQ(resumes + 2 * N, rs_counter("resumes"));
	device_back(_metadata);
}

/*
 * close() of a connection whose resume attempt cannot get through (loopback drops every packet:
 * its connect waits in SYN-SENT) returns at once: the attempt is shut, not waited out to its
 * deadline (2 minutes here; the harness ends a test after 30 s).
 */
TEST(close_while_resuming_returns_at_once)
{
	char timeout[24], syn_sent[160];
	int c, s, seen = 0, gone = 0;

	device_present(_metadata);
	ASSERT_LT(0, read_long(TIMEOUT_PARAM));
	snprintf(syn_sent, sizeof(syn_sent),
		 "ss -Htn state syn-sent '( dport = :%ld )' | grep -q .", read_long(PORT_PARAM));
	ASSERT_EQ(0, make_pair(CARRIER_RDMASOCK, AF_INET, &c, &s));
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c, RDMASOCK_MODE));
	if (!resume_blocked("120000", timeout))
		SKIP(return, "no netem");
	if (!delete_device(60)) {
		for (int i = 0; i < 200 && !(seen = !run(syn_sent)); i++)
			usleep(50000);
		close(c);	/* must not wait out the deadline */
		close(s);	/* (the server's end waits for its client: no attempt of its own) */
		/* The attempt's socket went with the close (shut: no SYN is retried). */
		for (int i = 0; i < 200 && !(gone = !!run(syn_sent)); i++)
			usleep(50000);
	}
	resume_unblocked(timeout);
	ASSERT_TRUE(seen) TH_LOG("the client's attempt never showed in SYN-SENT");
	EXPECT_TRUE(gone);
	device_back(_metadata);
}

/*
 * A resume that cannot get through (loopback dropping every packet) ends at resume_timeout_ms in
 * an error at both ends, and no reader takes that for the peer's end of stream, even after a
 * write (the client) or SO_ERROR (the server) took the error first.
 */
TEST(resume_timed_out_reads_an_error_not_eof)
{
	char timeout[24], byte;
	short ev[2];
	int c, s;

	device_present(_metadata);
	ASSERT_EQ(0, make_pair(CARRIER_RDMASOCK, AF_INET, &c, &s));
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c, RDMASOCK_MODE));
	if (!resume_blocked("1500", timeout))
		SKIP(return, "no netem");
	ASSERT_EQ(0, delete_device(60));
	/* Each end's error, within 20 s (its deadline is 1.5 s from the loss). */
	for (int i = 0; i < 2; i++) {
		long long t0 = mono_ms();

		do
			ev[i] = poll_one(i ? s : c, POLLIN, 100);
		while (!(ev[i] & POLLERR) && ms_since(t0) < 20000 && !usleep(20000));
	}
	resume_unblocked(timeout);
	EXPECT_EQ(POLLERR, ev[0] & POLLERR);
	EXPECT_EQ(POLLERR, ev[1] & POLLERR);
	EXPECT_EQ(-1, send(c, "x", 1, MSG_NOSIGNAL));
	EXPECT_EQ(-1, recv(c, &byte, 1, 0)) TH_LOG("the client read EOF");
	EXPECT_NE(0, getint_so_error(s));
	EXPECT_EQ(-1, recv(s, &byte, 1, 0)) TH_LOG("the server read EOF");
	close(c);
	close(s);
	device_back(_metadata);
}

TEST(delete_device_during_transfer)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int lfd, c, s, t, ts;
	struct flow out, in;
	pthread_t to, ti;
	long long removals = rs_counter("device_removals");

	device_present(_metadata);
	/* Without resume: the connections fail, as they did before it existed. */
	ASSERT_EQ(0, write_file(RESUME_PARAM, "N"));
	lfd = make_listener(CARRIER_RDMASOCK, AF_INET, &ss, &len);
	ASSERT_LE(0, lfd);
	c = socket(rs_family_number(), SOCK_STREAM, 0);
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&ss, len));
	s = accept(lfd, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c, RDMASOCK_MODE));

	out = (struct flow){ .fd = c };
	in = (struct flow){ .fd = s };
	ASSERT_EQ(0, pthread_create(&to, NULL, pump_out, &out));
	ASSERT_EQ(0, pthread_create(&ti, NULL, pump_in, &in));
	for (int i = 0; i < 200 && in.bytes < (1 << 20); i++)
		usleep(50000);
	ASSERT_LE(1 << 20, in.bytes);

	/* Synchronous in ib_core: returns once every user of the device let go. */
	ASSERT_EQ(0, delete_device(60));
	pthread_join(to, NULL);
	pthread_join(ti, NULL);
	write_file(RESUME_PARAM, "Y");
	EXPECT_NE(0, out.err);
	EXPECT_NE(0, in.err);
	TH_LOG("writer errno %d, reader errno %d", out.err, in.err);
	EXPECT_EQ(removals + 1, rs_counter("device_removals"));
	close(c);
	close(s);

	/* The listener survives and serves TCP. */
	t = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_EQ(0, connect(t, (struct sockaddr *)&ss, len));
	ts = accept(lfd, NULL, NULL);
	ASSERT_LE(0, ts);
	ASSERT_EQ(RDMASOCK_MODE_TCP, rs_getint(ts, RDMASOCK_MODE));
	close(t);
	close(ts);
	close(lfd);

	/* The device comes back: RDMA again. */
	device_back(_metadata);
}

/* A connection through @lfd (an rdmasock listener at @ss), riding RDMA: *c the client, *s the child. */
static int pair_on(int lfd, struct sockaddr_storage *ss, socklen_t len, int *c, int *s)
{
	*c = socket(rs_family_number(), SOCK_STREAM, 0);
	if (*c < 0 || connect(*c, (struct sockaddr *)ss, len))
		return -1;
	*s = accept(lfd, NULL, NULL);
	if (*s < 0 || rs_getint(*c, RDMASOCK_MODE) != RDMASOCK_MODE_RDMA ||
	    rs_getint(*s, RDMASOCK_MODE) != RDMASOCK_MODE_RDMA)
		return -1;
	return 0;
}

struct blocked_read {
	int fd;
	ssize_t ret;
	int err;
};

static void *read_waitall(void *p)
{
	struct blocked_read *b = p;
	char buf[100];

	b->ret = recv(b->fd, buf, sizeof(buf), MSG_WAITALL);
	b->err = b->ret < 0 ? errno : 0;
	return NULL;
}

static void *read_one(void *p)
{
	struct blocked_read *b = p;
	char c;

	b->ret = recv(b->fd, &c, 1, 0);
	b->err = b->ret < 0 ? errno : 0;
	return NULL;
}

/*
 * Without resume, a connection that loses its RDMA path is lost, and no end of it may read that
 * as the peer's clean end of stream (TCP gives EOF only after the peer's FIN): a truncated file
 * would pass for a whole one.  Every reader gets an error: readers of two connections streaming
 * both ways (each socket's writer may take sk_err first, as in the report this test comes from),
 * a reader blocked on an idle connection, a reader after poll() (POLLIN|POLLERR|POLLHUP, as TCP's
 * after a reset), and readers arriving later, after a write or SO_ERROR took the error.
 */
TEST(lost_connection_never_reads_as_eof)
{
	struct stream st[4];
	pthread_t wt[4], rt[4], bt;
	struct blocked_read br;
	struct sockaddr_storage ss;
	struct pollfd pfd;
	int lfd, c[7], s[7], ready;
	struct blocked_read wa;
	pthread_t wat;
	char buf[1000];
	socklen_t len;
	char byte;

	device_present(_metadata);
	signal(SIGPIPE, SIG_IGN);
	ASSERT_EQ(0, write_file(RESUME_PARAM, "N"));
	lfd = make_listener(CARRIER_RDMASOCK, AF_INET, &ss, &len);
	ASSERT_LE(0, lfd);
	for (int i = 0; i < 7; i++)
		ASSERT_EQ(0, pair_on(lfd, &ss, len, &c[i], &s[i]));
	/* Connection 5: a MSG_WAITALL reader that has part of what it waits for. */
	ASSERT_EQ(10, send(c[5], buf, 10, 0));
	wa = (struct blocked_read){ .fd = s[5] };
	ASSERT_EQ(0, pthread_create(&wat, NULL, read_waitall, &wa));
	/* Connection 6: the peer's bytes and FIN, unread when the path goes (dropped: not EOF). */
	memset(buf, 'y', sizeof(buf));
	ASSERT_EQ(sizeof(buf), send(c[6], buf, sizeof(buf), 0));
	ASSERT_EQ(0, shutdown(c[6], SHUT_WR));
	ASSERT_EQ(POLLIN, poll_one(s[6], POLLIN, 10000));
	/* Connections 0 and 1 stream both ways, endlessly (far more than the test lets run). */
	for (int i = 0; i < 4; i++) {
		st[i] = (struct stream){ .wfd = i & 1 ? s[i / 2] : c[i / 2],
					 .rfd = i & 1 ? c[i / 2] : s[i / 2],
					 .seed = 40 + i, .total = 1ULL << 40, .epoll = i == 3 };
		ASSERT_EQ(0, pthread_create(&wt[i], NULL, stream_write, &st[i]));
		ASSERT_EQ(0, pthread_create(&rt[i], NULL, stream_read, &st[i]));
	}
	/* Connection 2: a reader blocked on it when the path goes. */
	br = (struct blocked_read){ .fd = c[2] };
	ASSERT_EQ(0, pthread_create(&bt, NULL, read_one, &br));
	for (int t = 0; t < 600; t++) {
		ready = 0;
		for (int i = 0; i < 4; i++)
			ready += st[i].got >= (256 << 10);
		if (ready == 4)
			break;
		usleep(50000);
	}
	ASSERT_EQ(4, ready);

	ASSERT_EQ(0, delete_device(60));
	for (int i = 0; i < 4; i++) {
		pthread_join(wt[i], NULL);
		pthread_join(rt[i], NULL);
	}
	pthread_join(bt, NULL);
	pthread_join(wat, NULL);
	write_file(RESUME_PARAM, "Y");
	/* The bytes it had (or its error at once); then the error, never EOF. */
	EXPECT_TRUE(wa.ret == 10 || wa.ret == -1) TH_LOG("MSG_WAITALL read gave %zd", wa.ret);
	if (wa.ret == 10)
		EXPECT_EQ(-1, recv(s[5], &byte, 1, 0)) TH_LOG("after a partial MSG_WAITALL: EOF");
	for (int i = 0; i < 4; i++) {
		EXPECT_FALSE(st[i].eof) TH_LOG("stream %d read EOF at %zu", i, (size_t)st[i].got);
		EXPECT_LT(0, st[i].rerr) TH_LOG("stream %d's reader: %d", i, st[i].rerr);
		EXPECT_LT(0, st[i].werr) TH_LOG("stream %d's writer: %d", i, st[i].werr);
	}
	EXPECT_EQ(-1, br.ret) TH_LOG("a blocked reader got %zd", br.ret);
	EXPECT_NE(0, br.err);
	/* Connection 2's other end, and 3: a reader after poll(), as after TCP's reset. */
	for (int i = 0; i < 2; i++) {
		int fd = i ? c[3] : s[2];

		pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
		ASSERT_EQ(1, poll(&pfd, 1, 10000));
		EXPECT_EQ(POLLIN | POLLERR | POLLHUP, pfd.revents & (POLLIN | POLLERR | POLLHUP));
		EXPECT_EQ(-1, recv(fd, &byte, 1, MSG_DONTWAIT));
		EXPECT_NE(EAGAIN, errno);
	}
	/* Readers arriving after a write (3's other end) or SO_ERROR (4's) took the error. */
	EXPECT_EQ(-1, send(s[3], "x", 1, MSG_NOSIGNAL));
	EXPECT_EQ(-1, recv(s[3], &byte, 1, 0)) TH_LOG("a read after a failed write: EOF");
	EXPECT_NE(0, getint_so_error(c[4]));
	EXPECT_EQ(-1, recv(c[4], &byte, 1, 0)) TH_LOG("a read after SO_ERROR: EOF");
	EXPECT_NE(0, getint_so_error(s[4]));
	EXPECT_EQ(-1, recv(s[4], &byte, 1, MSG_DONTWAIT));
	EXPECT_NE(EAGAIN, errno);
	/* The peer had ended its stream, but its bytes were never read: not a whole stream. */
	EXPECT_NE(0, getint_so_error(s[6]));
	EXPECT_GT(0, recv(s[6], buf, sizeof(buf), MSG_DONTWAIT)) TH_LOG("dropped bytes read as EOF");
	for (int i = 0; i < 7; i++) {
		close(c[i]);
		close(s[i]);
	}
	close(lfd);
	device_back(_metadata);
}

#include "harness_main.h"
RS_TEST_MAIN
