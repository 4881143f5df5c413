// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock transmit side: the QP, posting work requests, and sendmsg.
 *
 * Data is copied into the staging ring at the same offset it will occupy in the peer's ring, then
 * one RDMA WRITE WITH IMMEDIATE moves it and tells the peer how many bytes arrived.  The peer's
 * CONSUMED messages move tx_acked forward, which frees space in both rings at once: the staging
 * bytes are no longer needed once the peer has seen them (a duplicate WRITE after a lost ACK is
 * acknowledged by the responder, never executed again).
 *
 * Only every RS_SIGNAL_EVERY-th WR is signaled: its completion retires it and all WRs before it.
 *
 * Autocork (TCP's tcp_autocorking): a WRITE posted while none is in flight is signaled and becomes
 * the marker; small writes that come before its completion stay staged and leave together when it
 * completes.  A writer faster than the wire so sends fewer, larger WRITEs; a lone write finds no
 * marker in flight and goes at once, and a write that follows a read (request/response) is no
 * marker, so a ping-pong pays no extra completion.
 */
#include <linux/slab.h>
#include <linux/uio.h>
#include <net/tcp_states.h>
#include "rdmasock.h"

#define RS_SQ_DEPTH		128
#define RS_RQ_DEPTH		128
#define RS_SIGNAL_EVERY		16
#define RS_SQ_CTRL_RESERVE	4	/* SQ slots data may never take: CONSUMED, FIN, RESET */
#define RS_MAX_INLINE		256

static bool rs_autocork = true;
module_param_named(autocork, rs_autocork, bool, 0644);
MODULE_PARM_DESC(autocork, "hold small writes while an earlier one is in flight (as tcp_autocorking)");

static void rs_send_done(struct ib_cq *cq, struct ib_wc *wc);
static int rs_fence_fire(struct rs_sock *rs);
static void rs_tx_want_consumed(struct rs_sock *rs);

/* The fatal QP event, in process context: rs_abort() takes BH spinlocks. */
static void rs_qp_err_work(struct work_struct *work)
{
	struct rs_sock *rs = container_of(work, struct rs_sock, qp_err_work);

	if (test_bit(RS_F_RDMA_UP, &rs->flags) && !test_bit(RS_F_DYING, &rs->flags))
		rs_abort(rs, -ECONNRESET);
	sock_put(&rs->sk);
}

/*
 * Providers call this in any context, hard IRQ included (mlx4; mlx5 on some kernels): only count
 * and queue the work, as net/smc and xprtrdma do.  The QP exists, so the socket does: the
 * reference is safe to take, and dropping the spare one is never the last put.
 */
static void rs_qp_event(struct ib_event *ev, void *ctx)
{
	struct rs_sock *rs = ctx;

	if (ev->event == IB_EVENT_COMM_EST) {
		rs_comm_est(rs);
		return;
	}
	if (ev->event == IB_EVENT_QP_FATAL || ev->event == IB_EVENT_QP_ACCESS_ERR ||
	    ev->event == IB_EVENT_QP_REQ_ERR) {
		rs_count(sock_net(&rs->sk), RS_CNT_QP_FATAL);
		sock_hold(&rs->sk);
		if (!queue_work(rs_wq, &rs->qp_err_work))
			sock_put(&rs->sk);
	}
}

/*
 * The client's first message reached a child still waiting for its RTU (IB_EVENT_COMM_EST from the
 * HCA, or our receive handler, as rxe raises none): the client has our REP, so the connection is
 * up; the CM takes this as the RTU (a lost or late one), ESTABLISHED follows.  From any context,
 * but rdma_notify() runs in comm_est_work: the CM takes its lock with one it also takes with
 * softirqs enabled (lockdep: an irq lock inversion from our irq_poll).
 */
void rs_comm_est(struct rs_sock *rs)
{
	smp_mb();	/* the message's mark (RS_F_PEER_READY) before the state: rs_cm_request() */
	if (!rs->parent || READ_ONCE(rs->sk.sk_state) != TCP_SYN_RECV ||
	    test_bit(RS_F_DYING, &rs->flags) || test_and_set_bit(RS_F_COMM_EST, &rs->flags))
		return;
	sock_hold(&rs->sk);
	if (!queue_work(rs_wq, &rs->comm_est_work))
		sock_put(&rs->sk);
}

/* Teardown cancels it (synchronously) before the id goes: the id is there while it runs. */
void rs_comm_est_work(struct work_struct *work)
{
	struct rs_sock *rs = container_of(work, struct rs_sock, comm_est_work);
	struct rdma_cm_id *id = READ_ONCE(rs->cm_id);
	int err;

	if (id && READ_ONCE(rs->sk.sk_state) == TCP_SYN_RECV &&
	    !test_bit(RS_F_DYING, &rs->flags)) {
		err = rdma_notify(id, IB_EVENT_COMM_EST);
		if (err && err != -EISCONN)
			clear_bit(RS_F_COMM_EST, &rs->flags);	/* the next message retries */
	}
	sock_put(&rs->sk);
}

static int rs_qp_alloc(struct rs_sock *rs, struct rdma_cm_id *id, u32 inline_size)
{
	struct ib_qp_init_attr attr = {};
	int err;

	attr.event_handler = rs_qp_event;
	attr.qp_context = rs;
	attr.send_cq = rs->cq;
	attr.recv_cq = rs->cq;
	attr.qp_type = IB_QPT_RC;
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	/* +1 on each queue for ib_drain_qp()'s marker WR. */
	attr.cap.max_send_wr = rs->sq_depth + 1;
	attr.cap.max_recv_wr = rs->rq_depth + 1;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = inline_size;
	err = rdma_create_qp(id, rs->pd, &attr);
	if (err)
		return err;
	rs->qp = id->qp;
	WRITE_ONCE(rs->local_qpn, id->qp->qp_num);
	rs->max_inline = attr.cap.max_inline_data;
	return 0;
}

int rs_qp_create(struct rs_sock *rs, struct rdma_cm_id *id)
{
	unsigned int i;
	int err;

	rs->sq_depth = RS_SQ_DEPTH;
	rs->rq_depth = RS_RQ_DEPTH;
	rs->txc = kcalloc(rs->sq_depth, sizeof(*rs->txc), GFP_KERNEL);
	if (!rs->txc)
		return -ENOMEM;
	for (i = 0; i < rs->sq_depth; i++)
		rs->txc[i].cqe.done = rs_send_done;
	/* Room for every WR of both queues and the drain markers: a full CQ stalls drain. */
	err = rs_cq_create(rs, id->device, rs->sq_depth + rs->rq_depth + 4);
	if (err)
		return err;
	/* Not every device does inline sends of this size: retry without. */
	err = rs_qp_alloc(rs, id, RS_MAX_INLINE);
	if (err)
		err = rs_qp_alloc(rs, id, 0);
	return err;
}

void rs_qp_destroy(struct rs_sock *rs)
{
	if (rs->qp) {
		ib_drain_qp(rs->qp);
		if (rs->cm_id && rs->cm_id->qp == rs->qp)
			rdma_destroy_qp(rs->cm_id);
		else
			ib_destroy_qp(rs->qp);
		rs->qp = NULL;
		WRITE_ONCE(rs->local_qpn, 0);
	}
	rs_cq_destroy(rs);
	kfree(rs->txc);
	rs->txc = NULL;
}

/* A peer that stopped acknowledging timed out (as TCP retransmits would); the rest is a reset. */
static int rs_wc_errno(enum ib_wc_status status)
{
	return status == IB_WC_RETRY_EXC_ERR ? -ETIMEDOUT : -ECONNRESET;
}

static void rs_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rs_txctx *ctx = container_of(wc->wr_cqe, struct rs_txctx, cqe);
	struct rs_sock *rs = cq->cq_context;
	bool uncork, fenced;
	int fence_err = 0;

	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		if (test_bit(RS_F_DYING, &rs->flags) || !test_bit(RS_F_CM_EST, &rs->flags)) {
			wake_up_all(&rs->close_wait);
			return;
		}
		rs_count_wc_error(sock_net(&rs->sk), wc->status);
		pr_debug("rdmasock: send completion %s\n", ib_wc_status_msg(wc->status));
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
	spin_unlock(&rs->lock);
	if (fence_err)
		rs_abort(rs, -ECONNRESET);	/* the QP refused a post: it is gone */
	if (uncork || fenced)
		rs_tx_push(rs);
	if (fenced || test_and_clear_bit(RS_F_ANNOUNCE_DUE, &rs->flags))
		rs_rx_announce(rs, true);	/* a report the fence or a full SQ held back */
	if (test_and_clear_bit(RS_F_WANT_DUE, &rs->flags))
		rs_tx_want_consumed(rs);
	clear_bit(RS_F_SWITCH_WAIT, &rs->flags);	/* a slot is free: a writer may switch */
	rs->sk.sk_write_space(&rs->sk);
	wake_up_all(&rs->close_wait);
}

/*
 * A control message could not be posted (@err): the next send completion posts it (@due, tested
 * in rs_send_done()).  A full send queue is counted (ctrl_deferred_sq_full), once a time.
 */
void rs_ctrl_defer(struct rs_sock *rs, enum rs_flag due, int err)
{
	lockdep_assert_held(&rs->lock);
	if (!test_and_set_bit(due, &rs->flags) && err == -ENOBUFS)
		rs_count(sock_net(&rs->sk), RS_CNT_CTRL_DEFERRED);
}

/*
 * Post one WR, rs->lock held: ib_drain_qp() must never race a post.  A data WR moves tx_prod by
 * @bytes under the same lock, before the post: the peer's CONSUMED for these bytes can complete on
 * another CPU before ib_post_send() even returns, and must find them counted.
 */
static int __rs_post(struct rs_sock *rs, struct ib_send_wr *wr, bool signal, bool ctrl, u32 bytes)
{
	const struct ib_send_wr *bad;
	struct rs_txctx *ctx;
	u32 limit = rs->sq_depth - (ctrl ? 0 : RS_SQ_CTRL_RESERVE);
	int err;

	lockdep_assert_held(&rs->lock);
	if (test_bit(RS_F_DYING, &rs->flags) || !rs->qp)
		return -EPIPE;
	if (test_bit(RS_F_SQ_FENCE, &rs->flags)) {
		/* Data waits; control messages go, signaled, so their completion ends the fence. */
		if (!ctrl)
			return -ENOBUFS;
		signal = true;
	}
	if (rs->sq_posted - rs->sq_done >= limit)
		return -ENOBUFS;
	ctx = &rs->txc[rs->sq_posted % rs->sq_depth];
	ctx->seq = rs->sq_posted;
	if (signal || ctx->seq % RS_SIGNAL_EVERY == RS_SIGNAL_EVERY - 1)
		wr->send_flags |= IB_SEND_SIGNALED;
	wr->wr_cqe = &ctx->cqe;
	wr->next = NULL;
	rs->tx_prod += bytes;
	err = ib_post_send(rs->qp, wr, &bad);
	if (err) {
		rs->tx_prod -= bytes;
		return err;
	}
	rs->sq_posted++;
	rs->bytes_sent += bytes;
	rs_count(sock_net(&rs->sk), RS_CNT_WR_POSTED);
	if (bytes)
		rs_count_add(sock_net(&rs->sk), RS_CNT_BYTES_SENT, bytes);
	return 0;
}

/* The send queue is empty: post the fenced REG_MR and its message; rs->lock held. */
static int rs_fence_fire(struct rs_sock *rs)
{
	int err;

	clear_bit(RS_F_SQ_FENCE, &rs->flags);
	err = __rs_post(rs, &rs->fence_reg.wr, false, true, 0);
	if (!err)
		err = __rs_post(rs, &rs->fence_msg, rs->fence_msg.send_flags & IB_SEND_SIGNALED,
				true, 0);
	if (!err && rs->fence_posted)
		rs->fence_posted(rs);
	return err;
}

/*
 * Post a REG_MR (and the message that tells the peer about it) once every WR posted before it has
 * completed; rs->lock held.  rxe rewinds its send queue to the oldest unacknowledged WR when it
 * retransmits and runs a REG_MR it meets there again, which fails (the MR is no longer free) and
 * kills the QP.  So data
 * stops, a signaled KEEPALIVE covers the unsignaled WRs in flight, control messages posted
 * meanwhile are signaled, and the completion that empties the queue posts the pair and calls
 * @posted, still under rs->lock.  Set-up needs none of this: its REG_MRs come first.
 * -EBUSY when another fence is pending, -ENOBUFS when the queue is full: try again later.
 */
int rs_post_fenced(struct rs_sock *rs, const struct ib_reg_wr *reg, const struct ib_send_wr *msg,
		   void (*posted)(struct rs_sock *rs))
{
	int err;

	lockdep_assert_held(&rs->lock);
	if (test_bit(RS_F_SQ_FENCE, &rs->flags))
		return -EBUSY;
	rs->fence_reg = *reg;
	rs->fence_msg = *msg;
	if (msg->num_sge) {
		rs->fence_sge = *msg->sg_list;
		rs->fence_msg.sg_list = &rs->fence_sge;
	}
	rs->fence_posted = posted;
	set_bit(RS_F_SQ_FENCE, &rs->flags);
	if (rs->sq_posted == rs->sq_done)
		return rs_fence_fire(rs);
	err = __rs_send_ctrl(rs, RS_IMM_CTRL, RS_CTRL_KEEPALIVE, true);
	if (err)
		clear_bit(RS_F_SQ_FENCE, &rs->flags);
	return err;
}

static int rs_post(struct rs_sock *rs, struct ib_send_wr *wr, bool signal, bool ctrl, u32 bytes)
{
	int err;

	spin_lock_bh(&rs->lock);
	err = __rs_post(rs, wr, signal, ctrl, bytes);
	spin_unlock_bh(&rs->lock);
	return err;
}

/* A control message: SEND WITH IMMEDIATE and no payload; rs->lock held. */
int __rs_send_ctrl(struct rs_sock *rs, u32 type, u32 arg, bool signaled)
{
	struct ib_send_wr wr = {};

	wr.opcode = IB_WR_SEND_WITH_IMM;
	wr.ex.imm_data = cpu_to_be32(type << RS_IMM_TYPE_SHIFT | (arg & RS_IMM_ARG_MASK));
	return __rs_post(rs, &wr, signaled, true, 0);
}

int rs_send_ctrl(struct rs_sock *rs, u32 type, u32 arg, bool signaled)
{
	int err;

	spin_lock_bh(&rs->lock);
	err = __rs_send_ctrl(rs, type, arg, signaled);
	spin_unlock_bh(&rs->lock);
	return err;
}

/*
 * Register a ring on this QP at set-up (REG_MR WRs execute in order before anything posted later;
 * nothing that goes on the wire precedes them, so no retransmit can replay them: tx.c).  Only the
 * receive ring (@remote) may be written by the peer.
 */
int rs_post_reg_ring(struct rs_sock *rs, struct rs_ring *ring, bool remote)
{
	struct ib_reg_wr reg;

	rs_ring_reg_wr(ring, &reg, IB_ACCESS_LOCAL_WRITE | (remote ? IB_ACCESS_REMOTE_WRITE : 0));
	return rs_post(rs, &reg.wr, false, true, 0);
}

/*
 * Tell the peer it may write into our ring.  Sent only once the peer's QP can receive: by the
 * client at ESTABLISHED (the server's QP is RTS since it accepted), by the server at its
 * ESTABLISHED (the RTU proves the client's QP is ready; a SEND before that is dropped and waits
 * for a retransmit).
 */
int rs_post_ready(struct rs_sock *rs)
{
	int err;

	/* Before the post: the peer's first WRITE may complete here before it returns. */
	spin_lock_bh(&rs->lock);
	set_bit(RS_F_READY_SENT, &rs->flags);
	err = __rs_send_ctrl(rs, RS_IMM_CTRL, RS_CTRL_READY, false);
	if (err)
		clear_bit(RS_F_READY_SENT, &rs->flags);
	spin_unlock_bh(&rs->lock);
	return err;
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
	wr.wr.ex.imm_data = cpu_to_be32(RS_IMM_DATA << RS_IMM_TYPE_SHIFT | len);
	wr.wr.sg_list = &sge;
	wr.wr.num_sge = 1;
	wr.remote_addr = rs->peer_ring_addr + roff;
	wr.rkey = rs->peer_rkey;
	if (len <= rs->max_inline) {
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
 * Runs from any process context, without lock_sock: rs->lock orders it against sendmsg's staging
 * and against teardown.
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
	 * A full send queue: try again shortly.  Behind a fence there is no need: the completion
	 * that lifts it (under rs->lock, so after this test) pushes (rs_send_done).
	 */
	if (err == -ENOBUFS && !test_bit(RS_F_SQ_FENCE, &rs->flags))
		mod_delayed_work(rs_wq, &rs->push_work, 1);
	spin_unlock_bh(&rs->lock);
}

static void rs_push_work(struct work_struct *work)
{
	rs_tx_push(container_of(to_delayed_work(work), struct rs_sock, push_work));
}

void rs_tx_init(struct rs_sock *rs)
{
	INIT_DELAYED_WORK(&rs->push_work, rs_push_work);
	INIT_WORK(&rs->qp_err_work, rs_qp_err_work);
}

/* Teardown: RS_F_DYING is set, so rs_tx_push() can no longer re-arm push_work. */
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
	if (rs->sq_posted - rs->sq_done >= rs->sq_depth - RS_SQ_CTRL_RESERVE)
		space = 0;
	spin_unlock_bh(&rs->lock);
	return space;
}

/* Nothing of ours is staged or in flight (or nothing ever will complete again). */
bool rs_tx_idle(struct rs_sock *rs)
{
	bool idle;

	spin_lock_bh(&rs->lock);
	idle = (rs->sq_posted == rs->sq_done && rs->tx_staged == rs->tx_prod) ||
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
		if (!err)
			rs_tx_switch(rs);	/* the peer offered a larger ring: take it first */
		if (err || rs_tx_can_write(rs))
			break;
		/* Held-back bytes may be what fills the window: they must go before we wait. */
		rs_tx_push(rs);
		/* Blocking or not, the window is shut: watch that the peer still lives. */
		rs_keepalive_persist(rs);
		/*
		 * A window below the peer's ring (SO_SNDBUF) can close before the peer consumed the
		 * quarter ring that makes it report: ask it to report at once.
		 */
		if (rs_tx_window(rs) < rs->peer_ring_size)
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
		/* (A switch the SQ refused waits for the completion that frees a slot.) */
		sk_wait_event(sk, timeo, rs_tx_error(rs) || rs_tx_can_write(rs) ||
			      READ_ONCE(rs->conn_gen) != gen ||
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
