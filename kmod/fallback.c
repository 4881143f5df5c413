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
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/slab.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/tcp.h>
#include <net/tcp.h>
#include "rdmasock.h"
#include "core.h"
#include "fallback.h"
#include "stats.h"
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
 * sk_callback_lock held, or rcu_read_lock() (a reuseport pick, cm.c: the pointer is only compared).
 */
struct rs_sock *rs_tcp_owner(struct sock *tsk)
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

	rs->port_taken = false;		/* a new socket: whatever port it has, someone asked */
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
	rs_tcp_sync(rs);
	sock_release(rs_tcp_unhook(rs));
}

/* The TCP socket, ours no more: its callbacks are its own again.  (A reused id's port, park.c.) */
struct socket *rs_tcp_unhook(struct rs_sock *rs)
{
	struct socket *tcp = rs->tcp;
	struct sock *tsk = tcp->sk;

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
	return tcp;
}

/* ---- options ---- */

/*
 * SOL_SOCKET options land on our socket (sk_setsockopt() sets them there): the ones TCP acts on
 * must reach the TCP socket too.  Only what the user changed goes, never all of it: TCP sets some
 * on its own socket (a link-local connect's device, a child's arrival interface or mark, IP_TOS's
 * priority), and so may BPF (cgroup sock_create, sock_ops) and policy (VRF); none of that may be
 * overwritten.  rs->sol_seen is our socket's state as last passed on; rs->sol_set the fields the
 * user ever changed, which a new TCP socket gets.
 */
static void rs_sol_read(const struct sock *sk, struct rs_sol *v)
{
	v->rcvtimeo = READ_ONCE(sk->sk_rcvtimeo);
	v->sndtimeo = READ_ONCE(sk->sk_sndtimeo);
	v->lingertime = READ_ONCE(sk->sk_lingertime);
	v->max_pacing_rate = READ_ONCE(sk->sk_max_pacing_rate);
	v->rcvlowat = READ_ONCE(sk->sk_rcvlowat);
	v->rcvbuf = READ_ONCE(sk->sk_rcvbuf);
	v->sndbuf = READ_ONCE(sk->sk_sndbuf);
	v->bound_dev_if = READ_ONCE(sk->sk_bound_dev_if);
	v->priority = READ_ONCE(sk->sk_priority);
	v->mark = READ_ONCE(sk->sk_mark);
	v->peek_off = READ_ONCE(sk->sk_peek_off);
	v->linger = sock_flag(sk, SOCK_LINGER);
	v->urginline = sock_flag(sk, SOCK_URGINLINE);
	v->localroute = sock_flag(sk, SOCK_LOCALROUTE);
	v->keepopen = sock_flag(sk, SOCK_KEEPOPEN);
	/* Bitfields (no READ_ONCE): a torn read only passes a value on at the next call. */
	v->reuse = sk->sk_reuse;
	v->reuseport = sk->sk_reuseport;
	v->rcvbuf_lock = sk->sk_userlocks & SOCK_RCVBUF_LOCK;
	v->sndbuf_lock = sk->sk_userlocks & SOCK_SNDBUF_LOCK;
}

static u32 rs_sol_diff(const struct rs_sol *a, const struct rs_sol *b)
{
	u32 d = 0;

	if (a->rcvtimeo != b->rcvtimeo)
		d |= BIT(RS_SOL_RCVTIMEO);
	if (a->sndtimeo != b->sndtimeo)
		d |= BIT(RS_SOL_SNDTIMEO);
	if (a->rcvlowat != b->rcvlowat)
		d |= BIT(RS_SOL_RCVLOWAT);
	if (a->linger != b->linger)
		d |= BIT(RS_SOL_LINGER);
	if (a->lingertime != b->lingertime)
		d |= BIT(RS_SOL_LINGER);
	if (a->urginline != b->urginline)
		d |= BIT(RS_SOL_URGINLINE);
	if (a->localroute != b->localroute)
		d |= BIT(RS_SOL_LOCALROUTE);
	if (a->keepopen != b->keepopen)
		d |= BIT(RS_SOL_KEEPOPEN);
	if (a->reuse != b->reuse)
		d |= BIT(RS_SOL_REUSE);
	if (a->reuseport != b->reuseport)
		d |= BIT(RS_SOL_REUSEPORT);
	/* A size goes with its lock: the user's, or TCP's own tuning again. */
	if (a->rcvbuf_lock != b->rcvbuf_lock || (a->rcvbuf_lock && a->rcvbuf != b->rcvbuf))
		d |= BIT(RS_SOL_RCVBUF);
	if (a->sndbuf_lock != b->sndbuf_lock || (a->sndbuf_lock && a->sndbuf != b->sndbuf))
		d |= BIT(RS_SOL_SNDBUF);
	if (a->priority != b->priority)
		d |= BIT(RS_SOL_PRIORITY);
	if (a->mark != b->mark)
		d |= BIT(RS_SOL_MARK);
	if (a->bound_dev_if != b->bound_dev_if)
		d |= BIT(RS_SOL_DEV);
	if (a->max_pacing_rate != b->max_pacing_rate)
		d |= BIT(RS_SOL_PACING);
	if (a->peek_off != b->peek_off)
		d |= BIT(RS_SOL_PEEK_OFF);
	return d;
}

/* Set the fields in @mask on the locked TCP socket, with what sk_setsockopt() does beside. */
static void rs_sol_apply(struct sock *tsk, const struct rs_sol *v, u32 mask)
{
	bool route = false;

	if (mask & BIT(RS_SOL_RCVTIMEO))
		WRITE_ONCE(tsk->sk_rcvtimeo, v->rcvtimeo);
	if (mask & BIT(RS_SOL_SNDTIMEO))
		WRITE_ONCE(tsk->sk_sndtimeo, v->sndtimeo);
	if (mask & BIT(RS_SOL_RCVLOWAT)) {
		if (tsk->sk_socket && tsk->sk_socket->ops->set_rcvlowat)
			tsk->sk_socket->ops->set_rcvlowat(tsk, v->rcvlowat);
		else
			WRITE_ONCE(tsk->sk_rcvlowat, v->rcvlowat);
	}
	if (mask & BIT(RS_SOL_LINGER)) {
		WRITE_ONCE(tsk->sk_lingertime, v->lingertime);
		sock_valbool_flag(tsk, SOCK_LINGER, v->linger);
	}
	if (mask & BIT(RS_SOL_URGINLINE))
		sock_valbool_flag(tsk, SOCK_URGINLINE, v->urginline);
	if (mask & BIT(RS_SOL_LOCALROUTE)) {
		sock_valbool_flag(tsk, SOCK_LOCALROUTE, v->localroute);
		route = true;
	}
	if (mask & BIT(RS_SOL_KEEPOPEN)) {
		if (tsk->sk_prot->keepalive)
			tsk->sk_prot->keepalive(tsk, v->keepopen);
		sock_valbool_flag(tsk, SOCK_KEEPOPEN, v->keepopen);
	}
	if (mask & BIT(RS_SOL_REUSE))
		tsk->sk_reuse = v->reuse;
	if (mask & BIT(RS_SOL_REUSEPORT))
		tsk->sk_reuseport = v->reuseport;
	if (mask & BIT(RS_SOL_RCVBUF)) {
		if (v->rcvbuf_lock) {
			tsk->sk_userlocks |= SOCK_RCVBUF_LOCK;
			WRITE_ONCE(tsk->sk_rcvbuf, v->rcvbuf);
		} else {
			tsk->sk_userlocks &= ~SOCK_RCVBUF_LOCK;
		}
	}
	if (mask & BIT(RS_SOL_SNDBUF)) {
		if (v->sndbuf_lock) {
			tsk->sk_userlocks |= SOCK_SNDBUF_LOCK;
			WRITE_ONCE(tsk->sk_sndbuf, v->sndbuf);
		} else {
			tsk->sk_userlocks &= ~SOCK_SNDBUF_LOCK;
		}
		tsk->sk_write_space(tsk);
	}
	if (mask & BIT(RS_SOL_PRIORITY))
		WRITE_ONCE(tsk->sk_priority, v->priority);
	if (mask & BIT(RS_SOL_MARK)) {
		WRITE_ONCE(tsk->sk_mark, v->mark);
		route = true;
	}
	if (mask & BIT(RS_SOL_DEV)) {
		WRITE_ONCE(tsk->sk_bound_dev_if, v->bound_dev_if);
		route = true;
	}
	if (mask & BIT(RS_SOL_PACING)) {
		if (v->max_pacing_rate != ~0UL)
			cmpxchg(&tsk->sk_pacing_status, SK_PACING_NONE, SK_PACING_NEEDED);
		WRITE_ONCE(tsk->sk_max_pacing_rate, v->max_pacing_rate);
		WRITE_ONCE(tsk->sk_pacing_rate, min(READ_ONCE(tsk->sk_pacing_rate),
						    v->max_pacing_rate));
	}
	/* (Set only where TCP has SO_PEEK_OFF: rs_set_peek_off().) */
	if (mask & BIT(RS_SOL_PEEK_OFF))
		WRITE_ONCE(tsk->sk_peek_off, v->peek_off);
	if (route)
		sk_dst_reset(tsk);
}

/*
 * Pass on what changed since the last time, or, to a @fresh TCP socket, all the user set.  Cheap
 * when nothing changed (lockless callers run it before every call delegated to TCP); the TCP
 * socket's lock serialises the rest, so a value never goes out after a newer one.
 */
static void rs_sol_push(struct rs_sock *rs, struct sock *tsk, bool fresh)
{
	struct rs_sol now;
	u32 changed;

	rs_sol_read(&rs->sk, &now);
	/* Unlocked: a push under way meanwhile passes on what this one would (or the next does). */
	if (!fresh && !data_race(rs_sol_diff(&now, &rs->sol_seen)))
		return;
	lock_sock(tsk);
	rs_sol_read(&rs->sk, &now);
	changed = rs_sol_diff(&now, &rs->sol_seen);
	rs->sol_seen = now;
	rs->sol_set |= changed;
	rs_sol_apply(tsk, &now, fresh ? rs->sol_set : changed);
	release_sock(tsk);
}

/*
 * SO_PEEK_OFF moves as TCP's reads move it (6.9+): SO_PEEK_OFF on our socket says where TCP's
 * stands, and is not passed back down as a change of the user's.
 */
static void rs_tcp_peek_off_back(struct rs_sock *rs)
{
	struct sock *tsk = rs->tcp->sk;
	int seen, now;

	lock_sock(tsk);
	seen = rs->sol_seen.peek_off;
	now = READ_ONCE(tsk->sk_peek_off);
	/* (Unless the user set another meanwhile: rs_set_peek_off() takes no lock.) */
	if (cmpxchg(&rs->sk.sk_peek_off, seen, now) == seen)
		rs->sol_seen.peek_off = now;
	release_sock(tsk);
}

/* IP_TOS set the TCP socket's priority (as it sets a TCP socket's): so it is ours too. */
void rs_sol_adopt_priority(struct rs_sock *rs)
{
	struct sock *tsk = rs->tcp->sk;

	lock_sock(tsk);
	WRITE_ONCE(rs->sk.sk_priority, READ_ONCE(tsk->sk_priority));
	rs->sol_seen.priority = READ_ONCE(tsk->sk_priority);
	rs->sol_set |= BIT(RS_SOL_PRIORITY);	/* a TCP socket of another family gets it too */
	release_sock(tsk);
}

/*
 * SO_RCVLOWAT (proto_ops.set_rcvlowat, under our lock_sock): as tcp_set_rcvlowat(), on the TCP
 * socket too, which caps it, may grow its buffer and wakes its readers; ours takes the same cap.
 */
int rs_tcp_set_rcvlowat(struct rs_sock *rs, int val)
{
	struct sock *sk = &rs->sk, *tsk;
	int cap;

	/* As tcp_set_rcvlowat() caps it, with or without a TCP socket (an RDMA child has none). */
	if (sk->sk_userlocks & SOCK_RCVBUF_LOCK)
		cap = READ_ONCE(sk->sk_rcvbuf) >> 1;
	else
		cap = READ_ONCE(sock_net(sk)->ipv4.sysctl_tcp_rmem[2]) >> 1;
	val = min(val, cap);
	WRITE_ONCE(sk->sk_rcvlowat, val ? : 1);
	if (!rs->tcp || !rs->tcp->ops->set_rcvlowat)
		return 0;
	tsk = rs->tcp->sk;
	lock_sock(tsk);
	rs->tcp->ops->set_rcvlowat(tsk, val);
	WRITE_ONCE(rs->sk.sk_rcvlowat, READ_ONCE(tsk->sk_rcvlowat));
	rs->sol_seen.rcvlowat = READ_ONCE(tsk->sk_rcvlowat);
	rs->sol_set |= BIT(RS_SOL_RCVLOWAT);
	release_sock(tsk);
	return 0;
}

/* Our socket's first state: what the user changes from here on is theirs. */
void rs_sol_init(struct rs_sock *rs)
{
	rs_sol_read(&rs->sk, &rs->sol_seen);
}

/*
 * The rest of what a clone copies and SOL_SOCKET reads back (SO_TIMESTAMP*, SO_RCVMARK,
 * SO_TXREHASH, ...): flags no carrier acts on but that a child reports as its listener's.
 */
static void rs_sol_inherit_flags(struct rs_sock *child, const struct rs_sock *listener)
{
	const unsigned long mask = BIT(SOCK_BROADCAST) | BIT(SOCK_DBG) | BIT(SOCK_TIMESTAMP) |
		BIT(SOCK_RCVTSTAMP) | BIT(SOCK_RCVTSTAMPNS) | BIT(SOCK_TIMESTAMPING_RX_SOFTWARE) |
		BIT(SOCK_RXQ_OVFL) | BIT(SOCK_WIFI_STATUS) | BIT(SOCK_NOFCS) |
		BIT(SOCK_SELECT_ERR_QUEUE) | BIT(SOCK_TSTAMP_NEW) | BIT(SOCK_RCVMARK);
	const struct sock *lsk = &listener->sk;
	struct sock *sk = &child->sk;

	/* One snapshot of the listener's; the child, new, has none of these yet. */
	sk->sk_flags = (sk->sk_flags & ~mask) | (READ_ONCE(lsk->sk_flags) & mask);
	/*
	 * As sk_clone_lock(): __sk_destruct() gives it back (sock_disable_timestamp(): every
	 * family of ours "needs netstamp", as all but AF_UNIX and AF_UNSPEC do).
	 */
	if (sk->sk_flags & SK_FLAGS_TIMESTAMP)
		net_enable_timestamp();
	sk->sk_tsflags = READ_ONCE(lsk->sk_tsflags);
	sk->sk_txrehash = READ_ONCE(lsk->sk_txrehash);
}

/*
 * A child takes from our listener what a TCP child takes from its listener (its clone), RDMA and
 * TCP children alike, but SO_PRIORITY (sk_clone_lock() clears it).  A TCP child's own socket has
 * what reached our TCP listener before its handshake, and gets the rest (rs_tcp_sync()).  @child is
 * not visible to anyone yet; the caller holds the listener's lock, or is its CM handler.
 */
void rs_sol_inherit(struct rs_sock *child, const struct rs_sock *listener)
{
	struct sock *sk = &child->sk;
	struct rs_sol v;

	rs_sol_read(&listener->sk, &v);
	sk->sk_uid = listener->sk.sk_uid;	/* as a clone's (ours has no socket yet: root) */
	sk->sk_rcvtimeo = v.rcvtimeo;
	sk->sk_sndtimeo = v.sndtimeo;
	sk->sk_lingertime = v.lingertime;
	sk->sk_max_pacing_rate = v.max_pacing_rate;
	sk->sk_rcvlowat = v.rcvlowat;
	sk->sk_rcvbuf = v.rcvbuf;
	sk->sk_sndbuf = v.sndbuf;
	sk->sk_bound_dev_if = v.bound_dev_if;
	sk->sk_mark = v.mark;
	sk->sk_peek_off = v.peek_off;
	sock_valbool_flag(sk, SOCK_LINGER, v.linger);
	sock_valbool_flag(sk, SOCK_URGINLINE, v.urginline);
	sock_valbool_flag(sk, SOCK_LOCALROUTE, v.localroute);
	sock_valbool_flag(sk, SOCK_KEEPOPEN, v.keepopen);
	sk->sk_reuse = v.reuse;
	sk->sk_reuseport = v.reuseport;
	sk->sk_userlocks = (v.rcvbuf_lock ? SOCK_RCVBUF_LOCK : 0) |
			   (v.sndbuf_lock ? SOCK_SNDBUF_LOCK : 0);
	/*
	 * Unlocked from an RDMA child's CM handler (the listener pushes under its TCP socket's
	 * lock): a field set at that very moment may be missed by the child, as by a TCP clone.
	 */
	child->sol_seen = data_race(listener->sol_seen);
	/* (Likewise: a bit added at that moment may be missed.) */
	child->sol_set = data_race(listener->sol_set);
	rs_sol_inherit_flags(child, listener);
}

/*
 * A TCP child was cloned from our TCP listener at its handshake: it has what had reached that
 * listener then, not what was set on ours since (6.1: until accept() passed it on).  What it has
 * is what was passed on, so that the next push sends the rest; but the device, mark and priority
 * TCP gave it itself (its arrival interface, tcp_fwmark_accept, sk_clone_lock) count as ours:
 * never overwritten.  (Sizes TCP tunes itself are never compared: rs_sol_diff().)  Under @tsk's
 * lock.
 */
void rs_sol_seed_tcp_child(struct rs_sock *child, struct sock *tsk)
{
	struct rs_sol *seen = &child->sol_seen;
	struct sock *sk = &child->sk;

	rs_sol_read(tsk, seen);
	seen->bound_dev_if = sk->sk_bound_dev_if;
	seen->mark = sk->sk_mark;
	seen->priority = sk->sk_priority;
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
	rs_sol_push(rs, rs->tcp->sk, false);
}

/*
 * A new TCP socket takes our SOL_SOCKET state and the TCP-level settings we mirror (set on an
 * earlier TCP socket of another family, or inherited from the listener by an RDMA child).
 */
static void rs_tcp_init_opts(struct rs_sock *rs, struct socket *tcp)
{
	struct sock *tsk = tcp->sk;

	/*
	 * The socket's owner, not whoever first made us need the TCP socket (fd passing): for
	 * reuseport's uid check and uid routing.  (Nobody else sees @tcp yet: no lock.)
	 */
	tsk->sk_uid = rs->sk.sk_uid;
	rs_sol_push(rs, tsk, true);
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
	/* An IPPROTO_RDMASOCK socket's is its own family's, whatever the caller would choose. */
	if (rs_inet_family(rs))
		family = rs_inet_family(rs);
	/* (The attempts that end give it back; this is for any path that did not.) */
	if (rs->tcp && rs->port_taken && !rs->cm_id && rs->mode == RDMASOCK_MODE_NONE &&
	    rs->sk.sk_state == TCP_CLOSE)
		rs_tcp_give_port(rs);
	/* Kept while connecting: in a busy listener's backoff there is no id, yet it goes on. */
	if (rs->tcp && (rs->tcp->sk->sk_family == family || inet_sk(rs->tcp->sk)->inet_num ||
			rs->tcp->sk->sk_state != TCP_CLOSE || rs->mode != RDMASOCK_MODE_NONE ||
			rs->sk.sk_state != TCP_CLOSE || rs->tcp_final)) {
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

/*
 * The TCP socket a protocol option of @level is read from: the one there is, which answers every
 * level but SOL_IPV6 when it is IPv4's, since a read must not replace it (and lose what was set on
 * it); else one made as setsockopt() would make it.
 */
int rs_tcp_ensure_read(struct rs_sock *rs, int level)
{
	sock_owned_by_me(&rs->sk);
	if (rs->tcp && (level != SOL_IPV6 || rs->tcp->sk->sk_family == AF_INET6))
		return rs_tcp_ensure(rs, rs->tcp->sk->sk_family);
	return rs_tcp_ensure(rs, level == SOL_IP ? AF_INET : AF_INET6);
}

/*
 * Before an RDMA attempt from a socket without a port: the TCP socket takes one, as its connect()
 * would, and the id binds to it (rs_cm_connect()).  An id left to itself takes a random port in
 * rdma_cm's space, which TCP knows nothing of: TCP could hand that port to a listener of ours,
 * whose clients would then be refused.  The TCP socket holds the port until the id is gone
 * (rs_release()), or until the attempt ends without RDMA (rs_tcp_give_port()).  Best effort:
 * without a port (all taken, IP_BIND_ADDRESS_NO_PORT, a cgroup bind program's refusal) rdma_cm
 * chooses one.  The cost: a bound port is the connection's alone, where a TCP connect() may share
 * its port among destinations, so a host has as many RDMA clients as ip_local_port_range has
 * ports.
 */
void rs_tcp_take_port(struct rs_sock *rs)
{
	struct sockaddr_storage addr;
	int len;

	sock_owned_by_me(&rs->sk);
	if (!rs->tcp || inet_sk(rs->tcp->sk)->inet_num)
		return;
	/* Its address as it is: the wildcard, or what IP_BIND_ADDRESS_NO_PORT's bind() left. */
	len = kernel_getsockname(rs->tcp, (struct sockaddr *)&addr);
	if (len < 0 || kernel_bind(rs->tcp, (struct sockaddr *)&addr, len))
		return;
	rs->port_taken = inet_sk(rs->tcp->sk)->inet_num;
}

/*
 * The attempt that port was taken for ended without RDMA: give it back, on the same socket (it has
 * the user's options), as TCP gives back the port of a connect() that fails (tcp_set_state()):
 * the socket may bind, or connect to the other family, and a fallback's connect() takes a port
 * TCP may share.
 */
void rs_tcp_give_port(struct rs_sock *rs)
{
	struct sock *tsk;

	sock_owned_by_me(&rs->sk);
	rs->port_taken = false;
	if (!rs->tcp)
		return;
	tsk = rs->tcp->sk;
	lock_sock(tsk);
	if (inet_csk(tsk)->icsk_bind_hash && !(tsk->sk_userlocks & SOCK_BINDPORT_LOCK))
		inet_put_port(tsk);
	release_sock(tsk);
}

/*
 * resume.c, lock_sock held: the connection carries on over @tcp, connected, from now on; callers
 * use rs->tcp without lock_sock once they see mode TCP (published after this).  The TCP socket
 * that owned the port (a client's) went before.
 */
void rs_tcp_resume_attach(struct rs_sock *rs, struct socket *tcp, int reason)
{
	sock_owned_by_me(&rs->sk);
	if (rs->tcp)
		rs_tcp_detach(rs);
	rs_tcp_init_opts(rs, tcp);
	rs->reason = reason;
	rs->tcp_final = true;
	lock_sock(tcp->sk);
	rs_tcp_attach(rs, tcp);
	/* rs->tcp is final: lockless callers may use it once they see mode TCP. */
	smp_store_release(&rs->mode, RDMASOCK_MODE_TCP);
	set_bit(RS_F_TCP_COUNTED, &rs->flags);	/* counted as an RDMA connection already */
	rs_tcp_mirror(rs, tcp->sk);
	release_sock(tcp->sk);
	rs_count_fallback(sock_net(&rs->sk), reason);
	trace_rdmasock_fallback(rs);
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

/*
 * An RDMA listener of ours on @port (network order) in @net: forget every cached destination of
 * that port in @net.  One may be this host's, cached from a REJ before the listener existed (a port
 * another socket had, perhaps over TCP only), and would send the listener's own host's clients to
 * TCP for the rest of its life.  Another host's entries of that port go too: it costs them one
 * attempt.  Other namespaces keep theirs until they expire, as another host's clients do: we
 * cannot tell which of their entries name this host.
 */
void rs_neg_cache_forget_port(const struct net *net, __be16 port)
{
	u64 cookie = READ_ONCE(net->net_cookie);
	unsigned int i;

	spin_lock_bh(&rs_neg_lock);
	for (i = 0; i < RS_NEG_CACHE_SIZE; i++) {
		struct rs_neg_entry *e = &rs_neg_cache[i];

		if (e->expires && e->net_cookie == cookie &&
		    rs_addr_port((struct sockaddr *)&e->addr) == port)
			e->expires = 0;
	}
	spin_unlock_bh(&rs_neg_lock);
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

/* ---- the TCP carrier: every call goes to the TCP socket, as it is (struct rs_carrier) ---- */

/*
 * Mode TCP is final (rs_is_tcp()): rs->tcp stays until release(), so these run without lock_sock
 * (but for sendmsg's wait, below), and a fallen-back socket costs what TCP costs.  What the user
 * set on our socket since the last call goes first (rs_tcp_sync()).
 */
/*
 * A resumed connection sends the peer what it missed first (resume.c, RS_F_REPLAY): writes and a
 * shutdown wait for that, as they would wait for a full send buffer.
 */
static int rs_tcp_replay_wait(struct rs_sock *rs, bool nonblock)
{
	long timeo = nonblock ? 0 : READ_ONCE(rs->sk.sk_sndtimeo);

	if (likely(!test_bit(RS_F_REPLAY, &rs->flags)))
		return 0;
	if (!timeo)
		return -EAGAIN;
	timeo = wait_event_interruptible_timeout(rs->close_wait,
						 !test_bit(RS_F_REPLAY, &rs->flags), timeo);
	if (timeo < 0)
		return sock_intr_errno(timeo);
	return test_bit(RS_F_REPLAY, &rs->flags) ? -EAGAIN : 0;
}

static int rs_tcp_sendmsg(struct rs_sock *rs, struct msghdr *msg, size_t len)
{
	int err = rs_tcp_replay_wait(rs, msg->msg_flags & MSG_DONTWAIT);

	if (err)
		return err;
	/*
	 * A fallback publishes mode TCP before it issues TCP's connect, under lock_sock: wait that
	 * out, so a send never finds the TCP socket not yet connecting (EPIPE, SIGPIPE).
	 */
	lock_sock(&rs->sk);
	release_sock(&rs->sk);
	rs_tcp_sync(rs);
	return rs->tcp->ops->sendmsg(rs->tcp, msg, len);
}

static int rs_tcp_recvmsg(struct rs_sock *rs, struct msghdr *msg, size_t len, int flags)
{
	int ret;

	rs_tcp_sync(rs);
	ret = rs->tcp->ops->recvmsg(rs->tcp, msg, len, flags);
	if (unlikely(ret > 0 && READ_ONCE(rs->sk.sk_peek_off) >= 0))
		rs_tcp_peek_off_back(rs);
	return ret;
}

static __poll_t rs_tcp_poll(struct rs_sock *rs, struct file *file)
{
	/* (The waiter sits on our socket's queue: our callbacks forward TCP's wakeups.) */
	__poll_t mask = rs->tcp->ops->poll(file, rs->tcp, NULL);

	/* Not writable before the replay is out (its end wakes EPOLLOUT). */
	if (unlikely(test_bit(RS_F_REPLAY, &rs->flags)))
		mask &= ~(EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND);
	return mask;
}

static int rs_tcp_ioctl(struct rs_sock *rs, unsigned int cmd, unsigned long arg)
{
	return rs->tcp->ops->ioctl(rs->tcp, cmd, arg);
}

static int rs_tcp_shutdown(struct rs_sock *rs, int how)
{
	/* A FIN goes after the replay: its end sends it (resume.c), under rs->lock as this test. */
	if (how & SEND_SHUTDOWN) {
		spin_lock_bh(&rs->lock);
		if (test_bit(RS_F_REPLAY, &rs->flags)) {
			rs->resume_fin = true;
			how &= ~SEND_SHUTDOWN;
		}
		spin_unlock_bh(&rs->lock);
		if (!how)
			return 0;
	}
	return kernel_sock_shutdown(rs->tcp, how - 1);	/* @how: RCV_SHUTDOWN|SEND_SHUTDOWN */
}

/*
 * The TCP socket's addresses; also a socket's with no carrier yet, whose port the TCP socket
 * holds (lock_sock held: rs->tcp may be replaced only under it).
 */
static int rs_tcp_getname(struct rs_sock *rs, struct sockaddr *addr, int peer)
{
	sock_owned_by_me(&rs->sk);
	/* A connection resumed over TCP keeps the names it had on RDMA (its TCP's are others). */
	if (test_bit(RS_F_RESUMED, &rs->flags) || test_bit(RS_F_RESUMING, &rs->flags))
		return rs_name_copy(rs, addr, (struct sockaddr *)(peer ? &rs->peer_addr :
								  &rs->local_addr));
	if (rs->tcp)
		return rs->tcp->ops->getname(rs->tcp, addr, peer);
	if (peer)
		return -ENOTCONN;
	/* Unbound: what an unbound socket of its family (AF_INET while still unknown) reports. */
	if (rs_inet_family(rs) == AF_INET6) {
		memset(addr, 0, sizeof(struct sockaddr_in6));
		addr->sa_family = AF_INET6;
		return sizeof(struct sockaddr_in6);
	}
	memset(addr, 0, sizeof(struct sockaddr_in));
	addr->sa_family = AF_INET;
	return sizeof(struct sockaddr_in);
}

/* TCP_INFO, lock_sock held (as every option: the TCP socket keeps the values). */
static int rs_tcp_info(struct rs_sock *rs, char __user *optval, int __user *optlen)
{
	int err;

	sock_owned_by_me(&rs->sk);
	err = rs_tcp_ensure_read(rs, SOL_TCP);
	return err ? err : rs->tcp->ops->getsockopt(rs->tcp, SOL_TCP, TCP_INFO, optval, optlen);
}

const struct rs_carrier rs_tcp_carrier = {
	.name = "tcp",
	.sendmsg = rs_tcp_sendmsg,
	.recvmsg = rs_tcp_recvmsg,
	.poll = rs_tcp_poll,
	.ioctl = rs_tcp_ioctl,
	.shutdown = rs_tcp_shutdown,
	.getname = rs_tcp_getname,
	.tcp_info = rs_tcp_info,
};
