// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock reused connections (docs/design.md, "Reused connections"): the QP of a connection that
 * closed in order at both ends is kept (parked) by both, and carries the next connection from the
 * same client host to the same listener: no address and route resolution, no CM exchange, no new
 * verbs objects.  The client's OPEN and the server's ACCEPT carry the hellos the REQ and the REP
 * would, and each is its sender's READY: two messages, where the CM's exchange takes five.  A QP
 * carries one connection at a time, and its ring takes a new key at each (the previous
 * connection's dies with it).
 *
 *   rs_park_offer()  close_work, once the socket is closed: park its QP if it could be reused.
 *   rs_park_hold()   close_work: a parked QP stays until park_ms, or its OPEN is taken (server).
 *   rs_park_take()   connect() (client): a parked QP to the destination carries the connection.
 *
 * A parked QP stays with its closed socket, an orphan whose close_work runs on, listed in its
 * namespace's table by peer host.  park_state, under rs_park_lock, says who may act on it:
 *   NONE    not parked (never): close_work frees it once it is done.
 *   PARKED  listed; close_work keeps it until park_deadline, or takes its OPEN (a server's).
 *   TAKEN   a connect() took it off the table and moves its QP: close_work leaves it alone.
 *   GIVEN   that connect() is done with it: close_work frees what is left.
 *   DONE    off the table for good: close_work frees it.
 * Only PARKED and GIVEN are ever kicked (close_work queued), under rs_park_lock; the run that frees
 * the socket sets DONE under it first and then cancels any kick still pending.  A GIVEN socket
 * whose QP moved is empty; its close_work is queued to free it RS_PARK_SHELL_DELAY later, work the
 * new connection's set-up does not wait behind.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hashtable.h>
#include <linux/jhash.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/random.h>
#include <net/netns/generic.h>
#include <net/tcp_states.h>
#include "rdmasock.h"
#include "cm.h"
#include "core.h"
#include "dev.h"
#include "fallback.h"
#include "hello.h"
#include "keepalive.h"
#include "park.h"
#include "stats.h"
#include "wr.h"

static unsigned int rs_park_ms = 1000;
module_param_named(park_ms, rs_park_ms, uint, 0644);
MODULE_PARM_DESC(park_ms,
		 "a connection closed in order keeps its QP this long for the next one to the same listener (0: no reuse)");

static unsigned int rs_max_parked = 256;
module_param_named(max_parked, rs_max_parked, uint, 0644);
MODULE_PARM_DESC(max_parked, "parked QPs at most, clients and servers together");

#define RS_PARK_PER_DEST	4	/* a client's parked QPs to one destination */
#define RS_PARK_MAX		4096	/* parked QPs of all namespaces (as max_orphans) */
#define RS_PARK_SETTLE		(HZ / 50)	/* a taken QP's last FIN completes within this */
#define RS_PARK_OPEN_WAIT	(HZ / 4)	/* ACCEPT in this, or a fresh set-up */
#define RS_PARK_SHELL_DELAY	(HZ / 100 + 1)	/* a socket whose QP moved: freed after this */

enum rs_park_state { RS_PARK_NONE, RS_PARK_PARKED, RS_PARK_TAKEN, RS_PARK_GIVEN, RS_PARK_DONE };

#define RS_PARK_HASH_BITS	6

/* A namespace's parked QPs, by peer host (a connect() and a close look at one bucket). */
struct rs_park_net {
	DECLARE_HASHTABLE(by_host, RS_PARK_HASH_BITS);
	unsigned int n;
};

static unsigned int rs_park_net_id __read_mostly;
static DEFINE_SPINLOCK(rs_park_lock);	/* every table and count, park_state */
static unsigned int rs_nparked;
static u32 rs_park_seed __read_mostly;

static struct rs_park_net *rs_park_net(struct net *net)
{
	return net_generic(net, rs_park_net_id);
}

/*
 * A parked QP's OPEN came (rx.c), or its connection went (the CM's disconnect, an abort):
 * close_work takes the OPEN, or frees the socket, now.  rs_park_signal() (core.h) queued it.
 */
static void rs_park_work(struct work_struct *work)
{
	struct rs_sock *rs = container_of(work, struct rs_sock, park_work);

	spin_lock_bh(&rs_park_lock);
	if (rs->park_state == RS_PARK_PARKED)
		mod_delayed_work(rs_wq, &rs->close_work, 0);
	spin_unlock_bh(&rs_park_lock);
	sock_put(&rs->sk);
}

void rs_park_init(struct rs_sock *rs)
{
	INIT_HLIST_NODE(&rs->park_node);
	INIT_WORK(&rs->park_work, rs_park_work);
}

/*
 * A client whose port rs_tcp_take_port() took for it: did it choose no address or device (then
 * another unbound socket may have its QP), or only no port (IP_BIND_ADDRESS_NO_PORT)?
 */
static bool rs_park_unbound(struct rs_sock *rs)
{
	return rs->tcp && !READ_ONCE(rs->tcp->sk->sk_bound_dev_if) &&
	       !(rs->tcp->sk->sk_userlocks & SOCK_BINDADDR_LOCK);
}

/*
 * Could the connection's QP carry another?  Its close was orderly and complete on our side (our
 * FIN, not a RESET; nothing unread; no ring growing or grown past its first size's messages), it
 * is whole, a hello fits inline, and the client's port is ours to keep (an unbound socket's) or
 * the server's listener still listens.
 */
static bool rs_park_candidate(struct rs_sock *rs)
{
	unsigned long f = READ_ONCE(rs->flags);
	bool ok;

	sock_owned_by_me(&rs->sk);
	if (!READ_ONCE(rs_park_ms) || rs->mode != RDMASOCK_MODE_RDMA || !rs->link || !rs->cm_id ||
	    rs->link->max_inline < RS_CTRL_PAYLOAD_MAX)
		return false;
	/* A kernel socket does not hold its namespace, which a parked QP's table is in. */
	if (!rs->sk.sk_net_refcnt)
		return false;
	if (!(f & BIT(RS_F_FIN_SENT)) || !(f & BIT(RS_F_RDMA_UP)) ||
	    (f & (BIT(RS_F_CLOSE_RESET) | BIT(RS_F_ABORTED) | BIT(RS_F_DISCONNECTED) |
		  BIT(RS_F_DYING) | BIT(RS_F_OPEN_VOID) | BIT(RS_F_RESUMING) | BIT(RS_F_RESUMED) |
		  BIT(RS_F_RX_GROWING) | BIT(RS_F_RX_SWITCHED) | BIT(RS_F_TX_RESIZE) |
		  BIT(RS_F_SQ_FENCE))))
		return false;
	/* Rings at their first size: a grown one is freed, not parked (its pages are many). */
	if (rs->rx_next.mr || rs->tx_old.mr || rs->tx_next.mr || rs->rx.size != RS_RING_START ||
	    rs->tx.size > RS_RING_START)
		return false;
	if (rs->parent ? READ_ONCE(rs->parent->sk.sk_state) != TCP_LISTEN :
			 !(rs->port_holder || (rs->port_taken && rs_park_unbound(rs))))
		return false;
	spin_lock_bh(&rs->lock);
	ok = rs->rx_cons == rs->rx_prod;
	spin_unlock_bh(&rs->lock);
	return ok;
}

/* The same peer host: address and scope, whatever the port (a client's varies). */
static bool rs_park_same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	struct sockaddr_storage x = *a, y = *b;

	rs_addr_set_port((struct sockaddr *)&x, 0);
	rs_addr_set_port((struct sockaddr *)&y, 0);
	return rs_addr_equal((struct sockaddr *)&x, (struct sockaddr *)&y);
}

/*
 * The bucket of a peer host: its address, and an IPv6 address's scope where the address needs
 * one (as rs_addr_equal() compares them); never the port.  Seeded: a server's peers choose them.
 */
static struct hlist_head *rs_park_bucket(struct net *net, const struct sockaddr *a)
{
	const struct sockaddr_in6 *a6 = (const void *)a;
	u32 h, scope;

	if (a->sa_family == AF_INET6) {
		scope = __ipv6_addr_needs_scope_id(__ipv6_addr_type(&a6->sin6_addr)) ?
			a6->sin6_scope_id : 0;
		h = jhash(&a6->sin6_addr, sizeof(a6->sin6_addr), rs_park_seed ^ scope);
	} else {
		h = jhash_1word((__force u32)((const struct sockaddr_in *)a)->sin_addr.s_addr,
				rs_park_seed);
	}
	return &rs_park_net(net)->by_host[h & (HASH_SIZE(rs_park_net(net)->by_host) - 1)];
}

/*
 * May @rs park?  At most max_parked in its namespace, and RS_PARK_PER_DEST for one peer: a
 * client's to one destination, a server's (one listener's) from one client host.  rs_park_lock.
 */
static bool rs_park_room(struct rs_sock *rs)
{
	struct net *net = sock_net(&rs->sk);
	struct sockaddr *peer = (struct sockaddr *)&rs->peer_addr;
	unsigned int same = 0;
	struct rs_sock *o;

	lockdep_assert_held(&rs_park_lock);
	if (rs_park_net(net)->n >= READ_ONCE(rs_max_parked) || rs_nparked >= RS_PARK_MAX)
		return false;
	hlist_for_each_entry(o, rs_park_bucket(net, peer), park_node) {
		if (o->parent != rs->parent)
			continue;
		if (rs->parent ? rs_park_same_host(&o->peer_addr, &rs->peer_addr) :
				 rs_addr_equal((struct sockaddr *)&o->peer_addr, peer))
			same++;
	}
	return same < RS_PARK_PER_DEST;
}

/*
 * The QP is idle only once every WR completed, and an unsignaled one (a CONSUMED after our FIN)
 * completes only with a later signaled one: send a signaled KEEPALIVE behind the last WR if it
 * was unsignaled, once (the peer takes it as any probe).
 */
static void rs_park_flush(struct rs_sock *rs)
{
	bool due;

	/* (Not when the last WR is signaled: its completion covers those before it.) */
	spin_lock_bh(&rs->lock);
	due = rs->sq_posted != rs->sq_done && rs->sq_signaled != rs->sq_posted &&
	      (s32)(rs->sq_done - rs->orphan_probe_end) >= 0;
	spin_unlock_bh(&rs->lock);
	if (due && !rs_send_ctrl(rs, RS_IMM_CTRL, RS_CTRL_KEEPALIVE, true)) {
		spin_lock_bh(&rs->lock);
		rs->orphan_probe_end = rs->sq_posted;
		spin_unlock_bh(&rs->lock);
	}
}

/* close_work, the socket closed: park its QP if it could carry another connection. */
void rs_park_offer(struct rs_sock *rs)
{
	bool ok;

	if (READ_ONCE(rs->park_state) != RS_PARK_NONE || !READ_ONCE(rs_park_ms))
		return;
	/* (An abort's teardown_work may be taking the QP: under lock_sock, as it does.) */
	lock_sock(&rs->sk);
	ok = rs_park_candidate(rs);
	release_sock(&rs->sk);
	if (!ok)
		return;
	spin_lock_bh(&rs_park_lock);
	if (rs->park_state == RS_PARK_NONE && rs_park_room(rs)) {
		struct net *net = sock_net(&rs->sk);

		WRITE_ONCE(rs->park_state, RS_PARK_PARKED);
		rs->park_deadline = jiffies + msecs_to_jiffies(READ_ONCE(rs_park_ms));
		hlist_add_head(&rs->park_node,
			       rs_park_bucket(net, (struct sockaddr *)&rs->peer_addr));
		WRITE_ONCE(rs_park_net(net)->n, rs_park_net(net)->n + 1);
		WRITE_ONCE(rs_nparked, rs_nparked + 1);
	}
	spin_unlock_bh(&rs_park_lock);
	rs_park_flush(rs);
}

/* Off the table; rs_park_lock held. */
static void rs_park_unlist(struct rs_sock *rs, enum rs_park_state state)
{
	struct rs_park_net *pn = rs_park_net(sock_net(&rs->sk));

	lockdep_assert_held(&rs_park_lock);
	hlist_del_init(&rs->park_node);
	WRITE_ONCE(pn->n, pn->n - 1);
	WRITE_ONCE(rs_nparked, rs_nparked - 1);
	WRITE_ONCE(rs->park_state, state);
}

/*
 * Is the connection on the QP over at both ends, and everything of ours on the wire done: every
 * WR completed, nothing staged or unread, the peer's FIN in?  rs->lock.
 */
static bool rs_park_idle(struct rs_sock *rs)
{
	lockdep_assert_held(&rs->lock);
	return rs->sq_posted == rs->sq_done && rs->tx_staged == rs->tx_prod &&
	       rs->rx_cons == rs->rx_prod && test_bit(RS_F_PEER_FIN, &rs->flags);
}

/* The same, as a hint for waiting: rs_park_freeze() decides. */
static bool rs_park_settled(struct rs_sock *rs)
{
	bool done;

	spin_lock_bh(&rs->lock);
	done = rs_park_idle(rs);
	spin_unlock_bh(&rs->lock);
	return done;
}

static bool rs_park_dead(struct rs_sock *rs)
{
	return test_bit(RS_F_ABORTED, &rs->flags) || test_bit(RS_F_DISCONNECTED, &rs->flags) ||
	       test_bit(RS_F_DYING, &rs->flags) || test_bit(RS_F_OPEN_VOID, &rs->flags) ||
	       !rs->link;
}

/*
 * The parked socket posts nothing more (RS_F_MOVING: __rs_post() refuses), decided under rs->lock
 * with what must hold for its QP to move: idle (rs_park_idle()), and nothing of a ring switch (a
 * grow_work queued before the close may have run since it was parked).  0; -EAGAIN: not yet;
 * -ENOENT: never (it goes).
 */
static int rs_park_freeze(struct rs_sock *rs)
{
	unsigned long busy = BIT(RS_F_RX_GROWING) | BIT(RS_F_RX_SWITCHED) | BIT(RS_F_TX_RESIZE) |
			     BIT(RS_F_SQ_FENCE) | BIT(RS_F_GROW_DUE);
	int err = 0;

	if (rs_park_dead(rs) || !rs->cm_id || !rs->ibdev)
		return -ENOENT;
	spin_lock_bh(&rs->lock);
	if ((rs->flags & busy) || rs->rx_next.mr || rs->tx_old.mr || rs->tx_next.mr)
		err = -ENOENT;
	else if (!rs_park_idle(rs))
		err = -EAGAIN;
	else
		set_bit(RS_F_MOVING, &rs->flags);
	spin_unlock_bh(&rs->lock);
	return err;
}

/* What the QP's completions use, @from's, lent to @to before they can find it. */
static void rs_park_lend(struct rs_sock *from, struct rs_sock *to)
{
	to->pd = from->pd;
	to->rx = from->rx;
	to->tx = from->tx;
	to->resize_buf = from->resize_buf;
	to->resize_dma = from->resize_dma;
	set_bit(RS_F_RDMA_UP, &to->flags);
}

/* ... and taken back: nothing moved. */
static void rs_park_unlend(struct rs_sock *to)
{
	clear_bit(RS_F_RDMA_UP, &to->flags);
	to->pd = NULL;
	memset(&to->rx, 0, sizeof(to->rx));
	memset(&to->tx, 0, sizeof(to->tx));
	to->resize_buf = NULL;
}

/* The QP is @to's: the rest of what carried the connection goes with it, and @from keeps none. */
static void rs_park_hand_over(struct rs_sock *from, struct rs_sock *to)
{
	to->pd_pinned = from->pd_pinned;
	to->port_num = from->port_num;
	to->remote_qpn = from->remote_qpn;
	to->path_mtu = from->path_mtu;
	memcpy(&to->local_addr, &from->local_addr, sizeof(to->local_addr));
	memcpy(&to->peer_addr, &from->peer_addr, sizeof(to->peer_addr));
	to->peer_addr_len = from->peer_addr_len;
	from->pd = NULL;
	from->pd_pinned = false;
	memset(&from->rx, 0, sizeof(from->rx));
	memset(&from->tx, 0, sizeof(from->tx));
	from->resize_buf = NULL;
	/* The id's port, which the client keeps: its holder in TCP's space goes with the id. */
	if (from->port_holder) {
		to->port_holder = from->port_holder;
		from->port_holder = NULL;
	} else if (!from->parent && from->tcp) {
		to->port_holder = rs_tcp_unhook(from);
	}
	clear_bit(RS_F_RDMA_UP, &from->flags);
	rs_dev_detach(from);
}

/*
 * Move what carries the connection from @from (a parked socket, locked nested; frozen) to @to
 * (locked): the id, the QP and its completions, the PD, the rings, the receive buffer, the device
 * and the addresses.  @to's cursors are all zero, as @from's QP is idle.  What the QP's
 * completions use is @to's before they can find it; the CM's events are held off meanwhile, so a
 * disconnect either came before (nothing moves) or comes to @to.  0, or -ENOENT: the QP is going
 * (its peer disconnected, it failed, its device is going), and nothing moved.
 */
static int rs_park_move(struct rs_sock *from, struct rs_sock *to)
{
	struct rdma_cm_id *id = from->cm_id;
	bool lost = false;

	if (rs_dev_attach(to, from->ibdev))
		return -ENOENT;
	rs_keepalive_stop(from);
	if (cancel_work_sync(&from->qp_err_work)) {	/* a fatal QP event not handled yet */
		sock_put(&from->sk);
		lost = true;
	}
	rs_park_lend(from, to);
	/* rdma_cm reads the handler's context under this lock for each event. */
	rdma_lock_handler(id);
	if (lost || rs_park_dead(from)) {
		rdma_unlock_handler(id);
		rs_park_unlend(to);
		rs_dev_detach(to);
		return -ENOENT;
	}
	rs_link_move(from, to);
	id->context = to;
	to->cm_id = id;
	from->cm_id = NULL;
	rdma_unlock_handler(id);
	/* A fatal QP event that came to @from before the switch is @to's now. */
	if (cancel_work_sync(&from->qp_err_work)) {
		sock_put(&from->sk);
		sock_hold(&to->sk);
		if (!queue_work(rs_wq, &to->qp_err_work))
			sock_put(&to->sk);
	}
	rs_park_hand_over(from, to);
	return 0;
}

/* The new connection's hello (@code: OPEN or ACCEPT), our READY too, behind its ring's new key. */
static int rs_park_hello(struct rs_sock *rs, u32 code)
{
	struct rs_hello_ext hello;
	int err;
	u8 len;

	len = rs_hello_build(rs, &hello);
	hello.h.flags |= RS_HELLO_F_READY;
	err = rs_post_reopen(rs, code, &hello.h, len);
	memzero_explicit(&hello, sizeof(hello));
	return err;
}

/*
 * Server, close_work: the client's OPEN on a parked QP.  A child of the listener that accepted
 * the QP's last connection takes it, answers ACCEPT and is established at once: OPEN and ACCEPT
 * are each end's READY too, so no third message is waited for (the QP is up and reaches only
 * the host whose connection it carried; a client that gives up after its OPEN resets what
 * accept() returned, as TCP's after a Fast Open SYN).  Refused (the listener stopped or is full,
 * the hello is wrong, no memory): the QP is torn down, which the client takes as a refusal.
 * True if the QP moved to the child (what is left of @o is an empty socket).
 */
static bool rs_park_accept(struct rs_sock *o)
{
	struct rs_sock *listener = o->parent;
	struct rs_sock *child;
	bool withdrawn;
	int err;

	if (READ_ONCE(listener->sk.sk_state) != TCP_LISTEN || rs_backlog_full(listener) ||
	    rs_park_dead(o))
		return false;
	child = rs_cm_child_new(listener);
	if (!child)
		return false;
	lock_sock(&child->sk);
	/*
	 * As a child at its ESTABLISHED (no one else sees it yet): the client is there, and its
	 * OPEN was its READY (its ring has its new key).
	 */
	child->flags = BIT(RS_F_CM_EST) | BIT(RS_F_HEARD) | BIT(RS_F_COMM_EST) |
		       BIT(RS_F_CM_SETTLED) | BIT(RS_F_PEER_READY);
	child->mode = RDMASOCK_MODE_RDMA;
	lock_sock_nested(&o->sk, SINGLE_DEPTH_NESTING);
	smp_rmb();	/* the bit (rs_park_hold()) before the hello: rx.c */
	err = rs_hello_parse(child, o->open_buf, o->open_len, true,
			     rs_addr_port((struct sockaddr *)&o->local_addr));
	if (!err && o->tx.size > child->peer_ring_size)
		err = -EPROTO;
	if (!err)
		err = rs_park_freeze(o) ? -ENOENT : rs_park_move(o, child);
	/*
	 * Withdrawn (a RESET after the OPEN) before the QP was the child's: it goes with it.
	 * After, completions find the child (rs_link_move(), under the CQ's lock): it is reset.
	 */
	withdrawn = !err && test_bit(RS_F_OPEN_VOID, &o->flags);
	release_sock(&o->sk);
	if (err) {
		if (err != -ENOENT)
			rs_count(sock_net(&o->sk), RS_CNT_PROTO_ERR);
		release_sock(&child->sk);
		sock_put(&child->sk);
		return false;
	}
	if (withdrawn)
		rs_abort(child, -ECONNRESET);
	if (withdrawn || !rs_cm_child_queue(child)) {
		release_sock(&child->sk);
		sock_put(&child->sk);
		return true;
	}
	/* ACCEPT, our READY too: the child is established at once, as TCP's after a Fast Open. */
	err = rs_park_hello(child, RS_CTRL_ACCEPT);
	if (err) {
		rs_abort(child, -ECONNRESET);
	} else {
		rs_count(sock_net(&child->sk), RS_CNT_REUSED);
		if (rs_child_rtu(child))
			rs_keepalive_update(child);
	}
	release_sock(&child->sk);	/* (its reference is the queue's now) */
	return true;
}

/* GIVEN: close_work frees what is left of @rs after @delay (jiffies), once only it acts on it. */
static void rs_park_give(struct rs_sock *rs, unsigned long delay)
{
	spin_lock_bh(&rs_park_lock);
	WRITE_ONCE(rs->park_state, RS_PARK_GIVEN);
	mod_delayed_work(rs_wq, &rs->close_work, delay);
	spin_unlock_bh(&rs_park_lock);
}

/*
 * close_work, the socket closed and its last work requests done (@idle) or given up on: does a
 * parked QP stay?  True: close_work is queued again (or a connect() will queue it) and must do
 * nothing more now.  False: the socket goes, with what it still holds.
 */
bool rs_park_hold(struct rs_sock *rs, bool idle)
{
	bool open = false, moved;

	/* Never offered (or it was not parked): only this work item moves it from NONE. */
	if (READ_ONCE(rs->park_state) == RS_PARK_NONE)
		return false;
	spin_lock_bh(&rs_park_lock);
	switch (rs->park_state) {
	case RS_PARK_TAKEN:
		spin_unlock_bh(&rs_park_lock);
		return true;
	case RS_PARK_PARKED:
		open = test_bit(RS_F_OPEN_RCVD, &rs->flags);
		if (!open && idle && !rs_park_dead(rs) &&
		    time_before(jiffies, rs->park_deadline)) {
			mod_delayed_work(rs_wq, &rs->close_work, rs->park_deadline - jiffies);
			spin_unlock_bh(&rs_park_lock);
			return true;
		}
		rs_park_unlist(rs, RS_PARK_DONE);
		break;
	case RS_PARK_GIVEN:
		WRITE_ONCE(rs->park_state, RS_PARK_DONE);
		break;
	default:
		spin_unlock_bh(&rs_park_lock);
		return false;
	}
	spin_unlock_bh(&rs_park_lock);
	/* No kick comes any more: drop one still pending (this run frees the socket). */
	cancel_delayed_work(&rs->close_work);
	moved = open && idle && rs->parent && rs_park_accept(rs);
	if (open)	/* taken or not, it is done with: it holds half a resume secret */
		memzero_explicit(rs->open_buf, sizeof(rs->open_buf));
	if (!moved)
		return false;
	/* What is left of it goes later, off the new connection's way (rs_park_claim()). */
	rs_park_give(rs, RS_PARK_SHELL_DELAY);
	return true;
}

/*
 * A parked client QP to @addr that @rs may take (the same user and memory cgroup: its rings stay
 * charged where they were), taken off the table (TAKEN); or NULL.  The oldest (a bucket's last):
 * the likeliest to have settled, the newest may still wait for its FIN's completion.
 */
static struct rs_sock *rs_park_find(struct rs_sock *rs, const struct sockaddr *addr)
{
	struct net *net = sock_net(&rs->sk);
	struct rs_sock *e, *o = NULL;

	spin_lock_bh(&rs_park_lock);
	hlist_for_each_entry(e, rs_park_bucket(net, addr), park_node) {
		if (!e->parent && e->park_state == RS_PARK_PARKED &&
		    e->sk.sk_family == rs->sk.sk_family && net_eq(sock_net(&e->sk), net) &&
		    uid_eq(e->sk.sk_uid, rs->sk.sk_uid) && e->sk.sk_memcg == rs->sk.sk_memcg &&
		    rs_addr_equal((struct sockaddr *)&e->peer_addr, addr))
			o = e;
	}
	if (o)
		rs_park_unlist(o, RS_PARK_TAKEN);
	spin_unlock_bh(&rs_park_lock);
	return o;
}

/*
 * @rs (connect(), locked) takes @o's QP (TAKEN), as rs_cm_connect() starts an attempt: the QP's
 * completions may find @rs from the move.  Either way @o is GIVEN back to its close_work, which
 * frees what is left of it (all, if nothing moved).  0, or -ENOENT: nothing moved.
 */
static int rs_park_claim(struct rs_sock *rs, struct rs_sock *o)
{
	int err;

	rs_park_flush(o);
	/*
	 * Its last FIN's completion is a round trip away when the close was just now (and the
	 * server's FIN, when the client closed first).  Not settled by then, it goes: a connect()
	 * waits for one parked QP once, at most.
	 */
	wait_event_timeout(o->close_wait, rs_park_settled(o) || rs_park_dead(o), RS_PARK_SETTLE);
	rs->flags = BIT(RS_F_OPENING);
	rs->reason = RDMASOCK_REASON_NONE;
	WRITE_ONCE(rs->sk.sk_shutdown, 0);
	rs->cm_result = 0;
	rs->sk.sk_state = TCP_SYN_SENT;
	lock_sock_nested(&o->sk, SINGLE_DEPTH_NESTING);
	err = rs_park_freeze(o) ? -ENOENT : rs_park_move(o, rs);
	release_sock(&o->sk);
	/*
	 * What is left of it goes: its QP (nothing moved) at once, else an empty socket, later.
	 * Its work queued now would be woken on this CPU, preempt us, and run before the OPEN we
	 * are about to send is even received (the softirq that carries it is left to ksoftirqd).
	 */
	rs_park_give(o, err ? 0 : RS_PARK_SHELL_DELAY);
	if (err) {
		rs->flags = 0;
		rs->sk.sk_state = TCP_CLOSE;
	}
	return err;
}

/*
 * Client, connect() under lock_sock, on an unbound socket: carry the connection to @addr on a
 * parked QP, if there is one.  0: the attempt is under way (its outcome comes as for the CM's:
 * rs_client_ready() at ACCEPT, the server's READY too); else none was made and nothing changed.
 * Given up on after the OPEN went out, it is reset (rs_reset_abandoned()): the server may have
 * made the connection already.
 */
int rs_park_take(struct rs_sock *rs, struct sockaddr *addr, int len)
{
	struct sockaddr_storage src;
	struct rs_sock *o;
	int err;

	sock_owned_by_me(&rs->sk);
	/* Only a socket that chose no address, port or device: the parked QP has its own. */
	if (!READ_ONCE(rs_park_ms) || rs->no_reuse || rs->cm_id || rs->link || !rs->tcp ||
	    inet_sk(rs->tcp->sk)->inet_num || READ_ONCE(rs->tcp->sk->sk_bound_dev_if) ||
	    kernel_getsockname(rs->tcp, (struct sockaddr *)&src) < 0 ||
	    !rs_addr_any((struct sockaddr *)&src))
		return -ENOENT;
	o = rs_park_find(rs, addr);
	if (!o || rs_park_claim(rs, o))
		return -ENOENT;
	memcpy(&rs->peer_addr, addr, min_t(int, len, sizeof(rs->peer_addr)));
	rs->peer_addr_len = len;
	/* Bounded apart from the CM's: a server that does not answer costs a fresh set-up. */
	rs->connect_deadline = jiffies + RS_PARK_OPEN_WAIT;
	rs_connect_work_arm(rs, RS_PARK_OPEN_WAIT);
	err = rs_park_hello(rs, RS_CTRL_OPEN);
	if (err)
		rs_connect_done(rs, err, RDMASOCK_REASON_RESOURCE);
	else
		rs_count(sock_net(&rs->sk), RS_CNT_REUSED);
	return 0;
}

/*
 * Parked QPs now (/proc/net/rdmasock_stat): of @net, or of all namespaces (NULL).  A namespace
 * that goes has none: only user sockets park, and they hold it until they are freed.
 */
unsigned int rs_park_count(struct net *net)
{
	if (!net)
		return READ_ONCE(rs_nparked);
	return READ_ONCE(rs_park_net(net)->n);
}

/* (The table starts empty: the namespace's generic memory is zeroed.) */
static void __net_exit rs_park_net_exit(struct net *net)
{
	WARN_ON_ONCE(READ_ONCE(rs_park_net(net)->n));
}

static struct pernet_operations rs_park_net_ops = {
	.exit = rs_park_net_exit,
	.id = &rs_park_net_id,
	.size = sizeof(struct rs_park_net),
};

int rs_park_module_init(void)
{
	rs_park_seed = get_random_u32();
	return register_pernet_subsys(&rs_park_net_ops);
}

void rs_park_module_exit(void)
{
	unregister_pernet_subsys(&rs_park_net_ops);
}
