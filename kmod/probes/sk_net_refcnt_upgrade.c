// SPDX-License-Identifier: GPL-2.0
/* Probe: sk_net_refcnt_upgrade() makes a kernel socket hold its namespace (6.15, and 6.12.y). */
#include <net/sock.h>

static void probe_upgrade(struct sock *sk)
{
	sk_net_refcnt_upgrade(sk);
}

void (*const probe_sk_net_refcnt_upgrade)(struct sock *sk) = probe_upgrade;
