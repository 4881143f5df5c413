/* SPDX-License-Identifier: GPL-2.0 */
/* rdmasock wr.c: verbs: QP, CQ, posting work requests. */
#ifndef RDMASOCK_WR_H
#define RDMASOCK_WR_H

#include "rdmasock.h"

/*
 * Queue depths just under a power of two: providers round queues up to one (rxe: slots for the
 * WRs asked, our drain marker and one it keeps empty; the CQ likewise for both queues' WRs and the
 * markers), so 32 send WRs would cost a queue of 64 slots; 28 cost 32.  Each slot costs memory for
 * the connection's life (rxe: 512 bytes of send queue with our inline size), and few are needed:
 * a WR carries all the staged bytes the peer's ring has room for, so while the send queue is full
 * the staging ring coalesces what is written.  28 rather than 124: kernel memory per idle
 * connection end 160 -> 94 KiB on rxe with the receive queue below, set-up rate and streams no
 * worse (docs/performance.md).
 * Never below RS_SIGNAL_EVERY + RS_SQ_CTRL_RESERVE: a full queue must hold a signaled WR.  The
 * receive queue is deeper (its slots are 64 bytes on rxe; the CQ entries are shared): the
 * peer's retired WRs are not yet reposted receives here, and a peer of an older version sends
 * up to 124.
 */
#define RS_SQ_DEPTH		28
#define RS_RQ_DEPTH		60
#define RS_SQ_CTRL_RESERVE	4	/* SQ slots data may never take: CONSUMED, FIN, RESET */
/* A notified child's wait for the CM's ESTABLISHED before its disconnect (wr.c) */
#define RS_COMM_EST_SETTLE_WAIT	(2 * HZ)
void rs_comm_est(struct rs_sock *rs);
void rs_comm_est_settled(struct rs_sock *rs);
void rs_comm_est_settle(struct rs_sock *rs);
void rs_wr_init(struct rs_sock *rs);
void rs_cq_busy_poll(struct rs_sock *rs);
void rs_cq_poll_all(struct rs_sock *rs);
int rs_qp_create(struct rs_sock *rs, struct rdma_cm_id *id,
		 void (*send_done)(struct ib_cq *cq, struct ib_wc *wc),
		 void (*recv_done)(struct ib_cq *cq, struct ib_wc *wc));
void rs_qp_destroy(struct rs_sock *rs);
void rs_link_move(struct rs_sock *from, struct rs_sock *to);
int rs_post_reopen(struct rs_sock *rs, u32 code, struct rs_hello *hello, u32 len);
int __rs_post(struct rs_sock *rs, struct ib_send_wr *wr, bool signal, bool ctrl, u32 bytes);
int rs_fence_fire(struct rs_sock *rs);
int rs_post_reg_ring(struct rs_sock *rs, struct rs_ring *ring, bool remote);
int rs_post_ready(struct rs_sock *rs);
void rs_client_ready(struct rs_sock *rs);
int rs_post_fenced(struct rs_sock *rs, const struct ib_reg_wr *reg, const struct ib_send_wr *msg,
		   void (*posted)(struct rs_sock *rs));
int rs_send_ctrl(struct rs_sock *rs, u32 type, u32 arg, bool signaled);
int __rs_send_ctrl(struct rs_sock *rs, u32 type, u32 arg, bool signaled);
int rs_post_recvs(struct rs_sock *rs, u32 count);
void rs_ctrl_defer(struct rs_sock *rs, enum rs_flag due, int err);

/* Room in the send queue for one more WR (control messages may use the reserve); rs->lock held. */
static inline bool rs_sq_room(struct rs_sock *rs, bool ctrl)
{
	lockdep_assert_held(&rs->lock);
	return rs->sq_posted - rs->sq_done < RS_SQ_DEPTH - (ctrl ? 0 : RS_SQ_CTRL_RESERVE);
}

/*
 * A send completion takes what was left due for it (rs_ctrl_defer(), or a set_bit() under
 * rs->lock); the common case, nothing, is a load.
 */
static inline bool rs_due(struct rs_sock *rs, enum rs_flag due)
{
	return test_bit(due, &rs->flags) && test_and_clear_bit(due, &rs->flags);
}

/*
 * A post the provider refused: not a full queue (-ENOBUFS), a fence up (-EBUSY) or a teardown
 * (-EPIPE), which a later completion or the teardown takes care of.  The QP is going, and no
 * completion may come to retry it: the caller reports the path lost (rs_post_refused()).
 * The caller, not __rs_post(), because the callers differ in what a refusal means: a set-up post
 * fails the connect (a fallback, its outcome recorded once), a CONSUMED after the peer's FIN is
 * dropped (the peer's bytes stay readable to EOF), an orphan's probe ends the orphan, a RESET
 * leaves it to the disconnect.
 */
static inline bool rs_post_failed(int err)
{
	return err && err != -ENOBUFS && err != -EBUSY && err != -EPIPE;
}

#endif /* RDMASOCK_WR_H */
