// SPDX-License-Identifier: GPL-2.0
/*
 * Every SOL_SOCKET option getsockopt() can read, on every kind of socket (unbound, bound,
 * listening, connecting, connected, accepted, accepted from a listener with options set or from
 * a reuseport group, closed by the peer, reset by the peer), with TCP as the oracle: each test
 * builds the same socket on the variant's carrier and on TCP, reads the whole table on both
 * and compares, option by option (value, length, errno).  The next option is one line of
 * opts[]; the next kind, one case of make_kind().  What differs on purpose is in the table's
 * classes (docs/design.md, "What a program reads off its socket"): SO_PROTOCOL and SO_DOMAIN
 * say the carrier, and buffer sizes nobody set are each carrier's own.
 */
#define _GNU_SOURCE
#include <sys/socket.h>
#include <sys/time.h>
#include <net/if.h>
#include <linux/net_tstamp.h>
#include "lib.h"
#include "kselftest_harness.h"

#ifndef SO_PASSPIDFD
#define SO_PASSPIDFD	76
#endif
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD	77
#endif
#ifndef SO_RCVMARK
#define SO_RCVMARK	75
#endif

/* How a value read on the carrier compares with TCP's (both always: the same errno). */
enum cmp {
	EXACT,		/* the same bytes and length */
	CARRIER,	/* SO_DOMAIN/SO_PROTOCOL: what the carrier says (lib.h), TCP's for TCP */
	BUF,		/* a buffer size: EXACT once the user set one, else positive (each its own) */
	NONZERO,	/* SO_COOKIE: a value of its own, never 0 */
	CPU,		/* SO_INCOMING_CPU: -1 (none yet) or a CPU */
	LENGTH,		/* the same length (SO_MEMINFO's counters, SO_PEERNAME's address) */
	ERRNO,		/* only whether it can be read (SO_PEERSEC, SO_INCOMING_NAPI_ID) */
};

struct opt {
	const char *name;
	int opt;
	socklen_t len;
	enum cmp cmp;
};

#define OPT(o, l, c) { #o, o, l, c }

static const struct opt opts[] = {
	OPT(SO_TYPE, sizeof(int), EXACT),
	OPT(SO_PROTOCOL, sizeof(int), CARRIER),
	OPT(SO_DOMAIN, sizeof(int), CARRIER),
	OPT(SO_ACCEPTCONN, sizeof(int), EXACT),
	OPT(SO_ERROR, sizeof(int), EXACT),
	OPT(SO_RCVBUF, sizeof(int), BUF),
	OPT(SO_SNDBUF, sizeof(int), BUF),
	OPT(SO_BUF_LOCK, sizeof(int), EXACT),
	OPT(SO_KEEPALIVE, sizeof(int), EXACT),
	OPT(SO_LINGER, sizeof(struct linger), EXACT),
	OPT(SO_RCVLOWAT, sizeof(int), EXACT),
	OPT(SO_SNDLOWAT, sizeof(int), EXACT),
	OPT(SO_RCVTIMEO, sizeof(struct timeval), EXACT),
	OPT(SO_SNDTIMEO, sizeof(struct timeval), EXACT),
	OPT(SO_REUSEADDR, sizeof(int), EXACT),
	OPT(SO_REUSEPORT, sizeof(int), EXACT),
	OPT(SO_OOBINLINE, sizeof(int), EXACT),
	OPT(SO_DONTROUTE, sizeof(int), EXACT),
	OPT(SO_BROADCAST, sizeof(int), EXACT),
	OPT(SO_PRIORITY, sizeof(int), EXACT),
	OPT(SO_MARK, sizeof(int), EXACT),
	OPT(SO_RCVMARK, sizeof(int), EXACT),
	OPT(SO_BINDTODEVICE, IFNAMSIZ, EXACT),
	OPT(SO_BINDTOIFINDEX, sizeof(int), EXACT),
	OPT(SO_PEERCRED, sizeof(struct ucred), EXACT),
	OPT(SO_PEERNAME, 0, LENGTH),	/* 0: the address's own length (read_opt) */
	OPT(SO_PEERSEC, 256, ERRNO),
	OPT(SO_PEERGROUPS, 256, ERRNO),
	OPT(SO_PEERPIDFD, sizeof(int), ERRNO),
	OPT(SO_PASSCRED, sizeof(int), EXACT),
	OPT(SO_PASSSEC, sizeof(int), EXACT),
	OPT(SO_PASSPIDFD, sizeof(int), EXACT),
	OPT(SO_COOKIE, sizeof(unsigned long long), NONZERO),
	OPT(SO_NETNS_COOKIE, sizeof(unsigned long long), EXACT),
	OPT(SO_INCOMING_CPU, sizeof(int), CPU),
	OPT(SO_INCOMING_NAPI_ID, sizeof(int), ERRNO),
	OPT(SO_TIMESTAMP, sizeof(int), EXACT),
	OPT(SO_TIMESTAMPNS, sizeof(int), EXACT),
	OPT(SO_TIMESTAMPING, sizeof(int), EXACT),
	OPT(SO_RXQ_OVFL, sizeof(int), EXACT),
	OPT(SO_WIFI_STATUS, sizeof(int), EXACT),
	OPT(SO_NOFCS, sizeof(int), EXACT),
	OPT(SO_PEEK_OFF, sizeof(int), EXACT),
	OPT(SO_SELECT_ERR_QUEUE, sizeof(int), EXACT),
	OPT(SO_BUSY_POLL, sizeof(int), EXACT),
	OPT(SO_PREFER_BUSY_POLL, sizeof(int), EXACT),
	OPT(SO_BUSY_POLL_BUDGET, sizeof(int), EXACT),
	OPT(SO_MAX_PACING_RATE, sizeof(unsigned int), EXACT),
	OPT(SO_ZEROCOPY, sizeof(int), EXACT),
	OPT(SO_TXTIME, sizeof(struct sock_txtime), EXACT),
	OPT(SO_TXREHASH, sizeof(int), EXACT),
	OPT(SO_RESERVE_MEM, sizeof(int), EXACT),
	OPT(SO_MEMINFO, sizeof(unsigned int) * 9, LENGTH),
	OPT(SO_GET_FILTER, 0, EXACT),
	OPT(SO_LOCK_FILTER, sizeof(int), EXACT),
	OPT(SO_BPF_EXTENSIONS, sizeof(int), EXACT),
	OPT(SO_DETACH_FILTER, sizeof(int), EXACT),
};

#define NOPTS (sizeof(opts) / sizeof(opts[0]))

struct setting {
	const char *name;
	int opt;
	const void *val;
	socklen_t len;
};

static const int one = 1, lowat = 3, prio = 5, mark = 9, rcvbuf = 65536, sndbuf = 98304;
static const struct linger linger = { .l_onoff = 1, .l_linger = 7 };
static const struct timeval rcvtimeo = { .tv_sec = 2, .tv_usec = 500000 };
static const struct timeval sndtimeo = { .tv_sec = 3 };

#define SET(o, v) { #o, o, &(v), sizeof(v) }

/*
 * What a program sets (on a listener before accept(), or on a connected socket): each must be
 * refused or taken as TCP takes it, and then read back (and inherited by a child) as TCP's.
 */
static const struct setting settings[] = {
	SET(SO_KEEPALIVE, one),
	SET(SO_LINGER, linger),
	SET(SO_RCVLOWAT, lowat),
	SET(SO_RCVTIMEO, rcvtimeo),
	SET(SO_SNDTIMEO, sndtimeo),
	SET(SO_PRIORITY, prio),
	SET(SO_MARK, mark),
	SET(SO_RCVBUF, rcvbuf),
	SET(SO_SNDBUF, sndbuf),
	SET(SO_OOBINLINE, one),
	SET(SO_TIMESTAMP, one),
	SET(SO_PASSCRED, one),
	SET(SO_RCVMARK, one),
	SET(SO_TXREHASH, one),
	SET(SO_PEEK_OFF, lowat),
};

#define NSETTINGS (sizeof(settings) / sizeof(settings[0]))

enum kind {
	K_UNBOUND, K_BOUND, K_LISTENING, K_CONNECTING, K_CONNECTED, K_ACCEPTED, K_ACCEPTED_SET,
	K_REUSEPORT_CHILD, K_CONNECTED_SET, K_PEER_CLOSED, K_PEER_RESET, K_REFUSED,
};

/* One socket of a kind, and what it needs kept open meanwhile. */
struct made {
	int fd;			/* the socket whose options are read */
	int keep[4];		/* its peer, its listener, ...: closed after the reading */
	int set_err[NSETTINGS];	/* each setting's errno (0: taken), where the kind sets them */
};

static void made_close(struct made *m)
{
	if (m->fd >= 0)
		close(m->fd);
	for (int i = 0; i < 4; i++)
		if (m->keep[i] >= 0)
			close(m->keep[i]);
}

static void apply_settings(int fd, int err[NSETTINGS])
{
	for (size_t i = 0; i < NSETTINGS; i++)
		err[i] = setsockopt(fd, SOL_SOCKET, settings[i].opt, settings[i].val,
				    settings[i].len) ? errno : 0;
}

/*
 * SO_REUSEPORT; a family socket on a kernel that keeps SOL_SOCKET to itself (before 6.6: it
 * refuses SO_REUSEPORT to a family other than AF_INET*) takes rdmasock's own option for it.
 */
static int reuseport(int fd)
{
	if (!setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)))
		return 0;
	if (errno != EOPNOTSUPP)
		return -1;
	return setsockopt(fd, SOL_RDMASOCK, RDMASOCK_REUSEPORT, &one, sizeof(one));
}

/* A listener of @c on the host address (reuseport: one of a group of two on one port). */
static int listener(enum carrier c, int af, struct sockaddr_storage *ss, socklen_t *len,
		    bool set, int err[NSETTINGS], int *second)
{
	int fd = carrier_socket(c, af, SOCK_STREAM);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (second)
		reuseport(fd);
	if (set)
		apply_settings(fd, err);
	*len = host_addr(af, ss, 0);
	if (bind(fd, (struct sockaddr *)ss, *len) || listen(fd, 16) ||
	    getsockname(fd, (struct sockaddr *)ss, len)) {
		close(fd);
		return -1;
	}
	if (second) {
		/* The group's other member, on the same port: the child may come from either. */
		*second = carrier_socket(c, af, SOCK_STREAM);
		if (*second < 0 ||
		    setsockopt(*second, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
		    reuseport(*second) ||
		    bind(*second, (struct sockaddr *)ss, *len) || listen(*second, 16))
			return -1;
	}
	return fd;
}

/* An accepted child of either member of a group (whichever the connection went to). */
static int accept_any(int a, int b)
{
	struct pollfd p[2] = { { .fd = a, .events = POLLIN }, { .fd = b, .events = POLLIN } };

	if (poll(p, b >= 0 ? 2 : 1, 10000) <= 0)
		return -1;
	return accept(p[0].revents & POLLIN ? a : b, NULL, NULL);
}

/* Wait (bounded) until @fd's peer's close or reset has arrived. */
static bool peer_gone(int fd, short want)
{
	return poll_one(fd, want, 10000) & want;
}

/* Make a socket of kind @k on carrier @c; false if any step fails (errno says which). */
static bool make_kind(enum carrier c, int af, enum kind k, struct made *m)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int l, cfd, sfd, second = -1;
	char byte = 'x';

	memset(m, 0, sizeof(*m));
	m->fd = -1;
	for (int i = 0; i < 4; i++)
		m->keep[i] = -1;
	switch (k) {
	case K_UNBOUND:
		m->fd = carrier_socket(c, af, SOCK_STREAM);
		return m->fd >= 0;
	case K_BOUND:
		m->fd = carrier_socket(c, af, SOCK_STREAM);
		len = host_addr(af, &ss, 0);
		return m->fd >= 0 && !bind(m->fd, (struct sockaddr *)&ss, len);
	case K_LISTENING:
		m->fd = listener(c, af, &ss, &len, false, NULL, NULL);
		return m->fd >= 0;
	case K_REFUSED:
		/* A blocking connect() refused: a port just closed, nobody listens there. */
		l = listener(c, af, &ss, &len, false, NULL, NULL);
		if (l < 0)
			return false;
		close(l);
		m->fd = carrier_socket(c, af, SOCK_STREAM);
		return m->fd >= 0 && connect(m->fd, (struct sockaddr *)&ss, len) &&
		       errno == ECONNREFUSED;
	default:
		break;
	}
	l = listener(c, af, &ss, &len, k == K_ACCEPTED_SET, m->set_err,
		     k == K_REUSEPORT_CHILD ? &second : NULL);
	m->keep[0] = l;
	m->keep[1] = second;
	if (l < 0)
		return false;
	cfd = carrier_socket(c, af, SOCK_STREAM);
	if (cfd < 0)
		return false;
	if (k == K_CONNECTING) {
		/* Read while the connection is set up (or just after: TCP's is quick). */
		fcntl(cfd, F_SETFL, O_NONBLOCK);
		m->fd = cfd;
		return !connect(cfd, (struct sockaddr *)&ss, len) || errno == EINPROGRESS;
	}
	if (connect(cfd, (struct sockaddr *)&ss, len)) {
		close(cfd);
		return false;
	}
	sfd = accept_any(l, second);
	if (sfd < 0) {
		close(cfd);
		return false;
	}
	if (!carried_as_expected(c, cfd) || !carried_as_expected(c, sfd)) {
		close(cfd);
		close(sfd);
		errno = EPROTO;
		return false;
	}
	switch (k) {
	case K_ACCEPTED:
	case K_ACCEPTED_SET:
	case K_REUSEPORT_CHILD:
		m->fd = sfd;
		m->keep[2] = cfd;
		return true;
	case K_CONNECTED_SET:
		apply_settings(cfd, m->set_err);
		/* fall through */
	case K_CONNECTED:
		m->fd = cfd;
		m->keep[2] = sfd;
		return true;
	case K_PEER_CLOSED:
		/* The peer's FIN read to EOF: what a server sees of a client that is done. */
		m->fd = cfd;
		close(sfd);
		return peer_gone(cfd, POLLIN) && recv(cfd, &byte, 1, 0) == 0;
	case K_PEER_RESET:
		/* The peer closed with our byte unread: a reset, as TCP's. */
		m->fd = cfd;
		if (send(cfd, &byte, 1, 0) != 1 || recv(sfd, &byte, 1, MSG_PEEK) != 1)
			return false;
		close(sfd);
		return peer_gone(cfd, POLLERR);
	default:
		return false;
	}
}

struct val {
	int err;
	socklen_t len;
	unsigned char buf[256];
};

static void read_opt(int fd, int af, const struct opt *o, struct val *v)
{
	memset(v, 0, sizeof(*v));
	v->len = o->len;
	/* SO_PEERNAME wants the length the address has (EINVAL for more, as for less). */
	if (o->opt == SO_PEERNAME)
		v->len = af == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	v->err = getsockopt(fd, SOL_SOCKET, o->opt, v->buf, &v->len) ? errno : 0;
}

static long long as_int(const struct val *v)
{
	long long ll = 0;
	int i = 0;

	if (v->len == sizeof(int)) {
		memcpy(&i, v->buf, sizeof(i));
		return i;
	}
	if (v->len == sizeof(ll))
		memcpy(&ll, v->buf, sizeof(ll));
	return ll;
}

static void hex(const struct val *v, char *s, size_t n)
{
	size_t at = snprintf(s, n, "len %u:", v->len);

	for (socklen_t i = 0; i < v->len && i < 24 && at + 3 < n; i++)
		at += snprintf(s + at, n - at, " %02x", v->buf[i]);
}

/* The value @c's socket must have where TCP's has @tcp; NULL if it compares as @tcp. */
static const char *differs(const struct opt *o, enum carrier c, int af, bool user_set,
			   const struct val *got, const struct val *tcp)
{
	long long x = as_int(got);

	if (got->err != tcp->err)
		return "errno";
	if (got->err)
		return NULL;
	switch (o->cmp) {
	case EXACT:
		return got->len == tcp->len && !memcmp(got->buf, tcp->buf, got->len) ? NULL : "value";
	case CARRIER:
		if (got->len != sizeof(int))
			return "length";
		if (o->opt == SO_DOMAIN)
			return x == carrier_family(c, af) ? NULL : "domain";
		return x == (carrier_protocol(c) ?: IPPROTO_TCP) ? NULL : "protocol";
	case BUF:
		if (user_set)
			return got->len == tcp->len && as_int(got) == as_int(tcp) ? NULL : "value";
		return got->len == tcp->len && x > 0 ? NULL : "size";
	case NONZERO:
		return got->len == tcp->len && x ? NULL : "zero";
	case CPU:
		return got->len == tcp->len && x >= -1 && x < sysconf(_SC_NPROCESSORS_CONF) ? NULL : "cpu";
	case LENGTH:
		return got->len == tcp->len ? NULL : "length";
	case ERRNO:
		return NULL;
	}
	return "class";
}

/* What TCP itself must say, whatever the carrier: the table's fixed points. */
static const char *tcp_says(const struct opt *o, enum kind k, const struct val *v)
{
	long long x = as_int(v);

	switch (o->opt) {
	case SO_TYPE:
		return !v->err && x == SOCK_STREAM ? NULL : "SO_TYPE is not SOCK_STREAM";
	case SO_ACCEPTCONN:
		return !v->err && x == (k == K_LISTENING) ? NULL : "SO_ACCEPTCONN";
	case SO_ERROR:
		return !v->err && x == (k == K_PEER_RESET ? ECONNRESET : 0) ? NULL : "SO_ERROR";
	case SO_KEEPALIVE:
		return !v->err && x == (k == K_ACCEPTED_SET || k == K_CONNECTED_SET) ? NULL :
		       "SO_KEEPALIVE";
	default:
		return NULL;
	}
}

FIXTURE(opts) {
};

FIXTURE_VARIANT(opts) {
	enum carrier carrier;
	int af;
};

CARRIER_VARIANTS(opts);

FIXTURE_SETUP(opts)
{
}

FIXTURE_TEARDOWN(opts)
{
}

/*
 * The table on kind @k: built on TCP and on the carrier, read in the same order on both (SO_ERROR
 * is read once: reading it clears it, on both), compared.  Every difference is logged before
 * the test fails, so one run shows them all.
 */
static int compare_kind(struct __test_metadata *_metadata, enum carrier c, int af, enum kind k)
{
	bool user_set = k == K_ACCEPTED_SET || k == K_CONNECTED_SET;
	struct made mt, mc;
	struct val vt, vc;
	char st[96], sc[96];
	int bad = 0;

	if (!make_kind(CARRIER_TCP, af, k, &mt)) {
		TH_LOG("cannot make the TCP socket: %s", strerror(errno));
		made_close(&mt);
		return -1;
	}
	if (!make_kind(c, af, k, &mc)) {
		TH_LOG("cannot make the carrier's socket: %s", strerror(errno));
		made_close(&mt);
		made_close(&mc);
		return -1;
	}
	for (size_t i = 0; user_set && i < NSETTINGS; i++) {
		if (mt.set_err[i] == mc.set_err[i])
			continue;
		TH_LOG("setsockopt(%s): TCP %s, carrier %s", settings[i].name,
		       strerror(mt.set_err[i]), strerror(mc.set_err[i]));
		bad++;
	}
	for (size_t i = 0; i < NOPTS; i++) {
		const char *why, *fixed;

		read_opt(mt.fd, af, &opts[i], &vt);
		read_opt(mc.fd, af, &opts[i], &vc);
		fixed = tcp_says(&opts[i], k, &vt);
		if (fixed) {
			TH_LOG("TCP itself: %s", fixed);
			bad++;
		}
		fixed = tcp_says(&opts[i], k, &vc);
		why = differs(&opts[i], c, af, user_set, &vc, &vt);
		if (!why && (!fixed || c == CARRIER_TCP))
			continue;
		hex(&vt, st, sizeof(st));
		hex(&vc, sc, sizeof(sc));
		TH_LOG("%s: %s: TCP %s (%s), carrier %s (%s)", opts[i].name, why ?: fixed,
		       vt.err ? strerror(vt.err) : "ok", st, vc.err ? strerror(vc.err) : "ok", sc);
		bad++;
	}
	made_close(&mt);
	made_close(&mc);
	return bad;
}

#define KIND_TEST(name, k)								\
	TEST_F(opts, name)								\
	{										\
		ASSERT_EQ(0, compare_kind(_metadata, variant->carrier, variant->af, k));	\
	}

KIND_TEST(unbound, K_UNBOUND)
KIND_TEST(bound, K_BOUND)
KIND_TEST(listening, K_LISTENING)
KIND_TEST(connecting, K_CONNECTING)
KIND_TEST(connected, K_CONNECTED)
KIND_TEST(accepted, K_ACCEPTED)
KIND_TEST(accepted_from_a_listener_with_options_set, K_ACCEPTED_SET)
KIND_TEST(accepted_from_a_reuseport_group, K_REUSEPORT_CHILD)
KIND_TEST(connected_with_options_set, K_CONNECTED_SET)
KIND_TEST(closed_by_the_peer, K_PEER_CLOSED)
KIND_TEST(reset_by_the_peer, K_PEER_RESET)
KIND_TEST(connect_refused, K_REFUSED)

#include "harness_main.h"
RS_TEST_MAIN
