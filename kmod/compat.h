/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one place where kernel API differences between the supported kernels are bridged.
 * Every RDMASOCK_* symbol used here comes from a feature probe (kmod/probes/, run by
 * kmod/build.sh), never from a version number.
 */
#ifndef RDMASOCK_COMPAT_H
#define RDMASOCK_COMPAT_H

#include <linux/net.h>
#include <net/sock.h>
#include "compat_generated.h"

/*
 * proto_ops.accept: 6.10 folded (flags, kern) into struct proto_accept_arg.  The family code works
 * on this neutral form; af_rdmasock.c wraps it in whichever signature the kernel wants.
 */
struct rs_accept_arg {
	int flags;
	bool kern;
};

/*
 * SOL_SOCKET setsockopt: where the kernel offers it (6.6+), it comes to our setsockopt, which
 * passes it on to our TCP socket at once; elsewhere it lands on our socket alone, and reaches the
 * TCP socket before the next call delegated to it (rs_tcp_sync()).
 */
static inline void rs_set_custom_sockopt(struct socket *sock)
{
#ifdef RDMASOCK_SOCK_CUSTOM_SOCKOPT
	set_bit(SOCK_CUSTOM_SOCKOPT, &sock->flags);
#endif
}

/*
 * A kernel socket (a kernel listener's child) that is to hold its namespace from now on, as a
 * user's does.  Where the kernel has no helper for it (6.1), kernel sockets hold no reference of
 * any kind and the upgrade is what sk_alloc() does for a user's socket.
 */
static inline void rs_sk_net_hold(struct sock *sk)
{
	if (sk->sk_net_refcnt)
		return;		/* a user's socket (a client's resume): it holds it already */
#ifdef RDMASOCK_SK_NET_REFCNT_UPGRADE
	sk_net_refcnt_upgrade(sk);
#else
	sk->sk_net_refcnt = 1;
	get_net_track(sock_net(sk), &sk->ns_tracker, GFP_KERNEL);
	sock_inuse_add(sock_net(sk), 1);
#endif
}

#endif /* RDMASOCK_COMPAT_H */
