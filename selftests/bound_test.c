// SPDX-License-Identifier: GPL-2.0
/*
 * What rdmasock pins stays within its documented bound (issue: hardening): every ring of every
 * connection is charged to one budget no larger than TCP's hard limit, tcp_mem[2] (pages), shown
 * as the gauge ring_pages_pinned in /proc/net/rdmasock_stat.  With tcp_mem[2] set a little above
 * what is pinned now, connections open until the budget is spent go over RDMA, later ones fall
 * back to TCP (and still carry their bytes), a stream that wants large rings is held at the size it
 * has, the gauge never passes the limit, and everything is given back once the sockets close.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include "lib.h"
#include "kselftest_harness.h"

#define PAIRS		48
#define HEADROOM	512	/* pages above what is pinned now: about 32 connections' rings */

static long pinned(void)
{
	return rs_counter("ring_pages_pinned");
}

static int write_str(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return -1;
	ok = fputs(s, f) >= 0;
	return fclose(f) || !ok ? -1 : 0;
}

static int read_str(const char *path, char *buf, int len)
{
	FILE *f = fopen(path, "r");
	char *r;

	if (!f)
		return -1;
	r = fgets(buf, len, f);
	fclose(f);
	return r ? 0 : -1;
}

FIXTURE(bound) {
	char tcp_mem[128];
	char neg_ttl[32];
	long limit;
};

#define TCP_MEM "/proc/sys/net/ipv4/tcp_mem"
#define NEG_TTL "/sys/module/rdmasock/parameters/neg_cache_ttl_ms"

FIXTURE_SETUP(bound)
{
	char buf[128];

	ASSERT_EQ(0, read_str(TCP_MEM, self->tcp_mem, sizeof(self->tcp_mem)));
	ASSERT_EQ(0, read_str(NEG_TTL, self->neg_ttl, sizeof(self->neg_ttl)));
	ASSERT_LE(0, pinned());
	/*
	 * Earlier tests' connections finish their teardown in the background (bounded by the close
	 * timeout): let what they pin go first, or it frees budget while we measure.
	 */
	for (int i = 0; i < 3000 && pinned() > 0; i++)
		poll_one(-1, 0, 10);
	self->limit = pinned() + HEADROOM;
	snprintf(buf, sizeof(buf), "%ld %ld %ld", self->limit, self->limit, self->limit);
	ASSERT_EQ(0, write_str(TCP_MEM, buf));
	/* A refused server would otherwise send later clients to TCP for seconds. */
	ASSERT_EQ(0, write_str(NEG_TTL, "0"));
}

FIXTURE_TEARDOWN(bound)
{
	write_str(TCP_MEM, self->tcp_mem);
	write_str(NEG_TTL, self->neg_ttl);
}

struct stream {
	int fd;
	size_t len;
	int err;
};

static void *writer(void *p)
{
	struct stream *st = p;

	if (write_pattern(st->fd, st->len, 11))
		st->err = errno;
	return NULL;
}

TEST_F_TIMEOUT(bound, rings_stay_within_tcp_mem, 600)
{
	int c[PAIRS], s[PAIRS], rdma = 0, tcp = 0, big = 4 << 20;
	long base = self->limit - HEADROOM, peak = 0;
	struct stream st = { .len = scaled(4 << 20) };
	static char buf[32768];
	pthread_t t;
	size_t got = 0;

	for (int i = 0; i < PAIRS; i++) {
		char b[2];

		ASSERT_EQ(0, make_pair(CARRIER_RDMASOCK, AF_INET, &c[i], &s[i]));
		if (rs_getint(c[i], RDMASOCK_MODE) == RDMASOCK_MODE_RDMA) {
			rdma++;
		} else {
			int why = rs_getint(c[i], RDMASOCK_FALLBACK_REASON);

			ASSERT_EQ(RDMASOCK_MODE_TCP, rs_getint(c[i], RDMASOCK_MODE));
			ASSERT_TRUE(why == RDMASOCK_REASON_RESOURCE ||
				    why == RDMASOCK_REASON_PEER_REJECT);
			tcp++;
		}
		/* Whatever carries it, the connection works. */
		ASSERT_EQ(2, send(c[i], "ok", 2, 0));
		ASSERT_EQ(2, recv(s[i], b, 2, MSG_WAITALL));
		ASSERT_EQ(2, send(s[i], "ko", 2, 0));
		ASSERT_EQ(2, recv(c[i], b, 2, MSG_WAITALL));
		if (pinned() > peak)
			peak = pinned();
		ASSERT_GE(self->limit, pinned());
	}
	TH_LOG("%d connections over RDMA, %d fell back; %ld pages pinned at most, limit %ld",
	       rdma, tcp, peak, self->limit);
	ASSERT_LT(0, rdma);
	ASSERT_LT(0, tcp);
	/* A stream on an RDMA pair whose reader wants a 4 MiB ring: held within the budget. */
	for (int i = 0; i < PAIRS; i++) {
		if (rs_getint(c[i], RDMASOCK_MODE) != RDMASOCK_MODE_RDMA)
			continue;
		ASSERT_EQ(0, setsockopt(s[i], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big)));
		st.fd = c[i];
		ASSERT_EQ(0, pthread_create(&t, NULL, writer, &st));
		while (got < st.len) {
			ssize_t n = recv(s[i], buf, sizeof(buf), 0);

			ASSERT_LT(0, n);
			for (ssize_t k = 0; k < n; k++)
				ASSERT_EQ((char)pattern_byte(got + k, 11), buf[k]);
			got += n;
			ASSERT_GE(self->limit, pinned());
		}
		pthread_join(t, NULL);
		ASSERT_EQ(0, st.err);
		break;
	}
	ASSERT_EQ(st.len, got);
	for (int i = 0; i < PAIRS; i++) {
		close(c[i]);
		close(s[i]);
	}
	/* Closed connections give their rings back (teardown runs in the background). */
	for (int i = 0; i < 1500 && pinned() > base; i++)
		poll_one(-1, 0, 10);
	ASSERT_GE(base, pinned());
	/* And the budget serves new connections over RDMA again. */
	ASSERT_EQ(0, make_pair(CARRIER_RDMASOCK, AF_INET, &c[0], &s[0]));
	ASSERT_EQ(RDMASOCK_MODE_RDMA, rs_getint(c[0], RDMASOCK_MODE));
	close(c[0]);
	close(s[0]);
}

#include "harness_main.h"
RS_TEST_MAIN
