/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmasock wire format, version 1: everything one end sends the other, and nothing else.
 * docs/design.md ("Wire format", "Validation") describes it.  Included by the module and by
 * userspace test peers (selftests/hostile_peer.c): only <linux/types.h> types, no kernel macros.
 * All multi-byte fields are big-endian on the wire.
 */
#ifndef RDMASOCK_PROTO_H
#define RDMASOCK_PROTO_H

#include <linux/types.h>

#define RS_HELLO_MAGIC		0x52534f4bU	/* "RSOK" */
#define RS_PROTO_VERSION	1

/* A REJ's private data (a big-endian u32), why the server refused RDMA for this connection. */
#define RS_REJ_HELLO		0x52534801U	/* your hello does not parse */
#define RS_REJ_BUSY		0x52534802U	/* backlog full, retry */
#define RS_REJ_TCP		0x52534803U	/* go to TCP (a reuseport group's choice) */

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
	__be32 reserved[2];	/* zero */
};

#define RS_HELLO_SIZE		32

/* The sender takes RESIZE and answers with SWITCH: its peer may start small and grow the ring. */
#define RS_HELLO_F_GROW		0x01
#define RS_HELLO_FLAGS		RS_HELLO_F_GROW

/*
 * The 32-bit immediate of every message says what it is: the top two bits are the type, the low 30
 * bits its argument (rs_imm(), rs_imm_type(), rs_imm_arg(); host order, byte-swapped at the post).
 *   DATA      (RDMA WRITE with immediate) n bytes were written at the receiver's producer cursor.
 *   CONSUMED  (SEND with immediate, no payload) the receiver has consumed up to cursor mod 2^30.
 *   CTRL      (SEND with immediate) READY, FIN, RESET ...: no payload, but for RESIZE, whose
 *             payload is one struct rs_resize.
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
};

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

#endif /* RDMASOCK_PROTO_H */
