// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock hello: what each end tells the other of its receive ring and its features when a
 * connection starts: in the CM's REQ and REP (cm.c), or in OPEN and ACCEPT on a reused QP
 * (park.c).  docs/design.md, "Wire format", describes it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/random.h>
#include "rdmasock.h"
#include "core.h"
#include "hello.h"

/*
 * A client offers resume when the module has a resume port; a server answers the offer when its
 * listener has one (RS_F_RESUMABLE on the listener, set at listen()).  The client's hello has no
 * connection id; the server's names the connection (random, nonzero).
 */
static bool rs_hello_offers_resume(struct rs_sock *rs)
{
	if (rs->parent)
		return test_bit(RS_F_RESUMABLE, &rs->flags) &&
		       test_bit(RS_F_RESUMABLE, &rs->parent->flags);
	return READ_ONCE(rs_resume_port) && READ_ONCE(rs_resume_on);
}

/* One end's half of the resume key: the key is the XOR of both, in either order. */
static void rs_resume_key_add(struct rs_sock *rs, const u8 *secret)
{
	u8 *key = (u8 *)&rs->resume_key;
	int i;

	BUILD_BUG_ON(sizeof(rs->resume_key) != sizeof(rs->resume_secret));
	for (i = 0; i < sizeof(rs->resume_key); i++)
		key[i] ^= secret[i];
}

u8 rs_hello_build(struct rs_sock *rs, struct rs_hello_ext *e)
{
	struct rs_hello *h = &e->h;
	bool resume = rs_hello_offers_resume(rs);

	memset(e, 0, sizeof(*e));
	h->magic = cpu_to_be32(RS_HELLO_MAGIC);
	h->version = RS_PROTO_VERSION;
	h->flags = RS_HELLO_F_GROW | (resume ? RS_HELLO_F_RESUME : 0);
	h->len = cpu_to_be16(resume ? sizeof(*e) : sizeof(*h));
	h->ring_addr = cpu_to_be64(rs->rx.mr->iova);
	h->ring_rkey = cpu_to_be32(rs->rx.mr->rkey);
	h->ring_size = cpu_to_be32(rs->rx.size);
	/* The connection's port at the server: the client's destination, a child's own. */
	h->port = rs_addr_port((struct sockaddr *)(rs->parent ? &rs->local_addr : &rs->peer_addr));
	if (!resume) {
		clear_bit(RS_F_RESUMABLE, &rs->flags);
		return sizeof(*h);
	}
	/* (A client's offer: its hello parse accepts an answer only then.) */
	set_bit(RS_F_RESUMABLE, &rs->flags);
	get_random_bytes(rs->resume_secret, sizeof(rs->resume_secret));
	memcpy(e->r.secret, rs->resume_secret, sizeof(e->r.secret));
	if (!rs->parent)
		/* The server's half follows. */
		memset(&rs->resume_key, 0, sizeof(rs->resume_key));
	rs_resume_key_add(rs, rs->resume_secret);
	if (rs->parent) {
		while (!rs->resume_id)
			rs->resume_id = get_random_u64();
		e->r.conn_id = cpu_to_be64(rs->resume_id);
	}
	return sizeof(*e);
}

/*
 * Accept a peer's hello only if every field is what this version allows; @reused: it came in OPEN
 * or ACCEPT (park.c), which must say they are the sender's READY, where the CM's REQ and REP never
 * do.  @port: the connection's TCP port at the server, which the hello must name (network order).
 */
int rs_hello_parse(struct rs_sock *rs, const void *data, u8 len, bool reused, __be16 port)
{
	const struct rs_hello_ext *e = data;
	const struct rs_hello *h = data;
	bool resume;
	u32 size;

	if (!data || len < sizeof(*h) || be32_to_cpu(h->magic) != RS_HELLO_MAGIC)
		return -EPROTO;
	resume = h->flags & RS_HELLO_F_RESUME;
	if (h->version != RS_PROTO_VERSION ||
	    be16_to_cpu(h->len) != (resume ? sizeof(*e) : sizeof(*h)) ||
	    len < be16_to_cpu(h->len) ||
	    (h->flags & ~RS_HELLO_FLAGS) || h->reserved16 || h->reserved ||
	    !(h->flags & RS_HELLO_F_READY) != !reused)
		return -EPROTONOSUPPORT;
	if (!port || h->port != port)
		return -EPROTO;
	size = be32_to_cpu(h->ring_size);
	if (!rs_ring_size_ok(size) || size % PAGE_SIZE)
		return -EPROTO;
	if (resume) {
		/* A server answers an offer only, and names the connection; a client never does. */
		if (!rs->parent && (!test_bit(RS_F_RESUMABLE, &rs->flags) || !e->r.conn_id))
			return -EPROTO;
		if (rs->parent && e->r.conn_id)
			return -EPROTO;
	}
	rs->peer_ring_addr = be64_to_cpu(h->ring_addr);
	rs->peer_rkey = be32_to_cpu(h->ring_rkey);
	rs->peer_ring_size = size;
	if (h->flags & RS_HELLO_F_GROW)
		set_bit(RS_F_PEER_GROWS, &rs->flags);
	if (!resume) {
		clear_bit(RS_F_RESUMABLE, &rs->flags);
		return 0;
	}
	if (rs->parent) {
		/* Our half is drawn when we answer (rs_hello_build). */
		memset(&rs->resume_key, 0, sizeof(rs->resume_key));
		set_bit(RS_F_RESUMABLE, &rs->flags);
	} else {
		rs->resume_id = be64_to_cpu(e->r.conn_id);
	}
	rs_resume_key_add(rs, e->r.secret);
	return 0;
}

/*
 * The TCP port a client's REQ names, read before there is a socket to parse it for (the door,
 * cm.c, gives the request to that port's listener, whose child then parses it whole): 0 when
 * the hello is not one of this version's.
 */
__be16 rs_hello_peek_port(const void *data, u8 len)
{
	const struct rs_hello *h = data;

	if (!data || len < sizeof(*h) || be32_to_cpu(h->magic) != RS_HELLO_MAGIC ||
	    h->version != RS_PROTO_VERSION)
		return 0;
	return h->port;
}
