/* SPDX-License-Identifier: GPL-2.0 */
/* rdmasock grow.c: growing rings (RESIZE / SWITCH). */
#ifndef RDMASOCK_GROW_H
#define RDMASOCK_GROW_H

#include "rdmasock.h"

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

#endif /* RDMASOCK_GROW_H */
