// SPDX-License-Identifier: GPL-2.0
/* Probe: struct proto says where an AF_INET6 socket's ipv6_pinfo is (6.5+), not obj_size. */
#include <net/sock.h>

struct proto probe_proto = {
	.ipv6_pinfo_offset = 0,
};
