/* SPDX-License-Identifier: GPL-2.0 */
/* rdmasock close.c: shutdown, close, orphans. */
#ifndef RDMASOCK_CLOSE_H
#define RDMASOCK_CLOSE_H

#include "rdmasock.h"

int rs_shutdown(struct rs_sock *rs, int how);
void rs_send_fin(struct rs_sock *rs);
void rs_reset_abandoned(struct rs_sock *rs);
void rs_release(struct rs_sock *rs);
void rs_close_work(struct work_struct *work);
int rs_orphan_count(void);

#endif /* RDMASOCK_CLOSE_H */
