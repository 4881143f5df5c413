// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock growing rings.  A connection starts with RS_RING_START bytes of ring each way, so an
 * idle connection end pins 2 x 16 KiB instead of 2 x SO_RCVBUF.  Once the peer's bytes fill half
 * of it, the receiver offers the ring SO_RCVBUF asks for, in one step: a writer that writes a
 * large message before its peer reads so buffers as much as over TCP before it blocks.
 *
 *   receiver                                  sender
 *   work (queued when data fills half rx):
 *            allocate rx_next, REG_MR,
 *            SEND RESIZE(addr, rkey, size) -> softirq: note the offer, wake the writer
 *                                            sendmsg: if SO_SNDBUF allows a larger staging ring,
 *                                              allocate and REG_MR it (fenced), SEND SWITCH
 *                                              (signaled), copy the staged bytes not yet posted,
 *                                              tx_lbase = tx_prod; else SEND SWITCH alone.
 *                                              tx_base = tx_prod; WRITEs go to the new ring at
 *                                              (pos - tx_base) % size from now on
 *   softirq: rx_switch = rx_prod  <-------- SWITCH
 *   recvmsg: once rx_cons reaches rx_switch,
 *            free rx: rx = rx_next,          sendmsg: free the old staging ring once SWITCH
 *            rx_base = rx_switch               completed (so did every WRITE from it)
 *
 * RC delivers in order, so rx_prod when SWITCH arrives is the sender's tx_prod when it posted it:
 * which ring holds a byte follows from its stream position alone, on both sides.  One offer is
 * outstanding at a time, so RESIZE's payload has a single receive buffer that every receive WR
 * points at (the other messages carry no payload); a peer that sends a second RESIZE before our
 * SWITCH breaks the protocol and is reset, whatever it made us read.
 *
 * The staging ring is ours, the peer's ring the peer's: the staging ring is as large as the peer's
 * ring unless SO_SNDBUF asks for less (rs_tx_ring_target), so a peer that offers 4 MiB cannot make
 * us pin more than our own SO_SNDBUF.  Two bases: tx_base is the stream position of the peer
 * ring's offset 0, tx_lbase that of the staging ring's; a WRITE ends where either ring wraps.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/slab.h>
#include "rdmasock.h"
#include "core.h"
#include "grow.h"
#include "ring.h"
#include "stats.h"
#include "wr.h"

static bool rs_grow = true;
module_param_named(grow_rings, rs_grow, bool, 0644);
MODULE_PARM_DESC(grow_rings,
		 "start connections with 16 KiB rings and grow them under load (off: SO_RCVBUF at once)");

/* The ring SO_RCVBUF asks for, within what the protocol and the device allow. */
u32 rs_ring_target(struct rs_sock *rs, struct ib_device *dev)
{
	u32 max = min_t(u64, RS_RING_MAX, (u64)dev->attrs.max_fast_reg_page_list_len * PAGE_SIZE);
	u32 want = PAGE_ALIGN(READ_ONCE(rs->sk.sk_rcvbuf));

	return clamp_t(u32, want, RS_RING_MIN, max ? max : RS_RING_MIN);
}

/*
 * The staging ring for a peer ring of @peer_size: as large, unless SO_SNDBUF asks for less (as TCP
 * bounds its send queue).  Never below 16 KiB, so a WRITE can always fill a quarter ring's credit.
 */
u32 rs_tx_ring_target(struct rs_sock *rs, struct ib_device *dev, u32 peer_size)
{
	u32 max = min_t(u64, RS_RING_MAX, (u64)dev->attrs.max_fast_reg_page_list_len * PAGE_SIZE);
	u32 want = PAGE_ALIGN(READ_ONCE(rs->sk.sk_sndbuf));

	want = clamp_t(u32, want, RS_RING_MIN, max ? max : RS_RING_MIN);
	return min(want, peer_size);
}

/* The ring a new connection offers in its hello. */
u32 rs_ring_start(struct rs_sock *rs, struct ib_device *dev)
{
	u32 target = rs_ring_target(rs, dev);

	return READ_ONCE(rs_grow) ? min_t(u32, target, RS_RING_START) : target;
}

int rs_resize_buf_alloc(struct rs_sock *rs)
{
	struct ib_device *dev = rs->pd->device;

	if (rs_should_fail("resize_buf"))
		return -ENOMEM;

	rs->resize_buf = kzalloc(RS_CTRL_PAYLOAD_MAX, GFP_KERNEL);
	if (!rs->resize_buf)
		return -ENOMEM;
	rs->resize_dma = ib_dma_map_single(dev, rs->resize_buf, RS_CTRL_PAYLOAD_MAX,
					   DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(dev, rs->resize_dma)) {
		kfree(rs->resize_buf);
		rs->resize_buf = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Teardown, once the QP is gone: nothing can land in these any more. */
void rs_grow_free(struct rs_sock *rs)
{
	rs_ring_release(rs, &rs->rx_next);
	rs_ring_release(rs, &rs->tx_old);
	rs_ring_release(rs, &rs->tx_next);
	if (rs->resize_buf) {
		ib_dma_unmap_single(rs->pd->device, rs->resize_dma, RS_CTRL_PAYLOAD_MAX,
				    DMA_FROM_DEVICE);
		kfree(rs->resize_buf);
		rs->resize_buf = NULL;
	}
	clear_bit(RS_F_RX_GROWING, &rs->flags);
	clear_bit(RS_F_RX_SWITCHED, &rs->flags);
	clear_bit(RS_F_TX_RESIZE, &rs->flags);
}

/* ---- receiver ---- */

/*
 * Register @next and offer it.  RESIZE's payload is sent from the first bytes of @next itself:
 * the peer writes nothing there before it has received RESIZE and answered SWITCH.
 */
static int rs_post_resize(struct rs_sock *rs, struct rs_ring *next)
{
	struct rs_resize *msg = next->buf;
	struct ib_send_wr wr = {};
	struct ib_reg_wr reg;
	struct ib_sge sge;
	int err;

	msg->ring_addr = cpu_to_be64(next->mr->iova);
	msg->ring_rkey = cpu_to_be32(next->mr->rkey);
	msg->ring_size = cpu_to_be32(next->size);
	rs_ring_sync(next, 0, sizeof(*msg), false);
	sge.addr = next->mr->iova;
	sge.length = sizeof(*msg);
	sge.lkey = next->mr->lkey;
	wr.opcode = IB_WR_SEND_WITH_IMM;
	wr.ex.imm_data = cpu_to_be32(rs_imm(RS_IMM_CTRL, RS_CTRL_RESIZE));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	rs_ring_reg_wr(next, &reg, IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE);

	spin_lock_bh(&rs->lock);
	/* Before it can be posted: a SWITCH may follow RESIZE at once. */
	rs->rx_next = *next;
	set_bit(RS_F_RX_GROWING, &rs->flags);
	err = rs_post_fenced(rs, &reg, &wr, NULL);
	if (err == -ENOBUFS || err == -EBUSY) {
		memset(&rs->rx_next, 0, sizeof(rs->rx_next));
		clear_bit(RS_F_RX_GROWING, &rs->flags);
		rs_ctrl_defer(rs, RS_F_GROW_DUE, err);	/* under the lock the completion takes */
	}
	spin_unlock_bh(&rs->lock);
	return err;
}

/*
 * Can a RESIZE be posted now?  If not (another fence is up, or the send queue is full), the send
 * completion that ends it tries again (RS_F_GROW_DUE): a full queue holds a signaled WR, a fence a
 * signaled KEEPALIVE.  Asked before the ring is allocated, so a queue that stays full costs no
 * allocation per completion.
 */
static bool rs_rx_grow_can_post(struct rs_sock *rs)
{
	bool fence, room;

	spin_lock_bh(&rs->lock);
	fence = test_bit(RS_F_SQ_FENCE, &rs->flags);
	room = rs_sq_room(rs, true);
	if (fence || !room)
		rs_ctrl_defer(rs, RS_F_GROW_DUE, fence ? -EBUSY : -ENOBUFS);
	spin_unlock_bh(&rs->lock);
	return !fence && room;
}

/*
 * The peer's @queued bytes fill half the ring or more, and it may grow: RESIZE would help.  Not
 * while a send completion is due to try again (RS_F_GROW_DUE, which only rs_ctrl_defer() sets, for
 * a queue a completion will come to): it clears the flag first.  Not once the path is lost.
 */
static bool rs_rx_wants_grow(struct rs_sock *rs, u32 queued)
{
	if (!READ_ONCE(rs_grow) || !test_bit(RS_F_PEER_GROWS, &rs->flags) ||
	    !test_bit(RS_F_CM_EST, &rs->flags) || test_bit(RS_F_RX_GROWING, &rs->flags) ||
	    test_bit(RS_F_GROW_DUE, &rs->flags) || test_bit(RS_F_RESUMING, &rs->flags) ||
	    test_bit(RS_F_ABORTED, &rs->flags) || test_bit(RS_F_PEER_FIN, &rs->flags) ||
	    test_bit(RS_F_DYING, &rs->flags) || !rs->pd)
		return false;
	return queued >= rs->rx.size / 2 && rs->rx.size < rs_ring_target(rs, rs->pd->device);
}

/*
 * lock_sock held: offer the next ring size.  The peer's bytes filled half the ring when the work
 * was queued; a reader that drained them while the work waited for lock_sock does not undo that
 * (a reader that keeps up would leave the ring at 16 KiB, and its writer's stream with it).
 */
static void rs_rx_grow(struct rs_sock *rs)
{
	struct rs_ring next;
	int err;

	sock_owned_by_me(&rs->sk);
	/* Queued before close(): an orphan must finish, not grow (nor a parked QP, park.c). */
	if (sock_flag(&rs->sk, SOCK_DEAD) || !rs_rx_wants_grow(rs, rs->rx.size) ||
	    !rs_rx_grow_can_post(rs))
		return;
	if (rs_ring_alloc(&next, rs->pd, rs_ring_target(rs, rs->pd->device), &rs->sk))
		return;		/* no memory now: the next arrival tries again */
	err = rs_post_resize(rs, &next);
	if (err == -ENOBUFS || err == -EBUSY) {
		/* Nothing posted: the next send completion tries again (rs_post_resize). */
		rs_ring_release(rs, &next);
	} else if (rs_post_failed(err)) {
		rs_post_refused(rs);
	}
}

/*
 * The ring is allocated in process context.  The work holds a socket reference and takes
 * lock_sock, which orders it against the reader's ring swap and against teardown (after which
 * rs->pd is gone and it does nothing).
 */
static void rs_grow_work(struct work_struct *work)
{
	struct rs_sock *rs = container_of(work, struct rs_sock, grow_work);

	lock_sock(&rs->sk);
	rs_rx_grow(rs);
	release_sock(&rs->sk);
	sock_put(&rs->sk);
}

void rs_grow_init(struct rs_sock *rs)
{
	INIT_WORK(&rs->grow_work, rs_grow_work);
}

/*
 * softirq, after data arrived (@queued: unread bytes, counted under rs->lock by the caller, so
 * the data path takes the lock once): grow when the peer's bytes fill half the ring.  Not only when
 * someone reads: a writer that fills the ring before the reader reads (both ends writing a large
 * message first, as TCP's buffers allow) needs the ring SO_RCVBUF promised, or the two deadlock.
 * Also a send completion, for a RESIZE the fence or a full send queue held back (RS_F_GROW_DUE),
 * with @queued the ring's size: the fill decided it then, and if both rings are full nothing
 * arrives any more to decide it again.
 */
void rs_rx_grow_soon(struct rs_sock *rs, u32 queued)
{
	/* Not for a closed socket: nobody reads, and an orphan must finish, not post more. */
	if (sock_flag(&rs->sk, SOCK_DEAD) || !rs_rx_wants_grow(rs, queued))
		return;
	sock_hold(&rs->sk);
	if (!queue_work(rs_wq, &rs->grow_work))
		sock_put(&rs->sk);
}

/*
 * The ring the peer writes into now (the old one may still hold bytes to read), for reports: it
 * matches the size the peer reports for its staging ring.  rs->lock held.
 */
u32 rs_rx_ring_size(struct rs_sock *rs)
{
	lockdep_assert_held(&rs->lock);
	return test_bit(RS_F_RX_SWITCHED, &rs->flags) ? rs->rx_next.size : rs->rx.size;
}

/* softirq: SWITCH.  The peer's bytes from rx_prod on land in rx_next. */
int rs_rx_switch(struct rs_sock *rs)
{
	int err = 0;

	spin_lock(&rs->lock);
	if (!test_bit(RS_F_RX_GROWING, &rs->flags) || test_bit(RS_F_RX_SWITCHED, &rs->flags)) {
		err = -EPROTO;
	} else {
		rs->rx_switch = rs->rx_prod;
		set_bit(RS_F_RX_SWITCHED, &rs->flags);
	}
	spin_unlock(&rs->lock);
	return err;
}

/* recvmsg, lock_sock held: the reader consumed the old ring to its last byte, so it goes. */
void rs_rx_switch_done(struct rs_sock *rs)
{
	struct rs_ring old;

	sock_owned_by_me(&rs->sk);
	spin_lock_bh(&rs->lock);
	if (!test_bit(RS_F_RX_SWITCHED, &rs->flags) || rs->rx_cons < rs->rx_switch ||
	    test_bit(RS_F_ABORTED, &rs->flags)) {
		spin_unlock_bh(&rs->lock);
		return;
	}
	old = rs->rx;
	rs->rx = rs->rx_next;
	memset(&rs->rx_next, 0, sizeof(rs->rx_next));
	rs->rx_base = rs->rx_switch;
	clear_bit(RS_F_RX_SWITCHED, &rs->flags);
	clear_bit(RS_F_RX_GROWING, &rs->flags);
	spin_unlock_bh(&rs->lock);
	rs_ring_release(rs, &old);
}

/* ---- sender ---- */

/* softirq: RESIZE, whose payload is in resize_buf.  Checked, noted; the writer switches. */
int rs_rx_resize(struct rs_sock *rs, u32 byte_len)
{
	struct ib_device *dev = rs->pd->device;
	struct rs_resize r;
	u32 size;
	int err = 0;

	/* An offer answers our data, which follows both READYs (a reused QP's OPEN, ACCEPT). */
	if (byte_len != sizeof(r) || !test_bit(RS_F_READY_SENT, &rs->flags) ||
	    !test_bit(RS_F_PEER_READY, &rs->flags))
		return -EPROTO;
	ib_dma_sync_single_for_cpu(dev, rs->resize_dma, sizeof(r), DMA_FROM_DEVICE);
	memcpy(&r, rs->resize_buf, sizeof(r));
	ib_dma_sync_single_for_device(dev, rs->resize_dma, sizeof(r), DMA_FROM_DEVICE);
	size = be32_to_cpu(r.ring_size);

	spin_lock(&rs->lock);
	/* Only ever larger: the bytes staged for the old ring must fit in the new one. */
	if (test_bit(RS_F_TX_RESIZE, &rs->flags) || !rs->tx.mr || size <= rs->peer_ring_size ||
	    !rs_ring_size_ok(size) || size % PAGE_SIZE) {
		err = -EPROTO;
	} else {
		rs->peer_next_addr = be64_to_cpu(r.ring_addr);
		rs->peer_next_rkey = be32_to_cpu(r.ring_rkey);
		rs->peer_next_size = size;
		set_bit(RS_F_TX_RESIZE, &rs->flags);
	}
	spin_unlock(&rs->lock);
	if (!err)
		rs->sk.sk_write_space(&rs->sk);	/* a writer waiting for space switches now */
	return err;
}

/*
 * The previous switch's staging ring, until SWITCH (and so every WRITE from it) completed and the
 * peer consumed its last byte: until then a lost path replays from it (resume.c).
 */
static bool rs_tx_old_busy(struct rs_sock *rs)
{
	return rs->tx_old.mr && ((s32)(READ_ONCE(rs->sq_done) - rs->tx_old_seq) <= 0 ||
				 READ_ONCE(rs->tx_acked) < rs->tx_lbase);
}

/*
 * A RESIZE waits and the switch can be made now: the writer's wait condition, a hint.  Not while
 * a staging ring whose REG_MR or SWITCH the provider refused is still held for the teardown that
 * refusal queued (a second switch would overwrite it, and its MR would keep the PD for ever), nor
 * once the path is lost.
 */
bool rs_tx_switch_ready(struct rs_sock *rs)
{
	return test_bit(RS_F_TX_RESIZE, &rs->flags) && !test_bit(RS_F_SQ_FENCE, &rs->flags) &&
	       !test_bit(RS_F_RESUMING, &rs->flags) && !READ_ONCE(rs->tx_next.mr) &&
	       !rs_tx_old_busy(rs);
}

/* Move the bytes staged for the old ring, not posted yet, to the start of the new one. */
static void rs_tx_move_staged(struct rs_sock *rs, struct rs_ring *to)
{
	u32 held = rs->tx_staged - rs->tx_prod;
	u32 off = (rs->tx_prod - rs->tx_lbase) % rs->tx.size;
	u32 first = min(held, rs->tx.size - off);

	memcpy(to->buf, rs->tx.buf + off, first);
	memcpy(to->buf + first, rs->tx.buf, held - first);
}

/* SWITCH is posted, rs->lock held: from here on WRITEs go to the peer's new ring. */
static void rs_tx_switched_remote(struct rs_sock *rs)
{
	lockdep_assert_held(&rs->lock);
	rs->tx_base = rs->tx_prod;
	rs->peer_ring_addr = rs->peer_next_addr;
	rs->peer_rkey = rs->peer_next_rkey;
	rs->peer_ring_size = rs->peer_next_size;
	clear_bit(RS_F_TX_RESIZE, &rs->flags);
}

/*
 * SWITCH is posted behind the new staging ring's REG_MR (rs->lock held, the fence's completion or
 * the writer): the staged bytes not posted yet move to the new staging ring's start.  Nothing
 * stages meanwhile: rs_tx_space() is 0 while the fence is up.
 */
static void rs_tx_switched(struct rs_sock *rs)
{
	lockdep_assert_held(&rs->lock);
	rs_tx_move_staged(rs, &rs->tx_next);
	rs->tx_old = rs->tx;
	rs->tx_old_seq = rs->sq_posted - 1;
	rs->tx_old_lbase = rs->tx_lbase;
	rs->tx = rs->tx_next;
	memset(&rs->tx_next, 0, sizeof(rs->tx_next));
	rs->tx_lbase = rs->tx_prod;
	rs_tx_switched_remote(rs);
}

/*
 * Our staging ring is as large as SO_SNDBUF lets it be already: SWITCH alone, no new ring, no
 * REG_MR and so no fence.  The staged bytes stay where they are and go to the new ring.
 */
static void rs_tx_switch_remote(struct rs_sock *rs)
{
	int err = -EBUSY;

	spin_lock_bh(&rs->lock);
	if (rs_tx_switch_ready(rs) && !rs->tx_old.mr) {
		err = __rs_send_ctrl(rs, RS_IMM_CTRL, RS_CTRL_SWITCH, false);
		if (!err)
			rs_tx_switched_remote(rs);
	}
	if (err == -ENOBUFS || err == -EBUSY)
		rs_ctrl_defer(rs, RS_F_SWITCH_WAIT, err);
	spin_unlock_bh(&rs->lock);
	if (rs_post_failed(err))
		rs_post_refused(rs);
}

/*
 * sendmsg, lock_sock held: take the peer's larger ring, and a larger staging ring if SO_SNDBUF
 * allows one (else we keep ours and the window stays its size).  The staging rings change hands
 * under rs->lock only (a fence's completion swaps them in softirq): the new one is allocated
 * aside and checked in with the fenced post.
 */
void rs_tx_switch(struct rs_sock *rs)
{
	struct rs_ring ring, old = {};
	struct ib_send_wr sw = {};
	struct ib_reg_wr reg;
	bool ready;
	u32 size;
	int err;

	sock_owned_by_me(&rs->sk);
	/* The common case, nothing to do, takes no lock (a missed hint waits for the next call). */
	if (!READ_ONCE(rs->tx_old.mr) && !test_bit(RS_F_TX_RESIZE, &rs->flags))
		return;
	spin_lock_bh(&rs->lock);
	if (rs->tx_old.mr && !rs_tx_old_busy(rs)) {
		old = rs->tx_old;
		memset(&rs->tx_old, 0, sizeof(rs->tx_old));
	}
	ready = rs_tx_switch_ready(rs) && !rs->tx_old.mr && rs->tx.mr;
	size = rs->peer_next_size;
	spin_unlock_bh(&rs->lock);
	rs_ring_release(rs, &old);
	if (!ready)
		return;
	/* Our staging ring: as large as the peer's new one, unless SO_SNDBUF says less. */
	size = rs_tx_ring_target(rs, rs->pd->device, size);
	if (size <= rs->tx.size) {
		rs_tx_switch_remote(rs);
		return;
	}
	if (rs_ring_alloc(&ring, rs->pd, size, &rs->sk)) {
		/* No memory (or budget) for a larger staging ring: the peer's ring, with ours. */
		rs_tx_switch_remote(rs);
		return;
	}
	rs_ring_reg_wr(&ring, &reg, IB_ACCESS_LOCAL_WRITE);
	sw.opcode = IB_WR_SEND_WITH_IMM;
	sw.send_flags = IB_SEND_SIGNALED;	/* its completion frees the old staging ring */
	sw.ex.imm_data = cpu_to_be32(rs_imm(RS_IMM_CTRL, RS_CTRL_SWITCH));

	spin_lock_bh(&rs->lock);
	err = -EBUSY;
	if (rs_tx_switch_ready(rs) && !rs->tx_old.mr) {
		rs->tx_next = ring;
		err = rs_post_fenced(rs, &reg, &sw, rs_tx_switched);
		if (err == -ENOBUFS || err == -EBUSY)
			memset(&rs->tx_next, 0, sizeof(rs->tx_next));
	}
	if (err == -ENOBUFS || err == -EBUSY)
		rs_ctrl_defer(rs, RS_F_SWITCH_WAIT, err);
	spin_unlock_bh(&rs->lock);
	if (err == -ENOBUFS || err == -EBUSY)
		rs_ring_release(rs, &ring);	/* nothing posted: the next write tries again */
	else if (rs_post_failed(err))
		rs_post_refused(rs);	/* (teardown frees the ring) */
}
