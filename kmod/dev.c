// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock device layer: an ib_client that knows which sockets use which RDMA device, so that when
 * a device goes away (rdma link delete, driver unload) every socket on it fails promptly and frees
 * its PD/CQ/QP/MRs before the driver tears the device down.
 *
 * ib_core removes clients in reverse registration order, so our remove() runs before rdma_cm's:
 * by the time rdma_cm sends DEVICE_REMOVAL, our connections have destroyed their cm_ids already.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include "rdmasock.h"
#include "core.h"
#include "dev.h"
#include "stats.h"

static LIST_HEAD(rs_dev_socks);
/* A spinlock, not a mutex: remove() tests the list inside a wait_event() condition. */
static DEFINE_SPINLOCK(rs_dev_lock);
static DECLARE_WAIT_QUEUE_HEAD(rs_dev_wait);
/*
 * Devices whose remove() runs: rdma_cm still offers them (its client goes after ours), so new
 * connections could attach for as long as peers keep connecting and hold the removal off.
 */
static LIST_HEAD(rs_dev_removing);

struct rs_dev_gone {
	struct list_head node;
	struct ib_device *ibdev;
};

static bool rs_dev_is_removing(struct ib_device *ibdev)
{
	struct rs_dev_gone *g;

	lockdep_assert_held(&rs_dev_lock);
	list_for_each_entry(g, &rs_dev_removing, node)
		if (g->ibdev == ibdev)
			return true;
	return false;
}

/* -ENODEV when @ibdev is going away: the connection then fails (the client falls back). */
int rs_dev_attach(struct rs_sock *rs, struct ib_device *ibdev)
{
	if (rs_should_fail("dev_attach"))
		return -ENODEV;
	spin_lock_bh(&rs_dev_lock);
	if (rs_dev_is_removing(ibdev)) {
		spin_unlock_bh(&rs_dev_lock);
		return -ENODEV;
	}
	rs->ibdev = ibdev;
	strscpy(rs->devname, dev_name(&ibdev->dev), sizeof(rs->devname));
	list_add_tail(&rs->dev_node, &rs_dev_socks);
	spin_unlock_bh(&rs_dev_lock);
	return 0;
}

void rs_dev_detach(struct rs_sock *rs)
{
	spin_lock_bh(&rs_dev_lock);
	if (rs->ibdev) {
		list_del_init(&rs->dev_node);
		rs->ibdev = NULL;
	}
	spin_unlock_bh(&rs_dev_lock);
	wake_up_all(&rs_dev_wait);
}

static bool rs_dev_in_use(struct ib_device *ibdev)
{
	struct rs_sock *rs;
	bool used = false;

	spin_lock_bh(&rs_dev_lock);
	list_for_each_entry(rs, &rs_dev_socks, dev_node)
		if (rs->ibdev == ibdev)
			used = true;
	spin_unlock_bh(&rs_dev_lock);
	return used;
}

static void rs_dev_remove(struct ib_device *ibdev, void *client_data)
{
	struct rs_dev_gone gone = { .ibdev = ibdev };
	static unsigned int removals;	/* under rs_dev_lock */
	struct rs_sock *rs;
	unsigned int n = 0;

	spin_lock_bh(&rs_dev_lock);
	list_add(&gone.node, &rs_dev_removing);	/* no socket attaches from here on */
	removals = removals + 1 ? : 1;
	list_for_each_entry(rs, &rs_dev_socks, dev_node) {
		if (rs->ibdev != ibdev)
			continue;
		/* A connection that can resumes over TCP; teardown_work detaches it either way. */
		if (!rs_path_lost(rs, -ENETDOWN))
			rs_abort(rs, -ENETDOWN);
		/* In each namespace that had one on it (a shared device serves them all). */
		rs_count_dev_removal(sock_net(&rs->sk), removals);
		n++;
	}
	if (n)
		rs_count_dev_removal(NULL, removals);
	spin_unlock_bh(&rs_dev_lock);
	if (n) {
		pr_info("%s going away: resetting %u connection(s)\n",
			dev_name(&ibdev->dev), n);
	}
	/* Each aborted socket's teardown work detaches it; wait for all of them. */
	wait_event(rs_dev_wait, !rs_dev_in_use(ibdev));
	spin_lock_bh(&rs_dev_lock);
	list_del(&gone.node);
	spin_unlock_bh(&rs_dev_lock);
}

static struct ib_client rs_ib_client = {
	.name = "rdmasock",
	/* No .add: nothing is kept per device; sockets attach when they create a QP. */
	.remove = rs_dev_remove,
};

int rs_dev_init(void)
{
	return ib_register_client(&rs_ib_client);
}

void rs_dev_exit(void)
{
	ib_unregister_client(&rs_ib_client);
}
