/* SPDX-License-Identifier: GPL-2.0 */
/* rdmasock hello.c: the hello each end sends, in the CM exchange or on a reused QP (park.c). */
#ifndef RDMASOCK_HELLO_H
#define RDMASOCK_HELLO_H

#include "rdmasock.h"

/* The hello and, when resume is offered, its extension: all the private data a REQ has room for. */
struct rs_hello_ext {
	struct rs_hello h;
	struct rs_hello_resume r;
};

u8 rs_hello_build(struct rs_sock *rs, struct rs_hello_ext *e);
int rs_hello_parse(struct rs_sock *rs, const void *data, u8 len, bool reused, __be16 port);
__be16 rs_hello_peek_port(const void *data, u8 len);

#endif /* RDMASOCK_HELLO_H */
