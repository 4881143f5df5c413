/* SPDX-License-Identifier: GPL-2.0 */
/* rdmasock core.c: what every layer may use, and the upward signals (docs/design.md, "Layers"). */
#ifndef RDMASOCK_CORE_H
#define RDMASOCK_CORE_H

#include "rdmasock.h"

extern unsigned int rs_connect_timeout_ms;
extern struct workqueue_struct *rs_wq;
extern struct workqueue_struct *rs_resume_wq;
extern unsigned int rs_resume_port;
extern unsigned int rs_resume_timeout_ms;
extern bool rs_resume_on;

void rs_wake(struct sock *sk, __poll_t mask);
void rs_abort(struct rs_sock *rs, int err);
bool __rs_path_lost(struct rs_sock *rs, int err, bool asked);

static inline bool rs_path_lost(struct rs_sock *rs, int err)
{
	return __rs_path_lost(rs, err, false);
}

/*
 * The QP refused a post (not for a full queue): the path is gone.  It resumes where it may, as
 * any other lost path (some providers refuse posts once the device failed); else a reset.
 */
static inline void rs_post_refused(struct rs_sock *rs)
{
	if (!rs_path_lost(rs, -ECONNRESET))
		rs_abort(rs, -ECONNRESET);
}

/*
 * park.c's park_work: a parked QP's OPEN came (rx.c), or its connection went (the CM's disconnect,
 * an abort): park.c takes the OPEN, or frees the parked socket, now rather than at park_ms.
 */
static inline void rs_park_signal(struct rs_sock *rs)
{
	sock_hold(&rs->sk);
	if (!queue_work(rs_wq, &rs->park_work))
		sock_put(&rs->sk);
}

void rs_connect_work_arm(struct rs_sock *rs, unsigned long delay);
void rs_connect_done(struct rs_sock *rs, int result, int reason);
int __rs_connect_record(struct rs_sock *rs, int result, int reason);
int rs_connect_record(struct rs_sock *rs, int result, int reason);
bool rs_child_rtu(struct rs_sock *child);
bool rs_peer_ready(struct rs_sock *rs);
bool rs_child_unqueue(struct rs_sock *child);
u32 rs_rx_avail(struct rs_sock *rs);
int rs_name_copy(struct rs_sock *rs, struct sockaddr *addr, const struct sockaddr *src);

#endif /* RDMASOCK_CORE_H */
