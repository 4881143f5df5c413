/* SPDX-License-Identifier: GPL-2.0 */
/* rdmasock resume.c: connections that outlive their RDMA path, carried on over TCP. */
#ifndef RDMASOCK_RESUME_H
#define RDMASOCK_RESUME_H

#include "rdmasock.h"

void rs_resume_sock_init(struct rs_sock *rs);
void rs_resume_register(struct rs_sock *rs);
void rs_resume_stop(struct rs_sock *rs);
int rs_resume_listen(struct net *net);
int rs_resume_init(void);
void rs_resume_exit(void);

#endif /* RDMASOCK_RESUME_H */
