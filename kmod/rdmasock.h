/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmasock internals: the socket structure shared by all layers and the wire format.
 * docs/design.md describes the protocol, the state machine and the locking rules.
 */
#ifndef RDMASOCK_H
#define RDMASOCK_H

#include <linux/types.h>
#include <linux/net.h>
#include <linux/list.h>
#include <linux/workqueue.h>
#include <linux/siphash.h>
#include <net/sock.h>
#include <net/inet_sock.h>
#include <linux/ipv6.h>
#include <net/ipv6.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <linux/rdmasock.h>
#include "compat.h"
#include "proto.h"

/* ---- the socket ---- */

#define RS_RING_START		RS_RING_MIN	/* a new connection's rings (grow.c) */

/* Urgent data at the receiver, as TCP's urg_data. */
enum rs_urg {
	RS_URG_NONE,		/* none, or read past */
	RS_URG_NOTYET,		/* announced, its byte not arrived */
	RS_URG_VALID,		/* its byte arrived (urg_byte), not read with MSG_OOB */
	RS_URG_READ,		/* read with MSG_OOB; the mark stays until read past */
};

enum rs_tcp_cb {
	RS_TCP_DATA_READY,
	RS_TCP_WRITE_SPACE,
	RS_TCP_STATE_CHANGE,
	RS_TCP_ERROR_REPORT,
	RS_TCP_NR_CB
};

/* A buffer of scattered pages seen as one range by the CPU (vmap) and by the HCA (an FRWR MR). */
struct rs_ring {
	void *buf;
	struct page **pages;
	struct scatterlist *sgl;
	unsigned int npages;
	int nents;
	u32 size;
	bool charged;		/* counted in the module's pinned pages (ring.c) */
	struct ib_device *dev;
	struct ib_mr *mr;
};

/* One per send-queue slot: the completion context of the WR posted there. */
struct rs_sock;
struct rs_link;

struct rs_txctx {
	struct ib_cqe cqe;
	u32 seq;
	struct rs_link *link;	/* the CQ is shared (wr.c): its completion's QP */
};

struct rs_cq;

/*
 * One RC QP and what its completions need (wr.c): a completion finds its socket through its
 * WR context's link, so @rs is the one pointer that says whose the QP's completions are.  A QP
 * carries one connection at a time.  Made whole by rs_qp_create() before rs->link shows it,
 * freed by rs_qp_destroy() once the QP is drained and gone and its CQ holds nothing of it.
 */
struct rs_link {
	struct rs_sock *rs;
	struct ib_qp *qp;
	struct rs_cq *cq;		/* shared with the device's other QPs (wr.c) */
	u32 cq_entries;			/* reserved in @cq */
	u32 max_inline;			/* the QP's inline size, as its provider made it */
	u32 recv_owed;			/* receives a failed post still owes (rs->lock) */
	spinlock_t ev_lock;		/* @rs against the QP's events (any context) */
	struct ib_cqe recv_cqe;
	struct rcu_head rcu;
	struct rs_txctx txc[];		/* RS_SQ_DEPTH entries */
};

enum rs_flag {
	RS_F_PEER_READY,	/* peer's READY (OPEN, ACCEPT) seen: its ring may be written */
	RS_F_PEER_FIN,		/* peer sent FIN */
	RS_F_FIN_SENT,
	RS_F_RDMA_UP,		/* QP resources exist */
	RS_F_DYING,		/* teardown started: completions and CM events are ignored */
	RS_F_CM_DONE,		/* connect outcome (cm_result) is set */
	RS_F_DISCONNECTED,	/* CM said the connection is gone */
	RS_F_CM_EST,		/* CM ESTABLISHED handled (rings registered; a child: accepted) */
	RS_F_ABORTED,		/* rs_abort() ran: the error is final */
	RS_F_FIN_PENDING,	/* FIN goes out once every staged byte is posted */
	RS_F_TX_BLOCKED,	/* a writer waits for the peer to free ring space */
	RS_F_WANT_SENT,		/* WANT_CONSUMED sent, no CONSUMED since */
	RS_F_PEER_WANTS,	/* peer sent WANT_CONSUMED: report the next consumption */
	RS_F_TX_MARKER,		/* a signaled WRITE (tx_marker) is in flight */
	RS_F_AUTOCORKED,	/* small writes held until tx_marker completes */
	RS_F_READ_SINCE_TX,	/* data read since our last WRITE: request/response */
	RS_F_PEER_GROWS,	/* peer's hello has RS_HELLO_F_GROW: we may send RESIZE */
	RS_F_RX_GROWING,	/* RESIZE sent: rx_next is registered, SWITCH awaited */
	RS_F_RX_SWITCHED,	/* SWITCH seen: bytes from rx_switch on land in rx_next */
	RS_F_TX_RESIZE,		/* peer's RESIZE seen (peer_next_*): switch at the next write */
	RS_F_SQ_FENCE,		/* a REG_MR waits for the send queue to empty (wr.c) */
	RS_F_ANNOUNCE_DUE,	/* a CONSUMED found the SQ full: the next completion sends it */
	RS_F_WANT_DUE,		/* WANT_CONSUMED found the SQ full: the next completion sends it */
	RS_F_PENDING,		/* child on the listener's pending_q (the listener's lock) */
	RS_F_READY_SENT,	/* our READY (OPEN, ACCEPT) is posted: the peer may write to us */
	RS_F_DEV_GONE,		/* DEVICE_REMOVAL while process context held the id (cm.c) */
	RS_F_SWITCH_WAIT,	/* a SWITCH found the SQ full: retried after a completion */
	RS_F_PUSH_DUE,		/* staged bytes found the SQ full: the next completion pushes */
	RS_F_GROW_DUE,		/* a RESIZE found the SQ full or a fence: a completion retries */
	RS_F_RESET_DUE,		/* close()'s RESET found the SQ full: a completion posts it */
	RS_F_TCP_COUNTED,	/* TCP mode: counted in connections_tcp (once established) */
	RS_F_CLOSE_RESET,	/* closed with a RESET: waits for it, never longer */
	RS_F_URG_PENDING,	/* MSG_OOB: the URG for tx_urg goes before any more data */
	RS_F_COMM_EST,		/* child: the client's first message told the CM (rs_comm_est) */
	RS_F_RESUMABLE,		/* both hellos had RS_HELLO_F_RESUME: a lost path resumes on TCP */
	RS_F_RESUMING,		/* the RDMA path is lost: resume.c carries the stream over to TCP */
	RS_F_RESUME_DETACHED,	/* RESUMING, and the QP and rings are gone (replay_buf kept) */
	RS_F_REPLAY,		/* resumed: resume_work sends what the peer missed; writers wait */
	RS_F_RESUMED,		/* the connection resumed over TCP: names are the RDMA ones */
	RS_F_CLOSING,		/* release() began (under rs->lock): no resume starts or attaches */
	RS_F_NOTIFIED,		/* child: rdma_notify() moved the CM to ESTABLISHED (wr.c) */
	RS_F_CM_SETTLED,	/* child: the CM's ESTABLISHED came: its REP is cancelled */
	RS_F_HEARD,		/* child: a message of the client's came (rs_comm_est()) */
	RS_F_RTU,		/* child: ESTABLISHED handled, READY (ACCEPT) posted (core.c) */
	RS_F_OPENING,		/* client on a reused QP (park.c): no READY, ACCEPT until CM_EST */
	RS_F_OPEN_RCVD,		/* server: the client's OPEN is in open_buf (park.c) */
	RS_F_OPEN_VOID,		/* server: a RESET after that OPEN: its client gave up on it */
	RS_F_MOVING,		/* parked: its QP moves to another socket, it posts nothing more */
	RS_F_NR			/* (rs->flags is one unsigned long) */
};

struct rs_door;

/* The SOL_SOCKET state a TCP socket acts on (fallback.c passes it on). */
enum rs_sol_field {
	RS_SOL_RCVTIMEO, RS_SOL_SNDTIMEO, RS_SOL_RCVLOWAT, RS_SOL_LINGER, RS_SOL_URGINLINE,
	RS_SOL_LOCALROUTE, RS_SOL_KEEPOPEN, RS_SOL_REUSE, RS_SOL_REUSEPORT, RS_SOL_RCVBUF,
	RS_SOL_SNDBUF, RS_SOL_PRIORITY, RS_SOL_MARK, RS_SOL_DEV, RS_SOL_PACING, RS_SOL_PEEK_OFF,
};

struct rs_sol {
	long rcvtimeo, sndtimeo, lingertime;
	unsigned long max_pacing_rate;
	int rcvlowat, rcvbuf, sndbuf, bound_dev_if, peek_off;
	u32 priority, mark;
	bool linger, urginline, localroute, keepopen;
	bool rcvbuf_lock, sndbuf_lock;	/* the user set the size (SO_RCVBUF, SO_BUF_LOCK) */
	u8 reuse, reuseport;
};

struct rs_sock {
	/*
	 * First: an AF_INET/AF_INET6 socket of protocol IPPROTO_RDMASOCK is made by inet_create() /
	 * inet6_create(), which write inet_sock fields; a socket of the family uses only sk.
	 */
	union {
		struct sock sk;
		struct inet_sock inet;
	};

	/* Mode and fallback (fallback.c). */
	u8 mode;			/* enum rdmasock_mode */
	u8 reason;			/* enum rdmasock_fallback_reason */
	bool no_fallback;
	bool force_tcp;
	bool nodelay;			/* TCP-level settings mirrored from rs->tcp, */
	bool cork;			/* for the RDMA path and for each TCP socket */
	u32 user_timeout;		/* we make (TCP_USER_TIMEOUT, ms) */
	struct socket *tcp;		/* kernel TCP: port owner, fallback carrier, listener */
	struct rs_policy *policy;	/* its cgroup's rules (policy.c), from socket() on */
	struct rs_sol sol_seen;		/* our SOL_SOCKET state as last passed to rs->tcp */
	u32 sol_set;			/* BIT(RS_SOL_*) the user ever changed */
	int rx_err;			/* errno (> 0) a loss owes the next read (rs->lock) */

	/* RDMA resources (conn.c, wr.c, ring.c).  Changed in process context under lock_sock. */
	struct rdma_cm_id *cm_id;
	struct ib_pd *pd;
	struct rs_link *link;		/* the QP, its CQ and WR contexts (wr.c) */
	spinlock_t cq_lock;		/* guards rs->link for busy readers and the CM's poll */
	struct rs_ring rx;		/* the peer writes here */
	struct rs_ring tx;		/* staging: min(the peer's ring, our SO_SNDBUF), grow.c */
	/* Growing rings (grow.c). */
	struct rs_ring rx_next;		/* offered by RESIZE, written from rx_switch on */
	struct rs_ring tx_old;		/* staging before SWITCH, freed once the peer consumed it */
	struct rs_ring tx_next;		/* staging for the peer's RESIZE, until SWITCH is posted */
	void *resize_buf;		/* the one receive buffer: RESIZE, OPEN, ACCEPT payloads */
	u64 resize_dma;

	struct_group(conn_next,		/* zeroed together by rs_conn_reset() */
		u64 peer_next_addr;	/* the peer's RESIZE, until we switch */
		u32 peer_next_rkey;
		u32 peer_next_size;
		u32 tx_old_seq;		/* SWITCH's WR: tx_old is free once it completed */
		u64 tx_old_lbase;	/* stream position of tx_old's offset 0 */
	);
	/* A REG_MR and its message, posted once the send queue is empty (RS_F_SQ_FENCE). */
	struct ib_reg_wr fence_reg;
	struct ib_send_wr fence_msg;
	struct ib_sge fence_sge;
	void (*fence_posted)(struct rs_sock *rs);
	struct work_struct grow_work;	/* allocates and offers rx_next */

	struct_group(conn_peer,		/* zeroed together by rs_conn_reset() */
		u64 peer_ring_addr;
		u32 peer_rkey;
		u32 peer_ring_size;	/* the ring we write into, the peer's choice */
		u32 remote_qpn;
	);
	u32 local_qpn;			/* rs->link's QP's number, for /proc and tracepoints */
	u32 path_mtu;			/* bytes one packet carries on the path (rs_note_addrs) */
	bool pd_pinned;			/* an MR could not be deregistered: never free the PD */
	bool tcp_final;			/* mode was TCP or LISTEN: rs->tcp stays until release() */
	bool port_auto;			/* bind() asked for port 0: the port is TCP's choice */
	bool port_taken;		/* rs_tcp_take_port() gave rs->tcp its port, not the user */
	u32 conn_gen;			/* connect() attempts from scratch (rs_conn_reset) */
	unsigned long connect_deadline;	/* jiffies: the set-up bound of the current attempt */
	struct sockaddr_storage peer_addr;	/* connect() destination, kept for fallback */
	int peer_addr_len;
	struct list_head dev_node;	/* on the device's socket list (dev.c) */
	struct ib_device *ibdev;
	char devname[IB_DEVICE_NAME_MAX];	/* kept for /proc after the device is gone */
	u32 port_num;
	struct sockaddr_storage local_addr;	/* RDMA mode: for /proc and tracepoints */
	struct list_head proc_node;		/* on the module's socket list (stats.c) */

	/*
	 * Cursors, byte counts since the connection began.  @lock (a BH spinlock) guards them
	 * because the completion handlers (softirq) move rx_prod, tx_acked and sq_done.
	 */
	spinlock_t lock;

	struct_group(conn_cursors,	/* zeroed together by rs_conn_reset() */
		u64 rx_base;		/* stream position of rx's offset 0 */
		u64 rx_switch;		/* RS_F_RX_SWITCHED: first byte in rx_next */
		u64 tx_base;		/* stream position of the peer ring's offset 0 */
		u64 tx_lbase;		/* stream position of the staging ring's offset 0 */
		u64 rx_prod;		/* bytes the peer has placed in rx */
		u64 rx_cons;		/* bytes the reader has consumed */
		u64 urg_pos;		/* urgent data (enum rs_urg): its byte's position */
		u64 tx_urg;		/* our latest urgent byte's position (tx_urg_set) */
		u8 urg_state;
		u8 urg_byte;
		u8 tx_urg_set;		/* a MSG_OOB send marked tx_urg */
		u64 rx_announced;	/* consumption last told to the peer */
		u64 tx_staged;		/* bytes copied into the staging ring (>= tx_prod) */
		u64 tx_prod;		/* bytes placed in the peer's ring */
		u64 tx_acked;		/* bytes the peer says it consumed */
		u32 sq_posted;		/* WRs posted */
		u32 sq_done;		/* WRs known complete */
		u32 sq_signaled;	/* sq_posted after the last signaled WR */
		u32 sq_slot;		/* next txc entry: posts mod RS_SQ_DEPTH, counted apart */
		u32 tx_marker;		/* seq of the signaled WRITE autocork waits for */
	);
	unsigned long flags;		/* enum rs_flag */
	int cm_result;			/* outcome of an active connect */
	unsigned int busy_tries;	/* connects a busy listener turned away */

	/* Statistics. */

	struct_group(conn_stats,	/* zeroed together by rs_conn_reset() */
		u64 bytes_sent;
		u64 bytes_received;
		u64 proto_errors;
	);

	/* Listener side (cm.c). */
	struct rs_sock *parent;
	struct list_head accept_node;	/* on parent's pending_q or ready_q */
	/* The socket layer's constructor of a child with this listener's options. */
	struct rs_sock *(*new_child)(struct rs_sock *listener);
	struct rs_door *door;		/* a listener: its namespace's RDMA listener (cm.c) */
	struct list_head door_node;	/* on door->members */
	struct list_head pending_q;	/* children accepted by the CM, not established yet */
	struct list_head ready_q;	/* established children waiting for accept() */
	unsigned int queued;		/* pending + ready */

	/* Keepalive (keepalive.c). */
	struct delayed_work keepalive_work;
	unsigned long ka_last;		/* jiffies of the last completion: the peer was alive */
	u32 ka_seen;			/* completions so far (moves on every sign of life) */
	u32 ka_seen_at_probe;		/* ka_seen when the last probe went out */
	u32 ka_time;			/* TCP_KEEPIDLE in jiffies, 0: the netns default */
	u32 ka_intvl;			/* TCP_KEEPINTVL in jiffies, 0: the netns default */
	u8 ka_probes;			/* TCP_KEEPCNT, 0: the netns default */
	u8 ka_unanswered;		/* probes sent since the last sign of life */

	/* Deferred work, run on rs_wq. */
	struct delayed_work push_work;		/* the cork ceiling */
	struct delayed_work connect_work;	/* connect outcome, fallback, timeout */
	struct work_struct teardown_work;	/* device removal, child abort */
	struct delayed_work close_work;		/* close after release(); an orphan's checks */
	struct work_struct qp_err_work;		/* a fatal QP event, from any context */
	struct work_struct comm_est_work;	/* a child's first message: rdma_notify() */
	wait_queue_head_t close_wait;		/* close_work waits here for FIN's completion */
	unsigned long close_waited;		/* close_work (close.c): jiffies waited so far */
	unsigned long orphan_progress;		/* an orphan: jiffies when sq_done last moved, */
	u32 orphan_done;			/* to this */
	u32 orphan_probe_end;			/* sq_posted after its last probe */
	bool orphan_counted;			/* counted in rs_orphans */

	/* Resume over TCP after the RDMA path is lost (resume.c). */
	struct delayed_work resume_work;	/* the client's handshake; the replay; a timeout */
	struct hlist_node resume_node;		/* server: in the table of resumable connections */
	u64 resume_id;				/* the server's name for the connection */
	siphash_key_t resume_key;		/* the XOR of both hello secrets */
	u8 resume_secret[16];			/* our half, as sent in our hello */
	unsigned long resume_deadline;		/* jiffies: past it the loss is an error */
	int resume_err;				/* the error the loss gives if it cannot resume */
	struct socket *resume_try;		/* client: the attempt's TCP socket (resume.c) */
	u64 resume_rx;				/* our reader's rx_cons when the path went */
	u64 resume_urg_read;			/* then: 1 + urg_pos if read out of band */
	u64 replay_base;			/* stream position of replay_buf[0] (tx_acked) */
	u64 replay_end;				/* tx_staged when the path went */
	u64 replay_prod;			/* tx_prod then: the peer cannot have read more */
	u64 replay_from;			/* the peer's consumed position: replay from here */
	void *replay_buf;			/* kvmalloc'ed, replay_end - replay_base bytes */
	u64 replay_urg;				/* tx_urg, or U64_MAX: replayed as MSG_OOB */
	bool replay_urg_skip;			/* the peer read replay_urg out of band already */
	bool replay_ok;				/* the snapshot was taken (replay_* are valid) */
	bool resume_fin;			/* our FIN was due: shut TCP's write side after */

	/* Reused connections (park.c). */
	u8 park_state;				/* enum rs_park_state (park.c), rs_park_lock */
	bool no_reuse;				/* this connect() must not take a parked QP */
	u8 open_len;				/* server: the OPEN's hello, its length */
	u8 open_buf[RS_CTRL_PAYLOAD_MAX];
	struct hlist_node park_node;		/* in its namespace's parked QPs (park.c) */
	unsigned long park_deadline;		/* jiffies: parked until then */
	struct work_struct park_work;		/* the OPEN of a parked QP came (rx.c) */
	struct socket *port_holder;		/* a reused id's port in TCP's space (park.c) */

	/* The TCP socket's own callbacks, which ours wrap (fallback.c). */
	void (*tcp_cb[RS_TCP_NR_CB])(struct sock *sk);
};

/*
 * An AF_INET6 socket of protocol IPPROTO_RDMASOCK: inet6_create() finds the ipv6_pinfo at the
 * end (proto.obj_size, before 6.5) or at proto.ipv6_pinfo_offset.
 */
struct rs6_sock {
	struct rs_sock rs;
	struct ipv6_pinfo inet6;
};

static inline struct rs_sock *rs_sk(const struct sock *sk)
{
	return (struct rs_sock *)sk;
}

/* The address family an IPPROTO_RDMASOCK socket was made for; 0 for a socket of the family. */
static inline int rs_inet_family(const struct rs_sock *rs)
{
	return rs->sk.sk_family == AF_INET || rs->sk.sk_family == AF_INET6 ? rs->sk.sk_family : 0;
}

/* The wildcard address of its family. */
static inline bool rs_addr_any(const struct sockaddr *a)
{
	if (a->sa_family == AF_INET6)
		return ipv6_addr_any(&((const struct sockaddr_in6 *)a)->sin6_addr);
	return ((const struct sockaddr_in *)a)->sin_addr.s_addr == htonl(INADDR_ANY);
}

/* A link-local IPv6 address: its scope (the interface) goes with it. */
static inline bool rs_addr_ll6(const struct sockaddr *a)
{
	return a->sa_family == AF_INET6 &&
	       (ipv6_addr_type(&((const struct sockaddr_in6 *)a)->sin6_addr) & IPV6_ADDR_LINKLOCAL);
}

/*
 * Name a link-local address with its interface, as TCP does: rdma_cm keeps the address of a
 * connection's id alone, its interface in the id's device binding (@ifindex).
 */
static inline void rs_addr_scope_fill(struct sockaddr *a, int ifindex)
{
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)a;

	if (rs_addr_ll6(a) && !sin6->sin6_scope_id)
		sin6->sin6_scope_id = ifindex;
}

/* The port of an AF_INET or AF_INET6 address (network order). */
static inline __be16 rs_addr_port(const struct sockaddr *a)
{
	if (a->sa_family == AF_INET6)
		return ((const struct sockaddr_in6 *)a)->sin6_port;
	return ((const struct sockaddr_in *)a)->sin_port;
}

/* Set the port of an AF_INET or AF_INET6 address (network order). */
static inline void rs_addr_set_port(struct sockaddr *a, __be16 port)
{
	if (a->sa_family == AF_INET6)
		((struct sockaddr_in6 *)a)->sin6_port = port;
	else
		((struct sockaddr_in *)a)->sin_port = port;
}

/* Same family, address and port (and scope, for an IPv6 address that needs one). */
static inline bool rs_addr_equal(const struct sockaddr *a, const struct sockaddr *b)
{
	const struct sockaddr_in *a4 = (const void *)a, *b4 = (const void *)b;
	const struct sockaddr_in6 *a6 = (const void *)a, *b6 = (const void *)b;

	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return a4->sin_port == b4->sin_port && a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	if (a6->sin6_port != b6->sin6_port || !ipv6_addr_equal(&a6->sin6_addr, &b6->sin6_addr))
		return false;
	/* The scope names the interface only where the address needs one: TCP ignores it else. */
	return !__ipv6_addr_needs_scope_id(__ipv6_addr_type(&a6->sin6_addr)) ||
	       a6->sin6_scope_id == b6->sin6_scope_id;
}

/* Is the socket's carrier TCP, for good (rs_carrier())? */
/*
 * rs->tcp is set and replaced only under lock_sock and only while the mode is NONE; the mode
 * becomes TCP (a release store, after rs->tcp is final) or LISTEN, and from then on rs->tcp stays
 * until release().  So a caller that saw mode TCP (acquire) may use rs->tcp without lock_sock.
 */
static inline bool rs_is_tcp(const struct rs_sock *rs)
{
	/* Pairs with the release store in rs_tcp_connect_start(). */
	return smp_load_acquire(&rs->mode) == RDMASOCK_MODE_TCP;
}

/*
 * A carrier: what moves a connected socket's bytes.  The socket layer (af_rdmasock.c) makes every
 * data-path call through one, never by name: rs_rdma_carrier (rdma.c: an RC QP, and a socket
 * with no carrier yet) or rs_tcp_carrier (fallback.c: the kernel TCP socket).  sendmsg, recvmsg,
 * poll and ioctl run without lock_sock (each takes what it needs); shutdown, getname and tcp_info
 * with it held.  shutdown's @how is RCV_SHUTDOWN | SEND_SHUTDOWN bits; it returns 1 when a
 * connect in progress was abandoned.
 */
struct rs_carrier {
	const char *name;
	int (*sendmsg)(struct rs_sock *rs, struct msghdr *msg, size_t len);
	int (*recvmsg)(struct rs_sock *rs, struct msghdr *msg, size_t len, int flags);
	__poll_t (*poll)(struct rs_sock *rs, struct file *file);
	int (*ioctl)(struct rs_sock *rs, unsigned int cmd, unsigned long arg);
	int (*shutdown)(struct rs_sock *rs, int how);
	int (*getname)(struct rs_sock *rs, struct sockaddr *addr, int peer);
	int (*tcp_info)(struct rs_sock *rs, char __user *optval, int __user *optlen);
};

#endif /* RDMASOCK_H */
