/* SPDX-License-Identifier: GPL-2.0 */
/* rdmasock ring.c: rings: pages, vmap, one FRWR MR. */
#ifndef RDMASOCK_RING_H
#define RDMASOCK_RING_H

#include "rdmasock.h"

int rs_ring_alloc(struct rs_ring *ring, struct ib_pd *pd, u32 size, struct sock *sk);
long rs_ring_pinned_pages(void);
bool rs_ring_fits(u32 size);
bool rs_ring_free(struct rs_ring *ring);
void rs_ring_release(struct rs_sock *rs, struct rs_ring *ring);
void rs_ring_sync(struct rs_ring *ring, u32 off, u32 len, bool for_cpu);
void rs_ring_reg_wr(struct rs_ring *ring, struct ib_reg_wr *wr, int access);

#endif /* RDMASOCK_RING_H */
