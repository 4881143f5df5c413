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
#include <linux/irq_poll.h>
#include <linux/workqueue.h>
#include <net/sock.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <linux/rdmasock.h>
#include "compat.h"

/* ---- wire format (all fields big-endian) ---- */

#define RS_HELLO_MAGIC		0x52534f4bU	/* "RSOK" */
/* A REJ's private data (a big-endian u32), why the server refused RDMA for this connection. */
#define RS_REJ_HELLO		0x52534801U	/* your hello does not parse */
#define RS_REJ_BUSY		0x52534802U	/* backlog full, retry */
#define RS_REJ_TCP		0x52534803U	/* go to TCP (a reuseport group's choice) */
#define RS_PROTO_VERSION	1

/*
 * Carried in the CM REQ (client) and REP (server) private data.  32 bytes: the REQ of RDMA_PS_TCP
 * has room for 56.  The receiver always sees the padded length, so the hello encodes its own.
 */
struct rs_hello {
	__be32 magic;
	u8 version;
	u8 flags;		/* RS_HELLO_F_*; any other bit is refused */
	__be16 len;		/* sizeof(struct rs_hello) */
	__be64 ring_addr;	/* iova of the sender's receive ring */
	__be32 ring_rkey;	/* rkey of that ring, valid for this QP's peer only */
	__be32 ring_size;	/* bytes, a multiple of 4096, at most RS_RING_MAX */
	__be32 reserved[2];	/* zero */
};

/* The sender takes RESIZE and answers with SWITCH: its peer may start small and grow the ring. */
#define RS_HELLO_F_GROW		0x01
#define RS_HELLO_FLAGS		RS_HELLO_F_GROW

/*
 * The 32-bit immediate of every message says what it is: the top two bits are the type, the low 30
 * bits its argument.
 *   DATA      (RDMA WRITE with immediate) n bytes were written at the receiver's producer cursor.
 *   CONSUMED  (SEND with immediate, no payload) the receiver has consumed up to cursor mod 2^30.
 *   CTRL      (SEND with immediate) READY, FIN, RESET ...: no payload, but for RESIZE, whose
 *             payload is one struct rs_resize.
 */
#define RS_IMM_TYPE_SHIFT	30
#define RS_IMM_ARG_MASK		(BIT(RS_IMM_TYPE_SHIFT) - 1)
enum rs_imm_type {
	RS_IMM_DATA = 0,
	RS_IMM_CONSUMED = 1,
	RS_IMM_CTRL = 2,
};

enum rs_ctrl {
	RS_CTRL_READY = 1,	/* my rings are registered: you may write */
	RS_CTRL_FIN = 2,	/* I will send no more data */
	RS_CTRL_RESET = 3,	/* abort: I discarded data, as a TCP RST */
	RS_CTRL_KEEPALIVE = 4,	/* probe: the RC ACK is the answer, no reply */
	RS_CTRL_WANT_CONSUMED = 5,	/* my window is small: report consumption at once */
	RS_CTRL_RESIZE = 6,	/* here is a larger ring (payload: rs_resize); answer SWITCH */
	RS_CTRL_SWITCH = 7,	/* my writes from here on go to the ring of your RESIZE */
};

/* CTRL with this bit: urgent data (MSG_OOB); the low bits: its byte's stream position mod 2^29. */
#define RS_CTRL_URG		BIT(29)
#define RS_URG_POS_MASK		(RS_CTRL_URG - 1)

/* Urgent data at the receiver, as TCP's urg_data. */
enum rs_urg {
	RS_URG_NONE,		/* none, or read past */
	RS_URG_NOTYET,		/* announced, its byte not arrived */
	RS_URG_VALID,		/* its byte arrived (urg_byte), not read with MSG_OOB */
	RS_URG_READ,		/* read with MSG_OOB; the mark stays until read past */
};

/* RESIZE's payload: the receiver's new ring, as in the hello. */
struct rs_resize {
	__be64 ring_addr;
	__be32 ring_rkey;
	__be32 ring_size;
};

#define RS_RING_MIN		(16U << 10)
#define RS_RING_MAX		(4U << 20)	/* < 2^29 keeps the 30-bit cursor unambiguous */
#define RS_RING_START		RS_RING_MIN	/* a new connection's rings (grow.c) */
#define RS_MAX_WRITE		BIT(20)		/* one WRITE never carries more */

/* ---- the socket ---- */

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
struct rs_txctx {
	struct ib_cqe cqe;
	u32 seq;
};

enum rs_flag {
	RS_F_PEER_READY,	/* peer's READY seen: its ring may be written */
	RS_F_PEER_FIN,		/* peer sent FIN */
	RS_F_FIN_SENT,
	RS_F_RDMA_UP,		/* QP resources exist */
	RS_F_DYING,		/* teardown started: completions and CM events are ignored */
	RS_F_CM_DONE,		/* connect outcome (cm_result) is set */
	RS_F_DISCONNECTED,	/* CM said the connection is gone */
	RS_F_CM_EST,		/* CM ESTABLISHED handled (rings registered, READY posted) */
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
	RS_F_SQ_FENCE,		/* a REG_MR waits for the send queue to empty (tx.c) */
	RS_F_ANNOUNCE_DUE,	/* a CONSUMED found the SQ full: the next completion sends it */
	RS_F_WANT_DUE,		/* WANT_CONSUMED found the SQ full: the next completion sends it */
	RS_F_PENDING,		/* child on the listener's pending_q (the listener's lock) */
	RS_F_READY_SENT,	/* our READY is posted: the peer may write into our ring */
	RS_F_DEV_GONE,		/* DEVICE_REMOVAL while process context held the id (cm.c) */
	RS_F_SWITCH_WAIT,	/* a SWITCH found the SQ full: retried after a completion */
	RS_F_TCP_COUNTED,	/* TCP mode: counted in connections_tcp (once established) */
	RS_F_CLOSE_RESET,	/* closed with a RESET: never an orphan */
	RS_F_URG_PENDING,	/* MSG_OOB: the URG for tx_urg goes before any more data */
	RS_F_COMM_EST,		/* child: the client's first message told the CM (rs_comm_est) */
	RS_F_NR			/* (rs->flags is one unsigned long) */
};

struct rs_rp_group;

/* The SOL_SOCKET state a TCP socket acts on (fallback.c passes it on). */
enum rs_sol_field {
	RS_SOL_RCVTIMEO, RS_SOL_SNDTIMEO, RS_SOL_RCVLOWAT, RS_SOL_LINGER, RS_SOL_URGINLINE,
	RS_SOL_LOCALROUTE, RS_SOL_KEEPOPEN, RS_SOL_REUSE, RS_SOL_REUSEPORT, RS_SOL_RCVBUF,
	RS_SOL_SNDBUF, RS_SOL_PRIORITY, RS_SOL_MARK, RS_SOL_DEV, RS_SOL_PACING,
};

struct rs_sol {
	long rcvtimeo, sndtimeo, lingertime;
	unsigned long max_pacing_rate;
	int rcvlowat, rcvbuf, sndbuf, bound_dev_if;
	u32 priority, mark;
	bool linger, urginline, localroute, keepopen;
	bool rcvbuf_lock, sndbuf_lock;	/* the user set the size (SO_RCVBUF, SO_BUF_LOCK) */
	u8 reuse, reuseport;
};

struct rs_sock {
	struct sock sk;			/* must be first */

	/* Mode and fallback (fallback.c). */
	u8 mode;			/* enum rdmasock_mode */
	u8 reason;			/* enum rdmasock_fallback_reason */
	bool no_fallback;
	bool force_tcp;
	bool nodelay;			/* TCP-level settings mirrored from rs->tcp, */
	bool cork;			/* for the RDMA path and for each TCP socket */
	u32 user_timeout;		/* we make (TCP_USER_TIMEOUT, ms) */
	struct socket *tcp;		/* kernel TCP: port owner, fallback carrier, listener */
	struct rs_sol sol_seen;		/* our SOL_SOCKET state as last passed to rs->tcp */
	u32 sol_set;			/* BIT(RS_SOL_*) the user ever changed */

	/* RDMA resources (cm.c, ring.c).  Changed only in process context under lock_sock. */
	struct rdma_cm_id *cm_id;
	struct ib_pd *pd;
	struct ib_cq *cq;
	spinlock_t cq_lock;		/* one poller at a time: irq_poll or a busy reader (cq.c) */
	struct irq_poll cq_iop;
	struct ib_qp *qp;
	struct rs_ring rx;		/* the peer writes here */
	struct rs_ring tx;		/* staging: min(the peer's ring, our SO_SNDBUF), grow.c */
	/* Growing rings (grow.c). */
	struct rs_ring rx_next;		/* offered by RESIZE, written from rx_switch on */
	struct rs_ring tx_old;		/* staging before SWITCH, freed once its WRITEs completed */
	struct rs_ring tx_next;		/* staging for the peer's RESIZE, until SWITCH is posted */
	struct rs_resize *resize_buf;	/* the one receive buffer: RESIZE's payload lands here */
	u64 resize_dma;

	struct_group(conn_next,		/* zeroed together by rs_conn_reset() */
		u64 peer_next_addr;	/* the peer's RESIZE, until we switch */
		u32 peer_next_rkey;
		u32 peer_next_size;
		u32 tx_old_seq;		/* SWITCH's WR: tx_old is free once it completed */
	);
	/* A REG_MR and its message, posted once the send queue is empty (RS_F_SQ_FENCE). */
	struct ib_reg_wr fence_reg;
	struct ib_send_wr fence_msg;
	struct ib_sge fence_sge;
	void (*fence_posted)(struct rs_sock *rs);
	struct work_struct grow_work;	/* allocates and offers rx_next */
	u32 sq_depth;
	u32 rq_depth;
	u32 max_inline;
	struct rs_txctx *txc;		/* sq_depth entries */
	struct ib_cqe recv_cqe;
	struct ib_cqe reg_cqe;

	struct_group(conn_peer,		/* zeroed together by rs_conn_reset() */
		u64 peer_ring_addr;
		u32 peer_rkey;
		u32 peer_ring_size;	/* the ring we write into, the peer's choice */
		u32 remote_qpn;
	);
	u32 local_qpn;			/* rs->qp's number, for /proc and tracepoints */
	u32 path_mtu;			/* bytes one packet carries on the path (rs_note_addrs) */
	bool pd_pinned;			/* an MR could not be deregistered: never free the PD */
	bool tcp_final;			/* mode was TCP or LISTEN: rs->tcp stays until release() */
	bool port_auto;			/* bind() asked for port 0: the port is TCP's choice */
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
		u64 tx_urg;		/* RS_F_URG_PENDING: our urgent byte's position */
		u8 urg_state;
		u8 urg_byte;
		u64 rx_announced;	/* consumption last told to the peer */
		u64 tx_staged;		/* bytes copied into the staging ring (>= tx_prod) */
		u64 tx_prod;		/* bytes placed in the peer's ring */
		u64 tx_acked;		/* bytes the peer says it consumed */
		u32 sq_posted;		/* WRs posted */
		u32 sq_done;		/* WRs known complete */
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
	struct rs_rp_group *rp_group;	/* a listener with SO_REUSEPORT: its group (cm.c) */
	struct list_head rp_node;	/* on rp_group->members */
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
	struct delayed_work push_work;		/* cork ceiling; SQ-full retry */
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

	/* The TCP socket's own callbacks, which ours wrap (fallback.c). */
	void (*tcp_cb[RS_TCP_NR_CB])(struct sock *sk);
};

static inline struct rs_sock *rs_sk(const struct sock *sk)
{
	return (struct rs_sock *)sk;
}

/* ---- module-wide ---- */

extern int rs_family;
extern unsigned int rs_connect_timeout_ms;
extern bool rs_fallback_default;
extern struct workqueue_struct *rs_wq;
extern struct proto rs_proto;

/* af_rdmasock.c */
struct rs_sock *rs_alloc_sock(struct net *net, struct socket *sock, int kern);
void rs_wake(struct sock *sk, __poll_t mask);

/* cm.c */
int rs_cm_bind(struct rs_sock *rs, struct sockaddr *addr, int len);
int rs_cm_listen(struct rs_sock *rs, int backlog);
int rs_cm_bind_listener(struct rs_sock *rs);
void rs_cm_id_drop(struct rs_sock *rs);
void rs_conn_reset(struct rs_sock *rs);
int rs_cm_connect(struct rs_sock *rs, struct sockaddr *addr, int len);
struct rs_sock *rs_cm_accept_ready(struct rs_sock *listener);
void rs_cm_listener_close(struct rs_sock *rs);
void rs_rp_join(struct rs_sock *rs, int backlog);
bool rs_cm_child_unqueue(struct rs_sock *child);
void rs_connect_work(struct work_struct *work);
void rs_abort(struct rs_sock *rs, int err);
void rs_connect_done(struct rs_sock *rs, int result, int reason);
void rs_peer_ready(struct rs_sock *rs);

/* dev.c */
int rs_dev_init(void);
void rs_dev_exit(void);
int rs_dev_attach(struct rs_sock *rs, struct ib_device *ibdev);
void rs_dev_detach(struct rs_sock *rs);

/* grow.c */
u32 rs_ring_target(struct rs_sock *rs, struct ib_device *dev);
u32 rs_ring_start(struct rs_sock *rs, struct ib_device *dev);
u32 rs_tx_ring_target(struct rs_sock *rs, struct ib_device *dev, u32 peer_size);
int rs_resize_buf_alloc(struct rs_sock *rs);
void rs_grow_free(struct rs_sock *rs);
void rs_grow_init(struct rs_sock *rs);
u32 rs_rx_ring_size(struct rs_sock *rs);
void rs_rx_grow_soon(struct rs_sock *rs, u32 queued);
int rs_rx_resize(struct rs_sock *rs, u32 byte_len);
int rs_rx_switch(struct rs_sock *rs);
void rs_rx_switch_done(struct rs_sock *rs);
bool rs_tx_switch_ready(struct rs_sock *rs);
void rs_tx_switch(struct rs_sock *rs);

/* ring.c */
int rs_ring_alloc(struct rs_ring *ring, struct ib_pd *pd, u32 size, struct sock *sk);
long rs_ring_pinned_pages(void);
bool rs_ring_fits(u32 size);
bool rs_ring_free(struct rs_ring *ring);
void rs_ring_release(struct rs_sock *rs, struct rs_ring *ring);
void rs_ring_sync(struct rs_ring *ring, u32 off, u32 len, bool for_cpu);
void rs_ring_reg_wr(struct rs_ring *ring, struct ib_reg_wr *wr, int access);

/* tx.c */
void rs_comm_est(struct rs_sock *rs);
void rs_comm_est_work(struct work_struct *work);
int rs_cq_create(struct rs_sock *rs, struct ib_device *dev, u32 entries);
void rs_cq_destroy(struct rs_sock *rs);
void rs_cq_busy_poll(struct rs_sock *rs);
void rs_cq_poll_all(struct rs_sock *rs);
int rs_qp_create(struct rs_sock *rs, struct rdma_cm_id *id);
void rs_qp_destroy(struct rs_sock *rs);
int rs_post_reg_ring(struct rs_sock *rs, struct rs_ring *ring, bool remote);
int rs_post_ready(struct rs_sock *rs);
int rs_post_fenced(struct rs_sock *rs, const struct ib_reg_wr *reg, const struct ib_send_wr *msg,
		   void (*posted)(struct rs_sock *rs));
int rs_send_ctrl(struct rs_sock *rs, u32 type, u32 arg, bool signaled);
int __rs_send_ctrl(struct rs_sock *rs, u32 type, u32 arg, bool signaled);
int rs_rdma_sendmsg(struct rs_sock *rs, struct msghdr *msg, size_t len);
bool rs_tx_idle(struct rs_sock *rs);
void rs_tx_push(struct rs_sock *rs);
void rs_tx_init(struct rs_sock *rs);
void rs_tx_stop(struct rs_sock *rs);
u32 rs_tx_space(struct rs_sock *rs);

/* rx.c */
bool rs_urg_pending(struct rs_sock *rs);
bool rs_urg_at_mark(struct rs_sock *rs);
int rs_rdma_recv_urg(struct rs_sock *rs, struct msghdr *msg, size_t len, int flags);
int rs_post_recvs(struct rs_sock *rs, u32 count);
int rs_tx_error(struct rs_sock *rs);
void rs_ctrl_defer(struct rs_sock *rs, enum rs_flag due, int err);
bool rs_rx_readable(struct rs_sock *rs, int lowat);
int rs_rdma_recvmsg(struct rs_sock *rs, struct msghdr *msg, size_t len, int flags);
u32 rs_rx_avail(struct rs_sock *rs);
void rs_rx_announce(struct rs_sock *rs, bool force);

/* close.c */
int rs_shutdown(struct rs_sock *rs, int how);
void rs_send_fin(struct rs_sock *rs);
void rs_release(struct rs_sock *rs);
void rs_teardown_rdma(struct rs_sock *rs, bool in_handler);
void rs_close_work(struct work_struct *work);
int rs_orphan_count(void);
void rs_teardown_work(struct work_struct *work);

/* keepalive.c */
/* A successful completion: the peer's HCA answered.  Racing updates all move it: good enough. */
static inline void rs_peer_alive(struct rs_sock *rs)
{
	WRITE_ONCE(rs->ka_last, jiffies);
	WRITE_ONCE(rs->ka_seen, READ_ONCE(rs->ka_seen) + 1);
}

void rs_keepalive_init(struct rs_sock *rs);
void rs_keepalive_update(struct rs_sock *rs);
void rs_keepalive_persist(struct rs_sock *rs);
void rs_keepalive_stop(struct rs_sock *rs);
void rs_keepalive_params(struct rs_sock *rs, const struct tcp_sock *tp);
void rs_keepalive_set(struct sock *sk, int on);

/* fallback.c */
void rs_tcp_set_keepalive(struct sock *tsk, bool on);
int rs_tcp_ensure(struct rs_sock *rs, int family);
int rs_tcp_connect_start(struct rs_sock *rs, struct sockaddr *addr, int len, int reason);
void rs_tcp_attach(struct rs_sock *rs, struct socket *tcp);
bool rs_tcp_foreign(struct socket *tcp);
struct rs_sock *rs_tcp_owner(struct sock *tsk);
void rs_tcp_detach(struct rs_sock *rs);
void rs_tcp_sync(struct rs_sock *rs);
void rs_sol_init(struct rs_sock *rs);
void rs_sol_adopt_priority(struct rs_sock *rs);
int rs_tcp_set_rcvlowat(struct rs_sock *rs, int val);
void rs_sol_inherit(struct rs_sock *child, const struct rs_sock *listener);
void rs_sol_seed_tcp_child(struct rs_sock *child, struct sock *tsk);
bool rs_neg_cache_hit(const struct net *net, const struct sockaddr *addr);
void rs_neg_cache_add(const struct net *net, const struct sockaddr *addr);
void rs_neg_cache_exit(void);

/* stats.c: counters, /proc/net/rdmasock, /proc/net/rdmasock_stat, tracepoints */
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
	RS_CNT_RP_TO_TCP,	/* reuseport group: TCP's choice was a plain TCP listener */
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
void rs_proc_add(struct rs_sock *rs);
void rs_proc_del(struct rs_sock *rs);
void rs_note_addrs(struct rs_sock *rs, struct rdma_cm_id *id);
int rs_stats_init(void);
void rs_stats_exit(void);

#endif /* RDMASOCK_H */
