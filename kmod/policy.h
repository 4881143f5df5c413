/* SPDX-License-Identifier: GPL-2.0 */
/* The per-cgroup switch and its policy rules (policy.c). */
#ifndef RDMASOCK_POLICY_H
#define RDMASOCK_POLICY_H

#include <linux/socket.h>
#include <linux/types.h>

struct rs_policy;

struct rs_policy *rs_policy_get_current(void);
void rs_policy_put(struct rs_policy *p);
bool rs_policy_allows(const struct rs_policy *p, const struct sockaddr *sa, bool listening);
void rs_policy_init(int ipproto);
void rs_policy_exit(void);

#endif /* RDMASOCK_POLICY_H */
