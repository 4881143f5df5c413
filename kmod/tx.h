/* SPDX-License-Identifier: GPL-2.0 */
/* rdmasock tx.c: the transmit side. */
#ifndef RDMASOCK_TX_H
#define RDMASOCK_TX_H

#include "rdmasock.h"

void rs_send_done(struct ib_cq *cq, struct ib_wc *wc);
int rs_rdma_sendmsg(struct rs_sock *rs, struct msghdr *msg, size_t len);
bool rs_tx_idle(struct rs_sock *rs);
void rs_tx_push(struct rs_sock *rs);
void rs_tx_init(struct rs_sock *rs);
void rs_tx_stop(struct rs_sock *rs);
u32 rs_tx_space(struct rs_sock *rs);
int rs_tx_snapshot(struct rs_sock *rs);

#endif /* RDMASOCK_TX_H */
