// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock rings: scattered order-0 pages that the CPU sees as one range through vmap() and the HCA
 * sees as one range through a fast-registration MR.  No high-order allocation is ever needed, so a
 * fragmented host can still open connections (SMC-R's contiguous buffers fail there).
 *
 * What rings pin is charged twice, as TCP's buffers are: to the socket's memory cgroup (the pages
 * are __GFP_ACCOUNT, allocated on behalf of sk->sk_memcg, so memory.max bounds them), and to one
 * module-wide budget no larger than TCP's own hard limit (tcp_mem[2], in pages): a ring that would
 * exceed it is not allocated, and the connection falls back to TCP or stays at the size it has.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/scatterlist.h>
#include <linux/random.h>
#include <linux/sched/mm.h>
#include <net/tcp.h>
#include "rdmasock.h"
#include "ring.h"
#include "stats.h"

static atomic_long_t rs_pinned_pages = ATOMIC_LONG_INIT(0);

/*
 * Charge @npages to the budget if they fit.  Never above the limit, not even for an instant: the
 * gauge (ring_pages_pinned) is read by users while refused charges come and go.
 */
static bool rs_pin_charge(unsigned int npages)
{
	long limit = READ_ONCE(tcp_prot.sysctl_mem[2]);
	long cur = atomic_long_read(&rs_pinned_pages);

	do {
		if (cur + npages > limit)
			return false;
	} while (!atomic_long_try_cmpxchg(&rs_pinned_pages, &cur, cur + npages));
	return true;
}

/* Would a ring of @size fit the budget now?  (A hint: the allocation itself is what counts.) */
bool rs_ring_fits(u32 size)
{
	return atomic_long_read(&rs_pinned_pages) + (size >> PAGE_SHIFT) <=
	       READ_ONCE(tcp_prot.sysctl_mem[2]);
}

/* Pages every ring of every connection pins now (/proc/net/rdmasock_stat). */
long rs_ring_pinned_pages(void)
{
	return atomic_long_read(&rs_pinned_pages);
}

/* True when the MR could not be deregistered: the ring is leaked, and its PD must be too. */
bool rs_ring_free(struct rs_ring *ring)
{
	unsigned int i;

	if (ring->mr && ib_dereg_mr(ring->mr)) {
		/*
		 * The HCA may still hold the registration and write there: these pages must never
		 * return to the allocator.  Leak them (and say so) rather than hand them out.
		 */
		pr_warn_ratelimited("cannot deregister a ring MR: leaking its %u pages\n",
				    ring->npages);
		memset(ring, 0, sizeof(*ring));
		return true;
	}
	if (ring->nents)
		ib_dma_unmap_sg(ring->dev, ring->sgl, ring->npages, DMA_BIDIRECTIONAL);
	if (ring->buf)
		vunmap(ring->buf);
	for (i = 0; ring->pages && i < ring->npages; i++)
		if (ring->pages[i])
			__free_page(ring->pages[i]);
	kvfree(ring->pages);
	kvfree(ring->sgl);
	if (ring->charged)
		atomic_long_sub(ring->npages, &rs_pinned_pages);
	memset(ring, 0, sizeof(*ring));
	return false;
}

/* A ring of @rs: a leaked MR pins the PD, which teardown then leaks too. */
void rs_ring_release(struct rs_sock *rs, struct rs_ring *ring)
{
	if (rs_ring_free(ring))
		rs->pd_pinned = true;
}

/* A failure leaves what it got for rs_ring_free(). */
static int rs_ring_pages(struct rs_ring *ring)
{
	unsigned int i;

	if (rs_should_fail("ring_pages"))
		return -ENOMEM;
	ring->pages = kvcalloc(ring->npages, sizeof(*ring->pages), GFP_KERNEL_ACCOUNT);
	ring->sgl = kvcalloc(ring->npages, sizeof(*ring->sgl), GFP_KERNEL_ACCOUNT);
	if (!ring->pages || !ring->sgl)
		return -ENOMEM;
	sg_init_table(ring->sgl, ring->npages);
	for (i = 0; i < ring->npages; i++) {
		/* A ring is worth no reclaim storm or OOM kill: without it we fall back. */
		ring->pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NORETRY |
					    __GFP_NOWARN);
		if (!ring->pages[i])
			return -ENOMEM;
		sg_set_page(&ring->sgl[i], ring->pages[i], PAGE_SIZE, 0);
	}
	ring->buf = vmap(ring->pages, ring->npages, VM_MAP, PAGE_KERNEL);
	return ring->buf ? 0 : -ENOMEM;
}

/*
 * Allocate @size bytes (a multiple of PAGE_SIZE) and an MR able to map them.  The MR is registered
 * later by an IB_WR_REG_MR on the connection's own QP (rs_ring_reg_wr), which gives the key to
 * that QP's peer only.
 */
int rs_ring_alloc(struct rs_ring *ring, struct ib_pd *pd, u32 size, struct sock *sk)
{
	struct mem_cgroup *old_memcg;
	int err, n;

	memset(ring, 0, sizeof(*ring));
	ring->dev = pd->device;
	ring->npages = size >> PAGE_SHIFT;
	if (!rs_pin_charge(ring->npages)) {
		memset(ring, 0, sizeof(*ring));
		return -ENOBUFS;
	}
	ring->charged = true;
	ring->size = size;
	/* Charged to the socket's cgroup, whatever task runs this (a CM handler, a work item). */
	old_memcg = set_active_memcg(sk->sk_memcg);
	err = rs_ring_pages(ring);
	set_active_memcg(old_memcg);
	if (err)
		goto fail;
	n = ib_dma_map_sg(ring->dev, ring->sgl, ring->npages, DMA_BIDIRECTIONAL);
	if (n <= 0) {
		err = -EIO;
		goto fail;
	}
	ring->nents = n;
	ring->mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, ring->npages);
	if (IS_ERR(ring->mr)) {
		err = PTR_ERR(ring->mr);
		ring->mr = NULL;
		goto fail;
	}
	n = ib_map_mr_sg(ring->mr, ring->sgl, ring->nents, NULL, PAGE_SIZE);
	if (n != ring->nents) {
		err = n < 0 ? n : -EINVAL;
		goto fail;
	}
	/*
	 * The address the peer writes to is ours to choose (an FRWR MR's iova): a random one per
	 * ring, page aligned, far above any physical address, instead of the DMA address
	 * ib_map_mr_sg() put there, which without an IOMMU is the physical one and would tell the
	 * peer where our memory is.  Both the REG_MR and our own SGEs use it.
	 */
	ring->mr->iova = (get_random_u64() & GENMASK_ULL(61, 32) & PAGE_MASK) | BIT_ULL(62);
	/* A fresh key for every registration: a stale peer can never hit a reused ring. */
	ib_update_fast_reg_key(ring->mr, ib_inc_rkey(ring->mr->rkey));
	return 0;
fail:
	if (rs_ring_free(ring))
		rs_sk(sk)->pd_pinned = true;
	return err;
}

void rs_ring_reg_wr(struct rs_ring *ring, struct ib_reg_wr *wr, int access)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr.opcode = IB_WR_REG_MR;
	wr->mr = ring->mr;
	wr->key = ring->mr->rkey;
	wr->access = access;
}

/*
 * Hand bytes [@off, @off + @len) of the ring to the CPU (after the HCA wrote them) or to the HCA
 * (after the CPU wrote them).  A no-op on coherent machines and on software devices, but the
 * DMA API contract on the others.
 */
void rs_ring_sync(struct rs_ring *ring, u32 off, u32 len, bool for_cpu)
{
	struct scatterlist *sg = ring->sgl;
	u32 pos = 0;
	int i = 0;

	/* Unmerged mapping (the usual case): jump to the first page instead of walking to it. */
	if (ring->nents == ring->npages) {
		i = off >> PAGE_SHIFT;
		sg += i;
		pos = i << PAGE_SHIFT;
	}
	for (; i < ring->nents; i++, sg = sg_next(sg)) {
		u32 slen = sg_dma_len(sg), from, to;

		if (pos + slen > off && pos < off + len) {
			from = max(pos, off) - pos;
			to = min(pos + slen, off + len) - pos;
			if (for_cpu)
				ib_dma_sync_single_for_cpu(ring->dev, sg_dma_address(sg) + from,
							   to - from, DMA_BIDIRECTIONAL);
			else
				ib_dma_sync_single_for_device(ring->dev, sg_dma_address(sg) + from,
							      to - from, DMA_BIDIRECTIONAL);
		}
		pos += slen;
		if (pos >= off + len)
			break;
	}
}
