/* SPDX-License-Identifier: GPL-2.0 */
/* rdmasock stats.c: counters and tracepoints. */
#ifndef RDMASOCK_STATS_H
#define RDMASOCK_STATS_H

#include "rdmasock.h"

enum rs_counter {
	RS_CNT_SOCKETS,
	RS_CNT_CONN_RDMA,
	RS_CNT_CONN_TCP,
	RS_CNT_FALLBACK,	/* + reason: RS_CNT_FALLBACK + RDMASOCK_REASON_* */
	RS_CNT_BYTES_SENT = RS_CNT_FALLBACK + RDMASOCK_REASON_MAX,
	RS_CNT_BYTES_RECEIVED,
	RS_CNT_WR_POSTED,
	RS_CNT_COMPLETIONS,
	RS_CNT_PROTO_ERR,
	RS_CNT_QP_FATAL,
	RS_CNT_DEV_REMOVAL,
	RS_CNT_KEEPALIVE_PROBE,
	RS_CNT_KEEPALIVE_TIMEOUT,
	RS_CNT_RDMA_PORT_TAKEN,
	RS_CNT_CTRL_DEFERRED,	/* a control message found the SQ full: a completion sends it */
	RS_CNT_ORPHAN_DROPPED,	/* a close beyond max_orphans reset its connection */
	RS_CNT_ORPHAN_TIMEOUT,	/* an orphan's peer took nothing for TCP_USER_TIMEOUT: reset */
	RS_CNT_DOOR_TO_TCP,	/* the door: TCP gives the request's port to no rdmasock listener */
	RS_CNT_CGROUP_SOCKET,	/* a TCP socket() made an rdmasock one by the cgroup switch */
	RS_CNT_RESUMED,		/* connections that lost their RDMA path and resumed over TCP */
	RS_CNT_RESUME_BYTES,	/* bytes replayed over TCP after a resume */
	RS_CNT_RESUME_FAILED,	/* connections that lost their path and could not resume: */
	RS_CNT_RESUME_TIMEOUT,	/*   resume_timeout_ms passed (the peer is gone) */
	RS_CNT_RESUME_REFUSED,	/*   the peer had no such connection, or the positions were wrong */
	RS_CNT_RESUME_REJ_AUTH,	/* server: a resume attempt whose proof was wrong */
	RS_CNT_RESUME_REJ_UNKNOWN,	/* server: an attempt for no connection we have */
	RS_CNT_RESUME_REJ_MALFORMED,	/* server: an attempt that broke the handshake's format */
	RS_CNT_RESUME_REJ_BUSY,	/* server: turned away, resume_max_pending in progress */
	RS_CNT_RESUME_NO_PORT,	/* the resume port could not be had: no resume in this netns */
	RS_CNT_REUSED,		/* connections set up on a parked QP (OPEN sent, or ACCEPT) */
	RS_CNT_WC_ERR,		/* + ib_wc_status: RS_CNT_WC_ERR + status */
	RS_CNT_MAX = RS_CNT_WC_ERR + IB_WC_GENERAL_ERR + 1
};

void rs_count_add(struct net *net, enum rs_counter c, u64 n);
static inline void rs_count(struct net *net, enum rs_counter c)
{
	rs_count_add(net, c, 1);
}

void rs_count_fallback(struct net *net, int reason);
void rs_count_dev_removal(struct net *net, unsigned int removal);
void rs_count_wc_error(struct net *net, enum ib_wc_status status);
u64 rs_count_read(struct net *net, unsigned int c);
void rs_count_reset(struct net *net);
int rs_stats_init(void);

/*
 * Fault points (selftests/fault_test.c): the step named by the fail_point parameter fails as
 * debugfs's fail_rdmasock/ says (Documentation/fault-injection/: probability, space, times).
 * Only with CONFIG_FAULT_INJECTION_DEBUG_FS (the debug kernel); elsewhere never.
 */
#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
bool rs_should_fail(const char *point);
#else
static inline bool rs_should_fail(const char *point)
{
	return false;
}
#endif
void rs_stats_exit(void);

#endif /* RDMASOCK_STATS_H */
