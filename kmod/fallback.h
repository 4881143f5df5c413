/* SPDX-License-Identifier: GPL-2.0 */
/* rdmasock fallback.c: the kernel TCP carrier. */
#ifndef RDMASOCK_FALLBACK_H
#define RDMASOCK_FALLBACK_H

#include "rdmasock.h"

extern const struct rs_carrier rs_tcp_carrier;

void rs_tcp_set_keepalive(struct sock *tsk, bool on);
int rs_tcp_ensure(struct rs_sock *rs, int family);
int rs_tcp_ensure_read(struct rs_sock *rs, int level);
void rs_tcp_take_port(struct rs_sock *rs);
void rs_tcp_give_port(struct rs_sock *rs);
int rs_tcp_connect_start(struct rs_sock *rs, struct sockaddr *addr, int len, int reason);
void rs_tcp_attach(struct rs_sock *rs, struct socket *tcp);
void rs_tcp_resume_attach(struct rs_sock *rs, struct socket *tcp, int reason);
bool rs_tcp_foreign(struct socket *tcp);
struct rs_sock *rs_tcp_owner(struct sock *tsk);
void rs_tcp_detach(struct rs_sock *rs);
struct socket *rs_tcp_unhook(struct rs_sock *rs);
void rs_tcp_sync(struct rs_sock *rs);
void rs_sol_init(struct rs_sock *rs);
void rs_sol_adopt_priority(struct rs_sock *rs);
int rs_tcp_set_rcvlowat(struct rs_sock *rs, int val);
void rs_sol_inherit(struct rs_sock *child, const struct rs_sock *listener);
void rs_sol_seed_tcp_child(struct rs_sock *child, struct sock *tsk);
bool rs_neg_cache_hit(const struct net *net, const struct sockaddr *addr);
void rs_neg_cache_add(const struct net *net, const struct sockaddr *addr);
void rs_neg_cache_forget_port(const struct net *net, __be16 port);
void rs_neg_cache_exit(void);

#endif /* RDMASOCK_FALLBACK_H */
