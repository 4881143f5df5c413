// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock receive side: receive completions (softirq) and recvmsg.
 *
 * Every message the peer sends carries a 32-bit immediate and consumes one of our receive WRs:
 * data lands in the ring by RDMA WRITE, control messages have no payload but RESIZE, whose 16 bytes
 * land in the one buffer all receive WRs share (grow.c says why one is enough).
 * A WR is reposted as soon as its completion is seen.  Nothing the peer sends is trusted: a length
 * that overflows the ring, a cursor that moves backwards or past what we sent, an unknown type or
 * opcode aborts the connection with EPROTO (counted), and never touches memory outside the ring.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/sched/clock.h>
#include <linux/uio.h>
#include <net/tcp_states.h>
#include "rdmasock.h"
#include "core.h"
#include "grow.h"
#include "hello.h"
#include "keepalive.h"
#include "ring.h"
#include "rx.h"
#include "stats.h"
#include "wr.h"

static void rs_proto_error(struct rs_sock *rs, const char *what, u32 imm)
{
	rs_count(sock_net(&rs->sk), RS_CNT_PROTO_ERR);
	spin_lock(&rs->lock);
	rs->proto_errors++;
	spin_unlock(&rs->lock);
	pr_info_ratelimited("peer QP %u broke the protocol (%s, imm %#x): connection reset\n",
			    rs->remote_qpn, what, imm);
	rs_abort(rs, -EPROTO);
}

/* Room the peer may still write into: in rx_next from the switch on (grow.c); rs->lock held. */
static u32 rs_rx_room(struct rs_sock *rs)
{
	lockdep_assert_held(&rs->lock);
	if (test_bit(RS_F_RX_SWITCHED, &rs->flags))
		return rs->rx_next.size - (u32)(rs->rx_prod - max(rs->rx_cons, rs->rx_switch));
	return rs->rx.size - (u32)(rs->rx_prod - rs->rx_cons);
}

static struct rs_ring *rs_rx_ring_at(struct rs_sock *rs, u64 pos, u64 *base, u32 *avail);

/*
 * Urgent data's byte, once it is in the ring: kept apart (the ring slot is the peer's again once
 * read past), as TCP keeps it in urg_data.  rs->lock held; true when it just became readable.
 */
static bool rs_urg_capture(struct rs_sock *rs)
{
	struct rs_ring *ring;
	u32 avail, off;
	u64 base;

	lockdep_assert_held(&rs->lock);
	if (rs->urg_state != RS_URG_NOTYET || rs->urg_pos >= rs->rx_prod)
		return false;
	ring = rs_rx_ring_at(rs, rs->urg_pos, &base, &avail);
	if (!ring || !avail)
		return false;
	off = (rs->urg_pos - base) % ring->size;
	rs_ring_sync(ring, off, 1, true);
	rs->urg_byte = ((u8 *)ring->buf)[off];
	WRITE_ONCE(rs->urg_state, RS_URG_VALID);
	return true;
}

/*
 * URG: the peer's MSG_OOB byte is at stream position @arg (mod 2^29), sent before the WRITE that
 * carries it, or after (then it may have been read already: ignored, as TCP ignores an urgent
 * pointer to data read).  As tcp_check_urg(): one at a time, a later one replaces it (the earlier
 * byte then stays in the stream), and the owner gets SIGURG.
 */
static int rs_rx_urg(struct rs_sock *rs, u32 arg)
{
	struct sock *sk = &rs->sk;
	bool valid = false;
	s32 delta;
	u64 pos;

	spin_lock(&rs->lock);
	delta = sign_extend32((arg - (u32)rs->rx_prod) & RS_URG_POS_MASK, 28);
	pos = rs->rx_prod + delta;
	/* As DATA: not before the READYs, nor after its FIN; never before the stream or past it. */
	if (!test_bit(RS_F_PEER_READY, &rs->flags) || !test_bit(RS_F_READY_SENT, &rs->flags) ||
	    test_bit(RS_F_PEER_FIN, &rs->flags) || (delta < 0 && -delta > rs->rx_prod) ||
	    (delta >= 0 && delta >= rs_rx_room(rs))) {
		spin_unlock(&rs->lock);
		return -EPROTO;
	}
	if (pos < rs->rx_cons || (rs->urg_state != RS_URG_NONE && pos <= rs->urg_pos)) {
		spin_unlock(&rs->lock);
		return 0;
	}
	rs->urg_pos = pos;
	WRITE_ONCE(rs->urg_state, RS_URG_NOTYET);
	valid = rs_urg_capture(rs);
	spin_unlock(&rs->lock);
	sk_send_sigurg(sk);
	if (valid)
		rs_wake(sk, EPOLLPRI | EPOLLRDBAND);
	return 0;
}

static int rs_rx_data(struct rs_sock *rs, u32 len)
{
	u32 queued = 0;
	bool urg = false;
	int err = 0;

	spin_lock(&rs->lock);
	/*
	 * The peer's READY (a reused QP's OPEN or ACCEPT) precedes its first WRITE on this QP, and
	 * it may write only after ours: DATA before either is a lie.
	 */
	if (!len || len > rs_rx_room(rs) || !rs->rx.buf || test_bit(RS_F_PEER_FIN, &rs->flags) ||
	    !test_bit(RS_F_PEER_READY, &rs->flags) || !test_bit(RS_F_READY_SENT, &rs->flags))
		err = -EPROTO;
	else
		rs->rx_prod += len;
	if (!err) {
		rs->bytes_received += len;
		queued = rs->rx_prod - rs->rx_cons;
		urg = rs_urg_capture(rs);
	}
	spin_unlock(&rs->lock);
	if (!err) {
		rs_count_add(sock_net(&rs->sk), RS_CNT_BYTES_RECEIVED, len);
		if (urg)
			rs_wake(&rs->sk, EPOLLPRI | EPOLLRDBAND);
		rs->sk.sk_data_ready(&rs->sk);
		rs_rx_grow_soon(rs, queued);
	}
	return err;
}

static int rs_rx_consumed(struct rs_sock *rs, u32 cursor)
{
	int err = 0;
	u32 delta;

	spin_lock(&rs->lock);
	delta = (cursor - (u32)rs->tx_acked) & RS_IMM_ARG_MASK;
	if (delta > rs->tx_prod - rs->tx_acked)
		err = -EPROTO;
	else
		rs->tx_acked += delta;
	spin_unlock(&rs->lock);
	if (!err && delta) {
		clear_bit(RS_F_TX_BLOCKED, &rs->flags);	/* the window moved: no persist probes */
		clear_bit(RS_F_WANT_SENT, &rs->flags);
		rs->sk.sk_write_space(&rs->sk);
	}
	return err;
}

static int rs_rx_ctrl(struct rs_sock *rs, u32 code)
{
	struct sock *sk = &rs->sk;

	if (code & RS_CTRL_URG)
		return rs_rx_urg(rs, code & RS_URG_POS_MASK);
	switch (code) {
	case RS_CTRL_READY:
		/* Twice, or on a reused QP, where OPEN and ACCEPT were the READYs (park.c). */
		if (test_bit(RS_F_PEER_READY, &rs->flags) || test_bit(RS_F_OPENING, &rs->flags))
			return -EPROTO;
		if (rs_peer_ready(rs))
			rs_keepalive_update(rs);	/* a child, established now */
		rs_client_ready(rs);
		sk->sk_write_space(sk);
		return 0;
	case RS_CTRL_FIN:
		if (test_and_set_bit(RS_F_PEER_FIN, &rs->flags))
			return -EPROTO;
		spin_lock(&rs->lock);
		WRITE_ONCE(sk->sk_shutdown, sk->sk_shutdown | RCV_SHUTDOWN);
		if (sk->sk_state == TCP_ESTABLISHED)
			WRITE_ONCE(sk->sk_state, TCP_CLOSE_WAIT);
		spin_unlock(&rs->lock);
		rs_wake(sk, EPOLLIN | EPOLLRDNORM | EPOLLRDHUP);
		wake_up_all(&rs->close_wait);	/* a connect() waiting for a parked QP (park.c) */
		return 0;
	case RS_CTRL_RESET:
		/*
		 * After an OPEN on the QP of a connection over at both ends: its client gave up on
		 * that OPEN (rs_reset_abandoned()).  The connection here was whole: the QP goes
		 * (park.c), the socket stays as it was.  Taken already, the RESET finds the child.
		 */
		if (test_bit(RS_F_OPEN_RCVD, &rs->flags)) {
			set_bit(RS_F_OPEN_VOID, &rs->flags);
			rs_park_signal(rs);
			return 0;
		}
		rs_abort(rs, -ECONNRESET);
		return 0;
	case RS_CTRL_KEEPALIVE:
		return 0;	/* its completion at the sender is the answer */
	case RS_CTRL_WANT_CONSUMED:
		set_bit(RS_F_PEER_WANTS, &rs->flags);
		rs_rx_announce(rs, true);
		return 0;
	case RS_CTRL_SWITCH:
		return rs_rx_switch(rs);
	default:
		return -EPROTO;
	}
}

/*
 * softirq: a hello on a reused QP (park.c).  OPEN: the client starts its next connection on the QP
 * of one that closed in order at both ends; the server's park.c takes it in process context (the
 * socket may still be open: it waits for close()).  ACCEPT: the server's answer to our OPEN, its
 * hello as the REP's, and its READY: the connect succeeds (our OPEN was our READY).
 */
static int rs_rx_hello(struct rs_sock *rs, u32 code, u32 len)
{
	struct ib_device *dev = rs->pd->device;
	u8 buf[RS_CTRL_PAYLOAD_MAX];
	int err;

	if (len < RS_HELLO_SIZE || len > RS_CTRL_PAYLOAD_MAX)
		return -EPROTO;
	ib_dma_sync_single_for_cpu(dev, rs->resize_dma, len, DMA_FROM_DEVICE);
	memcpy(buf, rs->resize_buf, len);
	ib_dma_sync_single_for_device(dev, rs->resize_dma, len, DMA_FROM_DEVICE);
	if (code == RS_CTRL_OPEN) {
		/* Only once, and only once the connection on the QP is over at both ends. */
		if (!rs->parent || !test_bit(RS_F_PEER_FIN, &rs->flags) ||
		    !test_bit(RS_F_FIN_SENT, &rs->flags) || test_bit(RS_F_OPEN_RCVD, &rs->flags))
			return -EPROTO;
		memcpy(rs->open_buf, buf, len);
		rs->open_len = len;
		/* The hello before the bit: park.c reads it after. */
		smp_mb__before_atomic();
		set_bit(RS_F_OPEN_RCVD, &rs->flags);
		rs_park_signal(rs);
		return 0;
	}
	if (rs->parent || !test_bit(RS_F_OPENING, &rs->flags) || test_bit(RS_F_CM_EST, &rs->flags))
		return -EPROTO;
	err = rs_hello_parse(rs, buf, len, true, rs_addr_port((struct sockaddr *)&rs->peer_addr));
	/* Our staging ring, made for the ring this QP's server had: never larger than its ring. */
	if (err || rs->tx.size > rs->peer_ring_size)
		return -EPROTO;
	set_bit(RS_F_CM_EST, &rs->flags);
	/* ACCEPT is the server's READY, unless the connect failed meanwhile: no data then. */
	spin_lock(&rs->lock);
	if (!test_bit(RS_F_CM_DONE, &rs->flags))
		set_bit(RS_F_PEER_READY, &rs->flags);
	spin_unlock(&rs->lock);
	rs_client_ready(rs);
	return 0;
}

void rs_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rs_sock *rs = container_of(wc->wr_cqe, struct rs_link, recv_cqe)->rs;
	u32 imm, arg;
	int err;

	/*
	 * Our own teardown flushes the queues, and so does rdma_cm when a connect fails (the CM
	 * event tells that outcome): nothing to report in either case.
	 */
	if (test_bit(RS_F_DYING, &rs->flags) ||
	    (wc->status != IB_WC_SUCCESS && !test_bit(RS_F_CM_EST, &rs->flags) &&
	     !test_bit(RS_F_OPENING, &rs->flags)))
		return;
	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		/* Flushed after the peer's FIN: an orderly close.  Anything else is a reset. */
		rs_count_wc_error(sock_net(&rs->sk), wc->status);
		/* Unless only the path is lost: the connection carries on over TCP (resume.c). */
		if (rs_path_lost(rs, -ECONNRESET))
			return;
		set_bit(RS_F_DISCONNECTED, &rs->flags);
		wake_up_all(&rs->close_wait);
		if (!test_bit(RS_F_PEER_FIN, &rs->flags))
			rs_abort(rs, -ECONNRESET);
		return;
	}
	if (test_bit(RS_F_ABORTED, &rs->flags))
		return;
	/*
	 * A reused QP's attempt that failed already (ACCEPT too late): what the server sent after
	 * its ACCEPT is for a connection we gave up on and reset (rs_reset_abandoned()): no lie.
	 */
	if (test_bit(RS_F_OPENING, &rs->flags) && test_bit(RS_F_CM_DONE, &rs->flags) &&
	    READ_ONCE(rs->cm_result))
		return;
	rs_peer_alive(rs);
	rs_count(sock_net(&rs->sk), RS_CNT_COMPLETIONS);
	/*
	 * The receive this message took goes back.  A post that fails (a QP on its way down, whose
	 * flushes follow; one fault_test fails) is owed and goes with the next completion's
	 * (rs_post_recvs()): meanwhile the peer's sends may meet RNR NAKs and are retried, never
	 * lost, and this message is handled all the same (a FIN drained at a disconnect stays one).
	 */
	rs_post_recvs(rs, 1);
	imm = be32_to_cpu(wc->ex.imm_data);
	if (!(wc->wc_flags & IB_WC_WITH_IMM)) {
		rs_proto_error(rs, "no immediate", 0);
		return;
	}
	arg = rs_imm_arg(imm);
	switch (rs_imm_type(imm)) {
	case RS_IMM_DATA:
		err = wc->opcode == IB_WC_RECV_RDMA_WITH_IMM ? rs_rx_data(rs, arg) : -EPROTO;
		break;
	case RS_IMM_CONSUMED:
		if (wc->opcode != IB_WC_RECV || wc->byte_len)
			err = -EPROTO;
		/*
		 * Before ACCEPT on a reused QP, a CONSUMED is the previous connection's (its server
		 * read after its FIN): it says nothing of this one.
		 */
		else if (test_bit(RS_F_OPENING, &rs->flags) && !test_bit(RS_F_CM_EST, &rs->flags))
			err = 0;
		else
			err = rs_rx_consumed(rs, arg);
		break;
	case RS_IMM_CTRL:
		if (wc->opcode != IB_WC_RECV)
			err = -EPROTO;
		else if (arg == RS_CTRL_RESIZE)
			err = rs_rx_resize(rs, wc->byte_len);
		else if (arg == RS_CTRL_OPEN || arg == RS_CTRL_ACCEPT)
			err = rs_rx_hello(rs, arg, wc->byte_len);
		else
			err = wc->byte_len ? -EPROTO : rs_rx_ctrl(rs, arg);
		break;
	default:
		err = -EPROTO;
	}
	if (err)
		rs_proto_error(rs, "bad message", imm);
	else
		rs_comm_est(rs);	/* a child waiting for the RTU: this says as much */
}

enum { RS_URG_AT_NONE, RS_URG_AT_INLINE, RS_URG_AT_SKIP };

/*
 * Is the urgent byte at @pos, arrived?  Then a read stops there (tcp_recvmsg()), and skips it
 * unless SO_OOBINLINE.  rs->lock held.
 */
static int rs_urg_at(struct rs_sock *rs, u64 pos)
{
	lockdep_assert_held(&rs->lock);
	if (rs->urg_state != RS_URG_VALID && rs->urg_state != RS_URG_READ)
		return RS_URG_AT_NONE;
	if (rs->urg_pos != pos)
		return RS_URG_AT_NONE;
	return sock_flag(&rs->sk, SOCK_URGINLINE) ? RS_URG_AT_INLINE : RS_URG_AT_SKIP;
}

/* Bytes a read from @pos may take before the urgent byte (a read stops at its mark). */
static u32 rs_urg_limit(struct rs_sock *rs, u64 pos, u32 avail)
{
	lockdep_assert_held(&rs->lock);
	if (rs->urg_state != RS_URG_NONE && rs->urg_pos > pos)
		avail = min_t(u64, avail, rs->urg_pos - pos);
	return avail;
}

/* EPOLLPRI, SIOCATMARK: urgent data to read; the read pointer at its mark. */
bool rs_urg_pending(struct rs_sock *rs)
{
	return READ_ONCE(rs->urg_state) == RS_URG_VALID;
}

bool rs_urg_at_mark(struct rs_sock *rs)
{
	bool at;

	spin_lock_bh(&rs->lock);
	at = rs->urg_state != RS_URG_NONE && rs->urg_pos == rs->rx_cons;
	spin_unlock_bh(&rs->lock);
	return at;
}

/* recv(MSG_OOB), as tcp_recv_urg(); lock_sock held.  It never waits. */
int rs_rdma_recv_urg(struct rs_sock *rs, struct msghdr *msg, size_t len, int flags)
{
	struct sock *sk = &rs->sk;
	int state;
	u8 c;

	sock_owned_by_me(sk);
	spin_lock_bh(&rs->lock);
	state = rs->urg_state;
	c = rs->urg_byte;
	spin_unlock_bh(&rs->lock);
	if (sock_flag(sk, SOCK_URGINLINE) || state == RS_URG_NONE || state == RS_URG_READ)
		return -EINVAL;
	/* Reset (not closed after the peer's FIN): what was unread is gone, this byte too. */
	if (sk->sk_state == TCP_CLOSE && !test_bit(RS_F_PEER_FIN, &rs->flags))
		return -ENOTCONN;
	if (state == RS_URG_VALID) {
		if (!(flags & MSG_PEEK)) {
			spin_lock_bh(&rs->lock);
			if (rs->urg_state == RS_URG_VALID)	/* (not replaced meanwhile) */
				WRITE_ONCE(rs->urg_state, RS_URG_READ);
			spin_unlock_bh(&rs->lock);
		}
		msg->msg_flags |= MSG_OOB;
		if (!len) {
			msg->msg_flags |= MSG_TRUNC;
			return 0;
		}
		if (!(flags & MSG_TRUNC) && memcpy_to_msg(msg, &c, 1))
			return -EFAULT;
		return 1;
	}
	if (sk->sk_state == TCP_CLOSE || (sk->sk_shutdown & RCV_SHUTDOWN))
		return 0;
	return -EAGAIN;
}

/*
 * Enough to read, for poll: the low-water mark (SO_RCVLOWAT), or less when no more can come before
 * this is read (as tcp_epollin_ready() under memory pressure): the ring is full, or the peer's
 * writer waits for room (its WANT_CONSUMED).  A mark above the ring would otherwise never be met.
 */
bool rs_rx_readable(struct rs_sock *rs, int lowat)
{
	bool ready;
	u32 avail;

	spin_lock_bh(&rs->lock);
	avail = test_bit(RS_F_ABORTED, &rs->flags) ? 0 : rs->rx_prod - rs->rx_cons;
	/* As tcp_poll(): an out-of-band byte at the read pointer is not for read(). */
	if (avail && rs_urg_at(rs, rs->rx_cons) == RS_URG_AT_SKIP)
		avail--;
	ready = avail && (avail >= (u32)lowat || !rs_rx_room(rs) ||
			  test_bit(RS_F_PEER_WANTS, &rs->flags));
	spin_unlock_bh(&rs->lock);
	return ready;
}

/*
 * Tell the peer how far we have read, in steps of a quarter ring.  That is enough to never stall
 * a writer whose window is the whole ring: it blocks only on a full ring, and a reader that
 * drained a full ring has a whole ring to announce.  A writer with a smaller window (SO_SNDBUF)
 * asks with WANT_CONSUMED, and then any progress is announced.  @force announces any progress.
 * From any context (the WANT_CONSUMED handler runs in softirq): rs->lock guards it all.
 */
void rs_rx_announce(struct rs_sock *rs, bool force)
{
	int err = 0;
	u64 cons;

	spin_lock_bh(&rs->lock);
	cons = rs->rx_cons;
	if (test_bit(RS_F_PEER_WANTS, &rs->flags))
		force = true;
	if (cons != rs->rx_announced && (force || cons - rs->rx_announced >= rs->rx.size / 4)) {
		err = __rs_send_ctrl(rs, RS_IMM_CONSUMED, (u32)cons, false);
		if (!err) {
			rs->rx_announced = cons;
			clear_bit(RS_F_PEER_WANTS, &rs->flags);
			clear_bit(RS_F_ANNOUNCE_DUE, &rs->flags);
		} else {
			/*
			 * The SQ is full: the completion that frees a slot sends it (rs_send_done),
			 * not the next read, which a reader that drained everything never makes.
			 */
			rs_ctrl_defer(rs, RS_F_ANNOUNCE_DUE, err);
		}
	}
	spin_unlock_bh(&rs->lock);
	/*
	 * Refused (not deferred): a writer waiting for this report would wait for ever.  After the
	 * peer's FIN none does: what it sent stays readable to EOF, as rs_send_done() keeps it.
	 */
	if (rs_post_failed(err) && !test_bit(RS_F_PEER_FIN, &rs->flags))
		rs_post_refused(rs);
}

/*
 * The ring that holds stream position @pos, the position of its offset 0 (@base) and how many
 * bytes from @pos on are there; rs->lock held.  Only the reader (lock_sock) swaps the rings.
 */
static struct rs_ring *rs_rx_ring_at(struct rs_sock *rs, u64 pos, u64 *base, u32 *avail)
{
	lockdep_assert_held(&rs->lock);
	*avail = 0;
	/* Aborted, or torn down (the rings are gone, and with them any unread byte). */
	if (test_bit(RS_F_ABORTED, &rs->flags) || !rs->rx.size || pos < rs->rx_cons ||
	    pos > rs->rx_prod)
		return NULL;
	if (test_bit(RS_F_RX_SWITCHED, &rs->flags)) {
		if (!rs->rx_next.size)
			return NULL;
		if (pos >= rs->rx_switch) {
			*base = rs->rx_switch;
			*avail = rs->rx_prod - pos;
			return &rs->rx_next;
		}
		*base = rs->rx_base;
		*avail = rs->rx_switch - pos;
		return &rs->rx;
	}
	*base = rs->rx_base;
	*avail = rs->rx_prod - pos;
	return &rs->rx;
}

/* Copy @len bytes at stream position @pos, all in @ring, to the reader. */
static int rs_rx_copy(struct rs_ring *ring, u64 base, u64 pos, u32 len, struct msghdr *msg)
{
	u32 off = (pos - base) % ring->size;
	u32 first = min(len, ring->size - off);

	rs_ring_sync(ring, off, first, true);
	if (copy_to_iter(ring->buf + off, first, &msg->msg_iter) != first)
		return -EFAULT;
	if (len == first)
		return 0;
	rs_ring_sync(ring, 0, len - first, true);
	if (copy_to_iter(ring->buf, len - first, &msg->msg_iter) != len - first)
		return -EFAULT;
	return 0;
}

static bool rs_rx_should_wake(struct rs_sock *rs, u64 pos)
{
	struct sock *sk = &rs->sk;

	/* (Resuming, a FIN seen is no reason: it comes again over TCP, after the bytes.) */
	return READ_ONCE(rs->rx_prod) != pos || READ_ONCE(sk->sk_err) ||
	       ((READ_ONCE(sk->sk_shutdown) & RCV_SHUTDOWN) &&
		!test_bit(RS_F_RESUMING, &rs->flags)) ||
	       READ_ONCE(sk->sk_state) == TCP_CLOSE || rs_is_tcp(rs);
}

static unsigned int rs_busy_poll_us;
module_param_named(busy_poll_us, rs_busy_poll_us, uint, 0644);
MODULE_PARM_DESC(busy_poll_us, "spin this long for data before sleeping (0: off; SO_BUSY_POLL overrides)");

static unsigned int rs_busy_poll_budget(struct rs_sock *rs)
{
#ifdef CONFIG_NET_RX_BUSY_POLL
	unsigned int us = READ_ONCE(rs->sk.sk_ll_usec);

	if (us)
		return us;
#endif
	return READ_ONCE(rs_busy_poll_us);
}

/*
 * Busy poll: poll the CQ for data a little before sleeping, which saves the completion event's
 * softirq hops and the wakeup on a fast path.  It yields at every turn (cond_resched): on a small
 * machine the device may need this very CPU (rxe runs its work there), and spinning without
 * yielding would only delay it.
 */
static bool rs_rx_busy_poll(struct rs_sock *rs, long timeo, u64 pos)
{
	unsigned int us = rs_busy_poll_budget(rs);
	u64 end;
	bool ready;

	if (!us || !timeo)
		return false;
	end = local_clock() + (u64)us * NSEC_PER_USEC;
	release_sock(&rs->sk);
	do {
		rs_cq_busy_poll(rs);
		ready = rs_rx_should_wake(rs, pos);
		if (ready)
			break;
		cond_resched();
		cpu_relax();
	} while (local_clock() < end && !signal_pending(current));
	lock_sock(&rs->sk);
	return ready;
}

static int rs_rx_wait(struct rs_sock *rs, long *timeo, u64 pos)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	struct sock *sk = &rs->sk;

	rs_rx_announce(rs, false);	/* retry one an SQ-full moment refused */
	if (rs_rx_busy_poll(rs, *timeo, pos))
		return 0;
	add_wait_queue(sk_sleep(sk), &wait);
	sk_wait_event(sk, timeo, rs_rx_should_wake(rs, pos), &wait);
	remove_wait_queue(sk_sleep(sk), &wait);
	return 0;
}

/* The reader consumed up to @pos (lock_sock held): tell the peer, as it may. */
static void rs_rx_consumed_to(struct rs_sock *rs, u64 pos, u64 *seen_cons)
{
	sock_owned_by_me(&rs->sk);
	spin_lock_bh(&rs->lock);
	/* An abort meanwhile discarded it all: rx_cons stays put. */
	if (rs->rx_cons == *seen_cons)
		rs->rx_cons = pos;
	*seen_cons = rs->rx_cons;
	/* Read past the mark: no urgent data any more (tcp_recvmsg()). */
	if (rs->urg_state != RS_URG_NONE && rs->urg_state != RS_URG_NOTYET &&
	    rs->rx_cons > rs->urg_pos)
		WRITE_ONCE(rs->urg_state, RS_URG_NONE);
	spin_unlock_bh(&rs->lock);
	if (test_bit(RS_F_RX_SWITCHED, &rs->flags))
		rs_rx_switch_done(rs);
	rs_rx_announce(rs, false);
}

/*
 * The error a reader gets: sk_err, else what a loss owes the reading side after a writer or
 * SO_ERROR took sk_err.  rs_abort() sets both under rs->lock: taken together, both are spent.
 */
static int rs_rx_take_error(struct rs_sock *rs)
{
	int err, owed;

	spin_lock_bh(&rs->lock);
	err = sock_error(&rs->sk);
	owed = rs->rx_err;
	WRITE_ONCE(rs->rx_err, 0);
	spin_unlock_bh(&rs->lock);
	return err ? : -owed;
}

int rs_rdma_recvmsg(struct rs_sock *rs, struct msghdr *msg, size_t len, int flags)
{
	struct sock *sk = &rs->sk;
	long timeo = sock_rcvtimeo(sk, flags & MSG_DONTWAIT);
	int target = sock_rcvlowat(sk, flags & MSG_WAITALL, len);
	bool peek = flags & MSG_PEEK;
	u64 pos, seen_cons, prod;
	size_t copied = 0;
	int err = 0, urg, off;
	bool mark;
	u32 gen;

	sock_owned_by_me(sk);
	if (sk->sk_state == TCP_LISTEN)
		return -ENOTCONN;
	gen = rs->conn_gen;
	spin_lock_bh(&rs->lock);
	seen_cons = rs->rx_cons;
	/* SO_PEEK_OFF (where TCP has it: rs_set_peek_off()): a peek starts that far on. */
	off = max(sk_peek_offset(sk, flags), 0);
	pos = seen_cons + off;
	spin_unlock_bh(&rs->lock);
	for (;;) {
		struct rs_ring *ring;
		u32 avail, n;
		u64 base;

		/*
		 * As tcp_recvmsg() works on copied_seq itself: waits and busy polling drop
		 * lock_sock, and another reader (or a peeking one) may have moved rx_cons
		 * meanwhile.  A reader always starts where rx_cons is now; a peek restarts there
		 * (and its offset) if it moved.
		 */
		spin_lock_bh(&rs->lock);
		/* (A new connect() meanwhile restarted the cursors: pos is past rx_prod + off.) */
		if (rs->rx_cons != seen_cons || pos > rs->rx_prod + off) {
			seen_cons = rs->rx_cons;
			off = max(sk_peek_offset(sk, flags), 0);
			pos = seen_cons + off;
		}
		prod = rs->rx_prod;
		ring = rs_rx_ring_at(rs, pos, &base, &avail);
		urg = avail ? rs_urg_at(rs, pos) : RS_URG_AT_NONE;
		/* (A mark whose byte is still to come stops a read too.) */
		mark = rs->urg_state != RS_URG_NONE && rs->urg_pos == pos;
		avail = rs_urg_limit(rs, pos, avail);
		spin_unlock_bh(&rs->lock);
		/* As tcp_recvmsg(): a read stops at the mark; then the byte is a hole. */
		if (mark && copied)
			break;
		if (urg != RS_URG_AT_NONE) {
			if (urg == RS_URG_AT_SKIP && len) {
				pos++;
				if (!peek)
					rs_rx_consumed_to(rs, pos, &seen_cons);
				continue;
			}
		}
		if (avail) {
			/* As tcp_recvmsg(): a zero-length read with data waiting returns 0. */
			n = min_t(size_t, avail, len - copied);
			/*
			 * lock_sock is held: neither teardown nor a ring swap can run meanwhile.
			 * MSG_TRUNC on a stream, as TCP's: the bytes are consumed, not copied.
			 */
			err = flags & MSG_TRUNC ? 0 : rs_rx_copy(ring, base, pos, n, msg);
			if (err)
				break;
			pos += n;
			copied += n;
			if (!peek) {
				rs_rx_consumed_to(rs, pos, &seen_cons);
				sk_peek_offset_bwd(sk, n);
			} else {
				sk_peek_offset_fwd(sk, n);
			}
			if (copied >= len)
				break;
			continue;
		}
		if (copied >= target)
			break;
		/* The connection resumed over TCP: the rest is there (rdma.c). */
		if (rs_is_tcp(rs)) {
			err = -EXDEV;
			break;
		}
		/*
		 * As tcp_recvmsg()'s SOCK_DONE: after the peer's FIN, EOF before any error.  Not
		 * while resuming: the ring's unread bytes come again over TCP, and the FIN after.
		 */
		if (test_bit(RS_F_PEER_FIN, &rs->flags) && !test_bit(RS_F_ABORTED, &rs->flags) &&
		    !test_bit(RS_F_RESUMING, &rs->flags))
			break;
		/*
		 * A loss reports its error to a reader once (then EOF, as TCP after its reset was
		 * reported), even if a writer or SO_ERROR took sk_err before: not a clean EOF.  As
		 * tcp_recvmsg(): the bytes copied first, the error on the next call.
		 */
		if (READ_ONCE(sk->sk_err) || READ_ONCE(rs->rx_err)) {
			if (copied)
				break;
			err = rs_rx_take_error(rs);
			if (err)
				break;
		}
		/*
		 * An abort sets the shutdown and the state with its errors, under rs->lock: one
		 * that came after the look above is seen under it now, not taken for an EOF.
		 */
		if ((sk->sk_shutdown & RCV_SHUTDOWN) && !test_bit(RS_F_RESUMING, &rs->flags)) {
			if (!copied)
				err = rs_rx_take_error(rs);
			break;
		}
		if (sk->sk_state == TCP_CLOSE) {
			if (rs->mode == RDMASOCK_MODE_NONE)
				err = -ENOTCONN;
			else if (!copied)
				err = rs_rx_take_error(rs);
			break;
		}
		if (!timeo) {
			err = -EAGAIN;
			break;
		}
		if (signal_pending(current)) {
			err = sock_intr_errno(timeo);
			break;
		}
		/* (A peek past what came waits for more: for rx_prod to move from @prod.) */
		rs_rx_wait(rs, &timeo, min(pos, prod));
		/* Another thread's connect() started over while we waited: not our stream. */
		if (rs->conn_gen != gen) {
			err = -ECONNRESET;
			break;
		}
	}
	/* For autocork (tx.c): a write after a read is request/response traffic. */
	if (copied && !peek)
		set_bit(RS_F_READ_SINCE_TX, &rs->flags);
	return copied ? copied : err;
}
