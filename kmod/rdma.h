/* SPDX-License-Identifier: GPL-2.0 */
/* rdmasock rdma.c: the RDMA carrier. */
#ifndef RDMASOCK_RDMA_H
#define RDMASOCK_RDMA_H

#include "rdmasock.h"

extern const struct rs_carrier rs_rdma_carrier;

bool rs_accept_ready(struct rs_sock *rs);
int rs_wait_connect(struct rs_sock *rs, long *timeo);
void rs_connect_established(struct rs_sock *rs);

#endif /* RDMASOCK_RDMA_H */
