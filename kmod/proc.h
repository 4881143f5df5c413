/* SPDX-License-Identifier: GPL-2.0 */
/* rdmasock proc.c: /proc/net/rdmasock and /proc/net/rdmasock_stat. */
#ifndef RDMASOCK_PROC_H
#define RDMASOCK_PROC_H

#include "rdmasock.h"

void rs_proc_add(struct rs_sock *rs);
void rs_proc_del(struct rs_sock *rs);
int rs_proc_init(void);
void rs_proc_exit(void);

#endif /* RDMASOCK_PROC_H */
