/* SPDX-License-Identifier: GPL-2.0 */
/* rdmasock park.c: reused connections: parked QPs, OPEN and ACCEPT. */
#ifndef RDMASOCK_PARK_H
#define RDMASOCK_PARK_H

#include "rdmasock.h"

void rs_park_init(struct rs_sock *rs);
void rs_park_offer(struct rs_sock *rs);
bool rs_park_hold(struct rs_sock *rs, bool idle);
int rs_park_take(struct rs_sock *rs, struct sockaddr *addr, int len);
unsigned int rs_park_count(struct net *net);
int rs_park_module_init(void);
void rs_park_module_exit(void);

#endif /* RDMASOCK_PARK_H */
