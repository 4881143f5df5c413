// SPDX-License-Identifier: GPL-2.0
/*
 * Two VMs joined by one wire (selftests/vm/run --two-vm).  The client role runs the tests; the
 * server role serves three phases, in order, each ended by a connection that says "QUIT":
 *   1. rdmasock listener on port 7002: RDMA across a real wire, a checksummed stream.
 *   2. the rdmasock module unloaded, plain TCP on 7000: the peer has RDMA but no rdmasock.
 *   3. rxe0 deleted too, plain TCP on 7001: the peer does not answer RDMA at all.
 * Readiness is probed with plain TCP connects, which never touch rdmasock's negative cache.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/wait.h>
#include "lib.h"
#include "kselftest_harness.h"

#define PORT_RDMA	7002
#define PORT_NOMOD	7000
#define PORT_NORXE	7001
#define STREAM_BYTES	(16 << 20)

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

/* Echo every connection back until one starts with "QUIT". */
static int serve(int family, unsigned short port)
{
	struct sockaddr_storage ss;
	socklen_t len = host_addr(AF_INET, &ss, port);
	int one = 1, lfd = socket(family, SOCK_STREAM, 0);
	char buf[65536];

	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&ss, len) || listen(lfd, 8)) {
		perror("server: listen");
		return -1;
	}
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

static int server_main(void)
{
	if (serve(rs_family_number(), PORT_RDMA))
		return 1;
	if (system("rmmod rdmasock"))
		return 1;
	if (serve(AF_INET, PORT_NOMOD))
		return 1;
	if (system("rdma link delete rxe0"))
		return 1;
	return serve(AF_INET, PORT_NORXE) ? 1 : 0;
}

/* ---- client role ---- */

static int wait_for_port(unsigned short port)
{
	struct sockaddr_storage ss;
	socklen_t len = peer_addr(&ss, port);

	for (int i = 0; i < 600; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		int ok = !connect(fd, (struct sockaddr *)&ss, len);

		close(fd);
		if (ok)
			return 0;
		usleep(100000);
	}
	return -1;
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

TEST(a_rdma_across_the_wire)
{
	struct pump p = { 0 };
	unsigned char buf[65536];
	size_t done = 0;
	pthread_t t;
	ssize_t n;

	ASSERT_EQ(0, wait_for_port(PORT_RDMA));
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
}

static void echo_once(struct __test_metadata *_metadata, int fd)
{
	char buf[5];

	ASSERT_EQ(5, send(fd, "hello", 5, 0));
	ASSERT_EQ(0, read_all(fd, buf, 5));
	ASSERT_EQ(0, memcmp(buf, "hello", 5));
}

TEST(b_peer_without_rdmasock)
{
	int fd;

	ASSERT_EQ(0, wait_for_port(PORT_NOMOD));
	fd = rs_connect_peer(PORT_NOMOD);
	ASSERT_LE(0, fd);
	ASSERT_EQ(RDMASOCK_MODE_TCP, rs_getint(fd, RDMASOCK_MODE));
	ASSERT_EQ(RDMASOCK_REASON_PEER_REJECT, rs_getint(fd, RDMASOCK_FALLBACK_REASON));
	echo_once(_metadata, fd);
	close(fd);
	ASSERT_EQ(0, quit_phase(PORT_NOMOD));
}

TEST(c_peer_without_rdma_device)
{
	int fd;

	ASSERT_EQ(0, wait_for_port(PORT_NORXE));
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
	ASSERT_EQ(0, quit_phase(PORT_NORXE));
}

/* As TEST_HARNESS_MAIN: lets the harness see in which order the TEST()s were registered. */
static void __attribute__((constructor)) twovm_constructor_last(void)
{
	if (!__constructor_order)
		__constructor_order = _CONSTRUCTOR_ORDER_BACKWARD;
}

int main(int argc, char **argv)
{
	const char *role = getenv("RDMASOCK_VM_ROLE");

	if (role && !strcmp(role, "server"))
		return server_main();
	return test_harness_run(argc, argv);
}
