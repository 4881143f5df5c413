// SPDX-License-Identifier: GPL-2.0
/*
 * Stress: many connections at once, random-sized writes both ways, every byte checked against a
 * per-direction pattern.  The tiny-buffer variant shrinks the rings to their minimum so the credit
 * (consumed-cursor) path runs constantly.  TCP runs the same load as the oracle.  And one thread
 * driving every end through epoll with small nonblocking writes.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/epoll.h>
#include "lib.h"
#include "kselftest_harness.h"

#define CONNS		12
#define BYTES_EACH	scaled(3 << 20)

struct dir {
	int wfd, rfd;
	unsigned int seed;
	long long bad_at;	/* first wrong byte, -1 if none */
	int werr, rerr;
};

static void *writer(void *p)
{
	struct dir *d = p;
	unsigned int r = d->seed;
	unsigned char buf[70000];
	size_t done = 0;

	while (done < BYTES_EACH) {
		size_t n = 1 + rand_r(&r) % sizeof(buf);

		if (n > BYTES_EACH - done)
			n = BYTES_EACH - done;
		for (size_t i = 0; i < n; i++)
			buf[i] = pattern_byte(done + i, d->seed);
		if (write_all(d->wfd, buf, n)) {
			d->werr = errno;
			return NULL;
		}
		done += n;
	}
	shutdown(d->wfd, SHUT_WR);
	return NULL;
}

static void *reader(void *p)
{
	struct dir *d = p;
	unsigned int r = d->seed ^ 0x55;
	unsigned char buf[70000];
	size_t done = 0;

	d->bad_at = -1;
	for (;;) {
		ssize_t n = recv(d->rfd, buf, 1 + rand_r(&r) % sizeof(buf), 0);

		if (n < 0) {
			d->rerr = errno;
			return NULL;
		}
		if (n == 0)
			break;
		for (ssize_t i = 0; i < n && d->bad_at < 0; i++)
			if (buf[i] != pattern_byte(done + i, d->seed))
				d->bad_at = done + i;
		done += n;
	}
	if (done != BYTES_EACH && d->bad_at < 0)
		d->bad_at = done;
	return NULL;
}

FIXTURE(stress) {
	int c[CONNS], s[CONNS];
};

FIXTURE_VARIANT(stress) {
	enum carrier carrier;
	int af;
	int rcvbuf;	/* 0: default */
	int busy_poll;	/* SO_BUSY_POLL (us) on every socket: readers poll the CQ themselves */
};

CARRIER_VARIANTS(stress);
FIXTURE_VARIANT_ADD(stress, rdma4_tiny_rings) {
	.carrier = CARRIER_RDMASOCK, .af = AF_INET, .rcvbuf = 2048
};
FIXTURE_VARIANT_ADD(stress, tcp4_busy_poll) {
	.carrier = CARRIER_TCP, .af = AF_INET, .busy_poll = 50
};
FIXTURE_VARIANT_ADD(stress, rdma4_busy_poll) {
	.carrier = CARRIER_RDMASOCK, .af = AF_INET, .busy_poll = 50
};

static int set_busy_poll(int fd, int us)
{
	return us ? setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &us, sizeof(us)) : 0;
}

FIXTURE_SETUP(stress)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int lfd = carrier_socket(variant->carrier, variant->af, SOCK_STREAM);

	ASSERT_LE(0, lfd);
	if (variant->rcvbuf)
		ASSERT_EQ(0, setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &variant->rcvbuf,
					sizeof(int)));
	len = host_addr(variant->af, &ss, 0);
	ASSERT_EQ(0, bind(lfd, (struct sockaddr *)&ss, len));
	ASSERT_EQ(0, listen(lfd, CONNS));
	ASSERT_EQ(0, getsockname(lfd, (struct sockaddr *)&ss, &len));
	for (int i = 0; i < CONNS; i++) {
		self->c[i] = carrier_socket(variant->carrier, variant->af, SOCK_STREAM);
		ASSERT_LE(0, self->c[i]);
		if (variant->rcvbuf)
			ASSERT_EQ(0, setsockopt(self->c[i], SOL_SOCKET, SO_RCVBUF,
						&variant->rcvbuf, sizeof(int)));
		ASSERT_EQ(0, connect(self->c[i], (struct sockaddr *)&ss, len));
		self->s[i] = accept(lfd, NULL, NULL);
		ASSERT_LE(0, self->s[i]);
		ASSERT_EQ(0, set_busy_poll(self->c[i], variant->busy_poll));
		ASSERT_EQ(0, set_busy_poll(self->s[i], variant->busy_poll));
		ASSERT_TRUE(carried_as_expected(variant->carrier, self->c[i]));
		ASSERT_TRUE(carried_as_expected(variant->carrier, self->s[i]));
	}
	close(lfd);
}

FIXTURE_TEARDOWN(stress)
{
	for (int i = 0; i < CONNS; i++) {
		close(self->c[i]);
		close(self->s[i]);
	}
}

TEST_F_TIMEOUT(stress, random_writes_both_ways_all_connections, 300)
{
	long long deferred = rs_counter("ctrl_deferred_sq_full");
	struct dir d[2 * CONNS];
	pthread_t t[4 * CONNS];

	for (int i = 0; i < CONNS; i++) {
		d[2 * i] = (struct dir){ .wfd = self->c[i], .rfd = self->s[i], .seed = 100 + 2 * i };
		d[2 * i + 1] = (struct dir){ .wfd = self->s[i], .rfd = self->c[i], .seed = 101 + 2 * i };
	}
	for (int i = 0; i < 2 * CONNS; i++) {
		ASSERT_EQ(0, pthread_create(&t[2 * i], NULL, writer, &d[i]));
		ASSERT_EQ(0, pthread_create(&t[2 * i + 1], NULL, reader, &d[i]));
	}
	for (int i = 0; i < 4 * CONNS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 2 * CONNS; i++) {
		EXPECT_EQ(0, d[i].werr) TH_LOG("direction %d", i);
		EXPECT_EQ(0, d[i].rerr) TH_LOG("direction %d", i);
		EXPECT_EQ(-1, d[i].bad_at) TH_LOG("direction %d", i);
	}
	if (variant->carrier != CARRIER_TCP)
		TH_LOG("control messages deferred on a full send queue: %lld",
		       rs_counter("ctrl_deferred_sq_full") - deferred);
	if (variant->rcvbuf && variant->carrier != CARRIER_TCP) {
		struct rdmasock_info info;
		socklen_t len = sizeof(info);

		ASSERT_EQ(0, getsockopt(self->c[0], SOL_RDMASOCK, RDMASOCK_INFO, &info, &len));
		ASSERT_EQ(16384, info.rx_ring_size);
		ASSERT_EQ(16384, info.tx_ring_size);
		ASSERT_EQ(BYTES_EACH, info.bytes_sent);
		ASSERT_EQ(BYTES_EACH, info.bytes_received);
	}
}

/* Request/response on every connection at once: each answer checked, in order. */
TEST_F_TIMEOUT(stress, ping_pong_on_all_connections, 300)
{
	for (int round = 0; round < 200; round++) {
		for (int i = 0; i < CONNS; i++) {
			unsigned char q[64], a[64];

			memset(q, round + i, sizeof(q));
			ASSERT_EQ(0, write_all(self->c[i], q, sizeof(q)));
			ASSERT_EQ(0, read_all(self->s[i], a, sizeof(a)));
			ASSERT_EQ(0, memcmp(q, a, sizeof(q)));
			a[0] ^= 0xff;
			ASSERT_EQ(0, write_all(self->s[i], a, sizeof(a)));
			ASSERT_EQ(0, read_all(self->c[i], q, sizeof(q)));
			ASSERT_EQ(0, memcmp(q, a, sizeof(q)));
		}
	}
}

#define EPOLL_BYTES	scaled(256 << 10)

struct end {
	int fd;
	unsigned int seed;	/* of the bytes this end sends; the peer's is seed ^ 1 */
	size_t sent, rcvd;
	bool eof;
};

/* Watch @x for what it still waits for: reading until EOF, writing until all is sent. */
static int epoll_watch(int ep, const struct end *x, unsigned int idx)
{
	struct epoll_event mod = { .data.u32 = idx };

	mod.events = (x->eof ? 0 : EPOLLIN) | (x->sent < EPOLL_BYTES ? EPOLLOUT : 0);
	return epoll_ctl(ep, mod.events ? EPOLL_CTL_MOD : EPOLL_CTL_DEL, x->fd, &mod);
}

/*
 * One thread, one level-triggered epoll loop over both ends of every connection: each end sends
 * small nonblocking pieces (TCP_NODELAY: each its own write on the wire) and reads only when epoll
 * says so; an end that drained waits on epoll alone, and so does a writer whose window shut.  A
 * credit report (or a request for one) that found the send queue full must still go out: no end
 * may starve (20 s without an event fails).  Every byte is checked.
 */
TEST_F_TIMEOUT(stress, epoll_small_writes_both_ways, 600)
{
	long long deferred = rs_counter("ctrl_deferred_sq_full");
	struct end e[2 * CONNS];
	static unsigned char buf[4096];
	struct epoll_event ev[16];
	unsigned int r = 7;
	int ep, done = 0, one = 1;

	ep = epoll_create1(0);
	ASSERT_LE(0, ep);
	for (int i = 0; i < 2 * CONNS; i++) {
		struct epoll_event add = { .events = EPOLLIN | EPOLLOUT, .data.u32 = i };

		e[i] = (struct end){ .fd = i % 2 ? self->s[i / 2] : self->c[i / 2], .seed = 200 + i };
		ASSERT_EQ(0, setsockopt(e[i].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)));
		ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, e[i].fd, &add));
	}
	while (done < 2 * CONNS) {
		int n = epoll_wait(ep, ev, 16, 20000);

		ASSERT_LT(0, n) {
			TH_LOG("no end can move: %d of %d finished", done, 2 * CONNS);
			for (int i = 0; i < 2 * CONNS; i++)
				TH_LOG("end %d: sent %zu, received %zu", i, e[i].sent, e[i].rcvd);
		}
		for (int k = 0; k < n; k++) {
			struct end *x = &e[ev[k].data.u32];
			unsigned int peer_seed = x->seed ^ 1;

			if (ev[k].events & EPOLLIN && !x->eof) {
				ssize_t got = recv(x->fd, buf, 1 + rand_r(&r) % sizeof(buf),
						   MSG_DONTWAIT);

				ASSERT_TRUE(got >= 0 || errno == EAGAIN);
				for (ssize_t i = 0; i < got; i++)
					ASSERT_EQ(pattern_byte(x->rcvd + i, peer_seed), buf[i]);
				if (got > 0)
					x->rcvd += got;
				if (!got) {
					ASSERT_EQ(EPOLL_BYTES, x->rcvd);
					x->eof = true;
					done++;
					ASSERT_EQ(0, epoll_watch(ep, x, ev[k].data.u32));
				}
			}
			if (ev[k].events & EPOLLOUT && x->sent < EPOLL_BYTES) {
				size_t len = 1 + rand_r(&r) % 200;
				ssize_t put;

				if (len > EPOLL_BYTES - x->sent)
					len = EPOLL_BYTES - x->sent;
				for (size_t i = 0; i < len; i++)
					buf[i] = pattern_byte(x->sent + i, x->seed);
				put = send(x->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
				ASSERT_TRUE(put > 0 || errno == EAGAIN);
				if (put > 0)
					x->sent += put;
				if (x->sent == EPOLL_BYTES) {
					ASSERT_EQ(0, shutdown(x->fd, SHUT_WR));
					ASSERT_EQ(0, epoll_watch(ep, x, ev[k].data.u32));
				}
			}
		}
	}
	close(ep);
	if (variant->carrier != CARRIER_TCP)
		TH_LOG("control messages deferred on a full send queue: %lld",
		       rs_counter("ctrl_deferred_sq_full") - deferred);
}

#include "harness_main.h"
RS_TEST_MAIN
