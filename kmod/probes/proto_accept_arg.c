// SPDX-License-Identifier: GPL-2.0
/* Probe: proto_ops.accept takes a struct proto_accept_arg (6.10+) instead of (flags, kern). */
#include <linux/net.h>
#include <net/sock.h>

static int probe_accept(struct socket *sock, struct socket *newsock, struct proto_accept_arg *arg)
{
	return arg->flags;
}

const struct proto_ops probe_proto_accept_arg_ops = {
	.accept = probe_accept,
};
