// SPDX-License-Identifier: GPL-2.0
/*
 * Device removal: `rdma link delete` while connections carry data.  Every socket on the device
 * must fail promptly with an error (no hang), the deletion must complete, a listener bound to the
 * device's address keeps serving TCP, and once the device is back new connections use RDMA again.
 * Runs last: it takes rxe0 away and puts it back.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/wait.h>
#include "lib.h"
#include "kselftest_harness.h"

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

/* Wait (bounded) until rxe0 has the GID of our IPv4 address again. */
static int wait_for_gid(void)
{
	unsigned int a, b, c, d;
	char cmd[256];

	if (sscanf(getenv("RDMASOCK_ADDR") ? : "", "%u.%u.%u.%u", &a, &b, &c, &d) != 4)
		return -1;
	snprintf(cmd, sizeof(cmd),
		 "grep -qi 'ffff:%02x%02x:%02x%02x' /sys/class/infiniband/rxe0/ports/1/gids/* 2>/dev/null",
		 a, b, c, d);
	for (int i = 0; i < 100; i++) {
		if (!run(cmd))
			return 0;
		usleep(50000);
	}
	return -1;
}

TEST(delete_device_during_transfer)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int lfd, c, s, t, ts;
	struct flow out, in;
	pthread_t to, ti;
	long long removals = rs_counter("device_removals");

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
	ASSERT_EQ(0, run("timeout 60 rdma link delete rxe0"));
	pthread_join(to, NULL);
	pthread_join(ti, NULL);
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
	ASSERT_EQ(0, run("rdma link add rxe0 type rxe netdev eth0"));
	ASSERT_EQ(0, wait_for_gid());
	ASSERT_EQ(0, make_pair(CARRIER_RDMASOCK, AF_INET, &c, &s));
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c, RDMASOCK_MODE));
	ASSERT_EQ(5, send(c, "again", 5, 0));
	char buf[5];

	ASSERT_EQ(5, recv(s, buf, 5, MSG_WAITALL));
	close(c);
	close(s);
}

#include "harness_main.h"
RS_TEST_MAIN
