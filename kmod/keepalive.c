// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock keepalive: SO_KEEPALIVE with TCP_KEEPIDLE/KEEPINTVL/KEEPCNT on an RDMA connection.
 *
 * An idle RC connection sends nothing, so a peer that died (host gone, cable cut) goes unnoticed
 * until we next write.  As TCP does, after TCP_KEEPIDLE without a sign of life we send a probe (a
 * signaled KEEPALIVE control message) every TCP_KEEPINTVL; TCP_KEEPCNT unanswered probes abort
 * the connection with ETIMEDOUT.  Any successful completion is a sign of life: the RC transport
 * only completes a send once the peer's HCA acknowledged it.  If the peer stops answering, the
 * probe's own RC retries may also run out first (IB_WC_RETRY_EXC_ERR), which aborts the same way.
 *
 * The same work is TCP's persist timer: a writer blocked on a full ring whose bytes were all
 * acknowledged has nothing in flight, so a peer that died would never be noticed.  While the
 * window stays shut (from a writer finding it full until the peer moves it), a probe goes out
 * every RS_PERSIST_TIME of silence, with or without SO_KEEPALIVE; if the peer is gone its RC
 * retries run out and the writer gets ETIMEDOUT, as TCP's zero-window probes end in ETIMEDOUT
 * (only sooner).
 *
 * The work runs on rs_wq without a socket reference: it is armed only while the RDMA resources
 * exist and not dying (checked under rs->lock, where teardown sets DYING), and teardown cancels
 * it synchronously before anything is freed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <net/tcp.h>
#include "rdmasock.h"
#include "core.h"
#include "keepalive.h"
#include "stats.h"
#include "wr.h"

#define RS_PERSIST_TIME		HZ

static unsigned long rs_ka_time(struct rs_sock *rs)
{
	return READ_ONCE(rs->ka_time) ? :
	       READ_ONCE(sock_net(&rs->sk)->ipv4.sysctl_tcp_keepalive_time);
}

static unsigned long rs_ka_intvl(struct rs_sock *rs)
{
	return READ_ONCE(rs->ka_intvl) ? :
	       READ_ONCE(sock_net(&rs->sk)->ipv4.sysctl_tcp_keepalive_intvl);
}

static unsigned int rs_ka_probes(struct rs_sock *rs)
{
	return READ_ONCE(rs->ka_probes) ? :
	       READ_ONCE(sock_net(&rs->sk)->ipv4.sysctl_tcp_keepalive_probes);
}

/* Caller holds rs->lock. */
static bool rs_keepalive_wanted(struct rs_sock *rs)
{
	return (sock_flag(&rs->sk, SOCK_KEEPOPEN) || test_bit(RS_F_TX_BLOCKED, &rs->flags)) &&
	       READ_ONCE(rs->mode) == RDMASOCK_MODE_RDMA && test_bit(RS_F_RDMA_UP, &rs->flags) &&
	       !test_bit(RS_F_DYING, &rs->flags) && !test_bit(RS_F_ABORTED, &rs->flags) &&
	       !test_bit(RS_F_DISCONNECTED, &rs->flags);	/* known gone: nothing to probe */
}

static void rs_keepalive_arm(struct rs_sock *rs, unsigned long delay)
{
	spin_lock_bh(&rs->lock);
	if (rs_keepalive_wanted(rs))
		mod_delayed_work(rs_wq, &rs->keepalive_work, delay);
	spin_unlock_bh(&rs->lock);
}

static void rs_keepalive_work(struct work_struct *work)
{
	struct rs_sock *rs = container_of(to_delayed_work(work), struct rs_sock, keepalive_work);
	unsigned long idle = jiffies - READ_ONCE(rs->ka_last);
	bool persist = test_bit(RS_F_TX_BLOCKED, &rs->flags);
	unsigned long wait;
	int err;

	if (!persist && !sock_flag(&rs->sk, SOCK_KEEPOPEN))
		return;
	/* Anything completed since the last probe went out answers it. */
	if (READ_ONCE(rs->ka_seen) != rs->ka_seen_at_probe)
		rs->ka_unanswered = 0;
	wait = persist ? RS_PERSIST_TIME : rs_ka_time(rs);
	if (!rs->ka_unanswered && idle < wait) {
		rs_keepalive_arm(rs, wait - idle);
		return;
	}
	/* A blocked writer relies on the probe's RC retries alone, as TCP's persist timer does. */
	if (!persist && rs->ka_unanswered >= rs_ka_probes(rs)) {
		rs_count(sock_net(&rs->sk), RS_CNT_KEEPALIVE_TIMEOUT);
		/* The peer is unreachable over RDMA: perhaps over TCP still (resume.c). */
		if (!rs_path_lost(rs, -ETIMEDOUT))
			rs_abort(rs, -ETIMEDOUT);
		return;
	}
	if (rs->ka_unanswered < U8_MAX)
		rs->ka_unanswered++;
	rs->ka_seen_at_probe = READ_ONCE(rs->ka_seen);
	/* A full send queue is itself a probe in flight: its completions will say. */
	err = rs_send_ctrl(rs, RS_IMM_CTRL, RS_CTRL_KEEPALIVE, true);
	if (!err) {
		rs_count(sock_net(&rs->sk), RS_CNT_KEEPALIVE_PROBE);
	} else if (rs_post_failed(err)) {
		rs_post_refused(rs);	/* the QP is going: no probe can ask any more */
		return;
	}
	rs_keepalive_arm(rs, persist ? RS_PERSIST_TIME : rs_ka_intvl(rs));
}

void rs_keepalive_init(struct rs_sock *rs)
{
	INIT_DELAYED_WORK(&rs->keepalive_work, rs_keepalive_work);
}

/*
 * (Re)start the timer: on establishment, when SO_KEEPALIVE is set, when TCP_KEEPIDLE changes.
 * The work itself works out how long the connection has been idle.
 */
void rs_keepalive_update(struct rs_sock *rs)
{
	if (!READ_ONCE(rs->ka_last))
		WRITE_ONCE(rs->ka_last, jiffies);
	rs_keepalive_arm(rs, 0);
}

/*
 * A writer found the window shut: make sure a probe follows RS_PERSIST_TIME of silence.
 * Called on every such wait, so it only ever brings a pending run forward.
 */
void rs_keepalive_persist(struct rs_sock *rs)
{
	struct delayed_work *dw = &rs->keepalive_work;

	spin_lock_bh(&rs->lock);
	set_bit(RS_F_TX_BLOCKED, &rs->flags);
	if (rs_keepalive_wanted(rs) && (!delayed_work_pending(dw) ||
					time_after(dw->timer.expires, jiffies + RS_PERSIST_TIME)))
		mod_delayed_work(rs_wq, dw, RS_PERSIST_TIME);
	spin_unlock_bh(&rs->lock);
}

/* Teardown: RS_F_DYING is set, so nothing re-arms it once this returns. */
void rs_keepalive_stop(struct rs_sock *rs)
{
	cancel_delayed_work_sync(&rs->keepalive_work);
}

/* TCP-level values the user set (0 keeps the netns default), copied from the TCP socket. */
void rs_keepalive_params(struct rs_sock *rs, const struct tcp_sock *tp)
{
	WRITE_ONCE(rs->ka_time, READ_ONCE(tp->keepalive_time));
	WRITE_ONCE(rs->ka_intvl, READ_ONCE(tp->keepalive_intvl));
	WRITE_ONCE(rs->ka_probes, READ_ONCE(tp->keepalive_probes));
}

/* SO_KEEPALIVE changed (SOCK_KEEPOPEN is set already): start or stop the probes. */
void rs_keepalive_set(struct rs_sock *rs, bool on)
{
	if (on)
		rs_keepalive_update(rs);
	else
		cancel_delayed_work(&rs->keepalive_work);
}
