// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock close state machine: shutdown, close, reset and teardown of the RDMA resources.
 *
 *   shutdown(SHUT_WR)  -> FIN (signaled SEND); the peer reads what is left, then 0.
 *   close()            -> FIN, or RESET when unread data is dropped or SO_LINGER is {1, 0};
 *                         close_work lets the orphan deliver what is staged and that WR (as
 *                         long as the peer takes bytes or lives, bounded as TCP bounds orphans),
 *                         then disconnects.
 *   peer gone, CQ error, protocol violation, device removal
 *                      -> rs_abort(): error recorded, everyone woken, teardown_work frees.
 * Teardown always runs in process context under lock_sock, never inside the id's own CM handler.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <net/tcp_states.h>
#include "rdmasock.h"
#include "close.h"
#include "cm.h"
#include "conn.h"
#include "core.h"
#include "fallback.h"
#include "park.h"
#include "resume.h"
#include "stats.h"
#include "tx.h"
#include "wr.h"
#include "trace.h"

/*
 * After close(), the last bytes and the FIN still go to the peer, as an orphaned TCP socket still
 * delivers them.  close_work looks again after 1, 1, 2, 4 ... jiffies up to RS_CLOSE_WAIT (a FIN in
 * flight, the common case: no worker sleeps; an abortive close's RESET: RS_CLOSE_RESET_WAIT),
 * then every RS_ORPHAN_CHECK while the peer's HCA completes our work requests.  As TCP bounds
 * its orphans: at most max_orphans at a time (tcp_max_orphans; beyond, the close resets), and no
 * progress for TCP_USER_TIMEOUT if set, else for orphan_timeout_s (a stalled orphan's zero-window
 * probes give up once their backoff reaches TCP_RTO_MAX), resets it.  A peer that died fails our
 * work requests (RC retries) sooner.
 */
#define RS_CLOSE_WAIT		(HZ / 5)
/*
 * An abortive close's RESET is waited for longer, and no more (it counts against max_orphans
 * past RS_CLOSE_WAIT; a full SQ defers it to the next send completion): a disconnect that
 * overtakes it (the QP's unsent work requests are flushed) reads to a resumable peer as a lost
 * path, which it then waits out for resume_timeout_ms before it reports the reset.  Its
 * completion ends the wait, so the bound costs only a peer that does not answer; 1 s was
 * overtaken once on 6.12 under the suite's load (rxe's work queued behind other connections').
 */
#define RS_CLOSE_RESET_WAIT	(3 * HZ)
#define RS_ABANDON_WAIT		msecs_to_jiffies(20)	/* an abandoned attempt's RESET */
#define RS_ORPHAN_CHECK		(HZ / 4)

static unsigned int rs_max_orphans = 4096;
module_param_named(max_orphans, rs_max_orphans, uint, 0644);
MODULE_PARM_DESC(max_orphans,
		 "closed connections still delivering their last bytes or RESET, at most (as tcp_max_orphans)");

static unsigned int rs_orphan_timeout_s = 120;
module_param_named(orphan_timeout_s, rs_orphan_timeout_s, uint, 0644);
MODULE_PARM_DESC(orphan_timeout_s,
		 "an orphan whose peer takes nothing for this long is reset (TCP_USER_TIMEOUT first)");

static atomic_t rs_orphans = ATOMIC_INIT(0);

/* Closed connections still delivering now (/proc/net/rdmasock_stat). */
int rs_orphan_count(void)
{
	return atomic_read(&rs_orphans);
}

static bool rs_rdma_live(struct rs_sock *rs)
{
	return test_bit(RS_F_RDMA_UP, &rs->flags) && !test_bit(RS_F_ABORTED, &rs->flags);
}

/* FIN follows the last staged byte: rs_tx_push() sends it once they are all posted. */
void rs_send_fin(struct rs_sock *rs)
{
	if (!rs_rdma_live(rs) || test_and_set_bit(RS_F_FIN_PENDING, &rs->flags))
		return;
	rs_tx_push(rs);
}

/*
 * Under lock_sock: a connect abandoned (closed, shut down, or given up on a reused QP) after our
 * READY went out, or a reused QP's OPEN, which is our READY too: the server may have made the
 * connection, and its accept() return it.  It is reset first, as TCP's RST answers a SYN-ACK for
 * a socket that is gone: the bare disconnect that follows would look to it like a lost path (a
 * resume waiting for nothing).  Bounded: a RESET not completed by RS_ABANDON_WAIT goes with the
 * QP, and the disconnect says it.
 */
void rs_reset_abandoned(struct rs_sock *rs)
{
	int err;

	sock_owned_by_me(&rs->sk);
	if (rs->parent || !rs_rdma_live(rs))
		return;
	spin_lock_bh(&rs->lock);
	/* (Under the lock: a READY whose post failed clears it again there.) */
	err = test_bit(RS_F_READY_SENT, &rs->flags) ?
	      __rs_send_ctrl(rs, RS_IMM_CTRL, RS_CTRL_RESET, true) : -ENOTCONN;
	spin_unlock_bh(&rs->lock);
	if (!err)
		wait_event_timeout(rs->close_wait, rs_tx_idle(rs), RS_ABANDON_WAIT);
}

/* 0, an error, or 1 when a connect in progress was abandoned (the caller unconnects the socket). */
int rs_shutdown(struct rs_sock *rs, int how)
{
	struct sock *sk = &rs->sk;
	int err = 0;

	switch (sk->sk_state) {
	case TCP_LISTEN:
		if (!(how & RCV_SHUTDOWN))
			return 0;
		/* As TCP: SHUT_RD on a listener stops it; accept() then fails. */
		rs_cm_listener_close(rs);
		kernel_sock_shutdown(rs->tcp, SHUT_RD);
		rs_wake(sk, EPOLLIN | EPOLLOUT | EPOLLHUP);
		return 0;
	case TCP_SYN_SENT:
		/*
		 * As inet_shutdown() disconnects a TCP socket that is connecting: the attempt is
		 * abandoned (a blocked connect() returns ECONNRESET), the socket is unconnected.
		 */
		rs_reset_abandoned(rs);
		rs_teardown_rdma(rs, false);
		if (rs->port_taken)
			rs_tcp_give_port(rs);
		WRITE_ONCE(sk->sk_err, ECONNRESET);	/* as tcp_disconnect() */
		WRITE_ONCE(sk->sk_state, TCP_CLOSE);
		rs_wake(sk, EPOLLIN | EPOLLOUT | EPOLLHUP);
		return 1;
	case TCP_CLOSE:
		err = -ENOTCONN;
		break;
	default:
		break;
	}
	/* Under rs->lock: the FIN handler and failing completions set bits too (softirq). */
	spin_lock_bh(&rs->lock);
	WRITE_ONCE(sk->sk_shutdown, sk->sk_shutdown | how);
	spin_unlock_bh(&rs->lock);
	trace_rdmasock_shutdown(rs);
	if (how & SEND_SHUTDOWN)
		rs_send_fin(rs);
	rs_wake(sk, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLHUP);
	return err;
}

/* Is there room for one more orphan (counted once)?  False: too many, it must go now. */
static bool rs_orphan_admit(struct rs_sock *rs)
{
	if (rs->orphan_counted)
		return true;
	if (atomic_inc_return(&rs_orphans) > READ_ONCE(rs_max_orphans)) {
		atomic_dec(&rs_orphans);
		rs_count(sock_net(&rs->sk), RS_CNT_ORPHAN_DROPPED);
		return false;
	}
	rs->orphan_counted = true;
	rs->orphan_progress = jiffies;
	return true;
}

/* Does the orphan stay?  False when it must be reset: no progress for too long. */
static bool rs_orphan_keep(struct rs_sock *rs)
{
	struct net *net = sock_net(&rs->sk);
	unsigned long limit;
	u32 done;

	spin_lock_bh(&rs->lock);
	done = rs->sq_done;		/* the peer's HCA acknowledged our work requests */
	spin_unlock_bh(&rs->lock);
	if (done != rs->orphan_done) {
		rs->orphan_done = done;
		rs->orphan_progress = jiffies;
		return true;
	}
	limit = rs->user_timeout ? msecs_to_jiffies(rs->user_timeout) :
		READ_ONCE(rs_orphan_timeout_s) * HZ;
	if (time_after(jiffies, rs->orphan_progress + limit)) {
		rs_count(net, RS_CNT_ORPHAN_TIMEOUT);
		return false;
	}
	/*
	 * Nothing completed since the last look.  Unsignaled work requests after the last
	 * signaled one (a CONSUMED, a READY) complete only with a later signaled one, and a FIN
	 * may wait for a push: push, and send a signaled probe, unless ours is still in flight.
	 * A peer that died fails it (RC retries); one that lives but takes nothing (RNR, retried
	 * for ever) keeps it in flight until the limit above: TCP's zero window.
	 */
	if ((s32)(done - rs->orphan_probe_end) >= 0) {
		int err;

		rs_tx_push(rs);
		err = rs_send_ctrl(rs, RS_IMM_CTRL, RS_CTRL_KEEPALIVE, true);
		if (rs_post_failed(err))
			return false;	/* the QP is going: nothing can complete any more */
		if (!err) {
			spin_lock_bh(&rs->lock);
			rs->orphan_probe_end = rs->sq_posted;
			spin_unlock_bh(&rs->lock);
		}
	}
	return true;
}

/* When close_work looks again at a socket whose last work requests are in flight; 0: now. */
static unsigned long rs_close_next(struct rs_sock *rs)
{
	bool reset = test_bit(RS_F_CLOSE_RESET, &rs->flags);
	unsigned long delay;

	/*
	 * Past RS_CLOSE_WAIT a socket counts against max_orphans, one that waits for its RESET
	 * too: the limit bounds what closed sockets hold, however they were closed.
	 */
	if (rs->close_waited >= RS_CLOSE_WAIT && !rs_orphan_admit(rs))
		return 0;
	if (rs->close_waited < (reset ? RS_CLOSE_RESET_WAIT : RS_CLOSE_WAIT)) {
		delay = min_t(unsigned long, max(1UL, rs->close_waited), RS_ORPHAN_CHECK);
		rs->close_waited += delay;
		return delay;
	}
	/* An abortive close never orphans for longer (as TCP's): the disconnect is the reset. */
	if (reset)
		return 0;
	return rs_orphan_keep(rs) ? RS_ORPHAN_CHECK : 0;
}

/*
 * close_work: the FIN or RESET reaches the peer, after the bytes still staged while the socket is
 * an orphan; then everything is freed.  It owns the socket's last reference; only it requeues.
 */
void rs_close_work(struct work_struct *work)
{
	struct rs_sock *rs = container_of(to_delayed_work(work), struct rs_sock, close_work);
	unsigned long delay;
	bool idle;

	/* A connection closed in order keeps its QP for the next one (park.c), once it is done. */
	rs_park_offer(rs);
	idle = rs_tx_idle(rs);
	if (!idle) {
		delay = rs_close_next(rs);
		if (delay) {
			queue_delayed_work(rs_wq, &rs->close_work, delay);
			return;
		}
	}
	if (rs_park_hold(rs, idle))
		return;
	if (rs->orphan_counted)
		atomic_dec(&rs_orphans);
	/* Bytes still staged are lost: the disconnect without our FIN is a reset for the peer. */
	lock_sock(&rs->sk);
	rs_teardown_rdma(rs, false);
	if (rs->tcp)
		rs_tcp_detach(rs);	/* the port's holder, once the id is gone */
	release_sock(&rs->sk);
	sock_put(&rs->sk);
}

void rs_release(struct rs_sock *rs)
{
	struct sock *sk = &rs->sk;
	bool rdma;
	int err;

	if (cancel_delayed_work_sync(&rs->connect_work))
		sock_put(sk);	/* the pending work's reference */
	/* No resume starts or attaches from here on (rs_path_lost(), resume.c test it). */
	spin_lock_bh(&rs->lock);
	set_bit(RS_F_CLOSING, &rs->flags);
	spin_unlock_bh(&rs->lock);
	rs_resume_stop(rs);
	lock_sock(sk);
	if (sk->sk_state == TCP_LISTEN || rs->mode == RDMASOCK_MODE_LISTEN)
		rs_cm_listener_close(rs);
	/*
	 * The TCP socket of a TCP connection or a listener goes now.  That of an RDMA connection or
	 * attempt only holds the port its id has in rdma_cm's space: it goes after the id
	 * (rs_close_work()), so TCP cannot hand the port on while the id still holds it.
	 */
	if (rs->tcp && (rs->mode == RDMASOCK_MODE_TCP || rs->mode == RDMASOCK_MODE_LISTEN ||
			sk->sk_state == TCP_LISTEN)) {
		/* (A fallback at connect() keeps the id bind() made: it goes first.) */
		if (rs->mode == RDMASOCK_MODE_TCP && !rs->link)
			rs_cm_id_drop(rs);
		rs_tcp_detach(rs);
	}
	if (sk->sk_state == TCP_SYN_SENT ||
	    (sk->sk_state == TCP_CLOSE && rs->mode == RDMASOCK_MODE_NONE && !rs->link &&
	     (rs->cm_id || rs->pd))) {
		/*
		 * As tcp_close() of a connecting socket: the attempt goes, no FIN, no orphan.
		 * The id of a socket that only bound goes now too: close() frees its port.
		 */
		if (sk->sk_state == TCP_SYN_SENT)
			rs_reset_abandoned(rs);
		rs_teardown_rdma(rs, false);
	} else if (rs_rdma_live(rs)) {
		/* Unread data or SO_LINGER {1, 0}: reset the peer, as TCP sends an RST. */
		if (rs_rx_avail(rs) || (sock_flag(sk, SOCK_LINGER) && !sk->sk_lingertime)) {
			/*
			 * What was not sent never is, nor a FIN still pending (shut down on a full
			 * send queue): the peer must not take a truncated stream for a whole one.
			 * No orphan for longer: if the RESET is not out by RS_CLOSE_RESET_WAIT (or
			 * max_orphans are there), the disconnect says it.
			 */
			spin_lock_bh(&rs->lock);
			rs->tx_staged = rs->tx_prod;
			set_bit(RS_F_FIN_SENT, &rs->flags);
			set_bit(RS_F_CLOSE_RESET, &rs->flags);
			err = __rs_send_ctrl(rs, RS_IMM_CTRL, RS_CTRL_RESET, true);
			if (err == -ENOBUFS)	/* a full SQ: the next send completion posts it */
				rs_ctrl_defer(rs, RS_F_RESET_DUE, err);
			spin_unlock_bh(&rs->lock);
		} else {
			rs_send_fin(rs);
		}
	}
	rdma = rs->cm_id || rs->link;
	if (!rdma && rs->tcp)
		rs_tcp_detach(rs);
	WRITE_ONCE(sk->sk_shutdown, SHUTDOWN_MASK);
	sock_orphan(sk);
	release_sock(sk);

	if (!rdma) {
		sock_put(sk);
		return;
	}
	/* SO_LINGER with a time: close() itself waits for the peer to take our last bytes. */
	if (sock_flag(sk, SOCK_LINGER) && sk->sk_lingertime)
		wait_event_interruptible_timeout(rs->close_wait, rs_tx_idle(rs), sk->sk_lingertime);
	/* The socket's reference now belongs to close_work. */
	queue_delayed_work(rs_wq, &rs->close_work, 0);
}
