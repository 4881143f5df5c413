/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one place where kernel API differences between the supported kernels are bridged.
 * Every RDMASOCK_* symbol used here comes from a feature probe (kmod/probes/, run by
 * kmod/build.sh), never from a version number.
 */
#ifndef RDMASOCK_COMPAT_H
#define RDMASOCK_COMPAT_H

#include <linux/net.h>
#include "compat_generated.h"

/*
 * proto_ops.accept: 6.10 folded (flags, kern) into struct proto_accept_arg.  The family code works
 * on this neutral form; af_rdmasock.c wraps it in whichever signature the kernel wants.
 */
struct rs_accept_arg {
	int flags;
	bool kern;
};

#endif /* RDMASOCK_COMPAT_H */
