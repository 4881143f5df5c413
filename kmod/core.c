// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock core: what every layer may use, and the only way a lower layer reaches a higher one.
 *
 * A lower layer (a completion handler, the CM handler, device removal) never calls up by name: it
 * wakes the socket (rs_wake, the socket's wait queue and SIGIO), records an outcome and queues a
 * work item the socket layer set up (rs_connect_done: connect_work; rs_abort: teardown_work), or
 * moves a flag the upper layer reads.  docs/design.md, "Layers", says which file may call which.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <net/tcp_states.h>
#include "rdmasock.h"
#include "core.h"
#include "stats.h"
#include "trace.h"

unsigned int rs_connect_timeout_ms = 1000;
module_param_named(connect_timeout_ms, rs_connect_timeout_ms, uint, 0644);
MODULE_PARM_DESC(connect_timeout_ms, "bound on RDMA connection set-up before falling back to TCP");

struct workqueue_struct *rs_wq;
struct workqueue_struct *rs_resume_wq;	/* unbound: resume_work and handshakes block (resume.c) */

unsigned int rs_resume_port = 19261;
module_param_named(resume_port, rs_resume_port, uint, 0444);
MODULE_PARM_DESC(resume_port,
		 "TCP port (per network namespace) where connections whose RDMA path was lost resume; 0: off");

bool rs_resume_on = true;
module_param_named(resume, rs_resume_on, bool, 0644);
MODULE_PARM_DESC(resume, "connections that lose their RDMA path carry on over TCP (off: they fail)");

unsigned int rs_resume_timeout_ms = 5000;
module_param_named(resume_timeout_ms, rs_resume_timeout_ms, uint, 0644);
MODULE_PARM_DESC(resume_timeout_ms,
		 "bound on carrying a connection over to TCP after its RDMA path was lost");

void rs_wake(struct sock *sk, __poll_t mask)
{
	struct socket_wq *wq;

	rcu_read_lock();
	wq = rcu_dereference(sk->sk_wq);
	if (skwq_has_sleeper(wq))
		wake_up_interruptible_poll(&wq->wait, mask);
	rcu_read_unlock();
	if (mask & (EPOLLIN | EPOLLRDHUP | EPOLLHUP))
		sk_wake_async(sk, SOCK_WAKE_WAITD, POLL_IN);
	if (mask & EPOLLOUT)
		sk_wake_async(sk, SOCK_WAKE_SPACE, POLL_OUT);
}

/*
 * (Re)arm connect_work.  A queued connect_work holds a socket reference, so a CM event that comes
 * while the socket is being closed can never run it on freed memory.
 */
void rs_connect_work_arm(struct rs_sock *rs, unsigned long delay)
{
	sock_hold(&rs->sk);
	if (mod_delayed_work(rs_wq, &rs->connect_work, delay))
		sock_put(&rs->sk);	/* it was pending already, with its reference */
}

/*
 * Record a connect's outcome (the first one wins) and return the one recorded.  rs->lock held:
 * the client's READY goes out under it with the success (rs_client_ready(), wr.c).
 */
int __rs_connect_record(struct rs_sock *rs, int result, int reason)
{
	lockdep_assert_held(&rs->lock);
	if (!test_and_set_bit(RS_F_CM_DONE, &rs->flags)) {
		rs->cm_result = result;
		if (result)
			rs->reason = reason;
	}
	return rs->cm_result;
}

int rs_connect_record(struct rs_sock *rs, int result, int reason)
{
	int recorded;

	spin_lock_bh(&rs->lock);
	recorded = __rs_connect_record(rs, result, reason);
	spin_unlock_bh(&rs->lock);
	return recorded;
}

void rs_connect_done(struct rs_sock *rs, int result, int reason)
{
	rs_connect_record(rs, result, reason);
	rs_connect_work_arm(rs, 0);
}

/*
 * A child is established, as a TCP request socket whose handshake completed, once it has both
 * posted its READY at the CM's ESTABLISHED (RS_F_RTU) and seen the client's READY, TCP's ACK,
 * which a client sends only once its connect() succeeded (rs_client_ready()).  Only then does
 * it move to the listener's ready queue: a client that fails before (and carries on over TCP,
 * a new connection to the same listener) leaves a child that is reset on pending_q, never one
 * that accept() returns dead.  Either may come second; one of the two callers sees both.  True
 * for the caller that moved it.  A reused QP's child has both once its ACCEPT is out (park.c):
 * its client's OPEN was that client's READY, and a client that gives up after its OPEN resets
 * it (rs_reset_abandoned()), as TCP's after a Fast Open SYN: accept() may return it reset.
 */
static bool rs_child_established(struct rs_sock *child)
{
	struct rs_sock *listener = child->parent;
	bool queued = false;

	smp_mb__after_atomic();	/* pairs with the other caller's set_bit */
	if (!test_bit(RS_F_RTU, &child->flags) || !test_bit(RS_F_PEER_READY, &child->flags))
		return false;
	/*
	 * The state first, under the lock rs_abort() sets its own under: never ESTABLISHED after
	 * an abort's CLOSE.  It is also what makes one of two callers that both saw both bits the
	 * one that goes on.
	 */
	spin_lock_bh(&child->lock);
	queued = !test_bit(RS_F_ABORTED, &child->flags) && child->sk.sk_state == TCP_SYN_RECV;
	/* The client's FIN may have come already (rx.c leaves SYN_RECV alone): as TCP's. */
	if (queued)
		WRITE_ONCE(child->sk.sk_state, child->sk.sk_shutdown & RCV_SHUTDOWN ?
			   TCP_CLOSE_WAIT : TCP_ESTABLISHED);
	spin_unlock_bh(&child->lock);
	if (!queued)
		return false;
	/*
	 * Then the queue, under the listener's lock (never nested with the child's).  Aborted
	 * meanwhile: its rs_child_unqueue() (after RS_F_ABORTED) unlinks it from pending_q; taken
	 * off by the listener's close: that close resets it.
	 */
	spin_lock_bh(&listener->lock);
	queued = !test_bit(RS_F_ABORTED, &child->flags) &&
		 test_and_clear_bit(RS_F_PENDING, &child->flags);
	if (queued)
		list_move_tail(&child->accept_node, &listener->ready_q);
	spin_unlock_bh(&listener->lock);
	if (!queued)
		return false;
	if (cancel_delayed_work(&child->connect_work))
		sock_put(&child->sk);	/* the SYN_RECV timer's reference */
	rs_count(sock_net(&child->sk), RS_CNT_CONN_RDMA);
	trace_rdmasock_accept(child);
	rs_wake(&listener->sk, EPOLLIN | EPOLLRDNORM);
	return true;
}

/*
 * The child's CM ESTABLISHED, its READY posted (a reused QP's: its ACCEPT).  True if it is
 * established now (the client's READY came first): the caller starts its keepalive.
 */
bool rs_child_rtu(struct rs_sock *child)
{
	set_bit(RS_F_RTU, &child->flags);
	return rs_child_established(child);
}

/*
 * The peer's READY.  A client's connect then completes, with its own READY (rs_client_ready(),
 * its caller's); true if a child is established now: the caller starts its keepalive.
 */
bool rs_peer_ready(struct rs_sock *rs)
{
	set_bit(RS_F_PEER_READY, &rs->flags);
	return rs->parent && rs_child_established(rs);
}

/*
 * rs_abort() of a child still waiting for the client's RTU (the client gave up or vanished, its QP
 * failed, it broke the protocol): it leaves the listener's queue, freeing its backlog slot, as a
 * TCP request socket that timed out.  An established child stays queued, as TCP's: accept()
 * returns it and reads show the reset.  True when it was unlinked: the caller then owns the
 * queue's reference.  RS_F_PENDING says the child is on pending_q; it changes only under the
 * listener's lock.  rs_abort() sets RS_F_ABORTED before it calls this, and rs_cm_request() links
 * a child only if RS_F_ABORTED is clear, under that lock: one of the two sees the other.
 */
bool rs_child_unqueue(struct rs_sock *child)
{
	struct rs_sock *listener = child->parent;
	bool unlinked = false;

	spin_lock_bh(&listener->lock);
	if (test_and_clear_bit(RS_F_PENDING, &child->flags)) {
		list_del_init(&child->accept_node);
		listener->queued--;
		unlinked = true;
	}
	spin_unlock_bh(&listener->lock);
	return unlinked;
}

/*
 * A connect() still being set up (its success not recorded: rs_client_ready()) fails: that is its
 * outcome, so connect_work falls back to TCP (or reports it), not a reset.  True if it was one.
 * Once the success is recorded (with our READY), the socket has yet to be made established (by a
 * connect() waiting or connect_work: rs_connect_established(), rdma.c), and the error (the
 * peer's RESET, its QP's failure, the device going) is the connection's: a reset, as TCP's after
 * its SYN-ACK, never lost.
 */
static bool rs_fail_connecting(struct rs_sock *rs, int err)
{
	if (rs->parent || READ_ONCE(rs->sk.sk_state) != TCP_SYN_SENT ||
	    READ_ONCE(rs->mode) != RDMASOCK_MODE_NONE || sock_flag(&rs->sk, SOCK_DEAD))
		return false;
	if (!rs_connect_record(rs, err, err == -EPROTO ? RDMASOCK_REASON_HELLO :
			       RDMASOCK_REASON_RESOURCE))
		return false;
	rs_connect_work_arm(rs, 0);
	return true;
}

/*
 * A fatal error on the connection, from any context but hard IRQ: a connect's outcome while it is
 * set up, else a reset, as TCP's.  The first error wins.
 */
void rs_abort(struct rs_sock *rs, int err)
{
	struct sock *sk = &rs->sk;
	bool unqueued;

	if (rs_fail_connecting(rs, err))
		return;
	/*
	 * Ours, for the whole call: once RS_F_ABORTED is set, a child that rs_cm_request() finds
	 * aborted loses the reference it had, and this call still has work to do on it.
	 */
	sock_hold(sk);
	spin_lock_bh(&rs->lock);
	if (test_and_set_bit(RS_F_ABORTED, &rs->flags)) {
		spin_unlock_bh(&rs->lock);
		sock_put(sk);
		return;
	}
	WRITE_ONCE(sk->sk_err, -err);
	/*
	 * A connection (not a connect, which connect() fails) whose stream did not end whole,
	 * with the peer's FIN and nothing unread dropped, owes the reading side its error even
	 * when a writer or SO_ERROR takes sk_err first: never a clean EOF (rs_rx_take_error()).
	 */
	if (sk->sk_state != TCP_SYN_SENT &&
	    (!test_bit(RS_F_PEER_FIN, &rs->flags) || rs->rx_cons != rs->rx_prod ||
	     (test_bit(RS_F_RESUME_DETACHED, &rs->flags) && rs->resume_rx != rs->rx_prod)))
		WRITE_ONCE(rs->rx_err, -err);
	WRITE_ONCE(sk->sk_shutdown, SHUTDOWN_MASK);
	WRITE_ONCE(sk->sk_state, TCP_CLOSE);
	rs->rx_cons = rs->rx_prod;	/* unread data is gone (TCP keeps it: design.md) */
	spin_unlock_bh(&rs->lock);
	/* After RS_F_ABORTED is set: a pending child frees its backlog slot. */
	unqueued = rs->parent && rs_child_unqueue(rs);
	/* Nor does its RTU timer keep it (and its listener) for seconds more. */
	if (rs->parent && cancel_delayed_work(&rs->connect_work))
		sock_put(sk);	/* the timer's reference; the caller's keeps the socket */
	trace_rdmasock_error(rs);
	sk_error_report(sk);
	rs_wake(sk, EPOLLIN | EPOLLOUT | EPOLLHUP | EPOLLRDHUP | EPOLLERR);
	wake_up_all(&rs->close_wait);
	sock_hold(sk);
	if (!queue_work(rs_wq, &rs->teardown_work))
		sock_put(sk);
	if (unqueued)
		sock_put(sk);	/* the queue's: the teardown work holds its own */
	sock_put(sk);
}

/*
 * The RDMA path of the connection is lost (@err: the error it would give), from any context but
 * hard IRQ.  True if the connection resumes over TCP (resume.c): teardown_work keeps what the
 * peer has not consumed, then queues resume_work; the caller reports nothing.  False if it
 * cannot (the caller goes on as before: a reset, or a close after the peer's FIN).
 */
bool __rs_path_lost(struct rs_sock *rs, int err, bool asked)
{
	struct sock *sk = &rs->sk;
	int state = READ_ONCE(sk->sk_state);
	bool resuming;

	/*
	 * An established connection (half-closed too), accepted if a child (in the table), never an
	 * orphan or one being closed, nor one the peer disconnected after its FIN (an orderly
	 * close: what it sent stays readable, to EOF), unless the peer asks for it (@asked: its
	 * proof came, resume.c).
	 */
	if (!test_bit(RS_F_RESUMABLE, &rs->flags) || !test_bit(RS_F_PEER_READY, &rs->flags) ||
	    (test_bit(RS_F_DISCONNECTED, &rs->flags) && !asked) ||
	    !test_bit(RS_F_READY_SENT, &rs->flags) || !READ_ONCE(rs_resume_on) ||
	    (state != TCP_ESTABLISHED && state != TCP_CLOSE_WAIT) || sock_flag(sk, SOCK_DEAD) ||
	    test_bit(RS_F_CLOSE_RESET, &rs->flags) ||
	    (rs->parent && hlist_unhashed(&rs->resume_node)))
		return test_bit(RS_F_RESUMING, &rs->flags);
	spin_lock_bh(&rs->lock);
	resuming = !test_bit(RS_F_ABORTED, &rs->flags) && !test_bit(RS_F_CLOSING, &rs->flags) &&
		   (test_bit(RS_F_RESUMING, &rs->flags) || !test_bit(RS_F_DYING, &rs->flags));
	if (resuming && !test_and_set_bit(RS_F_RESUMING, &rs->flags)) {
		/* (Asked after a disconnect we took for a close: writes wait again, not fail.) */
		clear_bit(RS_F_DISCONNECTED, &rs->flags);
		rs->resume_err = err;	/* (the deadline runs from the detach: conn.c) */
		spin_unlock_bh(&rs->lock);
		trace_rdmasock_resume(rs);
		sock_hold(sk);
		if (!queue_work(rs_wq, &rs->teardown_work))
			sock_put(sk);
		return true;
	}
	spin_unlock_bh(&rs->lock);
	return resuming;
}

/* Copy @src (an RDMA connection's address) as the socket names it: v4-mapped on AF_INET6. */
int rs_name_copy(struct rs_sock *rs, struct sockaddr *addr, const struct sockaddr *src)
{
	int len;

	if (src->sa_family == AF_INET && rs_inet_family(rs) == AF_INET6) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)src;
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)addr;

		memset(sin6, 0, sizeof(*sin6));
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = sin->sin_port;
		ipv6_addr_set_v4mapped(sin->sin_addr.s_addr, &sin6->sin6_addr);
		return sizeof(*sin6);
	}
	len = src->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	memcpy(addr, src, len);
	return len;
}

u32 rs_rx_avail(struct rs_sock *rs)
{
	u32 avail;

	spin_lock_bh(&rs->lock);
	avail = test_bit(RS_F_ABORTED, &rs->flags) ? 0 : rs->rx_prod - rs->rx_cons;
	spin_unlock_bh(&rs->lock);
	return avail;
}
