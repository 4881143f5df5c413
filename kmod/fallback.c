// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock fallback: the kernel TCP socket behind every rdmasock socket.
 *
 * It owns the port (so TCP's bind rules and errors apply unchanged), listens beside the RDMA
 * listener (so plain TCP clients are served), and carries the bytes when RDMA is not possible.
 * Its callbacks forward every wakeup to the rdmasock socket's wait queue, where all poll/epoll
 * waiters sit, so waiters registered before a fallback keep getting their events.
 *
 * The negative cache remembers destinations that answered without rdmasock (or not at all), so
 * the next connect goes straight to TCP.
 */
#include <linux/jiffies.h>
#include <linux/slab.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/tcp.h>
#include <net/tcp.h>
#include "rdmasock.h"
#include "trace.h"

static unsigned int rs_neg_cache_ttl_ms = 10000;
module_param_named(neg_cache_ttl_ms, rs_neg_cache_ttl_ms, uint, 0644);
MODULE_PARM_DESC(neg_cache_ttl_ms,
		 "how long a destination without rdmasock goes straight to TCP (0: never)");

/* ---- callbacks ---- */

/*
 * The TCP socket's own callbacks, saved from the first one we hook (every TCP socket starts with
 * the same).  A socket our TCP listener clones inherits our callbacks but not our pointer
 * (SK_USER_DATA_NOCOPY: the listener's rdmasock socket may be gone before the clone is accepted);
 * until accept() attaches it, these are its callbacks.
 */
static void (*rs_tcp_default_cb[RS_TCP_NR_CB])(struct sock *sk);
static DEFINE_SPINLOCK(rs_tcp_default_lock);

/*
 * Our socket, if @tsk is ours: its pointer with exactly our tag.  A socket our listener cloned
 * carries none, or another user's (a BPF sockmap's psock, tagged PSOCK|NOCOPY): not ours.
 * sk_callback_lock held.
 */
static struct rs_sock *rs_tcp_owner(struct sock *tsk)
{
	uintptr_t v = (uintptr_t)rcu_dereference_check(__sk_user_data(tsk),
						       lockdep_is_held(&tsk->sk_callback_lock));

	if ((v & ~SK_USER_DATA_PTRMASK) != SK_USER_DATA_NOCOPY)
		return NULL;
	return (struct rs_sock *)(v & SK_USER_DATA_PTRMASK);
}

/* Someone else's pointer on @tsk (a sockmap took a clone before accept()): never overwrite it. */
bool rs_tcp_foreign(struct socket *tcp)
{
	struct sock *tsk = tcp->sk;
	bool foreign;
	void *data;

	read_lock_bh(&tsk->sk_callback_lock);
	data = rcu_dereference_check(__sk_user_data(tsk), lockdep_is_held(&tsk->sk_callback_lock));
	foreign = data && !rs_tcp_owner(tsk);
	read_unlock_bh(&tsk->sk_callback_lock);
	return foreign;
}

static void rs_tcp_default_save(struct sock *tsk)
{
	spin_lock(&rs_tcp_default_lock);
	if (!rs_tcp_default_cb[RS_TCP_DATA_READY]) {
		rs_tcp_default_cb[RS_TCP_WRITE_SPACE] = tsk->sk_write_space;
		rs_tcp_default_cb[RS_TCP_STATE_CHANGE] = tsk->sk_state_change;
		rs_tcp_default_cb[RS_TCP_ERROR_REPORT] = tsk->sk_error_report;
		/* Last, released: a reader that sees it sees the other three. */
		smp_store_release(&rs_tcp_default_cb[RS_TCP_DATA_READY], tsk->sk_data_ready);
	}
	spin_unlock(&rs_tcp_default_lock);
}

static void rs_tcp_mirror(struct rs_sock *rs, struct sock *tsk)
{
	int err = READ_ONCE(tsk->sk_err);

	if (err)
		WRITE_ONCE(rs->sk.sk_err, err);
	if (rs->mode == RDMASOCK_MODE_TCP) {
		int state = READ_ONCE(tsk->sk_state);

		WRITE_ONCE(rs->sk.sk_state, state);
		/*
		 * A connection is counted once it exists (an attempt that failed is not one), and
		 * once only; one that ended lets TCP's next on this socket count in its turn.
		 */
		if (state == TCP_ESTABLISHED && !test_and_set_bit(RS_F_TCP_COUNTED, &rs->flags))
			rs_count(sock_net(&rs->sk), RS_CNT_CONN_TCP);
		else if (state == TCP_CLOSE)
			clear_bit(RS_F_TCP_COUNTED, &rs->flags);
	}
}

/* Run the TCP socket's own callback, then wake the rdmasock socket's waiters with @mask. */
static void rs_tcp_forward(struct sock *tsk, enum rs_tcp_cb cb, __poll_t mask)
{
	struct rs_sock *rs;

	read_lock_bh(&tsk->sk_callback_lock);
	rs = rs_tcp_owner(tsk);
	if (rs) {
		rs->tcp_cb[cb](tsk);
		if (cb == RS_TCP_STATE_CHANGE || cb == RS_TCP_ERROR_REPORT)
			rs_tcp_mirror(rs, tsk);
		rs_wake(&rs->sk, mask);
	} else if (smp_load_acquire(&rs_tcp_default_cb[RS_TCP_DATA_READY])) {	/* saved: all */
		/* A clone of our listener's socket, not accepted yet (saved before it existed). */
		rs_tcp_default_cb[cb](tsk);
	}
	read_unlock_bh(&tsk->sk_callback_lock);
}

static void rs_tcp_data_ready(struct sock *tsk)
{
	rs_tcp_forward(tsk, RS_TCP_DATA_READY, EPOLLIN | EPOLLRDNORM);
}

static void rs_tcp_write_space(struct sock *tsk)
{
	rs_tcp_forward(tsk, RS_TCP_WRITE_SPACE, EPOLLOUT | EPOLLWRNORM);
}

static void rs_tcp_state_change(struct sock *tsk)
{
	rs_tcp_forward(tsk, RS_TCP_STATE_CHANGE,
		       EPOLLIN | EPOLLOUT | EPOLLHUP | EPOLLRDHUP | EPOLLERR);
}

static void rs_tcp_error_report(struct sock *tsk)
{
	rs_tcp_forward(tsk, RS_TCP_ERROR_REPORT, EPOLLERR);
}

/*
 * Hook @tcp's callbacks.  A socket accepted from our TCP listener is a clone of it and arrives with
 * our hooks already (and no owner): its real callbacks are TCP's own, saved when we hooked the
 * listener (rs_tcp_default_cb).
 */
void rs_tcp_attach(struct rs_sock *rs, struct socket *tcp)
{
	struct sock *tsk = tcp->sk;

	write_lock_bh(&tsk->sk_callback_lock);
	if (tsk->sk_data_ready == rs_tcp_data_ready) {
		memcpy(rs->tcp_cb, rs_tcp_default_cb, sizeof(rs->tcp_cb));
	} else {
		rs_tcp_default_save(tsk);
		rs->tcp_cb[RS_TCP_DATA_READY] = tsk->sk_data_ready;
		rs->tcp_cb[RS_TCP_WRITE_SPACE] = tsk->sk_write_space;
		rs->tcp_cb[RS_TCP_STATE_CHANGE] = tsk->sk_state_change;
		rs->tcp_cb[RS_TCP_ERROR_REPORT] = tsk->sk_error_report;
	}
	/* Not copied into the sockets a listener clones: they must not reach us once gone. */
	__rcu_assign_sk_user_data_with_flags(tsk, rs, SK_USER_DATA_NOCOPY);
	tsk->sk_data_ready = rs_tcp_data_ready;
	tsk->sk_write_space = rs_tcp_write_space;
	tsk->sk_state_change = rs_tcp_state_change;
	tsk->sk_error_report = rs_tcp_error_report;
	write_unlock_bh(&tsk->sk_callback_lock);
	spin_lock_bh(&rs->lock);	/* /proc reads rs->tcp under rs->lock */
	rs->tcp = tcp;
	spin_unlock_bh(&rs->lock);
}

/* Unhook and close the TCP socket (it lingers by its own SO_LINGER, copied from ours). */
void rs_tcp_detach(struct rs_sock *rs)
{
	struct socket *tcp = rs->tcp;
	struct sock *tsk = tcp->sk;

	rs_tcp_sync(rs);
	write_lock_bh(&tsk->sk_callback_lock);
	if (rs_tcp_owner(tsk) == rs) {
		tsk->sk_data_ready = rs->tcp_cb[RS_TCP_DATA_READY];
		tsk->sk_write_space = rs->tcp_cb[RS_TCP_WRITE_SPACE];
		tsk->sk_state_change = rs->tcp_cb[RS_TCP_STATE_CHANGE];
		tsk->sk_error_report = rs->tcp_cb[RS_TCP_ERROR_REPORT];
		rcu_assign_sk_user_data(tsk, NULL);
	}
	write_unlock_bh(&tsk->sk_callback_lock);
	spin_lock_bh(&rs->lock);
	rs->tcp = NULL;
	spin_unlock_bh(&rs->lock);
	sock_release(tcp);
}

/* ---- options ---- */

/*
 * The SOL_SOCKET state a TCP socket acts on, and a TCP child inherits from its listener (its clone
 * copies all of it).  SO_KEEPALIVE is apart: it has side effects (rs_tcp_set_keepalive).  Buffer
 * sizes only when the user set them: otherwise TCP tunes its own.
 */
#define RS_SOL_FLAGS	(BIT(SOCK_LINGER) | BIT(SOCK_URGINLINE) | BIT(SOCK_LOCALROUTE))
#define RS_BUF_LOCKS	(SOCK_SNDBUF_LOCK | SOCK_RCVBUF_LOCK)

/* What a TCP socket must redo after a copy, as sock_setsockopt() does it. */
#define RS_SOL_REDO_WSPACE	BIT(0)	/* SO_SNDBUF: writers may have room now */
#define RS_SOL_REDO_ROUTE	BIT(1)	/* SO_MARK, SO_BINDTODEVICE: the cached route is stale */
#define RS_SOL_REDO_PACING	BIT(2)	/* SO_MAX_PACING_RATE: pacing is wanted, at most that */

static bool rs_sol_differs(const struct sock *src, const struct sock *dst)
{
	return READ_ONCE(dst->sk_rcvtimeo) != READ_ONCE(src->sk_rcvtimeo) ||
	       READ_ONCE(dst->sk_sndtimeo) != READ_ONCE(src->sk_sndtimeo) ||
	       READ_ONCE(dst->sk_rcvlowat) != READ_ONCE(src->sk_rcvlowat) ||
	       READ_ONCE(dst->sk_lingertime) != READ_ONCE(src->sk_lingertime) ||
	       ((READ_ONCE(dst->sk_flags) ^ READ_ONCE(src->sk_flags)) & RS_SOL_FLAGS) ||
	       dst->sk_reuse != src->sk_reuse || dst->sk_reuseport != src->sk_reuseport ||
	       ((dst->sk_userlocks ^ src->sk_userlocks) & RS_BUF_LOCKS) ||
	       ((src->sk_userlocks & SOCK_RCVBUF_LOCK) &&
		READ_ONCE(dst->sk_rcvbuf) != READ_ONCE(src->sk_rcvbuf)) ||
	       ((src->sk_userlocks & SOCK_SNDBUF_LOCK) &&
		READ_ONCE(dst->sk_sndbuf) != READ_ONCE(src->sk_sndbuf)) ||
	       READ_ONCE(dst->sk_priority) != READ_ONCE(src->sk_priority) ||
	       READ_ONCE(dst->sk_mark) != READ_ONCE(src->sk_mark) ||
	       READ_ONCE(dst->sk_bound_dev_if) != READ_ONCE(src->sk_bound_dev_if) ||
	       READ_ONCE(dst->sk_max_pacing_rate) != READ_ONCE(src->sk_max_pacing_rate);
}

/* Copy it; @dst is locked or not yet visible to anyone.  Returns what a TCP socket must redo. */
static unsigned int rs_sol_copy(struct sock *dst, const struct sock *src)
{
	unsigned int redo = 0;

	WRITE_ONCE(dst->sk_rcvtimeo, READ_ONCE(src->sk_rcvtimeo));
	WRITE_ONCE(dst->sk_sndtimeo, READ_ONCE(src->sk_sndtimeo));
	WRITE_ONCE(dst->sk_rcvlowat, READ_ONCE(src->sk_rcvlowat));
	WRITE_ONCE(dst->sk_lingertime, READ_ONCE(src->sk_lingertime));
	sock_valbool_flag(dst, SOCK_LINGER, sock_flag(src, SOCK_LINGER));
	sock_valbool_flag(dst, SOCK_URGINLINE, sock_flag(src, SOCK_URGINLINE));
	sock_valbool_flag(dst, SOCK_LOCALROUTE, sock_flag(src, SOCK_LOCALROUTE));
	dst->sk_reuse = src->sk_reuse;
	dst->sk_reuseport = src->sk_reuseport;
	dst->sk_userlocks &= ~RS_BUF_LOCKS;
	dst->sk_userlocks |= src->sk_userlocks & RS_BUF_LOCKS;
	if (src->sk_userlocks & SOCK_RCVBUF_LOCK)
		WRITE_ONCE(dst->sk_rcvbuf, READ_ONCE(src->sk_rcvbuf));
	if ((src->sk_userlocks & SOCK_SNDBUF_LOCK) &&
	    READ_ONCE(dst->sk_sndbuf) != READ_ONCE(src->sk_sndbuf)) {
		WRITE_ONCE(dst->sk_sndbuf, READ_ONCE(src->sk_sndbuf));
		redo |= RS_SOL_REDO_WSPACE;
	}
	WRITE_ONCE(dst->sk_priority, READ_ONCE(src->sk_priority));
	if (READ_ONCE(dst->sk_mark) != READ_ONCE(src->sk_mark) ||
	    READ_ONCE(dst->sk_bound_dev_if) != READ_ONCE(src->sk_bound_dev_if)) {
		WRITE_ONCE(dst->sk_mark, READ_ONCE(src->sk_mark));
		WRITE_ONCE(dst->sk_bound_dev_if, READ_ONCE(src->sk_bound_dev_if));
		redo |= RS_SOL_REDO_ROUTE;
	}
	if (READ_ONCE(dst->sk_max_pacing_rate) != READ_ONCE(src->sk_max_pacing_rate)) {
		WRITE_ONCE(dst->sk_max_pacing_rate, READ_ONCE(src->sk_max_pacing_rate));
		redo |= RS_SOL_REDO_PACING;
	}
	return redo;
}

/*
 * SOL_SOCKET options land on the rdmasock socket: copy the ones TCP acts on, as sock_setsockopt()
 * would have set them there.  Runs when the kernel lets us see the option set (SOCK_CUSTOM_SOCKOPT)
 * and before every call delegated to TCP; cheap when nothing changed.
 */
static void rs_tcp_sync_sk(struct sock *sk, struct sock *tsk)
{
	unsigned int redo;

	if (rs_sol_differs(sk, tsk)) {
		lock_sock(tsk);
		redo = rs_sol_copy(tsk, sk);
		if (redo & RS_SOL_REDO_ROUTE)
			sk_dst_reset(tsk);
		if (redo & RS_SOL_REDO_WSPACE)
			tsk->sk_write_space(tsk);
		if (redo & RS_SOL_REDO_PACING) {
			unsigned long max = READ_ONCE(tsk->sk_max_pacing_rate);

			if (max != ~0UL)
				cmpxchg(&tsk->sk_pacing_status, SK_PACING_NONE, SK_PACING_NEEDED);
			WRITE_ONCE(tsk->sk_pacing_rate, min(READ_ONCE(tsk->sk_pacing_rate), max));
		}
		release_sock(tsk);
	}
	if (sock_flag(sk, SOCK_KEEPOPEN) != sock_flag(tsk, SOCK_KEEPOPEN))
		rs_tcp_set_keepalive(tsk, sock_flag(sk, SOCK_KEEPOPEN));
}

/*
 * A child takes from our listener what a TCP child takes from its listener, RDMA and TCP children
 * alike (rs_tcp_sync() then passes it on to a TCP child).  @child is not visible yet.
 */
void rs_sol_inherit(struct sock *child, const struct sock *from)
{
	rs_sol_copy(child, from);
	WRITE_ONCE(child->sk_priority, 0);	/* as sk_clone_lock() */
	child->sk_userlocks = from->sk_userlocks & RS_BUF_LOCKS;
	WRITE_ONCE(child->sk_rcvbuf, READ_ONCE(from->sk_rcvbuf));
	WRITE_ONCE(child->sk_sndbuf, READ_ONCE(from->sk_sndbuf));
	sock_valbool_flag(child, SOCK_KEEPOPEN, sock_flag(from, SOCK_KEEPOPEN));
}

/* SO_KEEPALIVE on the TCP socket, as sk_setsockopt() does it. */
void rs_tcp_set_keepalive(struct sock *tsk, bool on)
{
	lock_sock(tsk);
	if (tsk->sk_prot->keepalive)
		tsk->sk_prot->keepalive(tsk, on);
	sock_valbool_flag(tsk, SOCK_KEEPOPEN, on);
	release_sock(tsk);
}

void rs_tcp_sync(struct rs_sock *rs)
{
	rs_tcp_sync_sk(&rs->sk, rs->tcp->sk);
}

/*
 * A new TCP socket takes our SOL_SOCKET state and the TCP-level settings we mirror (set on an
 * earlier TCP socket of another family, or inherited from the listener by an RDMA child).
 */
static void rs_tcp_init_opts(struct rs_sock *rs, struct socket *tcp)
{
	struct sock *tsk = tcp->sk;

	rs_tcp_sync_sk(&rs->sk, tsk);
	if (rs->nodelay)
		tcp_sock_set_nodelay(tsk);
	if (rs->cork)
		tcp_sock_set_cork(tsk, true);
	if (rs->ka_time)
		tcp_sock_set_keepidle(tsk, rs->ka_time / HZ);
	if (rs->ka_intvl)
		tcp_sock_set_keepintvl(tsk, rs->ka_intvl / HZ);
	if (rs->ka_probes)
		tcp_sock_set_keepcnt(tsk, rs->ka_probes);
	if (rs->user_timeout)
		tcp_sock_set_user_timeout(tsk, rs->user_timeout);
}

/*
 * Make sure the TCP socket exists with @family (unless it is already bound or connected).  It is
 * replaced only while the mode is NONE, under lock_sock: once the mode is TCP or LISTEN, callers
 * use rs->tcp without lock_sock (af_rdmasock.c, rs_is_tcp()), and it must stay until release().
 */
int rs_tcp_ensure(struct rs_sock *rs, int family)
{
	struct socket *tcp;
	int err;

	sock_owned_by_me(&rs->sk);
	if (rs->tcp && (rs->tcp->sk->sk_family == family || inet_sk(rs->tcp->sk)->inet_num ||
			rs->tcp->sk->sk_state != TCP_CLOSE || rs->mode != RDMASOCK_MODE_NONE ||
			rs->tcp_final)) {
		rs_tcp_sync(rs);	/* bind, listen, connect: with what was set since */
		return 0;
	}
	err = __sock_create(sock_net(&rs->sk), family, SOCK_STREAM, IPPROTO_TCP, &tcp, 0);
	if (err)
		return err;
	rs_tcp_init_opts(rs, tcp);
	if (rs->tcp)
		rs_tcp_detach(rs);
	rs_tcp_attach(rs, tcp);
	return 0;
}

/* Switch to TCP and start a nonblocking connect; rs_connect() waits for it if it must. */
int rs_tcp_connect_start(struct rs_sock *rs, struct sockaddr *addr, int len, int reason)
{
	int err;

	err = rs_tcp_ensure(rs, addr->sa_family);
	if (err)
		return err;
	rs->reason = reason;
	rs->tcp_final = true;
	/* rs->tcp is final from here on: lockless callers may use it once they see mode TCP. */
	smp_store_release(&rs->mode, RDMASOCK_MODE_TCP);
	rs_count_fallback(sock_net(&rs->sk), reason);
	trace_rdmasock_fallback(rs);
	rs_tcp_sync(rs);
	err = kernel_connect(rs->tcp, addr, len, O_NONBLOCK);
	/* Under its lock, as its callbacks mirror it: never an older state over a newer one. */
	lock_sock(rs->tcp->sk);
	rs_tcp_mirror(rs, rs->tcp->sk);
	release_sock(rs->tcp->sk);
	rs_wake(&rs->sk, EPOLLOUT | EPOLLIN | EPOLLERR);
	return err == -EINPROGRESS ? 0 : err;
}

/* ---- negative cache ---- */

#define RS_NEG_CACHE_SIZE	64

struct rs_neg_entry {
	struct sockaddr_storage addr;
	u64 net_cookie;			/* each network namespace has its own destinations */
	unsigned long expires;
};

static struct rs_neg_entry rs_neg_cache[RS_NEG_CACHE_SIZE];
static unsigned int rs_neg_next;
static DEFINE_SPINLOCK(rs_neg_lock);

static bool rs_addr_equal(const struct sockaddr *a, const struct sockaddr *b)
{
	const struct sockaddr_in *a4 = (const void *)a, *b4 = (const void *)b;
	const struct sockaddr_in6 *a6 = (const void *)a, *b6 = (const void *)b;

	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return a4->sin_port == b4->sin_port && a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	return a6->sin6_port == b6->sin6_port && ipv6_addr_equal(&a6->sin6_addr, &b6->sin6_addr);
}

static size_t rs_addr_len(const struct sockaddr *a)
{
	return a->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
}

bool rs_neg_cache_hit(const struct net *net, const struct sockaddr *addr)
{
	bool hit = false;
	unsigned int i;

	spin_lock_bh(&rs_neg_lock);
	for (i = 0; i < RS_NEG_CACHE_SIZE && !hit; i++) {
		struct rs_neg_entry *e = &rs_neg_cache[i];

		hit = e->expires && time_before(jiffies, e->expires) &&
		      e->net_cookie == READ_ONCE(net->net_cookie) &&
		      rs_addr_equal((struct sockaddr *)&e->addr, addr);
	}
	spin_unlock_bh(&rs_neg_lock);
	return hit;
}

void rs_neg_cache_add(const struct net *net, const struct sockaddr *addr)
{
	struct rs_neg_entry *e;

	if (!rs_neg_cache_ttl_ms || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return;
	spin_lock_bh(&rs_neg_lock);
	e = &rs_neg_cache[rs_neg_next++ % RS_NEG_CACHE_SIZE];
	memset(&e->addr, 0, sizeof(e->addr));
	memcpy(&e->addr, addr, rs_addr_len(addr));
	e->net_cookie = READ_ONCE(net->net_cookie);
	e->expires = jiffies + msecs_to_jiffies(rs_neg_cache_ttl_ms) ? : 1;
	spin_unlock_bh(&rs_neg_lock);
}

void rs_neg_cache_exit(void)
{
	memset(rs_neg_cache, 0, sizeof(rs_neg_cache));
}
