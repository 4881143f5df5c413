/* SPDX-License-Identifier: GPL-2.0 */
/* rdmasock conn.c: one RDMA connection's resources. */
#ifndef RDMASOCK_CONN_H
#define RDMASOCK_CONN_H

#include "rdmasock.h"

int rs_conn_create(struct rs_sock *rs, struct rdma_cm_id *id);
int rs_tx_ring_create(struct rs_sock *rs);
void rs_conn_reset(struct rs_sock *rs);
void rs_teardown_rdma(struct rs_sock *rs, bool in_handler);
void rs_teardown_work(struct work_struct *work);

#endif /* RDMASOCK_CONN_H */
