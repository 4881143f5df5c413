// SPDX-License-Identifier: GPL-2.0
/*
 * Resume's trust boundary: a local client that speaks the resume handshake (kmod/proto.h) to the
 * resume port without holding a connection's key.  Forged proofs, unknown or zero connection ids,
 * truncated and malformed messages, a client that sends nothing, a proof sent again on a second
 * attempt: each is refused and counted by cause, and the victim connection carries on over RDMA
 * with nothing lost.  (docs/design.md, "Resume"; the resumes themselves: devremove_test, twovm_test.)
 */
#define _GNU_SOURCE
#include <endian.h>
#include <sys/random.h>
#include "lib.h"
#include "kselftest_harness.h"
#include "../kmod/proto.h"

static int resume_port(void)
{
	return (int)read_long("/sys/module/rdmasock/parameters/resume_port");
}

static unsigned long long resume_id_of(int fd)
{
	struct rdmasock_info info = { 0 };
	socklen_t len = sizeof(info);

	if (getsockopt(fd, SOL_RDMASOCK, RDMASOCK_INFO, &info, &len) || len < sizeof(info))
		return 0;
	return info.resume_id;
}

/* A TCP connection to this host's resume port. */
static int resume_connect(int af)
{
	struct sockaddr_storage ss;
	socklen_t len = host_addr(af, &ss, resume_port());
	int fd = socket(af, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, len)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void msg_init(struct rs_resume_msg *m, int type, unsigned long long id)
{
	memset(m, 0, sizeof(*m));
	m->magic = htobe32(RS_RESUME_MAGIC);
	m->version = RS_PROTO_VERSION;
	m->type = type;
	m->conn_id = htobe64(id);
}

/* One message, whole, within 5 s; -1 on EOF, a short message or a timeout. */
static int msg_recv(int fd, struct rs_resume_msg *m)
{
	struct timeval tv = { .tv_sec = 5 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return recv(fd, m, sizeof(*m), MSG_WAITALL) == sizeof(*m) ? 0 : -1;
}

/*
 * The server ends an attempt it refused: EOF (or a reset), at once or, for one that stalls, at
 * its bound (2 s for the HELLO, resume_timeout_ms from the accept for the rest): waited for up
 * to 5 s beyond the longer.
 */
static bool closed_by_server(int fd)
{
	long ms = read_long("/sys/module/rdmasock/parameters/resume_timeout_ms");
	struct timeval tv = { .tv_sec = (ms > 0 ? ms / 1000 : 0) + 5 };
	char c;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return recv(fd, &c, 1, 0) <= 0 && errno != EAGAIN;
}

/* Counters move after the handshake work ran: wait (bounded) for @name to reach @want. */
static long long counter_reaches(const char *name, long long want)
{
	long long v = rs_counter(name);

	for (int i = 0; i < 200 && v < want; i++) {
		usleep(10000);
		v = rs_counter(name);
	}
	return v;
}

FIXTURE(victim) {
	int c, s;
	unsigned long long id;
};

FIXTURE_SETUP(victim)
{
	if (resume_port() <= 0)
		SKIP(return, "the module has no resume port");
	ASSERT_EQ(0, make_pair(CARRIER_RDMASOCK, AF_INET, &self->c, &self->s));
	ASSERT_TRUE(carried_as_expected(CARRIER_RDMASOCK, self->c));
	self->id = resume_id_of(self->s);
	ASSERT_NE(0, self->id);
	/* Both ends name the connection alike: the server chose, the client learned it. */
	ASSERT_EQ(self->id, resume_id_of(self->c));
}

FIXTURE_TEARDOWN(victim)
{
	char buf[6];

	/* Unharmed: still on RDMA, and bytes go both ways. */
	EXPECT_EQ(RDMASOCK_MODE_RDMA, rs_getint(self->c, RDMASOCK_MODE));
	EXPECT_EQ(RDMASOCK_MODE_RDMA, rs_getint(self->s, RDMASOCK_MODE));
	EXPECT_EQ(6, send(self->c, "still!", 6, 0));
	EXPECT_EQ(6, recv(self->s, buf, 6, MSG_WAITALL));
	EXPECT_EQ(6, send(self->s, "there!", 6, 0));
	EXPECT_EQ(6, recv(self->c, buf, 6, MSG_WAITALL));
	EXPECT_EQ(0, memcmp(buf, "there!", 6));
	close(self->c);
	close(self->s);
}

TEST_F(victim, forged_proof_is_refused)
{
	long long auth = rs_counter("resume_rejected_auth");
	struct rs_resume_msg m;
	int fd = resume_connect(AF_INET);

	ASSERT_LE(0, fd);
	msg_init(&m, RS_RESUME_HELLO, self->id);
	getrandom(m.nonce, sizeof(m.nonce), 0);
	ASSERT_EQ(sizeof(m), send(fd, &m, sizeof(m), 0));
	ASSERT_EQ(0, msg_recv(fd, &m));
	ASSERT_EQ(RS_RESUME_CHALLENGE, m.type);
	ASSERT_EQ(RS_RESUME_OK, m.status);
	/* A proof that claims to have read everything, with a MAC made up. */
	msg_init(&m, RS_RESUME_PROOF, self->id);
	m.pos = htobe64(0);
	getrandom(&m.mac, sizeof(m.mac), 0);
	ASSERT_EQ(sizeof(m), send(fd, &m, sizeof(m), 0));
	ASSERT_EQ(0, msg_recv(fd, &m));
	EXPECT_EQ(RS_RESUME_ACCEPT, m.type);
	EXPECT_EQ(RS_RESUME_DENIED, m.status);
	/* Nothing of the connection in the refusal: no position, no MAC. */
	EXPECT_EQ(0, m.pos);
	EXPECT_EQ(0, m.mac);
	EXPECT_TRUE(closed_by_server(fd));
	close(fd);
	EXPECT_EQ(auth + 1, counter_reaches("resume_rejected_auth", auth + 1));
}

TEST_F(victim, replayed_attempt_meets_a_new_challenge)
{
	long long auth = rs_counter("resume_rejected_auth");
	struct rs_resume_msg hello, proof, m;
	unsigned char first[16];

	msg_init(&hello, RS_RESUME_HELLO, self->id);
	getrandom(hello.nonce, sizeof(hello.nonce), 0);
	msg_init(&proof, RS_RESUME_PROOF, self->id);
	getrandom(&proof.mac, sizeof(proof.mac), 0);
	for (int round = 0; round < 2; round++) {
		int fd = resume_connect(AF_INET);	/* (from the victim's own address) */

		ASSERT_LE(0, fd);
		/* The same bytes each time: a recording of the first attempt, played again. */
		ASSERT_EQ(sizeof(hello), send(fd, &hello, sizeof(hello), 0));
		ASSERT_EQ(0, msg_recv(fd, &m));
		ASSERT_EQ(RS_RESUME_OK, m.status);
		if (!round)
			memcpy(first, m.nonce, sizeof(first));
		else
			EXPECT_NE(0, memcmp(first, m.nonce, sizeof(first)));
		ASSERT_EQ(sizeof(proof), send(fd, &proof, sizeof(proof), 0));
		ASSERT_EQ(0, msg_recv(fd, &m));
		EXPECT_EQ(RS_RESUME_DENIED, m.status);
		close(fd);
	}
	EXPECT_EQ(auth + 2, counter_reaches("resume_rejected_auth", auth + 2));
}

TEST_F(victim, unknown_connection_is_refused)
{
	long long unknown = rs_counter("resume_rejected_unknown");
	struct rs_resume_msg m;
	int fd = resume_connect(AF_INET);

	ASSERT_LE(0, fd);
	msg_init(&m, RS_RESUME_HELLO, self->id ^ 0x5a5a5a5a5a5a5a5aULL);
	ASSERT_EQ(sizeof(m), send(fd, &m, sizeof(m), 0));
	ASSERT_EQ(0, msg_recv(fd, &m));
	EXPECT_EQ(RS_RESUME_CHALLENGE, m.type);
	EXPECT_EQ(RS_RESUME_UNKNOWN, m.status);
	EXPECT_TRUE(closed_by_server(fd));
	close(fd);
	EXPECT_EQ(unknown + 1, counter_reaches("resume_rejected_unknown", unknown + 1));
}

/* Each attempt breaks the format its own way; the server closes without a word of the key. */
TEST_F(victim, malformed_and_truncated_attempts_are_dropped)
{
	long long bad = rs_counter("resume_rejected_malformed");
	struct rs_resume_msg m;
	int n = 0, fd;

	/* Half a HELLO, then nothing: the server gives up at the HELLO's bound (2 s). */
	fd = resume_connect(AF_INET);
	ASSERT_LE(0, fd);
	msg_init(&m, RS_RESUME_HELLO, self->id);
	ASSERT_EQ(20, send(fd, &m, 20, 0));
	EXPECT_TRUE(closed_by_server(fd));
	close(fd);
	n++;
	/* Half a HELLO and our close. */
	fd = resume_connect(AF_INET);
	ASSERT_LE(0, fd);
	ASSERT_EQ(20, send(fd, &m, 20, 0));
	close(fd);
	n++;
	/* Wrong magic; wrong version; a PROOF first; a nonzero reserved byte; a zero id. */
	for (int k = 0; k < 5; k++) {
		fd = resume_connect(k & 1 ? AF_INET6 : AF_INET);
		ASSERT_LE(0, fd);
		msg_init(&m, RS_RESUME_HELLO, k == 4 ? 0 : self->id);
		if (k == 0)
			m.magic = htobe32(0x12345678);
		if (k == 1)
			m.version = 99;
		if (k == 2)
			m.type = RS_RESUME_PROOF;
		if (k == 3)
			m.reserved = 1;
		ASSERT_EQ(sizeof(m), send(fd, &m, sizeof(m), 0));
		EXPECT_TRUE(closed_by_server(fd)) TH_LOG("variant %d", k);
		close(fd);
		n++;
	}
	/* A good HELLO, then a PROOF cut short. */
	fd = resume_connect(AF_INET);
	ASSERT_LE(0, fd);
	msg_init(&m, RS_RESUME_HELLO, self->id);
	ASSERT_EQ(sizeof(m), send(fd, &m, sizeof(m), 0));
	ASSERT_EQ(0, msg_recv(fd, &m));
	ASSERT_EQ(RS_RESUME_OK, m.status);
	msg_init(&m, RS_RESUME_PROOF, self->id);
	ASSERT_EQ(30, send(fd, &m, 30, 0));
	close(fd);
	n++;
	/* Connected, and silent. */
	fd = resume_connect(AF_INET6);
	ASSERT_LE(0, fd);
	EXPECT_TRUE(closed_by_server(fd));
	close(fd);
	n++;
	EXPECT_EQ(bad + n, counter_reaches("resume_rejected_malformed", bad + n));
}

#include "harness_main.h"
RS_TEST_MAIN
