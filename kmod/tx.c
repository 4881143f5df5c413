// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock transmit side: sendmsg, staging, cork and autocork, send completions.
 *
 * Data is copied into the staging ring at the same offset it will occupy in the peer's ring, then
 * one RDMA WRITE WITH IMMEDIATE moves it and tells the peer how many bytes arrived.  The peer's
 * CONSUMED messages move tx_acked forward, which frees space in both rings at once: the staging
 * bytes are no longer needed once the peer has seen them (a duplicate WRITE after a lost ACK is
 * acknowledged by the responder, never executed again).
 *
 * Only every RS_SIGNAL_EVERY-th WR is signaled (wr.c): its completion retires it and all WRs
 * before it.
 *
 * Autocork (TCP's tcp_autocorking): a WRITE posted while none is in flight is signaled and becomes
 * the marker; small writes that come before its completion stay staged and leave together when it
 * completes.  A writer faster than the wire so sends fewer, larger WRITEs; a lone write finds no
 * marker in flight and goes at once, and a write that follows a read (request/response) is no
 * marker, so a ping-pong pays no extra completion.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/uio.h>
#include <net/tcp_states.h>
#include "rdmasock.h"
#include "core.h"
#include "grow.h"
#include "keepalive.h"
#include "ring.h"
#include "rx.h"
#include "stats.h"
#include "tx.h"
#include "wr.h"

static bool rs_autocork = true;
module_param_named(autocork, rs_autocork, bool, 0644);
MODULE_PARM_DESC(autocork, "hold small writes while an earlier one is in flight (as tcp_autocorking)");

static void rs_tx_want_consumed(struct rs_sock *rs);

/* A peer that stopped acknowledging timed out (as TCP retransmits would); the rest is a reset. */
static int rs_wc_errno(enum ib_wc_status status)
{
	return status == IB_WC_RETRY_EXC_ERR ? -ETIMEDOUT : -ECONNRESET;
}

void rs_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rs_txctx *ctx = container_of(wc->wr_cqe, struct rs_txctx, cqe);
	struct rs_sock *rs = ctx->link->rs;
	bool uncork, fenced, grow;
	int fence_err = 0;

	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		/* (Before ESTABLISHED or ACCEPT the connect's outcome says it.) */
		if (test_bit(RS_F_DYING, &rs->flags) ||
		    (!test_bit(RS_F_CM_EST, &rs->flags) && !test_bit(RS_F_OPENING, &rs->flags))) {
			wake_up_all(&rs->close_wait);
			return;
		}
		rs_count_wc_error(sock_net(&rs->sk), wc->status);
		pr_debug("send completion %s\n", ib_wc_status_msg(wc->status));
		/* The path is lost, not the connection: it carries on over TCP (resume.c). */
		if (rs_path_lost(rs, rs_wc_errno(wc->status))) {
			wake_up_all(&rs->close_wait);
			return;
		}
		/* The QP is in error: nothing more will complete, writes fail from now on. */
		set_bit(RS_F_DISCONNECTED, &rs->flags);
		if (!test_bit(RS_F_PEER_FIN, &rs->flags)) {
			rs_abort(rs, rs_wc_errno(wc->status));
		} else {
			/*
			 * What the peer sent stays readable, to EOF; writes fail (EPIPE).  (Shut
			 * under rs->lock, which rs_tx_peer_closed() tests it under.)
			 */
			spin_lock(&rs->lock);
			WRITE_ONCE(rs->sk.sk_shutdown, rs->sk.sk_shutdown | SEND_SHUTDOWN);
			spin_unlock(&rs->lock);
			rs_wake(&rs->sk, EPOLLOUT | EPOLLWRNORM);
		}
		wake_up_all(&rs->close_wait);
		return;
	}
	rs_peer_alive(rs);
	rs_count(sock_net(&rs->sk), RS_CNT_COMPLETIONS);
	spin_lock(&rs->lock);
	/* A signaled WR retires every WR posted before it (RC send queues complete in order). */
	if ((s32)(ctx->seq + 1 - rs->sq_done) > 0)
		rs->sq_done = ctx->seq + 1;
	fenced = test_bit(RS_F_SQ_FENCE, &rs->flags) && rs->sq_done == rs->sq_posted;
	if (fenced)
		fence_err = rs_fence_fire(rs);
	if (test_bit(RS_F_TX_MARKER, &rs->flags) && (s32)(ctx->seq - rs->tx_marker) >= 0)
		clear_bit(RS_F_TX_MARKER, &rs->flags);
	uncork = !test_bit(RS_F_TX_MARKER, &rs->flags) &&
		 test_and_clear_bit(RS_F_AUTOCORKED, &rs->flags);
	/* A RESIZE a fence or a full SQ held back, once no fence is up (decided under the lock). */
	grow = !test_bit(RS_F_SQ_FENCE, &rs->flags) && rs_due(rs, RS_F_GROW_DUE);
	/*
	 * An abortive close's RESET a full SQ held back, under the lock rs_tx_idle() takes: the
	 * closer never finds the queue idle before it is posted.  (Failing otherwise, the QP is
	 * gone: the disconnect is the reset.)
	 */
	if (rs_due(rs, RS_F_RESET_DUE) &&
	    __rs_send_ctrl(rs, RS_IMM_CTRL, RS_CTRL_RESET, true) == -ENOBUFS)
		set_bit(RS_F_RESET_DUE, &rs->flags);
	spin_unlock(&rs->lock);
	if (rs_post_failed(fence_err))
		rs_post_refused(rs);
	/* (A full queue holds a signaled WR: a push that found it full always gets this call.) */
	if (rs_due(rs, RS_F_PUSH_DUE) || uncork || fenced)
		rs_tx_push(rs);
	if (grow)	/* the ring's fill decided it when it was held back */
		rs_rx_grow_soon(rs, READ_ONCE(rs->rx.size));
	if (fenced || rs_due(rs, RS_F_ANNOUNCE_DUE))
		rs_rx_announce(rs, true);	/* a report the fence or a full SQ held back */
	if (rs_due(rs, RS_F_WANT_DUE))
		rs_tx_want_consumed(rs);
	clear_bit(RS_F_SWITCH_WAIT, &rs->flags);	/* a slot is free: a writer may switch */
	rs->sk.sk_write_space(&rs->sk);
	wake_up_all(&rs->close_wait);
}

/*
 * One RDMA WRITE WITH IMMEDIATE of @len staged bytes from staging offset @off to the peer's ring
 * at @roff, rs->lock held.
 */
static int rs_post_write(struct rs_sock *rs, u32 off, u32 roff, u32 len)
{
	struct ib_rdma_wr wr = {};
	struct ib_sge sge;
	bool marker;
	int err;

	lockdep_assert_held(&rs->lock);
	sge.addr = rs->tx.mr->iova + off;
	sge.length = len;
	sge.lkey = rs->tx.mr->lkey;
	wr.wr.opcode = IB_WR_RDMA_WRITE_WITH_IMM;
	wr.wr.ex.imm_data = cpu_to_be32(rs_imm(RS_IMM_DATA, len));
	wr.wr.sg_list = &sge;
	wr.wr.num_sge = 1;
	wr.remote_addr = rs->peer_ring_addr + roff;
	wr.rkey = rs->peer_rkey;
	/* (rs->link is stable under rs->lock; without one, __rs_post() fails the post) */
	if (rs->link && len <= rs->link->max_inline) {
		/* Inline data is copied by the CPU at post time, from a kernel virtual address. */
		wr.wr.send_flags |= IB_SEND_INLINE;
		sge.addr = (uintptr_t)rs->tx.buf + off;
	} else {
		rs_ring_sync(&rs->tx, off, len, false);
	}
	/*
	 * A marker costs a send completion.  A write that follows a read is request/response
	 * traffic, where the next write waits for an answer anyway: no marker then.
	 */
	marker = !test_bit(RS_F_TX_MARKER, &rs->flags) &&
		 !test_and_clear_bit(RS_F_READ_SINCE_TX, &rs->flags);
	err = __rs_post(rs, &wr.wr, marker, false, len);
	if (!err && marker) {
		rs->tx_marker = rs->sq_posted - 1;
		set_bit(RS_F_TX_MARKER, &rs->flags);
	}
	return err;
}

/*
 * Post every staged byte, then a pending FIN.  A WRITE ends where either ring wraps (the staging
 * ring may be smaller than the peer's: grow.c) and at RS_MAX_WRITE.
 * Runs from any process context and from send completions (softirq), without lock_sock: rs->lock
 * orders it against sendmsg's staging and against teardown.
 */
void rs_tx_push(struct rs_sock *rs)
{
	int err = 0;

	spin_lock_bh(&rs->lock);
	/* Torn down: the staging ring is gone (tx.size 0), and nothing can be posted any more. */
	if (test_bit(RS_F_DYING, &rs->flags) || !rs->tx.size) {
		spin_unlock_bh(&rs->lock);
		return;
	}
	/* An urgent byte's URG goes before the WRITE that carries it (unless that went already). */
	if (test_bit(RS_F_URG_PENDING, &rs->flags)) {
		err = test_bit(RS_F_FIN_SENT, &rs->flags) ? 0 :
		      __rs_send_ctrl(rs, RS_IMM_CTRL, RS_CTRL_URG | (rs->tx_urg & RS_URG_POS_MASK),
				     false);
		if (!err)
			clear_bit(RS_F_URG_PENDING, &rs->flags);
	}
	while (rs->tx_staged != rs->tx_prod && !err) {
		u32 off = (rs->tx_prod - rs->tx_lbase) % rs->tx.size;
		u32 roff = (rs->tx_prod - rs->tx_base) % rs->peer_ring_size;
		u32 len = min_t(u64, rs->tx_staged - rs->tx_prod, rs->tx.size - off);

		len = min_t(u32, len, rs->peer_ring_size - roff);
		len = min_t(u32, len, RS_MAX_WRITE);
		err = rs_post_write(rs, off, roff, len);
	}
	if (!err && test_bit(RS_F_FIN_PENDING, &rs->flags) &&
	    !test_and_set_bit(RS_F_FIN_SENT, &rs->flags)) {
		err = __rs_send_ctrl(rs, RS_IMM_CTRL, RS_CTRL_FIN, true);
		if (err)
			clear_bit(RS_F_FIN_SENT, &rs->flags);
	}
	/*
	 * A full send queue: the completion that frees a slot pushes (rs_send_done()).  A full
	 * queue holds a signaled WR (one in RS_SIGNAL_EVERY is), and that completion takes
	 * rs->lock after this, so it sees the flag; no timer polls meanwhile (a peer that takes
	 * nothing would keep a worker busy every jiffy).  Behind a fence the completion that lifts
	 * it pushes.
	 */
	if (err == -ENOBUFS && !test_bit(RS_F_SQ_FENCE, &rs->flags))
		set_bit(RS_F_PUSH_DUE, &rs->flags);
	spin_unlock_bh(&rs->lock);
	/*
	 * -EPIPE: torn down meanwhile.  Any other error is the provider refusing a post on a QP
	 * that is gone: the staged bytes cannot go on it, and no completion will come to push
	 * them, so the path is lost (resumed, or a reset) rather than a writer left waiting.
	 */
	if (rs_post_failed(err))
		rs_post_refused(rs);
}

static void rs_push_work(struct work_struct *work)
{
	rs_tx_push(container_of(to_delayed_work(work), struct rs_sock, push_work));
}

void rs_tx_init(struct rs_sock *rs)
{
	INIT_DELAYED_WORK(&rs->push_work, rs_push_work);
}

/* Teardown: RS_F_DYING is set, so rs_tx_flush() can no longer arm push_work. */
void rs_tx_stop(struct rs_sock *rs)
{
	cancel_delayed_work_sync(&rs->push_work);
}

/*
 * How many bytes may be in flight (staged and not yet consumed by the peer): the peer's ring or our
 * staging ring, whichever is smaller, or less if the user locked SO_SNDBUF smaller.  As for TCP,
 * half of sk_sndbuf is payload.
 */
static u32 rs_tx_window(struct rs_sock *rs)
{
	u32 window = min(rs->tx.size, rs->peer_ring_size);

	if (rs->sk.sk_userlocks & SOCK_SNDBUF_LOCK)
		window = clamp_t(u32, READ_ONCE(rs->sk.sk_sndbuf) / 2, 1, window);
	return window;
}

/*
 * Bytes the peer's ring and our staging ring can both take now; 0 before the peer is READY.  Bytes
 * before tx_base are in the peer's previous ring, bytes before tx_lbase in our previous staging
 * ring (grow.c): they take no room in these.
 */
u32 rs_tx_space(struct rs_sock *rs)
{
	u32 space, used, window, lused;

	if (!test_bit(RS_F_PEER_READY, &rs->flags) || !rs->tx.size ||
	    test_bit(RS_F_SQ_FENCE, &rs->flags))
		return 0;	/* (a fence may swap the staging ring: nothing stages meanwhile) */
	spin_lock_bh(&rs->lock);
	window = rs_tx_window(rs);
	used = rs->tx_staged - max(rs->tx_acked, rs->tx_base);
	lused = rs->tx_staged - max(rs->tx_acked, rs->tx_lbase);
	space = used < window ? window - used : 0;
	space = min(space, lused < rs->tx.size ? rs->tx.size - lused : 0);
	if (!rs_sq_room(rs, false))
		space = 0;
	spin_unlock_bh(&rs->lock);
	return space;
}

/* Nothing of ours is staged or in flight (or nothing ever will complete again). */
bool rs_tx_idle(struct rs_sock *rs)
{
	bool idle;

	spin_lock_bh(&rs->lock);
	idle = (rs->sq_posted == rs->sq_done && rs->tx_staged == rs->tx_prod &&
		!test_bit(RS_F_RESET_DUE, &rs->flags)) ||
	       test_bit(RS_F_DISCONNECTED, &rs->flags) || test_bit(RS_F_ABORTED, &rs->flags);
	spin_unlock_bh(&rs->lock);
	return idle;
}

/* Why a write cannot proceed, or 0.  -EPIPE is turned into TCP's error by sk_stream_error(). */
int rs_tx_error(struct rs_sock *rs)
{
	struct sock *sk = &rs->sk;

	if (READ_ONCE(sk->sk_err) || (READ_ONCE(sk->sk_shutdown) & SEND_SHUTDOWN))
		return -EPIPE;
	if (test_bit(RS_F_DISCONNECTED, &rs->flags))
		return -EPIPE;
	switch (READ_ONCE(sk->sk_state)) {
	case TCP_ESTABLISHED:
	case TCP_CLOSE_WAIT:
	case TCP_SYN_SENT:
		return 0;
	default:
		return -EPIPE;	/* as tcp_sendmsg() on a socket that is not connected */
	}
}

static bool rs_tx_can_write(struct rs_sock *rs)
{
	return READ_ONCE(rs->sk.sk_state) != TCP_SYN_SENT && rs_tx_space(rs);
}

/*
 * Ask the peer to report consumption at once (once per window that shut).  On a full SQ the
 * completion that frees a slot asks (RS_F_WANT_DUE): a nonblocking writer may never call again
 * before the peer reports, and the peer would never report.
 */
static void rs_tx_want_consumed(struct rs_sock *rs)
{
	int err;

	if (test_and_set_bit(RS_F_WANT_SENT, &rs->flags))
		return;
	/* Under rs->lock: the completion that frees a slot tests RS_F_WANT_DUE after taking it. */
	spin_lock_bh(&rs->lock);
	err = __rs_send_ctrl(rs, RS_IMM_CTRL, RS_CTRL_WANT_CONSUMED, false);
	if (err) {
		clear_bit(RS_F_WANT_SENT, &rs->flags);
		rs_ctrl_defer(rs, RS_F_WANT_DUE, err);
	}
	spin_unlock_bh(&rs->lock);
	if (rs_post_failed(err))
		rs_post_refused(rs);
}

/*
 * A window below the peer's ring (SO_SNDBUF) can close before the peer consumed the quarter ring
 * that makes it report: the writer must ask it (again, after each report that left it shut).
 */
static bool rs_tx_want_due(struct rs_sock *rs)
{
	/* (Not while a full SQ defers it, nor once the QP is gone: nothing could be posted.) */
	return !test_bit(RS_F_WANT_SENT, &rs->flags) && !test_bit(RS_F_WANT_DUE, &rs->flags) &&
	       !test_bit(RS_F_DYING, &rs->flags) && !test_bit(RS_F_RESUMING, &rs->flags) &&
	       rs->tx.size && rs_tx_window(rs) < rs->peer_ring_size;
}

static int rs_tx_wait(struct rs_sock *rs, long *timeo, u32 gen)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	struct sock *sk = &rs->sk;
	bool waiting = false;
	int err;

	for (;;) {
		err = rs_tx_error(rs);
		/* Another thread's connect() started over while we waited: not our stream. */
		if (READ_ONCE(rs->conn_gen) != gen)
			err = -EPIPE;
		/* The connection resumed over TCP meanwhile: the rest goes there (rdma.c). */
		if (rs_is_tcp(rs))
			err = -EXDEV;
		if (!err)
			rs_tx_switch(rs);	/* the peer offered a larger ring: take it first */
		if (err || rs_tx_can_write(rs))
			break;
		/* Held-back bytes may be what fills the window: they must go before we wait. */
		rs_tx_push(rs);
		/* Blocking or not, the window is shut: watch that the peer still lives. */
		rs_keepalive_persist(rs);
		if (rs_tx_want_due(rs))
			rs_tx_want_consumed(rs);
		err = -EAGAIN;
		if (!*timeo)
			break;
		err = sock_intr_errno(*timeo);
		if (signal_pending(current))
			break;
		set_bit(SOCK_NOSPACE, &sk->sk_socket->flags);
		/*
		 * Joined only now: a writer with room (the common case) never touches the wait
		 * queue.  sk_wait_event() tests the condition again once we are on it.
		 */
		if (!waiting) {
			add_wait_queue(sk_sleep(sk), &wait);
			waiting = true;
		}
		/*
		 * (A switch the SQ refused waits for the completion that frees a slot.)  A report
		 * that left the window shut (the bytes it freed were in the peer's previous ring)
		 * clears WANT_SENT and may come before we joined the queue: ask again then.
		 */
		sk_wait_event(sk, timeo, rs_tx_error(rs) || rs_tx_can_write(rs) ||
			      READ_ONCE(rs->conn_gen) != gen || rs_tx_want_due(rs) ||
			      rs_is_tcp(rs) ||
			      (rs_tx_switch_ready(rs) && !test_bit(RS_F_SWITCH_WAIT, &rs->flags)),
			      &wait);
	}
	if (waiting)
		remove_wait_queue(sk_sleep(sk), &wait);
	return err;
}

/* Corked bytes go out when this many are held, when uncorked, or after RS_CORK_CEILING. */
static u32 rs_cork_flush_size(struct rs_sock *rs)
{
	return min_t(u32, rs->tx.size / 4, 64U << 10);
}

#define RS_CORK_CEILING		(HZ / 5)	/* TCP_CORK's documented 200 ms */

/*
 * Send or hold what sendmsg staged.  TCP_CORK and MSG_MORE hold small amounts back so that a
 * header and a body written separately travel in one WRITE; autocork holds small amounts while
 * a WRITE is in flight (its completion pushes them); anything else goes out at once.
 */
static void rs_tx_flush(struct rs_sock *rs, bool more)
{
	bool hold, autocorked;

	/* Under rs->lock, as the marker's completion: it cannot slip between test and set. */
	spin_lock_bh(&rs->lock);
	hold = rs->tx_staged - rs->tx_prod < rs_cork_flush_size(rs);
	autocorked = hold && !more && READ_ONCE(rs_autocork) &&
		     test_bit(RS_F_TX_MARKER, &rs->flags);
	if (autocorked)
		set_bit(RS_F_AUTOCORKED, &rs->flags);
	else if (hold && more && !test_bit(RS_F_DYING, &rs->flags))
		queue_delayed_work(rs_wq, &rs->push_work, RS_CORK_CEILING);
	spin_unlock_bh(&rs->lock);
	if (!hold || (!more && !autocorked))
		rs_tx_push(rs);
}

/* Copy from the user into the staging ring, at most up to the ring's end. */
/*
 * MSG_OOB, as tcp_mark_urg(): the last byte written is urgent (one at a time, the latest wins).
 * Its URG goes before any further WRITE (rs_tx_push()), never after our FIN.  rs->lock held.
 */
static void rs_tx_mark_urg_locked(struct rs_sock *rs)
{
	lockdep_assert_held(&rs->lock);
	if (test_bit(RS_F_FIN_SENT, &rs->flags))
		return;
	rs->tx_urg = rs->tx_staged - 1;
	rs->tx_urg_set = 1;
	set_bit(RS_F_URG_PENDING, &rs->flags);
}

/*
 * Copy up to @want bytes into the staging ring.  @urg: they are the last of a MSG_OOB send, whose
 * final byte is marked as it becomes staged, under the same lock: no push can post it unmarked.
 */
static int rs_tx_stage(struct rs_sock *rs, struct msghdr *msg, size_t want, bool urg)
{
	u32 off = (rs->tx_staged - rs->tx_lbase) % rs->tx.size;
	u32 chunk = min_t(size_t, want, rs->tx.size - off);

	chunk = copy_from_iter(rs->tx.buf + off, chunk, &msg->msg_iter);
	if (!chunk)
		return -EFAULT;
	spin_lock_bh(&rs->lock);
	rs->tx_staged += chunk;
	if (urg && chunk == want)
		rs_tx_mark_urg_locked(rs);
	spin_unlock_bh(&rs->lock);
	return chunk;
}

/*
 * The peer closed (its FIN, then its disconnect) and nothing failed since.  TCP's first write
 * then succeeds (the peer answers it with a reset, which shuts the socket: EPIPE from the next
 * write on, EOF for reads): so does ours, its bytes dropped, and the socket is shut as that.
 */
static bool rs_tx_peer_closed(struct rs_sock *rs)
{
	struct sock *sk = &rs->sk;
	bool closed;

	if (!test_bit(RS_F_DISCONNECTED, &rs->flags))
		return false;
	spin_lock_bh(&rs->lock);
	closed = sk->sk_state == TCP_CLOSE_WAIT && !sk->sk_err &&
		 !(sk->sk_shutdown & SEND_SHUTDOWN) && test_bit(RS_F_PEER_FIN, &rs->flags) &&
		 !test_bit(RS_F_ABORTED, &rs->flags);
	if (closed) {
		/* As tcp_reset() in CLOSE_WAIT: EPIPE pending (SO_ERROR, POLLERR), all shut. */
		WRITE_ONCE(sk->sk_err, EPIPE);
		WRITE_ONCE(sk->sk_shutdown, SHUTDOWN_MASK);
		WRITE_ONCE(sk->sk_state, TCP_CLOSE);
	}
	spin_unlock_bh(&rs->lock);
	if (closed) {
		sk_error_report(sk);
		rs_wake(sk, EPOLLOUT | EPOLLHUP | EPOLLERR);
	}
	return closed;
}

/*
 * Teardown of a connection that resumes over TCP (resume.c), lock_sock held, the QP gone so that
 * nothing moves: keep every byte the peer has not consumed, which is all it can still need.  They
 * are in the staging ring, and for a switch's first bytes in the previous one (kept until the
 * peer consumed them, grow.c).  At most the two staging rings' sizes.
 */
int rs_tx_snapshot(struct rs_sock *rs)
{
	u64 pos, end;
	u32 n;
	void *buf = NULL;

	sock_owned_by_me(&rs->sk);
	kvfree(rs->replay_buf);
	rs->replay_buf = NULL;
	rs->replay_ok = false;
	n = rs->tx_staged - rs->tx_acked;
	if (n) {
		buf = kvmalloc(n, GFP_KERNEL);
		if (!buf)
			return -ENOMEM;
	}
	for (pos = rs->tx_acked; pos < rs->tx_staged; pos += n) {
		const struct rs_ring *r = &rs->tx;
		u64 lbase = rs->tx_lbase;
		u32 off;

		end = rs->tx_staged;
		if (pos < rs->tx_lbase) {
			r = &rs->tx_old;
			lbase = rs->tx_old_lbase;
			end = rs->tx_lbase;
		}
		if (!r->buf || !r->size || pos < lbase) {
			kvfree(buf);
			return -EPROTO;	/* (cannot happen: tx_old stays until consumed) */
		}
		off = (pos - lbase) % r->size;
		n = min_t(u64, end - pos, r->size - off);
		memcpy(buf + (pos - rs->tx_acked), r->buf + off, n);
	}
	rs->replay_buf = buf;
	rs->replay_base = rs->tx_acked;
	rs->replay_end = rs->tx_staged;
	rs->replay_prod = rs->tx_prod;
	/* The latest urgent byte stays urgent: its URG may not have gone, or not been acted on. */
	rs->replay_urg = rs->tx_urg_set ? rs->tx_urg : U64_MAX;
	rs->resume_fin = test_bit(RS_F_FIN_PENDING, &rs->flags) ||
			 test_bit(RS_F_FIN_SENT, &rs->flags);
	rs->replay_ok = true;
	return 0;
}

int rs_rdma_sendmsg(struct rs_sock *rs, struct msghdr *msg, size_t len)
{
	struct sock *sk = &rs->sk;
	long timeo = sock_sndtimeo(sk, msg->msg_flags & MSG_DONTWAIT);
	bool more = rs->cork || (msg->msg_flags & MSG_MORE);
	bool oob = msg->msg_flags & MSG_OOB;	/* its last byte is urgent */
	u32 gen = rs->conn_gen;
	size_t copied = 0;
	int err = 0;

	sock_owned_by_me(sk);
	if (len && rs_tx_peer_closed(rs)) {
		iov_iter_advance(&msg->msg_iter, len);
		return len;
	}
	while (copied < len) {
		size_t want;

		err = rs_tx_wait(rs, &timeo, gen);
		if (err)
			break;
		/* The window can shut again meanwhile (a completion took the last SQ slots). */
		want = min_t(size_t, len - copied, rs_tx_space(rs));
		if (!want)
			continue;
		err = rs_tx_stage(rs, msg, want, oob && want == len - copied);
		if (err < 0)
			break;
		copied += err;
		err = 0;
		/*
		 * Bytes beyond this call are certain: hold only what may still grow.  Urgent data
		 * goes at once, corked or not (TCP's Nagle test lets urgent mode through).
		 */
		if (oob && copied == len)
			rs_tx_flush(rs, false);
		else
			rs_tx_flush(rs, more || copied < len);
	}
	/* A partial MSG_OOB write: its last byte is urgent, on the connection it went to. */
	if (oob && copied && copied < len && rs->conn_gen == gen) {
		spin_lock_bh(&rs->lock);
		rs_tx_mark_urg_locked(rs);
		spin_unlock_bh(&rs->lock);
		rs_tx_flush(rs, false);
	}
	/*
	 * A partial write returns what was staged: it must not sit there without MSG_MORE.  (A full
	 * one was flushed as such by its last turn.)
	 */
	if (copied && copied < len && !oob)
		rs_tx_flush(rs, more);
	if (copied)
		return copied;
	if (err == -EPIPE || err == -ENOBUFS)
		return sk_stream_error(sk, msg->msg_flags, -EPIPE);
	return err;
}
