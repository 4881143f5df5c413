/* SPDX-License-Identifier: GPL-2.0 */
/* rdmasock cm.c: rdma_cm: connect, listen, accept, reuseport groups. */
#ifndef RDMASOCK_CM_H
#define RDMASOCK_CM_H

#include "rdmasock.h"

int rs_cm_bind(struct rs_sock *rs, struct sockaddr *addr, int len);
int rs_cm_listen(struct rs_sock *rs, int backlog);
int rs_cm_bind_listener(struct rs_sock *rs);
void rs_cm_id_drop(struct rs_sock *rs);
int rs_cm_connect(struct rs_sock *rs, struct sockaddr *addr, int len, int *reason);
struct rs_sock *rs_cm_accept_ready(struct rs_sock *listener);
void rs_cm_listener_close(struct rs_sock *rs);
int rs_rp_join(struct rs_sock *rs, int backlog);
struct rs_sock *rs_cm_child_new(struct rs_sock *listener);
bool rs_backlog_full(struct rs_sock *listener);
bool rs_cm_child_queue(struct rs_sock *child);

#endif /* RDMASOCK_CM_H */
