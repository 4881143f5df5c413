/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * rdmasock: TCP-semantics stream sockets carried by RDMA RC queue pairs.
 *
 * The family number is a module parameter (/sys/module/rdmasock/parameters/family); programs should
 * read it from there and fall back to RDMASOCK_FAMILY_DEFAULT.  Addresses are plain sockaddr_in and
 * sockaddr_in6.
 */
#ifndef _UAPI_LINUX_RDMASOCK_H
#define _UAPI_LINUX_RDMASOCK_H

#include <linux/types.h>

/*
 * 19 was AF_ECONET, whose implementation left the kernel in 3.5; no in-tree family registers it on
 * 6.1 or 6.12.  See docs/design.md for why this number and not another.
 */
#define RDMASOCK_FAMILY_DEFAULT	19
#define RDMASOCK_FAMILY_PARAM	"/sys/module/rdmasock/parameters/family"

/*
 * The same sockets as a protocol of AF_INET and AF_INET6: socket(AF_INET, SOCK_STREAM,
 * IPPROTO_RDMASOCK) is an rdmasock socket whose SO_DOMAIN is AF_INET.  Also a module parameter
 * (/sys/module/rdmasock/parameters/ipproto: 257..261, 0 when not registered).  Above 255, so it
 * can never be a protocol on the wire of IP (an 8-bit field); below IPPROTO_MAX (263); 256 is
 * IPPROTO_SMC and 262 IPPROTO_MPTCP, and new kernel numbers are taken from 257 up: 261 is the
 * last one free.
 */
#define RDMASOCK_IPPROTO_DEFAULT	261
#define RDMASOCK_IPPROTO_PARAM	"/sys/module/rdmasock/parameters/ipproto"

/* Option level for getsockopt/setsockopt (SOL_* numbers are private per family). */
#define SOL_RDMASOCK		287

/* int, read-only: how this socket carries its bytes (enum rdmasock_mode). */
#define RDMASOCK_MODE		1
/* int, read-only: why the socket is not in RDMA mode (enum rdmasock_fallback_reason). */
#define RDMASOCK_FALLBACK_REASON 2
/* int, read/write: non-zero forbids falling back to TCP (connect fails with the real errno). */
#define RDMASOCK_NO_FALLBACK	3
/* int, read/write before connect/listen: non-zero makes this socket plain kernel TCP. */
#define RDMASOCK_FORCE_TCP	4
/* struct rdmasock_info, read-only. */
#define RDMASOCK_INFO		5
/*
 * int, read/write: SO_REUSEPORT, for kernels whose setsockopt(SOL_SOCKET) refuses it to a family
 * other than AF_INET/AF_INET6 (before 6.6; librdmasock-preload.so turns SO_REUSEPORT into this).
 */
#define RDMASOCK_REUSEPORT	6

enum rdmasock_mode {
	RDMASOCK_MODE_NONE = 0,		/* not connected yet */
	RDMASOCK_MODE_RDMA = 1,		/* bytes travel over an RC QP */
	RDMASOCK_MODE_TCP = 2,		/* bytes travel over kernel TCP (fallback) */
	RDMASOCK_MODE_LISTEN = 3,	/* listening socket */
};

enum rdmasock_fallback_reason {
	RDMASOCK_REASON_NONE = 0,
	RDMASOCK_REASON_NO_DEVICE = 1,		/* no RDMA device on the route */
	RDMASOCK_REASON_PEER_REJECT = 2,	/* peer's RDMA CM rejected (no rdmasock listener) */
	RDMASOCK_REASON_TIMEOUT = 3,		/* peer did not answer the RDMA CM in time */
	RDMASOCK_REASON_HELLO = 4,		/* hello version or feature mismatch */
	RDMASOCK_REASON_RESOURCE = 5,		/* local QP/CQ/MR allocation failed */
	RDMASOCK_REASON_FORCED = 6,		/* RDMASOCK_FORCE_TCP or policy */
	RDMASOCK_REASON_NEG_CACHE = 7,		/* destination recently had no rdmasock */
	RDMASOCK_REASON_PEER_TCP = 8,		/* accepted: the client spoke plain TCP */
	RDMASOCK_REASON_PEER_BUSY = 9,		/* listener stayed busy (backlog full) */
	RDMASOCK_REASON_RDMA_LOST = 10,		/* was RDMA; the path was lost, resumed over TCP */
	RDMASOCK_REASON_MAX
};

#define RDMASOCK_INFO_VERSION	1

struct rdmasock_info {
	__u32 version;		/* RDMASOCK_INFO_VERSION */
	__u32 mode;		/* enum rdmasock_mode */
	__u32 fallback_reason;	/* enum rdmasock_fallback_reason */
	__u32 state;		/* TCP_* state number, as in /proc/net/tcp */
	__u32 local_qpn;
	__u32 remote_qpn;
	__u32 rx_ring_size;	/* bytes */
	__u32 tx_ring_size;	/* bytes: the peer's receive ring */
	__u64 bytes_sent;
	__u64 bytes_received;
	__u32 rx_queued;	/* bytes received, not yet read */
	__u32 tx_queued;	/* bytes written, not yet consumed by the peer */
	__u64 protocol_errors;
	/* Appended (the length returned says whether it is there): */
	__u64 resume_id;	/* the connection's name for resuming over TCP; 0: it cannot */
};

#endif /* _UAPI_LINUX_RDMASOCK_H */
