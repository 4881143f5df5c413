/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmasock wire format, version 2: everything one end sends the other, and nothing else.
 * docs/design.md ("Wire format", "Validation") describes it.  Included by the module and by
 * userspace test peers (selftests/hostile_peer.c): only <linux/types.h> types, no kernel macros.
 * All multi-byte fields are big-endian on the wire.
 */
#ifndef RDMASOCK_PROTO_H
#define RDMASOCK_PROTO_H

#include <linux/types.h>

#define RS_HELLO_MAGIC		0x52534f4bU	/* "RSOK" */
#define RS_PROTO_VERSION	2

/*
 * A client's CM REQ goes to one rdma_cm port per network namespace, the module's (rdma_port, below
 * 1024: no unprivileged user can listen there), never to the TCP port it connects to.  Its hello
 * names that TCP port, and the server gives the request to the listener TCP's own lookup gives
 * that port to (cm.c, "The door").  Version 1 sent the REQ to the TCP port itself.
 */
#define RS_RDMA_PORT_DEFAULT	1018

/* A REJ's private data (a big-endian u32), why the server refused RDMA for this connection. */
#define RS_REJ_HELLO		0x52534801U	/* your hello does not parse */
#define RS_REJ_BUSY		0x52534802U	/* backlog full, retry */
#define RS_REJ_TCP		0x52534803U	/* go to TCP now (a reuseport group's choice) */
#define RS_REJ_NOT_OURS		0x52534804U	/* to TCP: the port is no rdmasock listener's */

/*
 * Carried in the CM REQ (client) and REP (server) private data.  32 bytes: the REQ of RDMA_PS_TCP
 * has room for 56.  The receiver always sees the padded length, so the hello encodes its own.
 */
struct rs_hello {
	__be32 magic;
	__u8 version;
	__u8 flags;		/* RS_HELLO_F_*; any other bit is refused */
	__be16 len;		/* sizeof(struct rs_hello) */
	__be64 ring_addr;	/* iova of the sender's receive ring */
	__be32 ring_rkey;	/* rkey of that ring, valid for this QP's peer only */
	__be32 ring_size;	/* bytes: rs_ring_size_ok() */
	__be16 port;		/* the TCP port the client connected to (the server's) */
	__be16 reserved16;	/* zero */
	__be32 reserved;	/* zero */
};

#define RS_HELLO_SIZE		32

/* The sender takes RESIZE and answers with SWITCH: its peer may start small and grow the ring. */
#define RS_HELLO_F_GROW		0x01
/*
 * The sender can carry the connection on over TCP if the RDMA path is lost (resume.c): a struct
 * rs_hello_resume follows the hello, and len is RS_HELLO_RESUME_SIZE.  A server sets it only in
 * answer to a client's.
 */
#define RS_HELLO_F_RESUME	0x02
/*
 * Set in the hellos of OPEN and ACCEPT, and only there: this message is the sender's READY too
 * (its ring has its new key), and no READY follows.  Required there: a peer that would send one
 * (an earlier version) is refused, and the connection is set up afresh.
 */
#define RS_HELLO_F_READY	0x04
#define RS_HELLO_FLAGS		(RS_HELLO_F_GROW | RS_HELLO_F_RESUME | RS_HELLO_F_READY)

/*
 * After the hello when RS_HELLO_F_RESUME is set.  Each end sends half of the connection's resume
 * key; the server names the connection (the client's id is zero, and ignored).
 */
struct rs_hello_resume {
	__be64 conn_id;		/* the server's name for this connection; nonzero */
	__u8 secret[16];	/* the sender's half of the key (they are XORed) */
};

#define RS_HELLO_RESUME_SIZE	56	/* all the room a REQ has */

/*
 * The 32-bit immediate of every message says what it is: the top two bits are the type, the low 30
 * bits its argument (rs_imm(), rs_imm_type(), rs_imm_arg(); host order, byte-swapped at the post).
 *   DATA      (RDMA WRITE with immediate) n bytes were written at the receiver's producer cursor.
 *   CONSUMED  (SEND with immediate, no payload) the receiver has consumed up to cursor mod 2^30.
 *   CTRL      (SEND with immediate) READY, FIN, RESET ...: no payload, but for RESIZE, whose
 *             payload is one struct rs_resize, and OPEN and ACCEPT, whose payload is a hello.
 */
#define RS_IMM_TYPE_SHIFT	30
#define RS_IMM_ARG_MASK		((1U << RS_IMM_TYPE_SHIFT) - 1)
enum rs_imm_type {
	RS_IMM_DATA = 0,
	RS_IMM_CONSUMED = 1,
	RS_IMM_CTRL = 2,
};

static inline __u32 rs_imm(__u32 type, __u32 arg)
{
	return type << RS_IMM_TYPE_SHIFT | (arg & RS_IMM_ARG_MASK);
}

static inline __u32 rs_imm_type(__u32 imm)
{
	return imm >> RS_IMM_TYPE_SHIFT;
}

static inline __u32 rs_imm_arg(__u32 imm)
{
	return imm & RS_IMM_ARG_MASK;
}

enum rs_ctrl {
	RS_CTRL_READY = 1,	/* my rings are registered: you may write */
	RS_CTRL_FIN = 2,	/* I will send no more data */
	RS_CTRL_RESET = 3,	/* abort: I discarded data, as a TCP RST */
	RS_CTRL_KEEPALIVE = 4,	/* probe: the RC ACK is the answer, no reply */
	RS_CTRL_WANT_CONSUMED = 5,	/* my window is small: report consumption at once */
	RS_CTRL_RESIZE = 6,	/* here is a larger ring (payload: rs_resize); answer SWITCH */
	RS_CTRL_SWITCH = 7,	/* my writes from here on go to the ring of your RESIZE */
	/*
	 * A reused QP (docs/design.md, "Reused connections"): both ends closed the connection it
	 * carried in order and kept it.  OPEN (client) starts the next connection on it, ACCEPT
	 * (server) takes it; each carries the sender's hello (struct rs_hello, with its resume
	 * extension when RS_HELLO_F_RESUME is set) as its payload, as the CM's REQ and REP do.
	 * Each is also its sender's READY (its ring has its new key): no READY follows, and one
	 * on a reused QP is a violation.
	 */
	RS_CTRL_OPEN = 8,
	RS_CTRL_ACCEPT = 9,
};

/* The largest payload of a control message: OPEN's and ACCEPT's hello; RESIZE's is smaller. */
#define RS_CTRL_PAYLOAD_MAX	RS_HELLO_RESUME_SIZE

/* CTRL with this bit: urgent data (MSG_OOB); the low bits: its byte's stream position mod 2^29. */
#define RS_CTRL_URG		0x20000000U	/* bit 29 */
#define RS_URG_POS_MASK		(RS_CTRL_URG - 1)

/* RESIZE's payload: the receiver's new ring, as in the hello. */
struct rs_resize {
	__be64 ring_addr;
	__be32 ring_rkey;
	__be32 ring_size;
};

#define RS_RESIZE_SIZE		16

/* Ring sizes: a multiple of 4096 in [RS_RING_MIN, RS_RING_MAX]. */
#define RS_RING_MIN		(16U << 10)
#define RS_RING_MAX		(4U << 20)	/* < 2^29 keeps the 30-bit cursor unambiguous */
#define RS_MAX_WRITE		0x100000U	/* 1 MiB: one WRITE never carries more */

/* A ring size from the wire (hello, RESIZE) the protocol allows. */
static inline int rs_ring_size_ok(__u32 size)
{
	return size >= RS_RING_MIN && size <= RS_RING_MAX && !(size % 4096);
}

/*
 * Resume (resume.c, docs/design.md "Resume"): when the RDMA path of an established connection is
 * lost, the client opens a TCP connection to the server's resume port and both ends prove they
 * hold the connection's key, then say how far their readers consumed; each replays the rest.
 *   client -> server  RS_RESUME_HELLO      conn_id, client nonce
 *   server -> client  RS_RESUME_CHALLENGE  status, server nonce
 *   client -> server  RS_RESUME_PROOF      the client's consumed position, MAC
 *   server -> client  RS_RESUME_ACCEPT     status, the server's consumed position, MAC
 * The MAC is SipHash-2-4, keyed with the XOR of the two hello secrets, over struct rs_resume_mac.
 * Every message is 48 bytes; anything else ends the attempt.
 */
#define RS_RESUME_MAGIC		0x52535245U	/* "RSRE" */
#define RS_RESUME_MSG_SIZE	48

enum rs_resume_type {
	RS_RESUME_HELLO = 1,
	RS_RESUME_CHALLENGE = 2,
	RS_RESUME_PROOF = 3,
	RS_RESUME_ACCEPT = 4,
};

enum rs_resume_status {
	RS_RESUME_OK = 0,
	RS_RESUME_UNKNOWN = 1,	/* no such connection (any more): do not try again */
	RS_RESUME_BUSY = 2,	/* too many attempts in progress: try again */
	RS_RESUME_DENIED = 3,	/* proof or positions wrong */
};

struct rs_resume_msg {
	__be32 magic;
	__u8 version;		/* RS_PROTO_VERSION */
	__u8 type;		/* enum rs_resume_type */
	__u8 status;		/* enum rs_resume_status (CHALLENGE, ACCEPT); else 0 */
	__u8 reserved;		/* zero */
	__be64 conn_id;
	union {
		__u8 nonce[16];	/* HELLO: the client's; CHALLENGE: the server's; else zero */
		struct {	/* PROOF, ACCEPT (zero from a peer before this field) */
			/*
			 * 1 + the position of an urgent byte the sender's reader took with MSG_OOB
			 * but has not read up to (its replay leaves that byte out); 0: none.  Not
			 * in the MAC: it can only name the replaying end's own urgent byte.
			 */
			__be64 urg_read;
			__be64 zero;
		};
	};
	__be64 pos;		/* PROOF, ACCEPT: the sender's reader consumed this far; else 0 */
	__be64 mac;		/* PROOF, ACCEPT: SipHash of struct rs_resume_mac; else zero */
};

/* What the MAC covers (host order, packed as laid out): the role, both nonces, the position. */
struct rs_resume_mac {
	__u64 label;		/* RS_RESUME_LABEL_CLIENT or _SERVER */
	__u64 conn_id;
	__u8 client_nonce[16];
	__u8 server_nonce[16];
	__u64 pos;
};

#define RS_RESUME_LABEL_CLIENT	0x7273726573756d63ULL	/* "rsresumc" */
#define RS_RESUME_LABEL_SERVER	0x7273726573756d73ULL	/* "rsresums" */

#endif /* RDMASOCK_PROTO_H */
