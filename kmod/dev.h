/* SPDX-License-Identifier: GPL-2.0 */
/* rdmasock dev.c: which sockets use which RDMA device; device removal. */
#ifndef RDMASOCK_DEV_H
#define RDMASOCK_DEV_H

#include "rdmasock.h"

int rs_dev_init(void);
void rs_dev_exit(void);
int rs_dev_attach(struct rs_sock *rs, struct ib_device *ibdev);
void rs_dev_detach(struct rs_sock *rs);

#endif /* RDMASOCK_DEV_H */
