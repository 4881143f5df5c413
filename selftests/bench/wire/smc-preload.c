// SPDX-License-Identifier: GPL-2.0
/*
 * make bench-wire's SMC-R carrier: an unchanged program's TCP sockets made AF_SMC ones (what
 * smc-tools' smc_run does; smc-tools is not in Debian).  SMC sets each connection up over TCP
 * (its CLC handshake) and moves the bytes over RDMA, or stays on TCP when it cannot (counted in
 * SMC's statistics, which wire.py reads: smc.py).
 *
 *   LD_PRELOAD=build/bench-wire/smc-preload.so program ...
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>

#ifndef AF_SMC
#define AF_SMC 43
#endif
#define SMCPROTO_SMC	0	/* SMC over IPv4 */
#define SMCPROTO_SMC6	1	/* SMC over IPv6 */

int socket(int domain, int type, int protocol)
{
	static int (*real)(int, int, int);

	if (!real)
		real = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
	if ((domain == AF_INET || domain == AF_INET6) && (type & 0xf) == SOCK_STREAM &&
	    (protocol == 0 || protocol == IPPROTO_TCP))
		return real(AF_SMC, type, domain == AF_INET6 ? SMCPROTO_SMC6 : SMCPROTO_SMC);
	return real(domain, type, protocol);
}
