// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock connection resources: what one RDMA connection owns, made at set-up and freed at its
 * end (as net/smc's smc_conn_create()/smc_conn_free()).
 *
 *   rs_conn_create()    PD, CQ, QP (with the data path's completion handlers), the receive ring,
 *                       the device's socket list: everything the hello describes.
 *   rs_tx_ring_create() the staging ring, once the peer's hello says its ring's size.
 *   rs_teardown_rdma()  all of it, in process context under lock_sock: stop the handlers, drain
 *                       the QP, free the rings, the PD and the id.
 *   rs_conn_reset()     a socket connecting again starts from nothing.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <net/tcp_states.h>
#include "rdmasock.h"
#include "conn.h"
#include "core.h"
#include "dev.h"
#include "grow.h"
#include "keepalive.h"
#include "ring.h"
#include "rx.h"
#include "stats.h"
#include "tx.h"
#include "wr.h"
#include "trace.h"

/* PD, CQ, QP and the receive ring: everything the hello must describe. */
int rs_conn_create(struct rs_sock *rs, struct rdma_cm_id *id)
{
	int err;

	rs->pd = ib_alloc_pd(id->device, 0);
	if (IS_ERR(rs->pd)) {
		err = PTR_ERR(rs->pd);
		rs->pd = NULL;
		return err;
	}
	err = rs_qp_create(rs, id, rs_send_done, rs_recv_done);
	if (err)
		return err;
	err = rs_ring_alloc(&rs->rx, rs->pd, rs_ring_start(rs, id->device), &rs->sk);
	if (!err)
		err = rs_resize_buf_alloc(rs);
	if (err)
		return err;
	rs->port_num = id->port_num;
	err = rs_dev_attach(rs, id->device);
	if (err)
		return err;
	set_bit(RS_F_RDMA_UP, &rs->flags);
	rdma_set_min_rnr_timer(id, IB_RNR_TIMER_000_32);
	return rs_post_recvs(rs, RS_RQ_DEPTH);
}

/* The staging ring: the peer's ring, or less if our SO_SNDBUF asks for less (grow.c). */
int rs_tx_ring_create(struct rs_sock *rs)
{
	return rs_ring_alloc(&rs->tx, rs->pd,
			     rs_tx_ring_target(rs, rs->pd->device, rs->peer_ring_size), &rs->sk);
}

/*
 * connect() again on a socket that had a connection or an aborted attempt (TCP allows it once
 * connect() reported the failure): nothing of it may stay.  Its resources, id and pending work go
 * now, under lock_sock (a queued teardown_work then finds RS_F_ABORTED clear, which
 * rs_cm_connect() clears, and leaves the new attempt alone), and every per-connection field
 * starts from zero, as both ends' ring offsets must.
 */
void rs_conn_reset(struct rs_sock *rs)
{
	sock_owned_by_me(&rs->sk);
	/* (A socket only bound keeps its id: connect() goes out from its address and port.) */
	if (test_bit(RS_F_ABORTED, &rs->flags) || rs->link || rs->pd ||
	    rs->mode == RDMASOCK_MODE_RDMA)
		rs_teardown_rdma(rs, false);
	rs->conn_gen++;
	spin_lock_bh(&rs->lock);
	memset(&rs->conn_cursors, 0, sizeof(rs->conn_cursors));
	memset(&rs->conn_peer, 0, sizeof(rs->conn_peer));
	memset(&rs->conn_next, 0, sizeof(rs->conn_next));
	memset(&rs->conn_stats, 0, sizeof(rs->conn_stats));
	kvfree(rs->replay_buf);		/* (an earlier connection's resume, never attached) */
	rs->replay_buf = NULL;
	rs->replay_ok = false;
	spin_unlock_bh(&rs->lock);
	rs->busy_tries = 0;
	rs->ka_last = 0;
	rs->ka_seen = 0;
	rs->ka_seen_at_probe = 0;
	rs->ka_unanswered = 0;
	WRITE_ONCE(rs->sk.sk_err, 0);
	WRITE_ONCE(rs->rx_err, 0);
	/* A former listener keeps its TCP socket (rs->tcp_final): lockless pollers may use it. */
	WRITE_ONCE(rs->mode, RDMASOCK_MODE_NONE);
}

/* Stop the CM handler and the completion handlers from touching the connection again. */
static void rs_mark_dying(struct rs_sock *rs, bool in_handler)
{
	if (rs->cm_id && !in_handler)
		rdma_lock_handler(rs->cm_id);
	spin_lock_bh(&rs->lock);
	set_bit(RS_F_DYING, &rs->flags);
	spin_unlock_bh(&rs->lock);
	if (rs->cm_id && !in_handler)
		rdma_unlock_handler(rs->cm_id);
}

void rs_teardown_rdma(struct rs_sock *rs, bool in_handler)
{
	struct rdma_cm_id *id;

	trace_rdmasock_teardown(rs);
	rs_mark_dying(rs, in_handler);
	rs_keepalive_stop(rs);
	rs_tx_stop(rs);
	/*
	 * Before the id goes (the work uses it) and before the disconnect (whether it notified the
	 * CM is known then); DYING is set, so nothing queues it again.
	 */
	if (cancel_work_sync(&rs->comm_est_work))
		sock_put(&rs->sk);
	if (rs->cm_id && rs->link && !in_handler) {
		rs_comm_est_settle(rs);	/* (a handler cannot wait for its own id's next event) */
		rdma_disconnect(rs->cm_id);
	}
	rs_qp_destroy(rs);
	/* Once the QP is gone: a fatal QP event's work must not abort the next connection. */
	if (cancel_work_sync(&rs->qp_err_work))
		sock_put(&rs->sk);	/* its reference; the caller holds one too */
	/*
	 * A connection that resumes over TCP keeps what its peer has not consumed, and where its
	 * reader stands: nothing moves any more, the QP is gone.  (Its reader's unread bytes go
	 * with the ring: the peer sends them again.)
	 */
	if (test_bit(RS_F_RESUMING, &rs->flags) && !test_bit(RS_F_RESUME_DETACHED, &rs->flags)) {
		spin_lock_bh(&rs->lock);
		rs->resume_rx = rs->rx_cons;
		/* A byte our reader took by MSG_OOB before reaching it: not replayed. */
		rs->resume_urg_read = 0;
		if (!sock_flag(&rs->sk, SOCK_URGINLINE) && rs->urg_state == RS_URG_READ &&
		    rs->urg_pos >= rs->rx_cons)
			rs->resume_urg_read = rs->urg_pos + 1;
		spin_unlock_bh(&rs->lock);
		rs_tx_snapshot(rs);	/* (replay_ok says whether it could be taken) */
		set_bit(RS_F_RESUME_DETACHED, &rs->flags);
		/* The bound runs from here: tearing many QPs down is our own work. */
		rs->resume_deadline = jiffies + msecs_to_jiffies(READ_ONCE(rs_resume_timeout_ms));
	}
	/*
	 * The rings go, and with them whatever they still hold: no reader may find bytes to copy
	 * from a freed ring (a peer that wrote before its connect failed), no writer staged bytes.
	 */
	spin_lock_bh(&rs->lock);
	rs->rx_cons = rs->rx_prod;
	rs->tx_staged = rs->tx_prod;
	spin_unlock_bh(&rs->lock);
	if (rs->pd)
		rs_grow_free(rs);
	rs_ring_release(rs, &rs->rx);
	rs_ring_release(rs, &rs->tx);
	if (rs->pd) {
		if (!rs->pd_pinned)
			ib_dealloc_pd(rs->pd);	/* else leaked with the MR it still holds */
		rs->pd = NULL;
		rs->pd_pinned = false;
	}
	if (!in_handler) {
		id = xchg(&rs->cm_id, NULL);
		if (id)
			rdma_destroy_id(id);
		/* A reused id's port, held in TCP's space until the id was gone (park.c). */
		if (rs->port_holder)
			sock_release(rs->port_holder);
		rs->port_holder = NULL;
	}
	clear_bit(RS_F_RDMA_UP, &rs->flags);
	rs_dev_detach(rs);
}

void rs_teardown_work(struct work_struct *work)
{
	struct rs_sock *rs = container_of(work, struct rs_sock, teardown_work);

	lock_sock(&rs->sk);
	/* Not when a new connect() started afresh meanwhile (it tore the aborted attempt down). */
	if (rs->sk.sk_state != TCP_LISTEN && test_bit(RS_F_ABORTED, &rs->flags)) {
		rs_teardown_rdma(rs, false);
	} else if (test_bit(RS_F_RESUMING, &rs->flags) &&
		   !test_bit(RS_F_RESUME_DETACHED, &rs->flags)) {
		/* The path is lost: the RDMA half goes now, then resume.c's work carries on. */
		rs_teardown_rdma(rs, false);
		/* Not behind release()'s cancel (it set RS_F_CLOSING under rs->lock first). */
		spin_lock_bh(&rs->lock);
		if (!test_bit(RS_F_CLOSING, &rs->flags)) {
			sock_hold(&rs->sk);
			if (mod_delayed_work(rs_resume_wq, &rs->resume_work, 0))
				sock_put(&rs->sk);	/* pending already, with its reference */
		}
		spin_unlock_bh(&rs->lock);
	}
	release_sock(&rs->sk);
	/* A parked QP that failed: park.c frees its socket now, not at park_ms. */
	smp_mb();	/* the bits before the state: park.c parks, then tests them */
	if (READ_ONCE(rs->park_state))
		rs_park_signal(rs);
	sock_put(&rs->sk);
}
