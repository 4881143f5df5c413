/* SPDX-License-Identifier: GPL-2.0 */
/* rdmasock rx.c: the receive side. */
#ifndef RDMASOCK_RX_H
#define RDMASOCK_RX_H

#include "rdmasock.h"

bool rs_urg_pending(struct rs_sock *rs);
bool rs_urg_at_mark(struct rs_sock *rs);
int rs_rdma_recv_urg(struct rs_sock *rs, struct msghdr *msg, size_t len, int flags);
int rs_tx_error(struct rs_sock *rs);
void rs_recv_done(struct ib_cq *cq, struct ib_wc *wc);
bool rs_rx_readable(struct rs_sock *rs, int lowat);
int rs_rdma_recvmsg(struct rs_sock *rs, struct msghdr *msg, size_t len, int flags);
void rs_rx_announce(struct rs_sock *rs, bool force);

#endif /* RDMASOCK_RX_H */
