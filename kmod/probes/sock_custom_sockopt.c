// SPDX-License-Identifier: GPL-2.0
/* Probe: a socket can take its SOL_SOCKET setsockopt calls itself (SOCK_CUSTOM_SOCKOPT, 6.6+). */
#include <linux/net.h>

int rs_probe(void);
int rs_probe(void)
{
	return SOCK_CUSTOM_SOCKOPT;
}
