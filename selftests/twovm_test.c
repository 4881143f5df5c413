// SPDX-License-Identifier: GPL-2.0
/*
 * Two VMs joined by one wire (selftests/vm/run --two-vm).  Each case is a pair, as in
 * tools/testing/vsock: a client half (a TEST_F, run by the client role's harness) and a server half
 * (cases[] below), joined by a plain TCP control connection.  The client opens it and names its
 * case; the server puts itself in the state the case needs (rdmasock loaded or not, rxe0 there or
 * not), starts listening, answers "GO" and runs its half.  So a case runs alone (-t NAME) or in
 * any order.  The cases:
 *   rdma_across_the_wire          a checksummed stream over RDMA across a real wire.
 *   silent_peer_detected_by_keepalive   the server falls silent (netem drops all it sends):
 *                                 keepalive ends an idle rdmasock and an idle TCP connection.
 *   lossy_reordering_wire_keeps_streams_intact   checksummed echo streams, rdmasock and TCP.
 *   peer_without_rdmasock         the server's module unloaded: RDMA there, no rdmasock.
 *   peer_without_rdma_device      rxe0 deleted too: the server does not answer RDMA at all.
 *   peer_vm_killed_mid_transfer   the server VM dies (sysrq reboot, QEMU exits) mid-transfer.
 * Last, the client says "END" and the server role exits.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/wait.h>
#include <stdint.h>
#include <netinet/tcp.h>
#include "lib.h"
#include "kselftest_harness.h"

#define PORT_RDMA	7002
#define PORT_NOMOD	7000
#define PORT_NORXE	7001
#define PORT_CTRL	7010	/* the control connection of every case */
#define PORT_SILENT_RS	7011
#define PORT_SILENT_TCP	7012
#define PORT_LOSSY_RS	7013
#define PORT_LOSSY_TCP	7014
#define PORT_KILL	7015
#define PORT_DROP	7016
#define DROP_BYTES	(32 << 20)
#define DROP_AFTER	(2 << 20)	/* the server drops its RoCE traffic after echoing this much */
/* The server's egress RoCE v2 (UDP 4791) dropped, its TCP not: RC retries run out both ways. */
#define DROP_ROCE	"tc qdisc add dev eth0 root handle 1: prio && tc filter add dev eth0 " \
			"parent 1: protocol ip prio 1 u32 match ip protocol 17 0xff " \
			"match ip dport 4791 0xffff action drop"
#define STREAM_BYTES	(16 << 20)
#define LOSSY_BYTES	(2 << 20)
#define KILL_AFTER	(1 << 20)	/* the server dies after echoing this much */
#define NETEM		"netem delay 2ms loss 1% reorder 10% 50%"

static socklen_t peer_addr(struct sockaddr_storage *ss, unsigned short port)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	inet_pton(AF_INET, getenv("RDMASOCK_PEER_ADDR") ? : "", &sin->sin_addr);
	return sizeof(*sin);
}

/* ---- server role ---- */

static int listen_on(int family, unsigned short port);

/* "GO": the server half is listening, the client half may start. */
static int say_go(int ctrl)
{
	return write_all(ctrl, "GO", 2);
}

/* Once listening on @port, say GO; echo every connection back until one starts with "QUIT". */
static int serve(int ctrl, int family, unsigned short port)
{
	int lfd = listen_on(family, port);
	char buf[65536];

	if (lfd < 0 || say_go(ctrl))
		return -1;
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		ssize_t n;
		bool quit = false, first = true;

		if (fd < 0) {
			perror("server: accept");
			return -1;
		}
		while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) {
			if (first && n >= 4 && !memcmp(buf, "QUIT", 4))
				quit = true;
			first = false;
			if (write_all(fd, buf, n))
				break;
		}
		close(fd);
		if (quit)
			break;
	}
	close(lfd);
	return 0;
}

static int listen_on(int family, unsigned short port)
{
	struct sockaddr_storage ss;
	socklen_t len = host_addr(AF_INET, &ss, port);
	int one = 1, fd = socket(family, SOCK_STREAM, 0);

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 8)) {
		perror("server: listen");
		close(fd);
		return -1;
	}
	return fd;
}

/* Accept one connection on @lfd, closing the listener. */
static int accept_one(int lfd)
{
	int fd = lfd < 0 ? -1 : accept(lfd, NULL, NULL);

	close(lfd);
	return fd;
}

/* Wait for the client's one-line command on the control connection. */
static int ctrl_expect(int ctrl, const char *what)
{
	char buf[16] = { 0 };
	size_t n = strlen(what);

	if (read_all(ctrl, buf, n) || memcmp(buf, what, n)) {
		fprintf(stderr, "server: expected %s on the control connection\n", what);
		return -1;
	}
	return 0;
}

static int netem(const char *how)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "tc qdisc %s dev eth0 root %s", how,
		 strcmp(how, "del") ? NETEM : "");
	return system(cmd) ? -1 : 0;
}

/* Accept an rdmasock and a TCP connection, then drop everything we send until told. */
static int serve_silent(int ctrl)
{
	int lrs = listen_on(rs_family_number(), PORT_SILENT_RS);
	int ltcp = listen_on(AF_INET, PORT_SILENT_TCP);
	int rs, tcp, err;

	if (lrs < 0 || ltcp < 0 || say_go(ctrl))
		return -1;
	rs = accept_one(lrs);
	tcp = accept_one(ltcp);
	if (rs < 0 || tcp < 0)
		return -1;
	/* Incoming packets still arrive: the client's "BACK" gets through. */
	err = system("tc qdisc add dev eth0 root netem loss 100%") ? -1 : 0;
	if (!err)
		err = ctrl_expect(ctrl, "BACK");
	if (system("tc qdisc del dev eth0 root"))
		err = -1;
	close(rs);
	close(tcp);
	return err;
}

static int echo_until_eof(int fd)
{
	char buf[65536];
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		if (write_all(fd, buf, n))
			return -1;
	shutdown(fd, SHUT_WR);
	return n;
}

/* On a failure: what the kernel said and which error counters moved, for the log. */
static void show_kernel_side(const char *who)
{
	fprintf(stderr, "%s: kernel log and non-zero error counters:\n", who);
	if (system("dmesg | grep -i rdma | tail -n 20 >&2; "
		   "grep -E 'err|proto|fatal|timeout' /proc/net/rdmasock_stat | grep -v ' 0 0$' >&2"))
		fprintf(stderr, "%s: could not show them\n", who);
}

/* Echo an rdmasock and a TCP connection through a lossy, reordering wire. */
static int serve_lossy(int ctrl)
{
	int lrs = listen_on(rs_family_number(), PORT_LOSSY_RS);
	int ltcp = listen_on(AF_INET, PORT_LOSSY_TCP);
	int rs, tcp, err;

	if (lrs < 0 || ltcp < 0 || say_go(ctrl))
		return -1;
	rs = accept_one(lrs);
	tcp = accept_one(ltcp);
	if (rs < 0 || tcp < 0 || ctrl_expect(ctrl, "LOSS"))
		return -1;
	err = netem("add");
	if (!err)
		err = write_all(ctrl, "LOSS", 4);
	if (!err) {
		err = echo_until_eof(rs);
		if (err) {
			fprintf(stderr, "server: rdmasock echo failed: %s\n", strerror(errno));
			show_kernel_side("server");
		}
	}
	if (!err)
		err = echo_until_eof(tcp);
	if (netem("del"))
		err = -1;
	close(rs);
	close(tcp);
	return err;
}

/* Echo, and die abruptly (no FIN, no DREQ: QEMU exits) mid-transfer. */
static int serve_then_die(int ctrl)
{
	const char *out = getenv("RDMASOCK_OUT") ? : "/tmp";
	char cmd[512], buf[65536];
	size_t echoed = 0;
	int lrs, fd;
	ssize_t n;

	lrs = listen_on(rs_family_number(), PORT_KILL);
	if (lrs < 0 || say_go(ctrl))
		return -1;
	fd = accept_one(lrs);
	if (fd < 0)
		return -1;
	while (echoed < KILL_AFTER && (n = recv(fd, buf, sizeof(buf), 0)) > 0) {
		if (write_all(fd, buf, n))
			return -1;
		echoed += n;
	}
	/* The run counts as passed on our side: record that, then vanish. */
	snprintf(cmd, sizeof(cmd), "dmesg > %s/dmesg.log; echo 0 > %s/rc; sync; "
		 "echo b > /proc/sysrq-trigger", out, out);
	return system(cmd) ? -1 : 0;
}

/* Echo an rdmasock connection; mid-transfer, drop our RoCE traffic: it must go on over TCP. */
static int serve_roce_drop(int ctrl)
{
	int lrs = listen_on(rs_family_number(), PORT_DROP);
	size_t echoed = 0;
	bool dropping = false;
	char buf[65536];
	int fd, err = 0;
	ssize_t n;

	if (lrs < 0 || say_go(ctrl))
		return -1;
	fd = accept_one(lrs);
	if (fd < 0)
		return -1;
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) {
		if (write_all(fd, buf, n)) {
			err = -1;
			break;
		}
		echoed += n;
		if (!dropping && echoed >= DROP_AFTER) {
			dropping = true;
			if (system(DROP_ROCE))
				err = -1;
		}
	}
	if (n < 0) {
		fprintf(stderr, "server: echo failed after %zu bytes: %s\n", echoed, strerror(errno));
		show_kernel_side("server");
		err = -1;
	}
	shutdown(fd, SHUT_WR);
	if (system("tc qdisc del dev eth0 root"))
		err = -1;
	fprintf(stderr, "server: echoed %zu bytes, mode %d, reason %d\n", echoed,
		rs_getint(fd, RDMASOCK_MODE), rs_getint(fd, RDMASOCK_FALLBACK_REASON));
	if (rs_getint(fd, RDMASOCK_MODE) != RDMASOCK_MODE_TCP ||
	    rs_getint(fd, RDMASOCK_FALLBACK_REASON) != RDMASOCK_REASON_RDMA_LOST)
		err = -1;
	close(fd);
	close(lrs);
	return err;
}

static int serve_rdma(int ctrl)
{
	return serve(ctrl, rs_family_number(), PORT_RDMA);
}

static int serve_nomod(int ctrl)
{
	return serve(ctrl, AF_INET, PORT_NOMOD);
}

static int serve_norxe(int ctrl)
{
	return serve(ctrl, AF_INET, PORT_NORXE);
}

/* The server halves, by the name of their client half (the TEST_F below). */
static const struct twovm_case {
	const char *name;
	bool rxe, module;	/* the server's state the case needs: rxe0, rdmasock loaded */
	int (*serve)(int ctrl);
} cases[] = {
	{ "rdma_across_the_wire", true, true, serve_rdma },
	{ "silent_peer_detected_by_keepalive", true, true, serve_silent },
	{ "lossy_reordering_wire_keeps_streams_intact", true, true, serve_lossy },
	{ "peer_without_rdmasock", true, false, serve_nomod },
	{ "peer_without_rdma_device", false, false, serve_norxe },
	{ "roce_dropped_mid_transfer_resumes_over_tcp", true, true, serve_roce_drop },
	{ "peer_vm_killed_mid_transfer", true, true, serve_then_die },
};

/* Put the server in the state a case needs: rxe0 there or not, rdmasock loaded or not. */
static int server_state(bool rxe, bool module)
{
	bool has_module = !access("/sys/module/rdmasock", F_OK);
	bool has_rxe = !access("/sys/class/infiniband/rxe0", F_OK);
	char cmd[512];

	/* Closed connections finish their teardown in the background: wait for it to end. */
	if (has_module && !module &&
	    system("for i in $(seq 150); do [ \"$(cat /sys/module/rdmasock/refcnt)\" = 0 ] && break;"
		   " sleep 0.1; done; rmmod rdmasock"))
		return -1;
	if (has_rxe && !rxe && system("rdma link delete rxe0"))
		return -1;
	/* As guest-init: its GIDs (our addresses) come asynchronously. */
	snprintf(cmd, sizeof(cmd), "rdma link add rxe0 type rxe netdev eth0 && %s/selftests/vm/wait-gids",
		 getenv("RDMASOCK_TOP") ? : ".");
	if (!has_rxe && rxe && system(cmd))
		return -1;
	snprintf(cmd, sizeof(cmd), "insmod %s", getenv("RDMASOCK_MODULE") ? : "");
	if (!has_module && module && system(cmd))
		return -1;
	return 0;
}

/* Read the client's one-line case name from @ctrl. */
static int read_case(int ctrl, char *name, size_t size)
{
	size_t n = 0;

	while (n + 1 < size && read(ctrl, &name[n], 1) == 1) {
		if (name[n] == '\n') {
			name[n] = 0;
			return 0;
		}
		n++;
	}
	return -1;
}

/* Serve the case each control connection names, until "END". */
static int server_main(void)
{
	int lctrl = listen_on(AF_INET, PORT_CTRL);

	if (lctrl < 0)
		return 1;
	for (;;) {
		const struct twovm_case *c = NULL;
		int ctrl = accept(lctrl, NULL, NULL), err;
		char name[96];

		if (ctrl < 0 || read_case(ctrl, name, sizeof(name))) {
			perror("server: control connection");
			return 1;
		}
		if (!strcmp(name, "END"))
			return 0;
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			if (!strcmp(cases[i].name, name))
				c = &cases[i];
		if (!c) {
			fprintf(stderr, "server: no case %s\n", name);
			return 1;
		}
		fprintf(stderr, "server: case %s\n", name);
		err = server_state(c->rxe, c->module);
		if (!err)
			err = c->serve(ctrl);
		close(ctrl);
		if (err) {
			fprintf(stderr, "server: case %s failed\n", name);
			return 1;
		}
	}
}

/* ---- client role ---- */

/* A plain TCP connection to @port of the peer, retried for up to a minute while it comes up. */
static int tcp_connect_when_up(unsigned short port)
{
	struct sockaddr_storage ss;
	socklen_t len = peer_addr(&ss, port);

	for (int i = 0; i < 600; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (!connect(fd, (struct sockaddr *)&ss, len))
			return fd;
		close(fd);
		usleep(100000);
	}
	return -1;
}

/*
 * Start the case of this test: open the control connection, name the case (the test's own name),
 * and wait for the server's GO.  Returns the control connection.
 */
static int case_begin(struct __test_metadata *_metadata)
{
	int ctrl = tcp_connect_when_up(PORT_CTRL);
	char go[2];

	if (ctrl < 0 || write_all(ctrl, _metadata->name, strlen(_metadata->name)) ||
	    write_all(ctrl, "\n", 1) || read_all(ctrl, go, 2) || memcmp(go, "GO", 2)) {
		close(ctrl);
		return -1;
	}
	return ctrl;
}

static int quit_phase(unsigned short port)
{
	struct sockaddr_storage ss;
	socklen_t len = peer_addr(&ss, port);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	char buf[4];
	int err = connect(fd, (struct sockaddr *)&ss, len) || write_all(fd, "QUIT", 4) ||
		  shutdown(fd, SHUT_WR) || read_all(fd, buf, 4);

	close(fd);
	return err ? -1 : 0;
}

static int rs_connect_peer(unsigned short port)
{
	struct sockaddr_storage ss;
	socklen_t len = peer_addr(&ss, port);
	int fd = socket(rs_family_number(), SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, len)) {
		close(fd);
		return -1;
	}
	return fd;
}

struct pump {
	int fd;
	int err;
};

static void *pump_pattern(void *p)
{
	struct pump *a = p;
	unsigned char buf[50000];
	size_t done = 0;

	while (done < STREAM_BYTES) {
		size_t n = STREAM_BYTES - done < sizeof(buf) ? STREAM_BYTES - done : sizeof(buf);

		for (size_t i = 0; i < n; i++)
			buf[i] = pattern_byte(done + i, 9);
		if (write_all(a->fd, buf, n)) {
			a->err = errno;
			return NULL;
		}
		done += n;
	}
	shutdown(a->fd, SHUT_WR);
	return NULL;
}

/* Every case's client half is a test of one fixture, run in this order unless -t picks some. */
FIXTURE(wire) {
	int unused;
};

FIXTURE_SETUP(wire)
{
}

FIXTURE_TEARDOWN(wire)
{
}

TEST_F(wire, rdma_across_the_wire)
{
	int ctrl = case_begin(_metadata);
	struct pump p = { 0 };
	unsigned char buf[65536];
	size_t done = 0;
	pthread_t t;
	ssize_t n;

	ASSERT_LE(0, ctrl);
	p.fd = rs_connect_peer(PORT_RDMA);
	ASSERT_LE(0, p.fd);
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(p.fd, RDMASOCK_MODE));
	ASSERT_EQ(0, pthread_create(&t, NULL, pump_pattern, &p));
	while ((n = recv(p.fd, buf, sizeof(buf), 0)) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			ASSERT_EQ(pattern_byte(done + i, 9), buf[i]) {
				TH_LOG("at %zu", done + i);
			}
		}
		done += n;
	}
	ASSERT_EQ(0, n);
	pthread_join(t, NULL);
	ASSERT_EQ(0, p.err);
	ASSERT_EQ(STREAM_BYTES, done);
	close(p.fd);
	ASSERT_EQ(0, quit_phase(PORT_RDMA));
	close(ctrl);
}

static int tcp_connect_peer(unsigned short port)
{
	struct sockaddr_storage ss;
	socklen_t len = peer_addr(&ss, port);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, len)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void set_keepalive(struct __test_metadata *_metadata, int fd)
{
	int one = 1, opts[3] = { TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT }, vals[3] = { 1, 1, 3 };

	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, setsockopt(fd, IPPROTO_TCP, opts[i], &vals[i], sizeof(int)));
	ASSERT_EQ(0, setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)));
}

/* Blocking read on an idle connection: returns -errno, 0 at EOF, 1 if data came. */
static void *read_outcome(void *p)
{
	int *fd = p;
	char c;
	ssize_t n = recv(*fd, &c, 1, 0);

	*fd = n < 0 ? -errno : (int)n;
	return NULL;
}

TEST_F_TIMEOUT(wire, silent_peer_detected_by_keepalive, 120)
{
	int ctrl = case_begin(_metadata), fds[2], res[2];
	long long timeouts = rs_counter("keepalive_timeouts");
	pthread_t t[2];

	ASSERT_LE(0, ctrl);
	fds[0] = rs_connect_peer(PORT_SILENT_RS);
	fds[1] = tcp_connect_peer(PORT_SILENT_TCP);
	ASSERT_LE(0, fds[0]);
	ASSERT_LE(0, fds[1]);
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(fds[0], RDMASOCK_MODE));
	for (int i = 0; i < 2; i++) {
		set_keepalive(_metadata, fds[i]);
		res[i] = fds[i];
		ASSERT_EQ(0, pthread_create(&t[i], NULL, read_outcome, &res[i]));
	}
	/* The server now drops all it sends: both idle readers must learn the peer is gone. */
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	EXPECT_EQ(-ETIMEDOUT, res[0]);
	EXPECT_EQ(-ETIMEDOUT, res[1]);
	EXPECT_EQ(timeouts + 1, rs_counter("keepalive_timeouts"));
	ASSERT_EQ(0, write_all(ctrl, "BACK", 4));
	close(fds[0]);
	close(fds[1]);
	close(ctrl);
}

struct echo_check {
	int fd;
	size_t len;
	int err;
};

/* Write @len pattern bytes then SHUT_WR, from a thread, while the caller checks the echo. */
static void *echo_writer(void *p)
{
	struct echo_check *e = p;

	if (write_pattern(e->fd, e->len, 5)) {
		e->err = errno;
		return NULL;
	}
	shutdown(e->fd, SHUT_WR);
	return NULL;
}

/*
 * Bytes of the echo that matched the pattern, up to the first mismatch or the end; *last gets the
 * last recv() result as -errno, 0 (EOF) or 1.
 */
static size_t echo_verified_last(int fd, size_t len, int *last)
{
	unsigned char buf[65536];
	size_t done = 0;
	ssize_t n = 1;

	while (done < len && (n = recv(fd, buf, sizeof(buf), 0)) > 0) {
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != pattern_byte(done + i, 5))
				return done + i;
		done += n;
	}
	*last = n < 0 ? -errno : n > 0;
	return done;
}

static size_t echo_verified(int fd, size_t len)
{
	int last;

	return echo_verified_last(fd, len, &last);
}

static void lossy_echo(struct __test_metadata *_metadata, int fd)
{
	struct echo_check e = { .fd = fd, .len = scaled(LOSSY_BYTES) };
	pthread_t t;
	char c;

	size_t got;

	ASSERT_EQ(0, pthread_create(&t, NULL, echo_writer, &e));
	got = echo_verified(fd, e.len);
	EXPECT_EQ(e.len, got);
	EXPECT_EQ(0, recv(fd, &c, 1, 0));
	pthread_join(t, NULL);
	EXPECT_EQ(0, e.err);
	if (got != e.len || e.err)
		show_kernel_side("client");
}

TEST_F_TIMEOUT(wire, lossy_reordering_wire_keeps_streams_intact, 600)
{
	int ctrl = case_begin(_metadata), rs, tcp;
	char buf[4];

	ASSERT_LE(0, ctrl);
	rs = rs_connect_peer(PORT_LOSSY_RS);
	tcp = tcp_connect_peer(PORT_LOSSY_TCP);
	ASSERT_LE(0, rs);
	ASSERT_LE(0, tcp);
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(rs, RDMASOCK_MODE));
	ASSERT_EQ(0, write_all(ctrl, "LOSS", 4));
	ASSERT_EQ(0, read_all(ctrl, buf, 4));
	ASSERT_EQ(0, system("tc qdisc add dev eth0 root " NETEM));
	lossy_echo(_metadata, rs);
	lossy_echo(_metadata, tcp);
	EXPECT_EQ(0, system("tc qdisc del dev eth0 root"));
	EXPECT_EQ(RDMASOCK_MODE_RDMA, rs_getint(rs, RDMASOCK_MODE));
	close(rs);
	close(tcp);
	close(ctrl);
}

static void echo_once(struct __test_metadata *_metadata, int fd)
{
	char buf[5];

	ASSERT_EQ(5, send(fd, "hello", 5, 0));
	ASSERT_EQ(0, read_all(fd, buf, 5));
	ASSERT_EQ(0, memcmp(buf, "hello", 5));
}

TEST_F(wire, peer_without_rdmasock)
{
	int ctrl = case_begin(_metadata), fd;

	ASSERT_LE(0, ctrl);
	fd = rs_connect_peer(PORT_NOMOD);
	ASSERT_LE(0, fd);
	ASSERT_EQ(RDMASOCK_MODE_TCP, rs_getint(fd, RDMASOCK_MODE));
	ASSERT_EQ(RDMASOCK_REASON_PEER_REJECT, rs_getint(fd, RDMASOCK_FALLBACK_REASON));
	echo_once(_metadata, fd);
	close(fd);
	ASSERT_EQ(0, quit_phase(PORT_NOMOD));
	close(ctrl);
}

TEST_F(wire, peer_without_rdma_device)
{
	int ctrl = case_begin(_metadata), fd;

	ASSERT_LE(0, ctrl);
	fd = rs_connect_peer(PORT_NORXE);
	ASSERT_LE(0, fd);
	ASSERT_EQ(RDMASOCK_MODE_TCP, rs_getint(fd, RDMASOCK_MODE));
	ASSERT_EQ(RDMASOCK_REASON_TIMEOUT, rs_getint(fd, RDMASOCK_FALLBACK_REASON));
	echo_once(_metadata, fd);
	close(fd);
	/* The next connect skips the wait: the negative cache remembers. */
	fd = rs_connect_peer(PORT_NORXE);
	ASSERT_LE(0, fd);
	ASSERT_EQ(RDMASOCK_REASON_NEG_CACHE, rs_getint(fd, RDMASOCK_FALLBACK_REASON));
	echo_once(_metadata, fd);
	close(fd);
	/* Fallback forbidden: the cache is not consulted, and the unanswered attempt times out. */
	{
		struct sockaddr_storage ss;
		socklen_t len = peer_addr(&ss, PORT_NORXE);
		int one = 1;

		fd = socket(rs_family_number(), SOCK_STREAM, 0);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, setsockopt(fd, SOL_RDMASOCK, RDMASOCK_NO_FALLBACK, &one, sizeof(one)));
		ASSERT_EQ(-1, connect(fd, (struct sockaddr *)&ss, len));
		ASSERT_EQ(ETIMEDOUT, errno);
		close(fd);
	}
	ASSERT_EQ(0, quit_phase(PORT_NORXE));
	close(ctrl);
}

/*
 * The server drops its RoCE traffic (UDP 4791) mid-transfer, not its TCP: RC retries run out at
 * both ends, and the connection goes on over TCP, every byte of the echo in order, no error.
 */
TEST_F_TIMEOUT(wire, roce_dropped_mid_transfer_resumes_over_tcp, 300)
{
	int ctrl = case_begin(_metadata), last;
	long long resumes = rs_counter("resumes");
	struct echo_check e = { .len = scaled(DROP_BYTES) };
	pthread_t t;
	size_t got;

	ASSERT_LE(0, ctrl);
	e.fd = rs_connect_peer(PORT_DROP);
	ASSERT_LE(0, e.fd);
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(e.fd, RDMASOCK_MODE));
	ASSERT_EQ(0, pthread_create(&t, NULL, echo_writer, &e));
	got = echo_verified_last(e.fd, e.len, &last);
	pthread_join(t, NULL);
	TH_LOG("echo verified up to %zu of %zu; last recv %d, writer errno %d", got, e.len, last,
	       e.err);
	EXPECT_EQ(e.len, got);
	EXPECT_EQ(0, e.err);
	if (got == e.len)
		EXPECT_EQ(0, echo_verified_last(e.fd, 1, &last));	/* then EOF */
	EXPECT_EQ(RDMASOCK_MODE_TCP, rs_getint(e.fd, RDMASOCK_MODE));
	EXPECT_EQ(RDMASOCK_REASON_RDMA_LOST, rs_getint(e.fd, RDMASOCK_FALLBACK_REASON));
	EXPECT_EQ(resumes + 1, rs_counter("resumes"));
	if (got != e.len || e.err)
		show_kernel_side("client");
	close(e.fd);
	close(ctrl);
}

/* Write without end until the connection fails; the error is left in err. */
static void *endless_writer(void *p)
{
	struct echo_check *e = p;
	unsigned char buf[40000];
	size_t done = 0;

	for (;;) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = pattern_byte(done + i, 5);
		if (write_all(e->fd, buf, sizeof(buf))) {
			e->err = errno;
			return NULL;
		}
		done += sizeof(buf);
	}
}

TEST_F_TIMEOUT(wire, peer_vm_killed_mid_transfer, 300)
{
	int ctrl = case_begin(_metadata), last;
	struct echo_check e = { 0 };
	pthread_t t;
	size_t got;

	ASSERT_LE(0, ctrl);
	e.fd = rs_connect_peer(PORT_KILL);
	ASSERT_LE(0, e.fd);
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(e.fd, RDMASOCK_MODE));
	ASSERT_EQ(0, pthread_create(&t, NULL, endless_writer, &e));
	/* No keepalive: RC retries (and probes while the window is shut) must end both calls. */
	got = echo_verified_last(e.fd, SIZE_MAX, &last);
	pthread_join(t, NULL);
	TH_LOG("echo verified up to %zu; reader got %d, writer errno %d", got, last, e.err);
	EXPECT_LE(KILL_AFTER, got);
	EXPECT_TRUE(e.err == ETIMEDOUT || e.err == ECONNRESET || e.err == EPIPE);
	/* The error is reported once (as TCP's): to the reader, or to the writer and EOF here. */
	EXPECT_TRUE(last == -ETIMEDOUT || last == -ECONNRESET ||
		    (last == 0 && (e.err == ETIMEDOUT || e.err == ECONNRESET)));
	close(e.fd);
	close(ctrl);
}

/* After the client's cases: the server role may exit (unless a case killed its VM). */
static void say_end(void)
{
	struct sockaddr_storage ss;
	socklen_t len = peer_addr(&ss, PORT_CTRL);
	struct timeval tv = { .tv_sec = 2 };	/* a dead peer's SYNs go nowhere: do not wait */
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd >= 0 && !setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) &&
	    !connect(fd, (struct sockaddr *)&ss, len))
		write_all(fd, "END\n", 4);
	close(fd);
}

#include "harness_main.h"

int main(int argc, char **argv)
{
	const char *role = getenv("RDMASOCK_VM_ROLE");
	int ret;

	if (role && !strcmp(role, "server"))
		return server_main();
	ret = rs_test_main(argc, argv);
	if (role && !strcmp(role, "client"))
		say_end();
	return ret;
}
