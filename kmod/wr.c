// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock verbs: one connection's QP, the completion queues, and posting work requests.
 *
 * Everything that goes on the send queue goes through __rs_post() under rs->lock: data WRITEs
 * (tx.c), control messages (every layer above), REG_MRs at set-up and, through the fence, when a
 * ring grows.  The completion handlers are the data path's (tx.c, rx.c), given to rs_qp_create():
 * this file calls none of them by name.
 *
 * A completion queue is polled in softirq and by busy-polling readers.  ib_alloc_cq()'s CQs can
 * only be polled by the core's own context (an IB_POLL_SOFTIRQ CQ must not be polled directly),
 * so a reader that busy-polls would have to wait for the device's completion event, its tasklet
 * and the irq_poll softirq before it sees its data.  Our CQs are created with ib_create_cq() and
 * our own event handler, which schedules the CQ's irq_poll; a busy-polling reader polls the same
 * CQ itself.  The CQ's lock makes the two take turns, so completions are handled one at a time and
 * in order, as the handlers in tx.c and rx.c assume.  Both run with bottom halves off, as under
 * IB_POLL_SOFTIRQ.
 *
 * The QPs of one device share CQs (struct rs_cq), as the core's CQ pool does: a CQ of its own cost
 * each connection end a whole provider queue, rounded up to a power of two, plus its header (rxe:
 * 20 KiB for 92 entries, #22).  Each QP reserves the entries its two queues and their drain
 * markers can hold at once, so a CQ never overflows; a completion finds its socket from its
 * ib_cqe.  A CQ goes when its last QP does.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/list.h>
#include <linux/irq_poll.h>
#include <linux/log2.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/wait_bit.h>
#include "rdmasock.h"
#include "core.h"
#include "ring.h"
#include "stats.h"
#include "wr.h"

#define RS_SIGNAL_EVERY		16
#define RS_MAX_INLINE		256

#define RS_CQ_BUDGET		64	/* completions per irq_poll turn */
#define RS_CQ_BATCH		8	/* completions per ib_poll_cq() call */

/*
 * A completion queue shared by the QPs of one device.  Its entries are reserved by the QPs on it
 * (rs_cq_get()); the lock is the pollers' (irq_poll, busy readers, rs_cq_poll_all()).
 */
struct rs_cq {
	struct list_head node;		/* on rs_cqs (rs_cqs_lock) */
	struct ib_cq *cq;
	spinlock_t lock;		/* one poller at a time */
	struct irq_poll iop;
	u32 size;			/* entries */
	u32 used;			/* reserved by QPs (rs_cqs_lock) */
	int vector;			/* the device's completion vector it uses */
	struct rcu_head rcu;
};

/*
 * Sizes: the first CQ of a device's vector fits one QP in rxe's smallest queue that holds it (127
 * entries: 128 slots with the one rxe keeps free); each further one doubles what the vector has,
 * up to RS_CQ_MAX (rxe: 1024 slots of 128 bytes, eleven QPs, 12 KiB each instead of 20).
 */
#define RS_CQ_MAX		1023
static LIST_HEAD(rs_cqs);
static DEFINE_MUTEX(rs_cqs_lock);

/* Handle up to @budget completions; cq->lock held.  Returns how many there were. */
static int rs_cq_process(struct rs_cq *cq, int budget)
{
	struct ib_wc wc[RS_CQ_BATCH];
	int done = 0, n, i;

	lockdep_assert_held(&cq->lock);
	while (done < budget) {
		n = ib_poll_cq(cq->cq, min(budget - done, RS_CQ_BATCH), wc);
		if (n <= 0)
			break;
		for (i = 0; i < n; i++)
			wc[i].wr_cqe->done(cq->cq, &wc[i]);
		done += n;
		if (n < RS_CQ_BATCH)
			break;
	}
	return done;
}

static int rs_cq_irq_poll(struct irq_poll *iop, int budget)
{
	struct rs_cq *cq = container_of(iop, struct rs_cq, iop);
	int done;

	spin_lock(&cq->lock);
	done = rs_cq_process(cq, budget);
	/*
	 * Re-arm; a completion that came before the arming would be missed: poll again.  Under the
	 * lock, which rs_cq_put() takes once the irq_poll is disabled: the CQ goes only after this.
	 */
	if (done < budget) {
		irq_poll_complete(iop);
		if (ib_req_notify_cq(cq->cq, IB_CQ_NEXT_COMP | IB_CQ_REPORT_MISSED_EVENTS) > 0)
			irq_poll_sched(iop);
	}
	spin_unlock(&cq->lock);
	return done;
}

/*
 * The device's completion event, in any context (rxe on 6.4+ calls it under its CQ lock, irqs off;
 * 6.1's from a tasklet).
 */
static void rs_cq_event(struct ib_cq *ibcq, void *ctx)
{
	struct rs_cq *cq = ctx;

	irq_poll_sched(&cq->iop);
}

/* An asynchronous CQ error (an overrun, which the reservations rule out): say so. */
static void rs_cq_error(struct ib_event *ev, void *ctx)
{
	pr_err_ratelimited("completion queue error %d on %s\n", ev->event,
			   dev_name(&ev->device->dev));
}

static struct rs_cq *rs_cq_new(struct ib_device *dev, u32 size, int vector)
{
	struct ib_cq_init_attr attr = { .cqe = size, .comp_vector = vector };
	struct rs_cq *cq;
	struct ib_cq *ibcq;

	cq = kzalloc(sizeof(*cq), GFP_KERNEL);
	if (!cq)
		return ERR_PTR(-ENOMEM);
	ibcq = ib_create_cq(dev, rs_cq_event, rs_cq_error, cq, &attr);
	if (IS_ERR(ibcq)) {
		kfree(cq);
		return ERR_CAST(ibcq);
	}
	cq->cq = ibcq;
	cq->size = size;
	cq->vector = vector;
	spin_lock_init(&cq->lock);
	irq_poll_init(&cq->iop, RS_CQ_BUDGET, rs_cq_irq_poll);
	ib_req_notify_cq(ibcq, IB_CQ_NEXT_COMP);
	return cq;
}

/*
 * @entries of a CQ of @dev for a new QP: on the completion vector of the CPU we run on (a device
 * with several spreads its connections' completions over the CPUs, as the CQs of their own did
 * not: they all took vector 0), the fullest CQ with room for them (so that emptier ones drain and
 * go), else a new one.  Process context.
 */
static struct rs_cq *rs_cq_get(struct ib_device *dev, u32 entries)
{
	int vector = raw_smp_processor_id() % max(dev->num_comp_vectors, 1);
	struct rs_cq *cq, *best = NULL;
	u32 have = 0, size;

	mutex_lock(&rs_cqs_lock);
	list_for_each_entry(cq, &rs_cqs, node) {
		if (cq->cq->device != dev || cq->vector != vector)
			continue;
		have += cq->size;
		if (cq->size - cq->used >= entries &&
		    (!best || cq->size - cq->used < best->size - best->used))
			best = cq;
	}
	if (!best) {
		size = roundup_pow_of_two(have + entries + 1) - 1;
		size = max(min_t(u32, size, RS_CQ_MAX), entries);
		size = min_t(u32, size, dev->attrs.max_cqe);
		best = size >= entries ? rs_cq_new(dev, size, vector) : ERR_PTR(-EINVAL);
		if (IS_ERR(best))
			goto out;
		list_add(&best->node, &rs_cqs);
	}
	best->used += entries;
out:
	mutex_unlock(&rs_cqs_lock);
	return best;
}

/*
 * Give back @entries of @cq: its QP is drained (its drain markers completed through the CQ's
 * poller, and every completion of the QP came before them) and destroyed.  The last QP's put
 * destroys the CQ.  Process context.
 */
static void rs_cq_put(struct rs_cq *cq, u32 entries)
{
	mutex_lock(&rs_cqs_lock);
	cq->used -= entries;
	if (cq->used)
		cq = NULL;
	else
		list_del(&cq->node);
	mutex_unlock(&rs_cqs_lock);
	if (!cq)
		return;
	irq_poll_disable(&cq->iop);
	/* Wait out an irq_poll still re-arming under the lock (rs_cq_irq_poll()). */
	spin_lock_bh(&cq->lock);
	spin_unlock_bh(&cq->lock);
	ib_destroy_cq(cq->cq);
	/*
	 * After a grace period: rxe 6.1's completion tasklet tests its CQ's dying flag, then calls
	 * our event handler unlocked, and nothing waits for it (softirqs are read-side sections).
	 */
	kfree_rcu(cq, rcu);
}

/* A QP's reservation: every WR of both queues and the drain markers (a full CQ stalls drain). */
static u32 rs_cq_entries(struct rs_sock *rs)
{
	return RS_SQ_DEPTH + RS_RQ_DEPTH + 4;
}

/*
 * Handle what @cq holds, up to its size: everything that was in it when we began (it never holds
 * more), in the CQ's order.  The lock is dropped between turns, so softirqs and other pollers
 * are held off for one turn at most.  Process context.
 */
static void rs_cq_flush(struct rs_cq *cq)
{
	int left = cq->size, done;

	do {
		spin_lock_bh(&cq->lock);
		done = rs_cq_process(cq, RS_CQ_BUDGET);
		spin_unlock_bh(&cq->lock);
		left -= done;
	} while (done == RS_CQ_BUDGET && left > 0);
}

/*
 * The CM says the peer disconnected: handle every completion the CQ holds first, waiting for the
 * irq_poll if it is inside, so that a FIN that arrived before the disconnect is seen before we
 * decide between an orderly close and a reset.  CM handler (process context); teardown takes the
 * handler lock before it releases the CQ, so the CQ stays while we are here.  Bounded by the CQ's
 * size (it holds the other QPs' completions too).
 */
void rs_cq_poll_all(struct rs_sock *rs)
{
	struct rs_cq *cq;

	spin_lock_bh(&rs->cq_lock);
	cq = test_bit(RS_F_DYING, &rs->flags) || !rs->link ? NULL : rs->link->cq;
	spin_unlock_bh(&rs->cq_lock);
	if (cq)
		rs_cq_flush(cq);
}

/*
 * Busy poll: handle what the CQ holds now, from the reader's context.  Nothing to do when the
 * connection is being torn down (the CQ may be going away) or another poller is at it already.
 */
void rs_cq_busy_poll(struct rs_sock *rs)
{
	struct rs_cq *cq;

	if (!spin_trylock_bh(&rs->cq_lock))
		return;
	cq = rs->link ? rs->link->cq : NULL;
	if (cq && !test_bit(RS_F_DYING, &rs->flags) && spin_trylock(&cq->lock)) {
		rs_cq_process(cq, RS_CQ_BATCH);
		spin_unlock(&cq->lock);
	}
	spin_unlock_bh(&rs->cq_lock);
}

/* The fatal QP event, in process context: rs_abort() takes BH spinlocks. */
static void rs_qp_err_work(struct work_struct *work)
{
	struct rs_sock *rs = container_of(work, struct rs_sock, qp_err_work);

	if (test_bit(RS_F_RDMA_UP, &rs->flags) && !test_bit(RS_F_DYING, &rs->flags) &&
	    !rs_path_lost(rs, -ECONNRESET))
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
	struct rs_link *link = ctx;
	unsigned long irqflags;
	struct rs_sock *rs;

	/* Under the lock a reuse moves the QP to another socket under (rs_link_move()). */
	spin_lock_irqsave(&link->ev_lock, irqflags);
	rs = link->rs;
	if (ev->event == IB_EVENT_COMM_EST) {
		rs_comm_est(rs);
	} else if (ev->event == IB_EVENT_QP_FATAL || ev->event == IB_EVENT_QP_ACCESS_ERR ||
		   ev->event == IB_EVENT_QP_REQ_ERR) {
		rs_count(sock_net(&rs->sk), RS_CNT_QP_FATAL);
		sock_hold(&rs->sk);
		if (!queue_work(rs_wq, &rs->qp_err_work))
			sock_put(&rs->sk);
	}
	spin_unlock_irqrestore(&link->ev_lock, irqflags);
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
	if (!rs->parent)
		return;
	if (!test_bit(RS_F_HEARD, &rs->flags)) {
		set_bit(RS_F_HEARD, &rs->flags);
		smp_mb__after_atomic();	/* the mark before the state: rs_cm_request() */
	}
	if (READ_ONCE(rs->sk.sk_state) != TCP_SYN_RECV ||
	    test_bit(RS_F_DYING, &rs->flags) || test_and_set_bit(RS_F_COMM_EST, &rs->flags))
		return;
	sock_hold(&rs->sk);
	if (!queue_work(rs_wq, &rs->comm_est_work))
		sock_put(&rs->sk);
}

/* Teardown cancels it (synchronously) before the id goes: the id is there while it runs. */
static void rs_comm_est_work(struct work_struct *work)
{
	struct rs_sock *rs = container_of(work, struct rs_sock, comm_est_work);
	struct rdma_cm_id *id = READ_ONCE(rs->cm_id);
	int err;

	if (id && READ_ONCE(rs->sk.sk_state) == TCP_SYN_RECV &&
	    !test_bit(RS_F_DYING, &rs->flags)) {
		err = rdma_notify(id, IB_EVENT_COMM_EST);
		/* (iWARP's notify does nothing: no REP there.) */
		if (!err && rdma_cap_ib_cm(id->device, id->port_num))
			set_bit(RS_F_NOTIFIED, &rs->flags);	/* (rs_comm_est_settle()) */
		else if (err != -EISCONN)
			clear_bit(RS_F_COMM_EST, &rs->flags);	/* the next message retries */
	}
	sock_put(&rs->sk);
}

/*
 * A child's CM event handler, even when dying: ESTABLISHED (the CM cancelled its REP), or a
 * DISCONNECTED or REJECTED, after which no ESTABLISHED comes.
 */
void rs_comm_est_settled(struct rs_sock *rs)
{
	set_bit(RS_F_CM_SETTLED, &rs->flags);
	smp_mb__after_atomic();	/* the bit before the waiter's test */
	wake_up_var(&rs->flags);
}

/*
 * Teardown, comm_est_work cancelled, before a disconnect: a notified child's REP is cancelled only
 * by ib_cm's own work item, and only if it still finds the id ESTABLISHED.  A DREQ sent before
 * that overwrites the id's message without cancelling the REP, which is then retried for about a
 * minute with the id held (its destroy, a device removal wait as long).  So wait for the CM's
 * ESTABLISHED first, bounded: it comes within a work item's latency.  (A DREQ from the peer in
 * that window still orphans the REP: ib_cm's cm_establish() would have to cancel it itself.  On a
 * device removal rdma_cm drops the event, though ib_cm cancels the REP: the bound is waited out,
 * by each such child, in parallel on rs_wq.)
 */
void rs_comm_est_settle(struct rs_sock *rs)
{
	if (!test_bit(RS_F_NOTIFIED, &rs->flags))
		return;
	wait_var_event_timeout(&rs->flags, test_bit(RS_F_CM_SETTLED, &rs->flags),
			       RS_COMM_EST_SETTLE_WAIT);
}

static int rs_qp_alloc(struct rs_sock *rs, struct rs_link *link, struct rdma_cm_id *id,
		       u32 inline_size)
{
	struct ib_qp_init_attr attr = {};
	int err;

	attr.event_handler = rs_qp_event;
	attr.qp_context = link;
	attr.send_cq = link->cq->cq;
	attr.recv_cq = link->cq->cq;
	attr.qp_type = IB_QPT_RC;
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	/* +1 on each queue for ib_drain_qp()'s marker WR. */
	attr.cap.max_send_wr = RS_SQ_DEPTH + 1;
	attr.cap.max_recv_wr = RS_RQ_DEPTH + 1;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = inline_size;
	err = rdma_create_qp(id, rs->pd, &attr);
	if (err)
		return err;
	link->qp = id->qp;
	link->max_inline = attr.cap.max_inline_data;
	return 0;
}

/*
 * Publish or take the socket's link: under rs->cq_lock, which busy pollers and the CM's poll
 * read it under, and rs->lock, which the posting paths do (nested inside, as under a poller).
 * Returns the previous one.
 */
static struct rs_link *rs_link_set(struct rs_sock *rs, struct rs_link *link)
{
	struct rs_link *old;

	spin_lock_bh(&rs->cq_lock);
	spin_lock(&rs->lock);
	old = rs->link;
	rs->link = link;
	spin_unlock(&rs->lock);
	spin_unlock_bh(&rs->cq_lock);
	return old;
}

/*
 * A reuse (park.c): the QP and its completions go from @from to @to, both under lock_sock, the QP
 * idle.  Completions are handled under their CQ's lock and the QP's events under ev_lock, so each
 * finds one socket or the other, whole; @to has the link before they can find it, @from loses it
 * after they no longer can.
 */
void rs_link_move(struct rs_sock *from, struct rs_sock *to)
{
	struct rs_link *link = from->link;
	unsigned long irqflags;

	sock_owned_by_me(&to->sk);
	rs_link_set(to, link);
	WRITE_ONCE(to->local_qpn, link->qp->qp_num);
	spin_lock_bh(&link->cq->lock);
	spin_lock_irqsave(&link->ev_lock, irqflags);
	link->rs = to;
	spin_unlock_irqrestore(&link->ev_lock, irqflags);
	spin_unlock_bh(&link->cq->lock);
	rs_link_set(from, NULL);
	WRITE_ONCE(from->local_qpn, 0);
}

/*
 * The QP of @id, on a shared CQ, with its WR contexts; @send_done and @recv_done handle the
 * completions of the send and the receive queue.  All of it or nothing: rs->link shows it whole.
 */
int rs_qp_create(struct rs_sock *rs, struct rdma_cm_id *id,
		 void (*send_done)(struct ib_cq *cq, struct ib_wc *wc),
		 void (*recv_done)(struct ib_cq *cq, struct ib_wc *wc))
{
	struct rs_link *link;
	struct rs_cq *cq;
	unsigned int i;
	int err;

	BUILD_BUG_ON(RS_SIGNAL_EVERY + RS_SQ_CTRL_RESERVE > RS_SQ_DEPTH);
	if (WARN_ON_ONCE(rs->link))
		return -EISCONN;
	if (rs_should_fail("qp_create"))
		return -ENOMEM;
	link = kzalloc(struct_size(link, txc, RS_SQ_DEPTH), GFP_KERNEL);
	if (!link)
		return -ENOMEM;
	link->rs = rs;
	spin_lock_init(&link->ev_lock);
	for (i = 0; i < RS_SQ_DEPTH; i++) {
		link->txc[i].cqe.done = send_done;
		link->txc[i].link = link;
	}
	link->recv_cqe.done = recv_done;
	link->cq_entries = rs_cq_entries(rs);
	cq = rs_cq_get(id->device, link->cq_entries);
	if (IS_ERR(cq)) {
		kfree(link);
		return PTR_ERR(cq);
	}
	link->cq = cq;
	/* Not every device does inline sends of this size: retry without. */
	err = rs_qp_alloc(rs, link, id, RS_MAX_INLINE);
	if (err)
		err = rs_qp_alloc(rs, link, id, 0);
	if (err) {
		/* (No WR was posted on a QP of this reservation: the CQ holds nothing of it.) */
		rs_cq_put(cq, link->cq_entries);
		kfree_rcu(link, rcu);	/* (rdma_create_qp() may have made and destroyed a QP) */
		return err;
	}
	WRITE_ONCE(rs->local_qpn, link->qp->qp_num);
	rs_link_set(rs, link);
	return 0;
}

/*
 * Teardown set RS_F_DYING first, under rs->lock: nothing posts and no busy poller enters again;
 * taking rs->link under rs->cq_lock waits out one that is inside (and a second teardown finds
 * nothing to do).  A drain that could not complete (a provider that refused the error state or
 * the marker) may have left the QP's completions in the shared CQ, which outlives the QP: they
 * are handled here, while the socket (dying: nothing its handlers do posts or reports any more)
 * and the WR contexts still exist.
 */
void rs_qp_destroy(struct rs_sock *rs)
{
	struct rs_link *link = rs_link_set(rs, NULL);

	if (!link)
		return;
	ib_drain_qp(link->qp);
	if (rs->cm_id && rs->cm_id->qp == link->qp)
		rdma_destroy_qp(rs->cm_id);
	else
		ib_destroy_qp(link->qp);
	WRITE_ONCE(rs->local_qpn, 0);
	rs_cq_flush(link->cq);
	rs_cq_put(link->cq, link->cq_entries);
	/*
	 * After a grace period, as the CQ: rxe's QP events come from its tasks, which its destroy
	 * waits for, as mlx5's from work its destroy flushes; this costs nothing and covers a
	 * provider that does not.
	 */
	kfree_rcu(link, rcu);
}

/*
 * A control message could not be posted (@err): the next send completion posts it, or queues the
 * work that does (@due, taken in rs_send_done()).  A full send queue is counted
 * (ctrl_deferred_sq_full), once a time.  Only for a queue that holds a signaled WR, or a fence
 * (whose KEEPALIVE is signaled): else no completion would ever come to take it.
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
int __rs_post(struct rs_sock *rs, struct ib_send_wr *wr, bool signal, bool ctrl, u32 bytes)
{
	const struct ib_send_wr *bad;
	struct rs_txctx *ctx;
	int err;

	lockdep_assert_held(&rs->lock);
	if ((READ_ONCE(rs->flags) & (BIT(RS_F_DYING) | BIT(RS_F_MOVING))) || !rs->link)
		return -EPIPE;
	if (test_bit(RS_F_SQ_FENCE, &rs->flags)) {
		/* Data waits; control messages go, signaled, so their completion ends the fence. */
		if (!ctrl)
			return -ENOBUFS;
		signal = true;
	}
	if (!rs_sq_room(rs, ctrl))
		return -ENOBUFS;
	/* (A provider refuses a post only on a QP that is going: a hard error, never -ENOBUFS.) */
	if (rs_should_fail("post_send"))
		return -EINVAL;
	ctx = &rs->link->txc[rs->sq_slot];
	ctx->seq = rs->sq_posted;
	if (signal || ctx->seq % RS_SIGNAL_EVERY == RS_SIGNAL_EVERY - 1)
		wr->send_flags |= IB_SEND_SIGNALED;
	wr->wr_cqe = &ctx->cqe;
	wr->next = NULL;
	rs->tx_prod += bytes;
	err = ib_post_send(rs->link->qp, wr, &bad);
	if (err) {
		rs->tx_prod -= bytes;
		return err;
	}
	rs->sq_posted++;
	if (wr->send_flags & IB_SEND_SIGNALED)
		rs->sq_signaled = rs->sq_posted;
	if (++rs->sq_slot == RS_SQ_DEPTH)
		rs->sq_slot = 0;
	rs->bytes_sent += bytes;
	rs_count(sock_net(&rs->sk), RS_CNT_WR_POSTED);
	if (bytes)
		rs_count_add(sock_net(&rs->sk), RS_CNT_BYTES_SENT, bytes);
	return 0;
}

/* The send queue is empty: post the fenced REG_MR and its message; rs->lock held. */
int rs_fence_fire(struct rs_sock *rs)
{
	int err;

	lockdep_assert_held(&rs->lock);
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

	lockdep_assert_held(&rs->lock);
	wr.opcode = IB_WR_SEND_WITH_IMM;
	wr.ex.imm_data = cpu_to_be32(rs_imm(type, arg));
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
 * nothing that goes on the wire precedes them, so no retransmit can replay them: see the fence).
 * Only the receive ring (@remote) may be written by the peer.
 */
int rs_post_reg_ring(struct rs_sock *rs, struct rs_ring *ring, bool remote)
{
	struct ib_reg_wr reg;

	if (rs_should_fail("post_reg_ring"))
		return -ENOMEM;

	rs_ring_reg_wr(ring, &reg, IB_ACCESS_LOCAL_WRITE | (remote ? IB_ACCESS_REMOTE_WRITE : 0));
	return rs_post(rs, &reg.wr, false, true, 0);
}

/*
 * A reused QP's new connection (park.c): its receive ring under a new key, then the hello, which
 * is our READY too (@code: OPEN or ACCEPT; @hello and @len: all of it, its extension included,
 * built by the caller), given the new key here.  The old key is invalidated first, so no WRITE of
 * the peer's with it lands from then on (the QP fails instead); the ring is the peer's to write
 * into once the hello is out.  The three WRs go in order under one hold of rs->lock, so a
 * provider that runs its send queue after the posts (rxe: a tasklet on 6.1, a work item on 6.12)
 * runs it once for them rather than after each.
 */
int rs_post_reopen(struct rs_sock *rs, u32 code, struct rs_hello *hello, u32 len)
{
	struct ib_send_wr inv = {}, msg = {};
	struct rs_ring *ring = &rs->rx;
	struct ib_sge sge = {};
	struct ib_reg_wr reg;
	int err = -EINVAL;

	inv.opcode = IB_WR_LOCAL_INV;
	sge.addr = (uintptr_t)hello;
	sge.length = len;
	msg.opcode = IB_WR_SEND_WITH_IMM;
	msg.send_flags = IB_SEND_INLINE;
	msg.ex.imm_data = cpu_to_be32(rs_imm(RS_IMM_CTRL, code));
	msg.sg_list = &sge;
	msg.num_sge = 1;
	spin_lock_bh(&rs->lock);
	if (!rs->link || len > rs->link->max_inline)
		goto out;
	inv.ex.invalidate_rkey = ring->mr->rkey;
	err = __rs_post(rs, &inv, false, true, 0);
	/* Between the two: the old key gone, no new one (the caller's teardown undoes nothing). */
	if (!err && rs_should_fail("post_reopen"))
		err = -ENOMEM;
	if (err)
		goto out;
	ib_update_fast_reg_key(ring->mr, ib_inc_rkey(ring->mr->rkey));
	rs_ring_reg_wr(ring, &reg, IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE);
	err = __rs_post(rs, &reg.wr, false, true, 0);
	if (err)
		goto out;
	hello->ring_rkey = cpu_to_be32(ring->mr->rkey);
	/* Before the post: the peer's first WRITE may complete here before it returns. */
	set_bit(RS_F_READY_SENT, &rs->flags);
	err = __rs_post(rs, &msg, false, true, 0);
	if (err)
		clear_bit(RS_F_READY_SENT, &rs->flags);
out:
	spin_unlock_bh(&rs->lock);
	return err;
}

/*
 * Tell the peer it may write into our ring.  Sent only once the peer's QP can receive: by the
 * server at its ESTABLISHED (the RTU proves the client's QP is ready; a SEND before that is
 * dropped and waits for a retransmit), by the client once it has the server's READY.
 */
static int __rs_post_ready(struct rs_sock *rs)
{
	int err;

	lockdep_assert_held(&rs->lock);
	if (rs_should_fail("post_ready"))
		return -ENOMEM;
	/* Before the post: the peer's first WRITE may complete here before it returns. */
	set_bit(RS_F_READY_SENT, &rs->flags);
	err = __rs_send_ctrl(rs, RS_IMM_CTRL, RS_CTRL_READY, false);
	if (err)
		clear_bit(RS_F_READY_SENT, &rs->flags);
	return err;
}

int rs_post_ready(struct rs_sock *rs)
{
	int err;

	spin_lock_bh(&rs->lock);
	err = __rs_post_ready(rs);
	spin_unlock_bh(&rs->lock);
	return err;
}

/*
 * A client's handshake ends once it has both its CM ESTABLISHED (rings registered, RS_F_CM_EST)
 * and the server's READY, in either order: its own READY goes out then, TCP's ACK (the server's
 * accept() waits for it: core.c), and the connect succeeded.  On a reused QP the server's ACCEPT
 * is both, and our OPEN was our READY (park.c).  Decided under rs->lock with the
 * connect's outcome, so at most once, and never after a timeout or a failure was recorded: a
 * client that carries on over TCP sent no READY, so no child of the server's is established
 * for it.  A READY that cannot be posted fails the connect (a fallback).
 */
void rs_client_ready(struct rs_sock *rs)
{
	int err;

	smp_mb__after_atomic();	/* our bit before the test of the other's: one caller sees both */
	if (rs->parent || !test_bit(RS_F_CM_EST, &rs->flags) ||
	    !test_bit(RS_F_PEER_READY, &rs->flags))
		return;
	spin_lock_bh(&rs->lock);
	if (test_bit(RS_F_CM_DONE, &rs->flags)) {
		spin_unlock_bh(&rs->lock);
		return;
	}
	/* A reused QP's OPEN was our READY (park.c). */
	err = test_bit(RS_F_READY_SENT, &rs->flags) ? 0 : __rs_post_ready(rs);
	__rs_connect_record(rs, err, RDMASOCK_REASON_RESOURCE);
	spin_unlock_bh(&rs->lock);
	/* A connect() waiting finishes it at once (rdma.c); connect_work does, if none waits. */
	if (!err)
		rs_wake(&rs->sk, EPOLLOUT | EPOLLWRNORM);
	rs_connect_work_arm(rs, 0);
}

/*
 * Post @count receives for the peer's messages, and any an earlier failure owes (rx.c): what a
 * failure leaves is owed to the next call.  0, or the first failure's error.
 */
int rs_post_recvs(struct rs_sock *rs, u32 count)
{
	const struct ib_recv_wr *bad;
	struct ib_recv_wr wr = {};
	struct ib_sge sge;
	int err = 0;

	sge.addr = rs->resize_dma;
	sge.length = RS_CTRL_PAYLOAD_MAX;
	sge.lkey = rs->pd->local_dma_lkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	spin_lock_bh(&rs->lock);
	if (!test_bit(RS_F_DYING, &rs->flags) && rs->link) {
		/* With what an earlier failure owes; what this one leaves is owed in turn. */
		count += rs->link->recv_owed;
		if (rs_should_fail("post_recvs"))
			err = -ENOMEM;
		wr.wr_cqe = &rs->link->recv_cqe;
		while (count && !err) {
			err = ib_post_recv(rs->link->qp, &wr, &bad);
			if (!err)
				count--;
		}
		rs->link->recv_owed = count;
	}
	spin_unlock_bh(&rs->lock);
	return err;
}

/* A new socket's work items of this layer. */
void rs_wr_init(struct rs_sock *rs)
{
	INIT_WORK(&rs->qp_err_work, rs_qp_err_work);
	INIT_WORK(&rs->comm_est_work, rs_comm_est_work);
}
