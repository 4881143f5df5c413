/* SPDX-License-Identifier: GPL-2.0 */
/* rdmasock cm.c: rdma_cm: connect, the door (the namespace's RDMA listener), accept. */
#ifndef RDMASOCK_CM_H
#define RDMASOCK_CM_H

#include "rdmasock.h"

int rs_cm_bind(struct rs_sock *rs, struct sockaddr *addr, int len);
void rs_cm_id_drop(struct rs_sock *rs);
int rs_cm_connect(struct rs_sock *rs, struct sockaddr *addr, int len, int *reason);
struct rs_sock *rs_cm_accept_ready(struct rs_sock *listener);
void rs_cm_listener_close(struct rs_sock *rs);
int rs_door_join(struct rs_sock *rs);
int rs_cm_module_init(void);
void rs_cm_module_exit(void);

extern unsigned int rs_rdma_port;
struct rs_sock *rs_cm_child_new(struct rs_sock *listener);
bool rs_backlog_full(struct rs_sock *listener);
bool rs_cm_child_queue(struct rs_sock *child);

#endif /* RDMASOCK_CM_H */
