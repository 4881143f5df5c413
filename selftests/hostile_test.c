// SPDX-License-Identifier: GPL-2.0
/*
 * A hostile peer (hostile_peer, user-space verbs) against a kernel rdmasock listener.  Malformed
 * hellos are rejected; protocol violations reset that one connection (EPROTO, counted) and nothing
 * else; a peer that vanishes mid-transfer gives ECONNRESET.  The listener keeps serving afterwards
 * and the VM runner fails the run on any kernel warning.
 */
#define _GNU_SOURCE
#include <sys/wait.h>
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
	long long violations = rs_counter("peer_protocol_errors");
	pid_t pid = run_peer(&self->ss, variant->what);
	int c, s;
	char buf[64];

	if (variant->rejected) {
		ASSERT_EQ(0, peer_status(pid));
		ASSERT_EQ(0, poll_one(self->lfd, POLLIN, 0));
		ASSERT_EQ(violations + 1, rs_counter("peer_protocol_errors"));
	} else {
		ASSERT_EQ(POLLIN, poll_one(self->lfd, POLLIN, 20000));
		s = accept(self->lfd, NULL, NULL);
		ASSERT_LE(0, s);
		ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(s, RDMASOCK_MODE));
		if (variant->read_after)
			ASSERT_EQ(0, peer_status(pid));
		/*
		 * Whatever valid bytes (or FIN) came before the violation may be read; then the
		 * error, within bounds.
		 */
		static char big[1 << 16];
		ssize_t n = 0;

		for (int i = 0; i < 1000; i++) {
			ASSERT_NE(0, poll_one(s, POLLIN, 20000));
			n = recv(s, big, sizeof(big), 0);
			if (n < 0)
				break;
			if (n == 0)
				usleep(10000);	/* EOF first (double_fin): the reset follows */
		}
		ASSERT_EQ(-1, n);
		ASSERT_EQ(variant->err, errno);
		if (!variant->read_after)
			ASSERT_EQ(0, peer_status(pid));
		if (variant->counted)
			ASSERT_LT(violations, rs_counter("peer_protocol_errors"));
		ASSERT_EQ(-1, send(s, "x", 1, MSG_NOSIGNAL));
		close(s);
	}
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

TEST_HARNESS_MAIN
