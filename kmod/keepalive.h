/* SPDX-License-Identifier: GPL-2.0 */
/* rdmasock keepalive.c: SO_KEEPALIVE and the persist probe. */
#ifndef RDMASOCK_KEEPALIVE_H
#define RDMASOCK_KEEPALIVE_H

#include "rdmasock.h"

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
void rs_keepalive_set(struct rs_sock *rs, bool on);

#endif /* RDMASOCK_KEEPALIVE_H */
