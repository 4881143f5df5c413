/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmasock tracepoints (events/rdmasock/ in tracefs; `perf trace -e 'rdmasock:*'`): one event per
 * step of a connection's life, each with the socket's state, carrier, fallback reason and QPs.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM rdmasock

#if !defined(RDMASOCK_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define RDMASOCK_TRACE_H

#include <linux/tracepoint.h>
#include "rdmasock.h"

DECLARE_EVENT_CLASS(rdmasock_sock,
		    TP_PROTO(struct rs_sock *rs),
		    TP_ARGS(rs),
		    TP_STRUCT__entry(__field(const void *, sk)
				     __field(int, state)
				     __field(int, mode)
				     __field(int, reason)
				     __field(int, err)
				     __field(u32, lqpn)
				     __field(u32, rqpn)),
		    TP_fast_assign(__entry->sk = rs;
				   __entry->state = READ_ONCE(rs->sk.sk_state);
				   __entry->mode = READ_ONCE(rs->mode);
				   __entry->reason = READ_ONCE(rs->reason);
				   __entry->err = READ_ONCE(rs->sk.sk_err);
				   __entry->lqpn = READ_ONCE(rs->local_qpn);
				   __entry->rqpn = rs->remote_qpn;),
		    TP_printk("sk=%p state=%d mode=%d reason=%d err=%d lqpn=%u rqpn=%u",
			      __entry->sk, __entry->state, __entry->mode, __entry->reason,
			      __entry->err, __entry->lqpn, __entry->rqpn));

DEFINE_EVENT(rdmasock_sock, rdmasock_connect, TP_PROTO(struct rs_sock *rs), TP_ARGS(rs));
DEFINE_EVENT(rdmasock_sock, rdmasock_established, TP_PROTO(struct rs_sock *rs), TP_ARGS(rs));
DEFINE_EVENT(rdmasock_sock, rdmasock_accept, TP_PROTO(struct rs_sock *rs), TP_ARGS(rs));
DEFINE_EVENT(rdmasock_sock, rdmasock_fallback, TP_PROTO(struct rs_sock *rs), TP_ARGS(rs));
DEFINE_EVENT(rdmasock_sock, rdmasock_shutdown, TP_PROTO(struct rs_sock *rs), TP_ARGS(rs));
DEFINE_EVENT(rdmasock_sock, rdmasock_error, TP_PROTO(struct rs_sock *rs), TP_ARGS(rs));
DEFINE_EVENT(rdmasock_sock, rdmasock_teardown, TP_PROTO(struct rs_sock *rs), TP_ARGS(rs));
/* The RDMA path is lost and the connection resumes (err: what it would give); then resumed. */
DEFINE_EVENT(rdmasock_sock, rdmasock_resume, TP_PROTO(struct rs_sock *rs), TP_ARGS(rs));
DEFINE_EVENT(rdmasock_sock, rdmasock_resumed, TP_PROTO(struct rs_sock *rs), TP_ARGS(rs));

#endif /* RDMASOCK_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
