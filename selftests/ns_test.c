// SPDX-License-Identifier: GPL-2.0
/*
 * Privilege and network namespaces.  An unprivileged user can use rdmasock sockets as TCP ones
 * (TCP is the oracle) but cannot bind a port below 1024 or change a tunable; a socket in a fresh
 * network namespace (no RDMA device there) works through the TCP fallback, sees only its own
 * namespace in /proc, and deleting the namespace leaves no socket and no module reference behind.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/wait.h>
#include "lib.h"
#include "kselftest_harness.h"

#define NOBODY		65534
#define REFCNT_PATH	"/sys/module/rdmasock/refcnt"

FIXTURE(priv) {
	int unused;
};

FIXTURE_VARIANT(priv) {
	enum carrier carrier;
	int af;
};

CARRIER_VARIANTS(priv);

/* A tunable of the carrier's that only a privileged user may change. */
static const char *carrier_tunable(enum carrier c)
{
	return c == CARRIER_TCP ? "/proc/sys/net/ipv4/tcp_keepalive_time" :
				  "/sys/module/rdmasock/parameters/connect_timeout_ms";
}

FIXTURE_SETUP(priv)
{
	/* The harness runs each test in its own process: dropping privileges stays in it. */
	ASSERT_EQ(0, setgroups(0, NULL));
	ASSERT_EQ(0, setgid(NOBODY));
	ASSERT_EQ(0, setuid(NOBODY));
	ASSERT_NE(0, geteuid());
}

FIXTURE_TEARDOWN(priv)
{
}

TEST_F(priv, unprivileged_user_connects_but_cannot_bind_low_ports)
{
	struct sockaddr_storage ss;
	socklen_t len = host_addr(variant->af, &ss, 80);
	int fd = carrier_socket(variant->carrier, variant->af, SOCK_STREAM), c, s;
	char buf[2];

	ASSERT_LE(0, fd);
	ASSERT_EQ(-1, bind(fd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(EACCES, errno);
	close(fd);
	ASSERT_EQ(0, make_pair(variant->carrier, variant->af, &c, &s));
	ASSERT_TRUE(carried_as_expected(variant->carrier, c));
	ASSERT_TRUE(carried_as_expected(variant->carrier, s));
	ASSERT_EQ(2, send(c, "hi", 2, 0));
	ASSERT_EQ(0, read_all(s, buf, 2));
	ASSERT_EQ(0, memcmp(buf, "hi", 2));
	close(c);
	close(s);
}

TEST_F(priv, unprivileged_user_cannot_change_tunables)
{
	ASSERT_EQ(-1, open(carrier_tunable(variant->carrier), O_WRONLY));
	ASSERT_EQ(EACCES, errno);
}

/* ---- network namespaces ---- */

#define CHILD_CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "netns child: %s failed (errno %d)\n", #cond, errno); \
		_exit(1); \
	} \
} while (0)

/* In a new network namespace: an rdmasock pair over its loopback, through the TCP fallback. */
static void netns_child(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int fam = rs_family_number(), l, c, s;
	char buf[4];

	CHILD_CHECK(unshare(CLONE_NEWNET) == 0);
	CHILD_CHECK(system("ip link set lo up") == 0);
	CHILD_CHECK(proc_sockets() == 0);	/* the parent's sockets are not ours to see */
	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	l = socket(fam, SOCK_STREAM, 0);
	CHILD_CHECK(l >= 0);
	CHILD_CHECK(bind(l, (struct sockaddr *)&sin, len) == 0 && listen(l, 4) == 0);
	CHILD_CHECK(getsockname(l, (struct sockaddr *)&sin, &len) == 0);
	c = socket(fam, SOCK_STREAM, 0);
	CHILD_CHECK(connect(c, (struct sockaddr *)&sin, len) == 0);
	s = accept(l, NULL, NULL);
	CHILD_CHECK(s >= 0);
	CHILD_CHECK(rs_getint(c, RDMASOCK_MODE) == RDMASOCK_MODE_TCP);
	CHILD_CHECK(rs_getint(c, RDMASOCK_FALLBACK_REASON) == RDMASOCK_REASON_NO_DEVICE);
	CHILD_CHECK(send(c, "ping", 4, 0) == 4 && read_all(s, buf, 4) == 0 && !memcmp(buf, "ping", 4));
	CHILD_CHECK(proc_sockets() == 3);
	CHILD_CHECK(rs_counter("sockets_created") == 3);
	/* Exit with the sockets open: the namespace goes away with the last of them. */
	_exit(0);
}

TEST(netns_sockets_work_and_leave_nothing_behind)
{
	long refcnt = read_long(REFCNT_PATH);
	int sockets = proc_sockets(), status;
	pid_t pid;

	ASSERT_LE(0, refcnt);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		netns_child();
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/*
	 * The namespace's sockets are gone, and so are their module references (sockets of earlier
	 * tests may still be finishing their close in the background: at most as many as before).
	 */
	for (int i = 0; i < 100 && read_long(REFCNT_PATH) > refcnt; i++)
		usleep(50000);
	ASSERT_GE(refcnt, read_long(REFCNT_PATH));
	ASSERT_GE(sockets, proc_sockets());
}

#include "harness_main.h"
RS_TEST_MAIN
