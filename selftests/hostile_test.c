// SPDX-License-Identifier: GPL-2.0
/*
 * A hostile peer (hostile_peer, user-space verbs) against a kernel rdmasock listener.  Malformed
 * hellos are rejected; protocol violations reset that one connection (EPROTO, counted) and nothing
 * else; a peer that vanishes mid-transfer gives ECONNRESET.  The listener keeps serving afterwards
 * and the VM runner fails the run on any kernel warning.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <grp.h>
#include <sys/wait.h>
#include <netinet/tcp.h>
#include "lib.h"
#include "kselftest_harness.h"

static pid_t run_peer(const struct sockaddr_storage *ss, const char *what)
{
	char addr[INET_ADDRSTRLEN], port[8], tool[512];
	pid_t pid;

	inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, addr, sizeof(addr));
	snprintf(port, sizeof(port), "%u", addr_port(ss));
	snprintf(tool, sizeof(tool), "%s/build/selftests/hostile_peer", getenv("RDMASOCK_TOP"));
	pid = fork();
	if (!pid) {
		execl(tool, "hostile_peer", addr, port, what, (char *)NULL);
		_exit(4);
	}
	return pid;
}

/*
 * hostile_peer with @mode (--listen, --half-open) and @arg on @ss, its output (and with @nobody,
 * run as the unprivileged user nobody, its errors too) on a pipe: the pipe, or NULL (*pid is -1
 * when there is no child).  It dies with the test (it would hold the runner's output pipe),
 * however the test ends.
 */
static FILE *peer_exec(const struct sockaddr_storage *ss, const char *mode, const char *arg,
		       bool nobody, pid_t *pid)
{
	char addr[INET_ADDRSTRLEN], port[8], tool[512];
	int p[2];

	*pid = -1;
	inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, addr, sizeof(addr));
	snprintf(port, sizeof(port), "%u", addr_port(ss));
	snprintf(tool, sizeof(tool), "%s/build/selftests/hostile_peer", getenv("RDMASOCK_TOP"));
	if (pipe(p))
		return NULL;
	*pid = fork();
	if (!*pid) {
		dup2(p[1], 1);
		if (nobody)
			dup2(p[1], 2);
		close(p[0]);
		if (nobody && (setgroups(0, NULL) || setgid(65534) || setuid(65534)))
			_exit(5);
		prctl(PR_SET_PDEATHSIG, SIGKILL);	/* (after: a change of credentials clears it) */
		execl(tool, "hostile_peer", mode, addr, port, arg, (char *)NULL);
		_exit(4);
	}
	close(p[1]);
	return fdopen(p[0], "r");
}

/*
 * hostile_peer with @mode and @arg on @ss (peer_exec()): returns 0 once its first line is @want
 * (its pid in *pid), or -1.
 */
static int spawn_peer_out(const struct sockaddr_storage *ss, const char *mode, const char *arg,
			  const char *want, pid_t *pid, FILE **out)
{
	FILE *f = peer_exec(ss, mode, arg, false, pid);
	char line[64] = "";

	if (!want && f) {	/* the caller reads what it says */
		*out = f;
		return 0;
	}
	if (!f || !fgets(line, sizeof(line), f) || strcmp(line, want)) {
		fprintf(stderr, "# hostile_peer %s %s said \"%s\"\n", mode, arg, line);
		if (*pid > 0) {
			kill(*pid, SIGKILL);
			waitpid(*pid, NULL, 0);
		}
		if (f)
			fclose(f);
		return -1;
	}
	/* Left open: the peer may print more (for @out), and must not get SIGPIPE for it. */
	if (out)
		*out = f;
	return 0;
}

static int spawn_peer(const struct sockaddr_storage *ss, const char *mode, const char *arg,
		      const char *want, pid_t *pid)
{
	return spawn_peer_out(ss, mode, arg, want, pid, NULL);
}

/* hostile_peer --listen on @ss: returns once it listens (its pid in *pid), or -1. */
static int run_server(const struct sockaddr_storage *ss, const char *what, pid_t *pid)
{
	return spawn_peer(ss, "--listen", what, "listening\n", pid);
}

/* The module's door: the rdma_cm port every rdmasock connection request goes to. */
static unsigned short door_port(void)
{
	FILE *f = fopen("/sys/module/rdmasock/parameters/rdma_port", "r");
	unsigned int port = 0;

	if (f) {
		if (fscanf(f, "%u", &port) != 1)
			port = 0;
		fclose(f);
	}
	return port;
}

/*
 * hostile_peer --listen as the server of a kernel client, which sends its request to the door's
 * port of the host it connects to: it listens there.  The module's own door is open while an
 * rdmasock listener is, so the caller has closed its listeners first.
 */
static int run_door_server(const char *what, pid_t *pid)
{
	struct sockaddr_storage door;

	host_addr(AF_INET, &door, door_port());
	return run_server(&door, what, pid);
}

/* Sockets in /proc/net/rdmasock on local port @port in state @st (as it shows it: "03"). */
static int table_count(unsigned short port, const char *st)
{
	char line[512], local[80], remote[80], state[8];
	FILE *f = fopen("/proc/net/rdmasock", "r");
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *colon;

		if (sscanf(line, "%*s %79s %79s %7s", local, remote, state) != 3)
			continue;
		colon = strrchr(local, ':');
		n += colon && atoi(colon + 1) == port && !strcmp(state, st);
	}
	fclose(f);
	return n;
}

static long pinned(void)
{
	return rs_counter("ring_pages_pinned");
}

/*
 * A listener on the host address with @backlog, on port @port (0: TCP's choice, which a stopped
 * listener gives back, as TCP's; a port of the user's stays bound).
 */
static int small_listener(struct sockaddr_storage *ss, socklen_t *len, unsigned short port,
			  int backlog)
{
	int lfd = socket(rs_family_number(), SOCK_STREAM, 0), one = 1;

	*len = host_addr(AF_INET, ss, port);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)ss, *len) || listen(lfd, backlog) ||
	    getsockname(lfd, (struct sockaddr *)ss, len)) {
		close(lfd);
		return -1;
	}
	return lfd;
}

/*
 * A port on the host address that nobody holds now, below the ephemeral range (a port there is
 * the user's own choice, which rdmasock defends in rdma_cm's port space too).
 */
static void free_port(struct sockaddr_storage *ss, socklen_t *len)
{
	for (int i = 0; i < 100; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

		*len = host_addr(AF_INET, ss, 20000 + (getpid() * 7 + i * 131) % 10000);
		ok = fd >= 0 && !bind(fd, (struct sockaddr *)ss, *len);
		close(fd);
		if (ok)
			return;
	}
	memset(ss, 0, sizeof(*ss));
}

static int peer_status(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

FIXTURE(hostile) {
	int lfd;
	struct sockaddr_storage ss;
	socklen_t len;
};

FIXTURE_VARIANT(hostile) {
	const char *what;
	bool rejected;		/* the hello must be refused */
	const char *counter;	/* rejected: the counter that says why (else a protocol error) */
	int err;		/* else: the errno the accepted socket must report */
	bool counted;		/* a peer protocol violation */
	bool read_after;	/* read only once the peer is done (else a fast reader keeps up) */
};

#define REJECT(name) FIXTURE_VARIANT_ADD(hostile, name) { .what = #name, .rejected = true }
#define VIOLATION(name) \
	FIXTURE_VARIANT_ADD(hostile, name) { .what = #name, .err = EPROTO, .counted = true }
REJECT(hello_short);
REJECT(hello_magic);
REJECT(hello_version);
REJECT(hello_size);
REJECT(hello_flags);
REJECT(hello_port0);
REJECT(hello_reserved);
/* A port TCP gives no rdmasock listener: sent to TCP, as a client of a plain TCP port. */
FIXTURE_VARIANT_ADD(hostile, hello_other_port) {
	.what = "hello_other_port", .rejected = true, .counter = "door_to_tcp"
};
VIOLATION(data_overflow);
VIOLATION(data_zero);
VIOLATION(consumed_ahead);
VIOLATION(bad_type);
VIOLATION(bad_ctrl);
VIOLATION(double_fin);
FIXTURE_VARIANT_ADD(hostile, flood) {
	.what = "flood", .err = EPROTO, .counted = true, .read_after = true
};
VIOLATION(consumed_payload);
VIOLATION(switch_unasked);
VIOLATION(resize_small);
VIOLATION(resize_twice);
FIXTURE_VARIANT_ADD(hostile, resize_long) { .what = "resize_long", .err = ECONNRESET };
FIXTURE_VARIANT_ADD(hostile, write_outside) { .what = "write_outside", .err = ECONNRESET };
FIXTURE_VARIANT_ADD(hostile, disconnect) { .what = "disconnect", .err = ECONNRESET };

FIXTURE_SETUP(hostile)
{
	self->lfd = make_listener(CARRIER_RDMASOCK, AF_INET, &self->ss, &self->len);
	ASSERT_LE(0, self->lfd);
}

FIXTURE_TEARDOWN(hostile)
{
	close(self->lfd);
}

TEST_F_TIMEOUT(hostile, kernel_survives, 90)
{
	const char *why = variant->counter ? variant->counter : "peer_protocol_errors";
	long long violations = rs_counter("peer_protocol_errors"), refused = rs_counter(why);
	pid_t pid = run_peer(&self->ss, variant->what);
	int c, s;
	char buf[64];

	if (variant->rejected) {
		ASSERT_EQ(0, peer_status(pid));
		ASSERT_EQ(0, poll_one(self->lfd, POLLIN, 0));
		ASSERT_EQ(refused + 1, rs_counter(why));
	} else {
		int ready = 0, status = -1, st;

		/*
		 * The child is accepted and shows the error.  Or the violation beat the RTU's
		 * processing (the CM's event and the QP's messages travel apart): the child failed
		 * while still pending and left the backlog, as a reset TCP request socket does.
		 */
		for (int i = 0; i < 400 && !ready && status < 0; i++) {
			ready = poll_one(self->lfd, POLLIN, 50) & POLLIN;
			if (!ready && waitpid(pid, &st, WNOHANG) == pid)
				status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
		}
		if (!ready && status >= 0)
			ready = poll_one(self->lfd, POLLIN, 2000) & POLLIN;
		if (!ready) {
			ASSERT_EQ(0, status);
			if (variant->counted)
				ASSERT_LT(violations, rs_counter("peer_protocol_errors"));
			TH_LOG("failed while pending: never accepted (its violation beat the RTU)");
			goto honest;
		}
		s = accept(self->lfd, NULL, NULL);
		ASSERT_LE(0, s);
		ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(s, RDMASOCK_MODE));
		if (variant->read_after) {
			if (status < 0)
				status = peer_status(pid);
			ASSERT_EQ(0, status);
		}
		/*
		 * Whatever valid bytes (or FIN) came before the violation may be read; then the
		 * error, within bounds.
		 */
		static char big[1 << 16];
		bool took = false;
		ssize_t n = 0;

		for (int i = 0; i < 1000; i++) {
			short ev = poll_one(s, POLLIN, 20000);

			ASSERT_NE(0, ev);
			/*
			 * Once the error is pending, a write takes it first: the reader must still
			 * get it, never EOF (but after a FIN read to its end: the stream was whole).
			 */
			if ((ev & POLLERR) && !took && strcmp(variant->what, "double_fin")) {
				ASSERT_EQ(-1, send(s, "x", 1, MSG_NOSIGNAL));
				took = true;
			}
			n = recv(s, big, sizeof(big), 0);
			if (n < 0)
				break;
			if (n == 0)
				usleep(10000);	/* EOF first (double_fin): the reset follows */
		}
		ASSERT_EQ(-1, n);
		ASSERT_EQ(variant->err, errno);
		if (!variant->read_after) {
			if (status < 0)
				status = peer_status(pid);
			ASSERT_EQ(0, status);
		}
		if (variant->counted)
			ASSERT_LT(violations, rs_counter("peer_protocol_errors"));
		ASSERT_EQ(-1, send(s, "x", 1, MSG_NOSIGNAL));
		close(s);
	}
honest:
	/* The listener still serves an honest client over RDMA. */
	c = socket(rs_family_number(), SOCK_STREAM, 0);
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&self->ss, self->len));
	s = accept(self->lfd, NULL, NULL);
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c, RDMASOCK_MODE));
	ASSERT_EQ(2, send(c, "ok", 2, 0));
	ASSERT_EQ(2, recv(s, buf, 2, MSG_WAITALL));
	close(c);
	close(s);
}

/* Cases run once, each with its own honest listener beside the hostile peer. */
FIXTURE(once) {
	int lfd;
	struct sockaddr_storage ss;
	socklen_t len;
	struct param_saved param;	/* a module parameter a test changed */
};

FIXTURE_SETUP(once)
{
	self->lfd = make_listener(CARRIER_RDMASOCK, AF_INET, &self->ss, &self->len);
	ASSERT_LE(0, self->lfd);
}

FIXTURE_TEARDOWN(once)
{
	close(self->lfd);
	EXPECT_EQ(0, param_restore(&self->param));
}

/*
 * Children that fail while still waiting for the client's RTU (the client broke the protocol at
 * once) leave the backlog: after many of them an honest client still gets RDMA, not BUSY.
 */
TEST_F_TIMEOUT(once, failing_pending_children_free_their_backlog_slots, 300)
{
	long long busy = rs_counter("fallback_peer_busy");
	struct sockaddr_storage ss;
	socklen_t len;
	int lfd, c, s = -1, one = 1;

	lfd = socket(rs_family_number(), SOCK_STREAM, 0);
	len = host_addr(AF_INET, &ss, 0);
	ASSERT_EQ(0, setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	ASSERT_EQ(0, bind(lfd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(0, listen(lfd, 1));
	ASSERT_EQ(0, getsockname(lfd, (struct sockaddr *)&ss, &len));
	for (int i = 0; i < 6; i++) {
		pid_t pid = run_peer(&ss, i % 2 ? "early_bad_ctrl" : "data_before_ready");
		int a;

		ASSERT_EQ(0, peer_status(pid));
		/* A child that was established first is accepted, and shows the reset. */
		while (poll_one(lfd, POLLIN, 0) && (a = accept(lfd, NULL, NULL)) >= 0)
			close(a);
	}
	/* The honest client: accept every connection while it connects, keep its own. */
	c = socket(rs_family_number(), SOCK_STREAM | SOCK_NONBLOCK, 0);
	ASSERT_LE(0, c);
	ASSERT_EQ(-1, connect(c, (struct sockaddr *)&ss, len));
	ASSERT_EQ(EINPROGRESS, errno);
	for (int i = 0; i < 600 && !(poll_one(c, POLLOUT, 0) & POLLOUT); i++) {
		if (poll_one(lfd, POLLIN, 50)) {
			if (s >= 0)
				close(s);
			s = accept(lfd, NULL, NULL);
		}
	}
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c, RDMASOCK_MODE));
	ASSERT_EQ(busy, rs_counter("fallback_peer_busy"));
	if (s < 0 || rs_getint(s, RDMASOCK_MODE) != RDMASOCK_MODE_RDMA) {
		if (s >= 0)
			close(s);
		ASSERT_EQ(POLLIN, poll_one(lfd, POLLIN, 10000));
		s = accept(lfd, NULL, NULL);
	}
	ASSERT_LE(0, s);
	ASSERT_EQ(2, send(c, "ok", 2, MSG_NOSIGNAL));
	ASSERT_EQ(0, poll_one(c, POLLERR, 0));
	close(c);
	close(s);
	close(lfd);
}

/*
 * A server that writes before its READY (and never sends it): the kernel client refuses it
 * (EPROTO), nothing of it can be read, and the same socket then connects to an honest server.
 * (Or its WRITE comes before the client's ring MR is registered, the READY's very reason: rxe
 * answers it with a remote access error, which can fail the client's QP as well, and the client's
 * connect fails with ECONNRESET instead.  Refused either way; seen once on the debug kernel.)
 */
TEST_F_TIMEOUT(once, kernel_client_refuses_data_before_ready, 120)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int c, s, one = 1;
	char buf[16];
	pid_t pid;

	free_port(&ss, &len);
	ASSERT_NE(0, addr_port(&ss));
	close(self->lfd);	/* (the door's port is the liar's now) */
	self->lfd = -1;
	ASSERT_EQ(0, run_door_server("data_before_ready", &pid));
	c = socket(rs_family_number(), SOCK_STREAM, 0);
	ASSERT_EQ(0, setsockopt(c, SOL_RDMASOCK, RDMASOCK_NO_FALLBACK, &one, sizeof(one)));
	ASSERT_EQ(-1, connect(c, (struct sockaddr *)&ss, len));
	if (errno != EPROTO)
		ASSERT_EQ(ECONNRESET, errno);
	ASSERT_EQ(0, peer_status(pid));
	self->lfd = make_listener(CARRIER_RDMASOCK, AF_INET, &self->ss, &self->len);
	ASSERT_LE(0, self->lfd);
	/* Nothing the liar wrote is readable: end of stream, as TCP after a reset connect. */
	ASSERT_GE(0, recv(c, buf, sizeof(buf), MSG_DONTWAIT));
	/* The socket connects again (the aborted attempt torn down first), to an honest server. */
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&self->ss, self->len));
	s = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c, RDMASOCK_MODE));
	ASSERT_EQ(2, send(c, "ok", 2, 0));
	ASSERT_EQ(2, recv(s, buf, 2, MSG_WAITALL));
	ASSERT_EQ(0, memcmp(buf, "ok", 2));
	close(c);
	close(s);
}

/*
 * A server that sends its READY and at once a RESET: both can come before connect_work makes the
 * socket established, and the reset is the connection's, as TCP's after its SYN-ACK: connect()
 * fails with ECONNRESET, or succeeds and the first read does (the module before lost the RESET:
 * connect() succeeded and reads waited for ever).  After a failed connect() the socket connects
 * again; after a successful one it stays connected for connect() (EISCONN), as TCP's.
 */
TEST_F_TIMEOUT(once, reset_right_after_ready_is_the_connection_s, 120)
{
	struct timeval tv = { .tv_sec = 5 };
	struct sockaddr_storage ss;
	socklen_t len;
	int c, s, one = 1;
	char buf[16];
	pid_t pid;

	free_port(&ss, &len);
	ASSERT_NE(0, addr_port(&ss));
	close(self->lfd);	/* (the door's port is the liar's now) */
	self->lfd = -1;
	ASSERT_EQ(0, run_door_server("ready_reset", &pid));
	c = socket(rs_family_number(), SOCK_STREAM, 0);
	ASSERT_EQ(0, setsockopt(c, SOL_RDMASOCK, RDMASOCK_NO_FALLBACK, &one, sizeof(one)));
	ASSERT_EQ(0, setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	if (connect(c, (struct sockaddr *)&ss, len)) {
		ASSERT_EQ(ECONNRESET, errno);
	} else {
		ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c, RDMASOCK_MODE));
		ASSERT_EQ(-1, recv(c, buf, sizeof(buf), 0));
		ASSERT_EQ(ECONNRESET, errno);
		TH_LOG("connect() succeeded before the reset was seen");
		/*
		 * As TCP's: a socket that connect() reported connected stays so for connect()
		 * after its reset (EISCONN); only a failed connect() may be tried again.
		 */
		ASSERT_EQ(-1, connect(c, (struct sockaddr *)&self->ss, self->len));
		ASSERT_EQ(EISCONN, errno);
		close(c);
		c = socket(rs_family_number(), SOCK_STREAM, 0);
		ASSERT_LE(0, c);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	self->lfd = make_listener(CARRIER_RDMASOCK, AF_INET, &self->ss, &self->len);
	ASSERT_LE(0, self->lfd);
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&self->ss, self->len)) {
		TH_LOG("connect again: errno %d", errno);
	}
	s = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c, RDMASOCK_MODE));
	ASSERT_EQ(2, send(c, "ok", 2, 0));
	ASSERT_EQ(2, recv(s, buf, 2, MSG_WAITALL));
	close(c);
	close(s);
}

/*
 * A server that sends its READY and at once its FIN (it had nothing to say): connect() succeeds
 * into CLOSE_WAIT, as TCP's does when the FIN came with or right after the SYN-ACK (the module
 * before made it ESTABLISHED, with the read side shut): end of stream, and writes still go.
 */
TEST_F_TIMEOUT(once, fin_right_after_ready_leaves_close_wait, 120)
{
	struct timeval tv = { .tv_sec = 5 };
	struct sockaddr_storage ss;
	struct tcp_info ti;
	socklen_t len, tl = sizeof(ti);
	int c, one = 1;
	char buf[16];
	pid_t pid;

	free_port(&ss, &len);
	ASSERT_NE(0, addr_port(&ss));
	close(self->lfd);	/* (the door's port is the liar's now) */
	self->lfd = -1;
	ASSERT_EQ(0, run_door_server("ready_fin", &pid));
	c = socket(rs_family_number(), SOCK_STREAM, 0);
	ASSERT_EQ(0, setsockopt(c, SOL_RDMASOCK, RDMASOCK_NO_FALLBACK, &one, sizeof(one)));
	ASSERT_EQ(0, setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&ss, len));
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c, RDMASOCK_MODE));
	ASSERT_EQ(0, recv(c, buf, sizeof(buf), 0));
	ASSERT_EQ(0, getsockopt(c, SOL_TCP, TCP_INFO, &ti, &tl));
	ASSERT_EQ(TCP_CLOSE_WAIT, ti.tcpi_state);
	ASSERT_EQ(2, send(c, "ok", 2, 0));
	close(c);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/*
 * The mutating peer: rounds of valid traffic with fields mutated at random
 * (RDMASOCK_MUTATE_ROUNDS, RDMASOCK_MUTATE_STEPS, RDMASOCK_MUTATE_SEED: make soak runs it long).
 * Each round the accepted socket must end in data, EOF or an error within bounds, never more
 * bytes than the peer could have placed, while an honest connection opened before carries on
 * untouched and the listener keeps serving.
 */
TEST_F_TIMEOUT(once, mutating_peer_rounds, 1800)
{
	const char *r = getenv("RDMASOCK_MUTATE_ROUNDS"), *sd = getenv("RDMASOCK_MUTATE_SEED");
	unsigned int seed = sd ? strtoul(sd, NULL, 0) : (unsigned int)time(NULL);
	int rounds = r ? atoi(r) : 6, c0, s0;
	static char big[1 << 16];
	char env[64];

	TH_LOG("seed %u (RDMASOCK_MUTATE_SEED=%u replays the rounds' messages)", seed, seed);
	ASSERT_EQ(0, make_pair(CARRIER_RDMASOCK, AF_INET, &c0, &s0));
	for (int round = 0; round < rounds; round++) {
		long long total = 0;
		ssize_t n = 0;
		int s, status;
		pid_t pid;

		snprintf(env, sizeof(env), "%u", seed + round);
		setenv("RDMASOCK_MUTATE_SEED", env, 1);
		pid = run_peer(&self->ss, "mutate");
		ASSERT_EQ(POLLIN, poll_one(self->lfd, POLLIN, 20000));
		s = accept(self->lfd, NULL, NULL);
		ASSERT_LE(0, s);
		ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(s, RDMASOCK_MODE));
		/*
		 * Read while the peer runs (its honest part waits for our consumption); once it is
		 * gone (its process closed its id) the socket must end, within bounds.
		 */
		for (int i = 0, gone = 0; i < 100000; i++) {
			if (!gone && waitpid(pid, &status, WNOHANG) == pid)
				gone = 1;
			if (!poll_one(s, POLLIN, gone ? 20000 : 50)) {
				if (gone)
					break;
				continue;
			}
			n = recv(s, big, sizeof(big), MSG_DONTWAIT);
			if (n <= 0)
				break;
			total += n;
		}
		ASSERT_TRUE(n == 0 || (n < 0 && errno != EAGAIN));
		if (waitpid(pid, &status, 0) == pid)
			ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		/* Never more than the peer's steps could place (512 bytes each at most). */
		ASSERT_GE(512LL * 400, total);
		close(s);
		/* The honest connection is untouched. */
		ASSERT_EQ(2, send(c0, "ok", 2, MSG_NOSIGNAL));
		ASSERT_EQ(2, recv(s0, env, 2, MSG_WAITALL));
		ASSERT_EQ(0, memcmp(env, "ok", 2));
	}
	unsetenv("RDMASOCK_MUTATE_SEED");
	close(c0);
	close(s0);
}

/* The address of our ring that the peer sees is a random virtual one, not where our memory is. */
TEST_F_TIMEOUT(once, ring_addresses_tell_nothing_physical, 60)
{
	for (int i = 0; i < 2; i++) {
		pid_t pid = run_peer(&self->ss, "ring_addr");
		int s;

		ASSERT_EQ(0, peer_status(pid));
		ASSERT_EQ(POLLIN, poll_one(self->lfd, POLLIN, 20000));
		s = accept(self->lfd, NULL, NULL);
		ASSERT_LE(0, s);
		close(s);
	}
}

/*
 * hostile_peer --listen @ss "watch" as an unprivileged user (nobody), as any local user may:
 * /dev/infiniband/rdma_cm is open to all (rdma-core's udev rule; the VM's devtmpfs node is made
 * so here).  Its output in *@out: "request" for each connection request it got; its first line
 * in @line (64 bytes): "listening", or why not.
 */
static int run_watcher(const struct sockaddr_storage *ss, pid_t *pid, FILE **out, char *line)
{
	line[0] = 0;
	*pid = -1;
	*out = NULL;
	if (chmod("/dev/infiniband/rdma_cm", 0666))
		return -1;
	*out = peer_exec(ss, "--listen", "watch", true, pid);
	if (!*out || !fgets(line, 64, *out) || strcmp(line, "listening\n")) {
		fprintf(stderr, "# hostile_peer --listen port %u watch (as nobody) said \"%s\"\n",
			addr_port(ss), line);
		return -1;
	}
	return 0;
}

/* What the watcher said after the line "listening", once it is killed: "" when nothing. */
static void watcher_stop(pid_t pid, FILE *out, char *said, size_t size)
{
	size_t n = 0;

	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	if (out) {
		n = fread(said, 1, size - 1, out);
		fclose(out);
	}
	said[n] = 0;
}

/*
 * The port hijack (#47): a local user listening in rdma_cm's port space on the port of someone
 * else's TCP service got that service's rdmasock clients, and their bytes.  Requests go to the
 * door now, which only privilege can hold: the unprivileged listener gets no request, and the
 * client's bytes reach the port's owner in TCP's space: over TCP when it is a plain TCP service
 * (no rdmasock listener has the port), over RDMA when it is an rdmasock listener (whose listen()
 * no rdma_cm listener on its port can make fail now).
 */
TEST_F_TIMEOUT(once, rdma_cm_listener_on_a_tcp_port_gets_no_client, 120)
{
	for (int rdmasock = 0; rdmasock < 2; rdmasock++) {
		long long to_tcp = rs_counter("door_to_tcp");
		struct sockaddr_storage ss;
		char said[256], buf[8];
		int lfd, c, s, one = 1;
		socklen_t len;
		char first[64];
		FILE *out;
		pid_t pid;

		free_port(&ss, &len);
		ASSERT_NE(0, addr_port(&ss));
		ASSERT_EQ(0, run_watcher(&ss, &pid, &out, first));
		/* The service: the port's owner in TCP's space, plain TCP or rdmasock. */
		lfd = socket(rdmasock ? rs_family_number() : AF_INET, SOCK_STREAM, 0);
		ASSERT_EQ(0, setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
		ASSERT_EQ(0, bind(lfd, (struct sockaddr *)&ss, len));
		ASSERT_EQ(0, listen(lfd, 4));
		c = socket(rs_family_number(), SOCK_STREAM, 0);
		ASSERT_EQ(0, connect(c, (struct sockaddr *)&ss, len));
		ASSERT_EQ(6, send(c, "secret", 6, 0));
		s = accept(lfd, NULL, NULL);
		ASSERT_LE(0, s);
		ASSERT_EQ(6, recv(s, buf, 6, MSG_WAITALL));
		ASSERT_EQ(0, memcmp(buf, "secret", 6));
		watcher_stop(pid, out, said, sizeof(said));
		ASSERT_EQ(NULL, strstr(said, "request")) TH_LOG("%s service: %s",
							 rdmasock ? "rdmasock" : "TCP", said);
		TH_LOG("%s service: client %s (reason %d)", rdmasock ? "rdmasock" : "TCP",
		       rs_getint(c, RDMASOCK_MODE) == RDMASOCK_MODE_RDMA ? "RDMA" : "TCP",
		       rs_getint(c, RDMASOCK_FALLBACK_REASON));
		if (rdmasock) {
			ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c, RDMASOCK_MODE));
			ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(s, RDMASOCK_MODE));
		} else {
			ASSERT_EQ(RDMASOCK_MODE_TCP, rs_getint(c, RDMASOCK_MODE));
			/* The door refused it: TCP gives the port to no rdmasock listener. */
			ASSERT_EQ(RDMASOCK_REASON_PEER_REJECT,
				  rs_getint(c, RDMASOCK_FALLBACK_REASON));
			ASSERT_EQ(to_tcp + 1, rs_counter("door_to_tcp"));
		}
		close(c);
		close(s);
		close(lfd);
	}
}

/*
 * Someone else holds the door's port in rdma_cm's space (root's rdma_cm listener, another RDMA
 * service): listen() succeeds and the listener serves TCP alone (counted), as a listener whose RDMA
 * could not be had always did.  Once the port is free, a later listen() opens the door, for the
 * earlier listener too.  And a client bound to the door's port (root may) rides TCP, named by that
 * port, and takes nothing of the door's.
 */
TEST_F_TIMEOUT(once, door_port_held_then_freed, 120)
{
	long long taken = rs_counter("listen_rdma_port_taken");
	struct sockaddr_storage ss2, me;
	socklen_t len2, ml = sizeof(me);
	int l2, c, s, one = 1;
	char b;
	pid_t pid;

	close(self->lfd);	/* the last rdmasock listener: the door is shut */
	self->lfd = -1;
	ASSERT_EQ(0, run_door_server("hold", &pid));
	self->lfd = make_listener(CARRIER_RDMASOCK, AF_INET, &self->ss, &self->len);
	ASSERT_LE(0, self->lfd);
	ASSERT_EQ(taken + 1, rs_counter("listen_rdma_port_taken"));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	l2 = make_listener(CARRIER_RDMASOCK, AF_INET, &ss2, &len2);	/* opens it */
	ASSERT_LE(0, l2);
	ASSERT_EQ(taken + 1, rs_counter("listen_rdma_port_taken"));
	c = socket(rs_family_number(), SOCK_STREAM, 0);
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&self->ss, self->len));
	s = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c, RDMASOCK_MODE));
	ASSERT_EQ(1, send(c, "x", 1, 0));
	ASSERT_EQ(1, recv(s, &b, 1, 0));
	close(c);
	close(s);
	/* A client bound to the door's port. */
	c = socket(rs_family_number(), SOCK_STREAM, 0);
	ASSERT_EQ(0, setsockopt(c, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	host_addr(AF_INET, &me, door_port());
	ASSERT_EQ(0, bind(c, (struct sockaddr *)&me, sizeof(struct sockaddr_in)));
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&ss2, len2));
	s = accept(l2, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_EQ(RDMASOCK_MODE_TCP, rs_getint(c, RDMASOCK_MODE));
	ASSERT_EQ(RDMASOCK_REASON_RESOURCE, rs_getint(c, RDMASOCK_FALLBACK_REASON));
	ASSERT_EQ(0, getsockname(c, (struct sockaddr *)&me, &ml));
	ASSERT_EQ(door_port(), addr_port(&me));
	close(c);
	close(s);
	/* The door stayed the module's: the next client of either listener rides RDMA. */
	c = socket(rs_family_number(), SOCK_STREAM, 0);
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&ss2, len2));
	s = accept(l2, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c, RDMASOCK_MODE));
	close(c);
	close(s);
	close(l2);
}

/*
 * The door's port is below 1024: a local user cannot listen there (rdma_cm's own rule).  The
 * module opens it for anyone's listen(), a local user's too (with kernel credentials), and shuts
 * it with the last listener: root can hold it then.
 */
TEST_F_TIMEOUT(once, door_port_needs_privilege, 120)
{
	struct sockaddr_storage door, ss;
	char said[256], first[64];
	int c, p[2], status;
	socklen_t len;
	FILE *out;
	pid_t pid;

	ASSERT_GT(1024, door_port());
	ASSERT_LT(0, door_port());
	host_addr(AF_INET, &door, door_port());
	close(self->lfd);	/* the last rdmasock listener: the door is shut */
	self->lfd = -1;
	ASSERT_EQ(-1, run_watcher(&door, &pid, &out, first));
	watcher_stop(pid, out, said, sizeof(said));
	ASSERT_NE(NULL, strstr(first, "listen: Permission denied")) TH_LOG("%s", first);
	/* Root may: the port is free. */
	ASSERT_EQ(0, run_door_server("hold", &pid));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	/* A local user's rdmasock listener opens the door, and its clients ride RDMA. */
	free_port(&ss, &len);
	ASSERT_NE(0, addr_port(&ss));
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	if (!pid) {
		int lfd, s, one = 1;
		char ok = 'l';

		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(5);
		lfd = socket(rs_family_number(), SOCK_STREAM, 0);
		if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
		    bind(lfd, (struct sockaddr *)&ss, len) || listen(lfd, 4) ||
		    write(p[1], &ok, 1) != 1)
			_exit(6);
		s = accept(lfd, NULL, NULL);
		if (s < 0 || rs_getint(s, RDMASOCK_MODE) != RDMASOCK_MODE_RDMA)
			_exit(7);
		_exit(recv(s, &ok, 1, MSG_WAITALL) == 1 && ok == 'x' ? 0 : 8);
	}
	close(p[1]);
	ASSERT_EQ(1, read(p[0], first, 1));
	close(p[0]);
	c = socket(rs_family_number(), SOCK_STREAM, 0);
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&ss, len));
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c, RDMASOCK_MODE));
	ASSERT_EQ(1, send(c, "x", 1, 0));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	close(c);
}

/* The next connection on @lfd, accepted over RDMA, its first 5 bytes @first (unless NULL). */
static int accept_rdma(struct __test_metadata *_metadata, int lfd, const char *first)
{
	char buf[8];
	int s;

	ASSERT_EQ(POLLIN, poll_one(lfd, POLLIN, 20000));
	s = accept(lfd, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(s, RDMASOCK_MODE));
	if (first) {
		ASSERT_EQ(5, recv(s, buf, 5, MSG_WAITALL));
		ASSERT_EQ(0, memcmp(buf, first, 5));
	}
	return s;
}

/* hostile_peer --client @mode (saying @want), accepted over RDMA, its "hello" read: the socket. */
static int accept_hello(struct __test_metadata *_metadata, FIXTURE_DATA(once) *self,
			const char *mode, const char *want, pid_t *pid)
{
	ASSERT_EQ(0, spawn_peer(&self->ss, "--client", mode, want, pid));
	return accept_rdma(_metadata, self->lfd, "hello");
}

struct blocked_writer {
	int fd;
	long long sent;
	int err;
	volatile int done;
};

static void *write_until_error(void *p)
{
	struct blocked_writer *w = p;
	static char buf[1 << 16];
	ssize_t n;

	while ((n = send(w->fd, buf, sizeof(buf), MSG_NOSIGNAL)) > 0)
		w->sent += n;
	w->err = n < 0 ? errno : 0;
	w->done = 1;
	return NULL;
}

/*
 * The peer sent its data and its FIN, then went silent for good without a disconnect (its QP dead,
 * as when its host dies): what it sent is read, then EOF; a writer blocked on the full ring wakes
 * with an error once our writes fail (as TCP's writer when its retransmissions time out), never
 * sleeps for ever.  (Bounded wait: 60 s.)
 */
TEST_F_TIMEOUT(once, blocked_writer_wakes_when_a_finished_peer_dies, 180)
{
	struct blocked_writer w = { 0 };
	pthread_t t;
	char buf[8];
	pid_t pid;
	int s, i;

	s = accept_hello(_metadata, self, "fin_dead", "quiet\n", &pid);
	ASSERT_EQ(0, recv(s, buf, 1, 0));
	w.fd = s;
	ASSERT_EQ(0, pthread_create(&t, NULL, write_until_error, &w));
	for (i = 0; i < 600 && !w.done; i++)
		poll_one(-1, 0, 100);
	if (!w.done)
		shutdown(s, SHUT_RDWR);	/* release it, then fail */
	pthread_join(t, NULL);
	TH_LOG("writer: %lld bytes, then errno %d, after about %d ms", w.sent, w.err, i * 100);
	ASSERT_GT(600, i) {
		TH_LOG("the blocked writer never woke");
	}
	ASSERT_TRUE(w.err == ETIMEDOUT || w.err == ECONNRESET || w.err == EPIPE);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(s);
}

/*
 * Accept a connection from a hostile_peer "stall_recv:@stall" client (output in *out, or NULL),
 * over RDMA, with TCP_NODELAY: the socket, or -1 (the peer killed).
 */
static int accept_stalled(FIXTURE_DATA(once) *self, int stall, pid_t *pid, FILE **out)
{
	char arg[32];
	int one = 1, s;

	snprintf(arg, sizeof(arg), "stall_recv:%d", stall);
	if (spawn_peer_out(&self->ss, "--client", arg, "stalled\n", pid, out))
		return -1;
	s = poll_one(self->lfd, POLLIN, 20000) == POLLIN ? accept(self->lfd, NULL, NULL) : -1;
	if (s >= 0 && (rs_getint(s, RDMASOCK_MODE) != RDMASOCK_MODE_RDMA ||
		       setsockopt(s, SOL_TCP, TCP_NODELAY, &one, sizeof(one)))) {
		fprintf(stderr, "# the stalled peer's connection is not an RDMA one\n");
		close(s);
		s = -1;
	}
	if (s < 0) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
		if (out)
			fclose(*out);
	}
	return s;
}

/* Write 10-byte chunks ("0123456789") without blocking until the window shuts; how many went. */
static int fill_send_queue(int s)
{
	int i;

	for (i = 0; i < 100 && send(s, "0123456789", 10, MSG_DONTWAIT) == 10; i++)
		;
	return errno == EAGAIN ? i : -1;
}

/*
 * An orphan: we write "0123456789" and close while the peer's receive queue is empty (stall_recv:
 * RNR, retried for ever, as TCP's zero-window probes go on while the peer answers).  @user_timeout
 * (ms, or 0) is set before the close; @max_orphans (or -1) is the module's limit meanwhile; @abort:
 * the close is abortive (SO_LINGER {1, 0}: a RESET).  Returns what the peer said once it posted its
 * receives, after @stall seconds.
 */
static void orphan_case(struct __test_metadata *_metadata, FIXTURE_DATA(once) *self, int stall,
			int user_timeout, int max_orphans, bool abort, char *said, size_t size)
{
	const char *param = "/sys/module/rdmasock/parameters/max_orphans";
	struct linger lin = { .l_onoff = 1, .l_linger = 0 };
	char val[16];
	pid_t pid;
	FILE *out;
	int s;

	s = accept_stalled(self, stall, &pid, &out);
	ASSERT_LE(0, s);
	if (user_timeout)
		ASSERT_EQ(0, setsockopt(s, SOL_TCP, TCP_USER_TIMEOUT, &user_timeout,
					sizeof(user_timeout)));
	ASSERT_EQ(10, send(s, "0123456789", 10, 0));
	if (max_orphans >= 0) {
		snprintf(val, sizeof(val), "%d\n", max_orphans);
		ASSERT_EQ(0, param_swap(&self->param, param, val));
	}
	if (abort)
		ASSERT_EQ(0, setsockopt(s, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin)));
	close(s);
	if (!user_timeout && max_orphans && !abort) {
		/* Still there, past our close(), for as long as the peer does not take the bytes. */
		for (int i = 0; i < 100 && rs_counter("orphans") != 1; i++)
			poll_one(-1, 0, 50);
		ASSERT_EQ(1, rs_counter("orphans"));
	}
	said[0] = 0;
	ASSERT_NE(NULL, fgets(said, size, out));
	TH_LOG("peer: %s", said);
	ASSERT_EQ(0, param_restore(&self->param));
	fclose(out);
	waitpid(pid, NULL, 0);
	/* And once the peer is done, nothing of it stays. */
	for (int i = 0; i < 100 && rs_counter("orphans"); i++)
		poll_one(-1, 0, 50);
	ASSERT_EQ(0, rs_counter("orphans"));
}

/*
 * close() without SO_LINGER loses nothing: the orphan delivers its bytes and FIN once the peer takes
 * them, after any time (here 12 s: longer than the 10 s that close once waited at most).
 */
TEST_F_TIMEOUT(once, orphan_delivers_after_a_long_stall, 90)
{
	const char *retry = "wc_error_transport_retry_counter_exceeded";
	long long retries = rs_counter(retry);
	char said[64];

	orphan_case(_metadata, self, 12, 0, -1, false, said, sizeof(said));
	/*
	 * 6.12's rxe answers a write to a QP without receives with silence, not an RNR NAK: our RC
	 * retries then run out (as TCP's retransmissions would), and no peer is alive and stalled.
	 */
	if (strcmp(said, "got 10 bytes, fin\n") && rs_counter(retry) > retries)
		SKIP(return, "this rxe does not RNR-NAK: the stalled peer looked dead");
	ASSERT_STREQ("got 10 bytes, fin\n", said);
}

/* TCP_USER_TIMEOUT bounds it, as it bounds TCP's probes of a zero window: a reset. */
TEST_F_TIMEOUT(once, orphan_user_timeout_resets, 90)
{
	long long timeouts = rs_counter("orphans_timed_out");
	char said[64];

	orphan_case(_metadata, self, 4, 1000, -1, false, said, sizeof(said));
	ASSERT_STREQ("got 0 bytes, no fin\n", said);
	ASSERT_EQ(timeouts + 1, rs_counter("orphans_timed_out"));
}

/* Beyond max_orphans: the close (abortive: @abort) goes at once, its bytes never delivered. */
static void orphan_limit_case(struct __test_metadata *_metadata, FIXTURE_DATA(once) *self,
			      bool abort)
{
	long long dropped = rs_counter("orphans_dropped");
	char said[64];

	orphan_case(_metadata, self, 2, 0, 0, abort, said, sizeof(said));
	ASSERT_STREQ("got 0 bytes, no fin\n", said);
	ASSERT_EQ(dropped + 1, rs_counter("orphans_dropped"));
}

/* Beyond max_orphans (tcp_max_orphans), a close resets its connection at once. */
TEST_F_TIMEOUT(once, orphans_beyond_the_limit_reset, 90)
{
	orphan_limit_case(_metadata, self, false);
}

/*
 * An abortive close waits for its RESET to leave (here it cannot: the peer posts no receive), and
 * counts against max_orphans meanwhile: beyond the limit it goes at once, as an orphan does, and
 * the peer never sees the bytes close() dropped.
 */
TEST_F_TIMEOUT(once, abortive_close_beyond_the_orphan_limit_goes_at_once, 90)
{
	orphan_limit_case(_metadata, self, true);
}

/*
 * An abortive close whose RESET finds the send queue full still resets: the peer takes nothing
 * for 6 s (no receive posted), writes fill the queue's data slots (autocork off: a WRITE each,
 * until the window shuts) and four keepalive probes (1 s apart) its control reserve; the RESET
 * of close() then waits for the next send completion, which comes once the peer posts receives.
 * The peer reads the bytes, then the RESET.
 */
TEST_F_TIMEOUT(once, abortive_close_on_a_full_send_queue_still_resets, 90)
{
	const char *retry = "wc_error_transport_retry_counter_exceeded";
	const char *param = "/sys/module/rdmasock/parameters/autocork";
	long long deferred = rs_counter("ctrl_deferred_sq_full");
	long long probes = rs_counter("keepalive_probes");
	struct linger lin = { .l_onoff = 1, .l_linger = 0 };
	long long retries = rs_counter(retry);
	int one = 1, idle = 1, cnt = 20, s, n;
	char said[64], want[64];
	pid_t pid;
	FILE *out;

	s = accept_stalled(self, 6, &pid, &out);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, param_swap(&self->param, param, "0\n"));
	n = fill_send_queue(s);
	ASSERT_LT(0, n);
	snprintf(want, sizeof(want), "got %d bytes, reset\n", n * 10);
	ASSERT_EQ(0, param_restore(&self->param));
	ASSERT_EQ(0, setsockopt(s, SOL_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)));
	ASSERT_EQ(0, setsockopt(s, SOL_TCP, TCP_KEEPINTVL, &idle, sizeof(idle)));
	ASSERT_EQ(0, setsockopt(s, SOL_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)));
	ASSERT_EQ(0, setsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)));
	for (int i = 0; i < 100 && rs_counter("keepalive_probes") < probes + 4; i++)
		poll_one(-1, 0, 50);
	ASSERT_EQ(probes + 4, rs_counter("keepalive_probes"));
	ASSERT_EQ(0, setsockopt(s, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin)));
	close(s);
	said[0] = 0;
	ASSERT_NE(NULL, fgets(said, sizeof(said), out));
	TH_LOG("peer: %s", said);
	fclose(out);
	waitpid(pid, NULL, 0);
	/* (6.12's rxe answers the stalled peer's QP with silence: our retries run out, see above.) */
	if (strcmp(said, want) && rs_counter(retry) > retries)
		SKIP(return, "this rxe does not RNR-NAK: the stalled peer looked dead");
	ASSERT_STREQ(want, said);
	ASSERT_LT(deferred, rs_counter("ctrl_deferred_sq_full"));
}

#define TRACEFS "/sys/kernel/tracing"

/* Arm (@on) or remove a kprobe event named @name on @sym; 0 or -1 (no tracefs or kprobes). */
static int kprobe_set(const char *name, const char *sym, bool on)
{
	char path[256];
	int fd, n;

	if (on && access(TRACEFS "/kprobe_events", W_OK) &&
	    mount("nodev", TRACEFS, "tracefs", 0, NULL))
		return -1;
	if (on) {
		kprobe_set(name, sym, false);	/* one a failed run left */
	} else {
		snprintf(path, sizeof(path), TRACEFS "/events/kprobes/%s/enable", name);
		fd = open(path, O_WRONLY);
		if (fd >= 0) {
			n = write(fd, "0", 1);
			close(fd);
		}
	}
	fd = open(TRACEFS "/kprobe_events", O_WRONLY | O_APPEND);
	if (fd < 0)
		return -1;
	n = on ? dprintf(fd, "p:%s %s\n", name, sym) : dprintf(fd, "-:%s\n", name);
	close(fd);
	if (n <= 0 || !on)
		return n > 0 ? 0 : -1;
	snprintf(path, sizeof(path), TRACEFS "/events/kprobes/%s/enable", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	n = write(fd, "1", 1);
	close(fd);
	return n == 1 ? 0 : -1;
}

/* How often the kprobe event @name fired (kprobe_profile), or -1. */
static long long kprobe_hits(const char *name)
{
	char line[256], ev[128];
	long long hits = -1, h;
	FILE *f = fopen(TRACEFS "/kprobe_profile", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%127s %lld", ev, &h) == 2 && !strcmp(ev, name))
			hits = h;
	fclose(f);
	return hits;
}

/* How many 10-byte writes (autocork off) a connection to a stalled peer takes before EAGAIN. */
static int stalled_fill_count(FIXTURE_DATA(once) *self)
{
	pid_t pid;
	int s, n;

	s = accept_stalled(self, 30, &pid, NULL);
	if (s < 0)
		return -1;
	n = fill_send_queue(s);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(s);
	return n;
}

/*
 * Bytes staged while the send queue is full go with the next send completion, and nothing polls
 * for room meanwhile: a push retried every jiffy kept a worker busy for as long as a peer took
 * nothing (about 125 runs a second here, seen on the first connection below, closed with its
 * queue full and its peer gone, until our retries ran out).  A first stalled peer says how many
 * writes fill the data slots (autocork off: a WRITE each); with a second, one write fewer, then an
 * urgent byte (its URG and its data take the last slots, or find the queue full).  Once the
 * second peer takes again, everything arrives, the urgent byte and the FIN of close() included,
 * and rs_push_work() never ran.
 */
TEST_F_TIMEOUT(once, bytes_held_by_a_full_send_queue_go_at_its_next_completion, 120)
{
	const char *retry = "wc_error_transport_retry_counter_exceeded";
	const char *param = "/sys/module/rdmasock/parameters/autocork";
	const char *probe = "rdmasock_test_push_work";
	long long retries = rs_counter(retry), hits;
	char said[64], want[64];
	int s, n, i;
	pid_t pid;
	FILE *out;

	if (kprobe_set(probe, "rs_push_work", true))
		SKIP(return, "no kprobe events here");
	hits = kprobe_hits(probe);
	ASSERT_EQ(0, param_swap(&self->param, param, "0\n"));
	n = stalled_fill_count(self);
	ASSERT_LT(1, n);
	s = accept_stalled(self, 5, &pid, &out);
	ASSERT_LE(0, s);
	for (i = 0; i < n - 1; i++)
		ASSERT_EQ(10, send(s, "0123456789", 10, MSG_DONTWAIT));
	ASSERT_EQ(0, param_restore(&self->param));
	ASSERT_EQ(1, send(s, "0", 1, MSG_OOB));
	snprintf(want, sizeof(want), "got %d bytes, fin\n", (n - 1) * 10 + 1);
	close(s);
	said[0] = 0;
	ASSERT_NE(NULL, fgets(said, sizeof(said), out));
	hits = kprobe_hits(probe) - hits;
	kprobe_set(probe, NULL, false);
	TH_LOG("rs_push_work ran %lld times; peer: %s", hits, said);
	fclose(out);
	waitpid(pid, NULL, 0);
	if (strcmp(said, want) && rs_counter(retry) > retries)
		SKIP(return, "this rxe does not RNR-NAK: the stalled peer looked dead");
	ASSERT_STREQ(want, said);
	ASSERT_EQ(0, hits);
}

/*
 * A lost (here: never sent) RTU: the client's first messages establish the child, as the first data
 * segment (it carries the ACK) establishes a TCP child whose handshake ACK was lost.  Without that,
 * the child would wait for the RTU until its timer reaped it.
 */
TEST_F_TIMEOUT(once, first_message_establishes_a_child_without_its_rtu, 60)
{
	pid_t pid;
	int s;

	s = accept_hello(_metadata, self, "late_rtu", "late_rtu: sent\n", &pid);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(s);
}

#define SYN_RECV	"03"	/* TCP_SYN_RECV as /proc/net/rdmasock shows it */

/*
 * Connection requests that never complete (no RTU: a client that vanished, or an attack): at most
 * backlog + 1 children wait, each pinning only our 16 KiB receive ring (never the ring the client
 * announced), none reaches accept(), and the RTU timer reaps them while the client still holds its
 * ids; the backlog then serves an honest client over RDMA at once.
 */
TEST_F_TIMEOUT(once, half_open_requests_are_bounded_and_reaped, 180)
{
	long long busy = rs_counter("fallback_peer_busy");
	const int backlog = 2, reqs = 12, page_kib = getpagesize() / 1024;
	struct sockaddr_storage ss;
	int lfd, c, s, n, i;
	socklen_t len;
	long base;
	char buf[2];
	pid_t pid;

	lfd = small_listener(&ss, &len, 0, backlog);
	ASSERT_LE(0, lfd);
	/* Earlier tests' rings go back in the background: let them, or they move the gauge. */
	for (i = 0; i < 3000 && pinned() > 0; i++)
		poll_one(-1, 0, 10);
	base = pinned();
	ASSERT_EQ(0, spawn_peer(&ss, "--half-open", "12", "answered 12\n", &pid));
	n = table_count(addr_port(&ss), SYN_RECV);
	TH_LOG("%d of %d requests wait for their RTU, %ld ring pages pinned (%ld before)", n, reqs,
	       pinned(), base);
	ASSERT_LE(1, n);
	ASSERT_GE(backlog + 1, n);
	ASSERT_GE(base + n * 16 / page_kib, pinned());
	ASSERT_EQ(0, poll_one(lfd, POLLIN, 0));
	/* Reaped by the RTU timer, not by the client (alive, its ids open). */
	for (i = 0; i < 600 && (table_count(addr_port(&ss), SYN_RECV) || pinned() > base); i++)
		poll_one(-1, 0, 100);
	TH_LOG("reaped after about %d ms", i * 100);
	ASSERT_EQ(0, table_count(addr_port(&ss), SYN_RECV));
	ASSERT_GE(base, pinned());
	ASSERT_EQ(0, kill(pid, 0));
	ASSERT_EQ(0, poll_one(lfd, POLLIN, 0));
	c = socket(rs_family_number(), SOCK_STREAM, 0);
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&ss, len));
	s = accept(lfd, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c, RDMASOCK_MODE));
	ASSERT_EQ(busy, rs_counter("fallback_peer_busy"));
	ASSERT_EQ(2, send(c, "ok", 2, 0));
	ASSERT_EQ(2, recv(s, buf, 2, MSG_WAITALL));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(c);
	close(s);
	close(lfd);
}

/*
 * A client that completes the CM handshake (its RTU) but never sends its READY, TCP's ACK: the
 * child stays SYN_RECV, never reaches accept() (the server's staging ring it holds goes with it),
 * and its timer drops it within 10 s while the client is alive; an honest client is then served
 * over RDMA.  (Before the handshake became three-way the child was accepted at the RTU.)
 */
TEST_F_TIMEOUT(once, a_client_that_never_sends_its_ready_is_never_accepted, 90)
{
	char said[64] = "", buf[2];
	FILE *out;
	pid_t pid;
	int c, s;

	ASSERT_EQ(0, spawn_peer_out(&self->ss, "--client", "no_ready", "no_ready: established\n",
				    &pid, &out));
	ASSERT_EQ(1, table_count(addr_port(&self->ss), SYN_RECV));
	ASSERT_EQ(0, poll_one(self->lfd, POLLIN, 2000));
	ASSERT_NE(NULL, fgets(said, sizeof(said), out));
	ASSERT_STREQ("no_ready: dropped by the kernel\n", said);
	ASSERT_EQ(0, table_count(addr_port(&self->ss), SYN_RECV));
	ASSERT_EQ(0, poll_one(self->lfd, POLLIN, 0));
	waitpid(pid, NULL, 0);
	fclose(out);
	c = socket(rs_family_number(), SOCK_STREAM, 0);
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&self->ss, self->len));
	s = accept(self->lfd, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c, RDMASOCK_MODE));
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(s, RDMASOCK_MODE));
	ASSERT_EQ(2, send(c, "ok", 2, 0));
	ASSERT_EQ(2, recv(s, buf, 2, MSG_WAITALL));
	close(c);
	close(s);
}

/*
 * The listener stops (SHUT_RD) while its waiting children fail (the client's process dies: its
 * ids send REJs): each child leaves the queue once, the count stays right, and the same socket
 * listens again and serves RDMA, not BUSY.  Rounds of 24 children, with jitter between the two.
 */
TEST_F_TIMEOUT(once, listener_stop_races_failing_children, 600)
{
	long long busy = rs_counter("fallback_peer_busy");
	struct sockaddr_storage ss;
	int lfd, c, s;
	socklen_t len;
	char buf[2];
	pid_t pid;

	srand(getpid());
	free_port(&ss, &len);
	ASSERT_NE(0, addr_port(&ss));
	lfd = small_listener(&ss, &len, addr_port(&ss), 32);
	ASSERT_LE(0, lfd);
	for (int round = 0; round < 16; round++) {
		ASSERT_EQ(0, spawn_peer(&ss, "--half-open", "24", "answered 24\n", &pid));
		ASSERT_EQ(24, table_count(addr_port(&ss), SYN_RECV));
		kill(pid, SIGKILL);
		if (round % 3)
			usleep(rand() % 20000);	/* jitter: the REJs land before, during, after */
		ASSERT_EQ(0, shutdown(lfd, SHUT_RD));
		waitpid(pid, NULL, 0);
		ASSERT_EQ(0, listen(lfd, 32));
		c = socket(rs_family_number(), SOCK_STREAM, 0);
		ASSERT_EQ(0, connect(c, (struct sockaddr *)&ss, len));
		s = accept(lfd, NULL, NULL);
		ASSERT_LE(0, s);
		ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c, RDMASOCK_MODE));
		ASSERT_EQ(2, send(c, "ok", 2, 0));
		ASSERT_EQ(2, recv(s, buf, 2, MSG_WAITALL));
		close(c);
		close(s);
	}
	ASSERT_EQ(busy, rs_counter("fallback_peer_busy"));
	close(lfd);
}

/*
 * Reuse (park_ms set, kmod/park.c): hostile_peer's connection closes in order (its "hello" read
 * here, our close), then it sends OPEN on the same QP (hostile_peer.c says each case).  @want:
 * what it says it saw.  A valid OPEN gets a child carrying its next bytes, and no READY follows
 * its ACCEPT; one that lies, comes twice or comes early gets nothing, the QP torn down (or a
 * child that is reset: a second OPEN, a READY after ACCEPT); the previous connection's key
 * writes nothing once the QP carries the next one.
 */
static void reuse_case(struct __test_metadata *_metadata, FIXTURE_DATA(once) *self,
		       const char *what, const char *want)
{
	long long reused = rs_counter("connections_reused");
	char buf[8], line[96] = "";
	FILE *out;
	pid_t pid;
	int s, n;

	ASSERT_EQ(0, param_swap(&self->param, "/sys/module/rdmasock/parameters/park_ms", "1000"));
	ASSERT_EQ(0, spawn_peer_out(&self->ss, "--client", what, NULL, &pid, &out));
	s = accept_rdma(_metadata, self->lfd, strcmp(what, "open_early") ? "hello" : NULL);
	if (strcmp(what, "open_early"))
		ASSERT_EQ(0, recv(s, buf, 1, 0));
	close(s);
	ASSERT_TRUE(fgets(line, sizeof(line), out) != NULL);
	EXPECT_STREQ(want, line);
	if (!strcmp(what, "reuse_valid")) {
		s = accept_rdma(_metadata, self->lfd, "again");
		EXPECT_LT(reused, rs_counter("connections_reused"));
		close(s);
		/* Our FIN, and no READY before it: ACCEPT was our READY. */
		ASSERT_TRUE(fgets(line, sizeof(line), out) != NULL);
		EXPECT_STREQ("reuse_valid: FIN\n", line);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	} else {
		EXPECT_EQ(0, peer_status(pid));
		/* A child the reused QP got before its peer broke it: never the stale key's bytes. */
		if (poll_one(self->lfd, POLLIN, 1000) & POLLIN) {
			s = accept(self->lfd, NULL, NULL);
			ASSERT_LE(0, s);
			n = recv(s, buf, 5, MSG_WAITALL);
			EXPECT_TRUE(n != 5 || memcmp(buf, "again", 5));
			EXPECT_STRNE("reuse_old_rkey: NOT refused", line);
			close(s);
		}
		/* (open_twice: the first may be taken, and then reset by the second) */
		if (strcmp(what, "reuse_old_rkey") && strcmp(what, "open_twice") &&
		    strcmp(what, "reuse_ready"))
			EXPECT_EQ(reused, rs_counter("connections_reused"));
	}
	fclose(out);
}

TEST_F_TIMEOUT(once, reuse_valid_open_gets_a_child, 90)
{
	reuse_case(_metadata, self, "reuse_valid", "reuse_valid: accepted\n");
}

TEST_F_TIMEOUT(once, reuse_previous_key_writes_nothing, 90)
{
	reuse_case(_metadata, self, "reuse_old_rkey", "reuse_old_rkey: refused (status 10)\n");
}

/* OPEN and ACCEPT were the READYs: a READY on the reused QP is a violation, the child reset. */
TEST_F_TIMEOUT(once, reuse_ready_after_accept_resets, 90)
{
	reuse_case(_metadata, self, "reuse_ready", "reuse_ready: reset\n");
}

TEST_F_TIMEOUT(once, reuse_lying_opens_are_refused, 300)
{
	static const char *const cases[] = {
		"open_magic", "open_short", "open_size", "open_flags", "open_conn_id", "open_long",
		"open_twice", "open_early", "open_noready",
	};
	char want[64];

	for (unsigned int i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(want, sizeof(want), "%s: %s\n", cases[i],
			 strcmp(cases[i], "open_twice") ? "refused" : "reset");
		reuse_case(_metadata, self, cases[i], want);
		param_restore(&self->param);
	}
}

#include "harness_main.h"
RS_TEST_MAIN
