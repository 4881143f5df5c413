// SPDX-License-Identifier: GPL-2.0
/*
 * Observability: every field of RDMASOCK_INFO, TCP_INFO, /proc/net/rdmasock, the counters,
 * the tracepoints and rdmasock-stat is checked against what the test itself did.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "lib.h"
#include "kselftest_harness.h"

#define N_BYTES 100000

/* The /proc/net/rdmasock line of the socket @fd (found by inode), or -1. */
static int proc_line(int fd, char *out, size_t size)
{
	struct stat st;
	char line[512];
	FILE *f;
	int found = -1;

	if (fstat(fd, &st) || !(f = fopen("/proc/net/rdmasock", "r")))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *last = strrchr(line, ' ');

		if (last && strtoull(last + 1, NULL, 10) == st.st_ino) {
			snprintf(out, size, "%s", line);
			found = 0;
		}
	}
	fclose(f);
	return found;
}

static struct rdmasock_info info_of(int fd)
{
	struct rdmasock_info info = { 0 };
	socklen_t len = sizeof(info);

	getsockopt(fd, SOL_RDMASOCK, RDMASOCK_INFO, &info, &len);
	return info;
}

static void addr_str(int fd, int peer, char *buf, size_t size)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	char ip[INET_ADDRSTRLEN];

	(peer ? getpeername : getsockname)(fd, (struct sockaddr *)&sin, &len);
	inet_ntop(AF_INET, &sin.sin_addr, ip, sizeof(ip));
	snprintf(buf, size, "%s:%u", ip, ntohs(sin.sin_port));
}

FIXTURE(obs) {
	int c, s;
};

FIXTURE_SETUP(obs)
{
	static char buf[N_BYTES];
	int queued = 0;

	ASSERT_EQ(0, make_pair(CARRIER_RDMASOCK, AF_INET, &self->c, &self->s));
	ASSERT_EQ(N_BYTES, send(self->c, buf, N_BYTES, MSG_WAITALL));
	for (int i = 0; i < 500 && queued < N_BYTES; i++) {
		ASSERT_EQ(0, ioctl(self->s, FIONREAD, &queued));
		if (queued < N_BYTES)
			usleep(10000);
	}
	ASSERT_EQ(N_BYTES, queued);
}

FIXTURE_TEARDOWN(obs)
{
	close(self->c);
	close(self->s);
}

TEST_F(obs, info_matches_what_was_done)
{
	struct rdmasock_info c = info_of(self->c), s = info_of(self->s);

	ASSERT_EQ(RDMASOCK_INFO_VERSION, c.version);
	ASSERT_EQ(RDMASOCK_MODE_RDMA, c.mode);
	ASSERT_EQ(RDMASOCK_REASON_NONE, c.fallback_reason);
	ASSERT_EQ(1, c.state);		/* TCP_ESTABLISHED */
	ASSERT_EQ(N_BYTES, c.bytes_sent);
	ASSERT_EQ(0, c.bytes_received);
	ASSERT_EQ(N_BYTES, s.bytes_received);
	ASSERT_EQ(N_BYTES, s.rx_queued);
	ASSERT_NE(0, c.local_qpn);
	ASSERT_EQ(s.local_qpn, c.remote_qpn);
	ASSERT_EQ(c.local_qpn, s.remote_qpn);
	ASSERT_EQ(s.rx_ring_size, c.tx_ring_size);
	ASSERT_EQ(0, c.protocol_errors);
	/* A shorter buffer gets a prefix: the struct only ever grows. */
	struct rdmasock_info small;
	socklen_t len = 8;

	ASSERT_EQ(0, getsockopt(self->c, SOL_RDMASOCK, RDMASOCK_INFO, &small, &len));
	ASSERT_EQ(8, len);
	ASSERT_EQ(RDMASOCK_MODE_RDMA, small.mode);
}

TEST_F(obs, tcp_info_still_answers)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	ASSERT_EQ(0, getsockopt(self->s, IPPROTO_TCP, TCP_INFO, &ti, &len));
	ASSERT_EQ(1, ti.tcpi_state);	/* glibc's struct stops before the byte counts */
}

TEST_F(obs, proc_line_matches)
{
	char line[512], local[64], peer[64], want_l[64], want_p[64], mode[16], reason[16], dev[32];
	unsigned int st, port, lqpn, rqpn;
	unsigned long long tx, rx;
	struct rdmasock_info info = info_of(self->c);

	ASSERT_EQ(0, proc_line(self->c, line, sizeof(line)));
	ASSERT_EQ(11, sscanf(line, "%*d: %63s %63s %x %15s %15s %31s %u %u %u %llu %llu",
			     local, peer, &st, mode, reason, dev, &port, &lqpn, &rqpn, &tx, &rx))
		TH_LOG("%s", line);
	addr_str(self->c, 0, want_l, sizeof(want_l));
	addr_str(self->c, 1, want_p, sizeof(want_p));
	ASSERT_STREQ(want_l, local);
	ASSERT_STREQ(want_p, peer);
	ASSERT_EQ(1, st);
	ASSERT_STREQ("rdma", mode);
	ASSERT_STREQ("none", reason);
	ASSERT_STREQ("rxe0", dev);
	ASSERT_EQ(1, port);
	ASSERT_EQ(info.local_qpn, lqpn);
	ASSERT_EQ(info.remote_qpn, rqpn);
	ASSERT_EQ(N_BYTES, tx);
	ASSERT_EQ(0, rx);
}

/* Two python3 start-ups: beyond the default 30 s on the debug kernel under TCG. */
TEST_F_TIMEOUT(obs, rdmasock_stat_shows_it, 180)
{
	char cmd[256], out[4096] = "", want[64];
	FILE *p;
	size_t n;

	addr_str(self->c, 0, want, sizeof(want));
	snprintf(cmd, sizeof(cmd), "%s/build/userlib/rdmasock-stat -e --port %s", getenv("RDMASOCK_TOP"),
		 strrchr(want, ':') + 1);
	p = popen(cmd, "r");
	ASSERT_NE(NULL, p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	ASSERT_EQ(0, pclose(p));
	ASSERT_NE(NULL, strstr(out, want)) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "rdma"));
	ASSERT_NE(NULL, strstr(out, "100000"));
	snprintf(cmd, sizeof(cmd), "%s/build/userlib/rdmasock-stat -s -j", getenv("RDMASOCK_TOP"));
	p = popen(cmd, "r");
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	ASSERT_EQ(0, pclose(p));
	ASSERT_NE(NULL, strstr(out, "\"connections_rdma\""));
}

TEST(counters_count_and_reset)
{
	int c, s, lfd, one = 1;
	struct sockaddr_storage ss;
	socklen_t len;
	long long rdma = rs_counter("connections_rdma"), forced = rs_counter("fallback_forced");
	long long peer_tcp = rs_counter("fallback_peer_tcp"), sent = rs_counter("bytes_sent");
	char line[512];

	ASSERT_EQ(0, make_pair(CARRIER_RDMASOCK, AF_INET, &c, &s));
	ASSERT_EQ(rdma + 2, rs_counter("connections_rdma"));
	ASSERT_EQ(3, send(c, "abc", 3, 0));
	ASSERT_EQ(sent + 3, rs_counter("bytes_sent"));
	close(c);
	close(s);

	lfd = make_listener(CARRIER_RDMASOCK, AF_INET, &ss, &len);
	c = socket(rs_family_number(), SOCK_STREAM, 0);
	ASSERT_EQ(0, setsockopt(c, SOL_RDMASOCK, RDMASOCK_FORCE_TCP, &one, sizeof(one)));
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&ss, len));
	s = accept(lfd, NULL, NULL);
	ASSERT_EQ(forced + 1, rs_counter("fallback_forced"));
	ASSERT_EQ(peer_tcp + 1, rs_counter("fallback_peer_tcp"));
	ASSERT_EQ(0, proc_line(c, line, sizeof(line)));
	ASSERT_NE(NULL, strstr(line, " tcp forced ")) TH_LOG("%s", line);
	ASSERT_EQ(0, proc_line(s, line, sizeof(line)));
	ASSERT_NE(NULL, strstr(line, " tcp peer_tcp ")) TH_LOG("%s", line);
	ASSERT_EQ(0, proc_line(lfd, line, sizeof(line)));
	ASSERT_NE(NULL, strstr(line, " 0A listen ")) TH_LOG("%s", line);
	close(c);
	close(s);
	close(lfd);

	/* Only a privileged user may reset. */
	pid_t pid = fork();

	if (!pid) {
		if (setuid(65534))
			_exit(2);
		_exit(open("/proc/net/rdmasock_stat", O_WRONLY) < 0 && errno == EACCES ? 0 : 1);
	}
	int status;

	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	int fd = open("/proc/net/rdmasock_stat", O_WRONLY);

	ASSERT_LE(0, fd);
	ASSERT_EQ(-1, write(fd, "bogus", 5));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(5, write(fd, "reset", 5));
	close(fd);
	ASSERT_EQ(0, rs_counter("fallback_forced"));
	ASSERT_EQ(0, rs_counter("connections_rdma"));
}

TEST(tracepoints_fire)
{
	const char *t = "/sys/kernel/tracing";
	char path[128], buf[65536];
	int c, s, fd;
	ssize_t n;

	/*
	 * No comm recording: it would hook the scheduler tracepoints too, a machine-wide code patch
	 * that is needlessly slow under emulation.
	 */
	snprintf(path, sizeof(path), "%s/options/record-cmd", t);
	write_file(path, "0");
	snprintf(path, sizeof(path), "%s/events/rdmasock/enable", t);
	ASSERT_EQ(0, write_file(path, "1"));
	snprintf(path, sizeof(path), "%s/trace", t);
	ASSERT_EQ(0, write_file(path, ""));
	ASSERT_EQ(0, make_pair(CARRIER_RDMASOCK, AF_INET, &c, &s));
	ASSERT_EQ(0, shutdown(c, SHUT_WR));
	close(c);
	close(s);
	fd = open(path, O_RDONLY);
	ASSERT_LE(0, fd);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ASSERT_LT(0, n);
	buf[n] = 0;
	snprintf(path, sizeof(path), "%s/events/rdmasock/enable", t);
	write_file(path, "0");
	ASSERT_NE(NULL, strstr(buf, "rdmasock_connect:"));
	ASSERT_NE(NULL, strstr(buf, "rdmasock_established:"));
	ASSERT_NE(NULL, strstr(buf, "rdmasock_accept:"));
	ASSERT_NE(NULL, strstr(buf, "rdmasock_shutdown:"));
}

#include "harness_main.h"
RS_TEST_MAIN
