// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock completion queue: one per connection, polled in softirq and by busy-polling readers.
 *
 * ib_alloc_cq()'s CQs can only be polled by the core's own context (an IB_POLL_SOFTIRQ CQ must
 * not be polled directly), so a reader that busy-polls would have to wait for the device's
 * completion event, its tasklet and the irq_poll softirq before it sees its data.  This CQ is
 * created with ib_create_cq() and our own event handler, which schedules our own irq_poll; the
 * busy-polling reader polls the same CQ itself.  rs->cq_lock makes the two take turns, so
 * completions are handled one at a time and in order, as the handlers in tx.c and rx.c assume.
 * Both run with bottom halves off, as under IB_POLL_SOFTIRQ.
 */
#include "rdmasock.h"

#define RS_CQ_BUDGET		64	/* completions per irq_poll turn */
#define RS_CQ_BATCH		8	/* completions per ib_poll_cq() call */

/* Handle up to @budget completions; rs->cq_lock held.  Returns how many there were. */
static int rs_cq_process(struct rs_sock *rs, int budget)
{
	struct ib_wc wc[RS_CQ_BATCH];
	int done = 0, n, i;

	lockdep_assert_held(&rs->cq_lock);
	while (done < budget) {
		n = ib_poll_cq(rs->cq, min(budget - done, RS_CQ_BATCH), wc);
		if (n <= 0)
			break;
		for (i = 0; i < n; i++)
			wc[i].wr_cqe->done(rs->cq, &wc[i]);
		done += n;
		if (n < RS_CQ_BATCH)
			break;
	}
	return done;
}

static int rs_cq_irq_poll(struct irq_poll *iop, int budget)
{
	struct rs_sock *rs = container_of(iop, struct rs_sock, cq_iop);
	int done;

	spin_lock(&rs->cq_lock);
	done = rs_cq_process(rs, budget);
	spin_unlock(&rs->cq_lock);
	if (done < budget) {
		irq_poll_complete(iop);
		/* Re-arm; a completion that came before the arming would be missed: poll again. */
		if (ib_req_notify_cq(rs->cq, IB_CQ_NEXT_COMP | IB_CQ_REPORT_MISSED_EVENTS) > 0)
			irq_poll_sched(iop);
	}
	return done;
}

/* The device's completion event, in any context (rxe calls it under its CQ lock, irqs off). */
static void rs_cq_event(struct ib_cq *cq, void *ctx)
{
	struct rs_sock *rs = ctx;

	irq_poll_sched(&rs->cq_iop);
}

int rs_cq_create(struct rs_sock *rs, struct ib_device *dev, u32 entries)
{
	struct ib_cq_init_attr attr = { .cqe = entries };
	struct ib_cq *cq;

	cq = ib_create_cq(dev, rs_cq_event, NULL, rs, &attr);
	if (IS_ERR(cq))
		return PTR_ERR(cq);
	irq_poll_init(&rs->cq_iop, RS_CQ_BUDGET, rs_cq_irq_poll);
	rs->cq = cq;
	ib_req_notify_cq(cq, IB_CQ_NEXT_COMP);
	return 0;
}

/*
 * After the QP is drained (its drain markers complete through irq_poll).  Teardown set RS_F_DYING
 * first, so no busy poller enters again; taking cq_lock waits out one that is inside.
 */
void rs_cq_destroy(struct rs_sock *rs)
{
	if (!rs->cq)
		return;
	spin_lock_bh(&rs->cq_lock);
	spin_unlock_bh(&rs->cq_lock);
	irq_poll_disable(&rs->cq_iop);
	ib_destroy_cq(rs->cq);
	rs->cq = NULL;
}

/*
 * The CM says the peer disconnected: handle every completion the CQ holds first, waiting for the
 * irq_poll if it is inside, so that a FIN that arrived before the disconnect is seen before we
 * decide between an orderly close and a reset.  CM handler (process context); teardown takes the
 * handler lock before it frees the CQ, so the CQ stays.  Bounded: a few times the CQ's size.
 */
void rs_cq_poll_all(struct rs_sock *rs)
{
	int rounds = 16;	/* 16 x RS_CQ_BUDGET: several times the CQ's size */

	spin_lock_bh(&rs->cq_lock);
	while (!test_bit(RS_F_DYING, &rs->flags) && rs->cq && rounds-- &&
	       rs_cq_process(rs, RS_CQ_BUDGET) == RS_CQ_BUDGET)
		;
	spin_unlock_bh(&rs->cq_lock);
}

/*
 * Busy poll: handle what the CQ holds now, from the reader's context.  Nothing to do when the
 * connection is being torn down (the CQ may be going away) or the softirq is polling it already.
 */
void rs_cq_busy_poll(struct rs_sock *rs)
{
	if (!spin_trylock_bh(&rs->cq_lock))
		return;
	if (!test_bit(RS_F_DYING, &rs->flags) && rs->cq)
		rs_cq_process(rs, RS_CQ_BATCH);
	spin_unlock_bh(&rs->cq_lock);
}
