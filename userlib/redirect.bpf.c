// SPDX-License-Identifier: GPL-2.0
/*
 * The cgroup switch's BPF program (rdmasock-ctl(8)): on update_socket_protocol (6.6+), which
 * socket(2) calls for the protocol it will create, it asks the rdmasock module: TCP sockets of
 * the processes of enabled cgroups become IPPROTO_RDMASOCK sockets.  The decision, the cgroup
 * table and the policy rules are the module's (kmod/policy.c); calling its kfunc also makes the
 * loaded program hold the module, so the module cannot go while the program is attached.
 *
 * It reads no kernel structure: nothing to relocate, it loads unchanged on any kernel with the
 * hook and the module.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

extern int bpf_rdmasock_socket(int family, int type, int protocol) __ksym;

/* fmod_ret: a non-zero return is socket()'s protocol, 0 leaves the call as it was. */
SEC("fmod_ret/update_socket_protocol")
int BPF_PROG(rdmasock_redirect, int family, int type, int protocol)
{
	return bpf_rdmasock_socket(family, type, protocol);
}

char LICENSE[] SEC("license") = "GPL";
