// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock counters, per network namespace and global, and the tracepoints.  Every layer counts
 * here; proc.c shows them (/proc/net/rdmasock_stat, docs/observability.md).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/percpu.h>
#include <linux/debugfs.h>
#include <linux/fault-inject.h>
#include <linux/moduleparam.h>
#include <linux/string.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include "rdmasock.h"
#include "stats.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

struct rs_counters {
	u64 v[RS_CNT_MAX];
};

struct rs_net {
	struct rs_counters __percpu *cnt;
	unsigned int dev_removal;	/* the last removal counted here (rs_count_dev_removal) */
};

static unsigned int rs_net_id;
static struct rs_counters __percpu *rs_global;

/* ---- counters ---- */

void rs_count_add(struct net *net, enum rs_counter c, u64 n)
{
	if (net) {
		struct rs_net *rsn = net_generic(net, rs_net_id);

		this_cpu_add(rsn->cnt->v[c], n);
	}
	this_cpu_add(rs_global->v[c], n);
}

void rs_count_fallback(struct net *net, int reason)
{
	if (reason >= 0 && reason < RDMASOCK_REASON_MAX)
		rs_count(net, RS_CNT_FALLBACK + reason);
}

void rs_count_wc_error(struct net *net, enum ib_wc_status status)
{
	if (status != IB_WC_WR_FLUSH_ERR && status <= IB_WC_GENERAL_ERR)
		rs_count(net, RS_CNT_WC_ERR + status);
}

/*
 * Device removal number @removal (never 0) reset a connection in @net: counted once in each
 * namespace it reached and once globally (@net NULL).  The caller serialises removals.
 */
void rs_count_dev_removal(struct net *net, unsigned int removal)
{
	struct rs_net *rsn;

	if (!net) {
		this_cpu_inc(rs_global->v[RS_CNT_DEV_REMOVAL]);
		return;
	}
	rsn = net_generic(net, rs_net_id);
	if (rsn->dev_removal == removal)
		return;
	rsn->dev_removal = removal;
	this_cpu_inc(rsn->cnt->v[RS_CNT_DEV_REMOVAL]);
}

static u64 rs_counter_sum(struct rs_counters __percpu *cnt, unsigned int c)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += per_cpu_ptr(cnt, cpu)->v[c];
	return sum;
}

static void rs_counters_reset(struct rs_counters __percpu *cnt)
{
	int cpu;

	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(cnt, cpu), 0, sizeof(struct rs_counters));
}

/* Counter @c of @net, or the global one (@net NULL). */
u64 rs_count_read(struct net *net, unsigned int c)
{
	struct rs_net *rsn;

	if (!net)
		return rs_counter_sum(rs_global, c);
	rsn = net_generic(net, rs_net_id);
	return rs_counter_sum(rsn->cnt, c);
}

/* Zero @net's counters, and the global ones too from the initial namespace. */
void rs_count_reset(struct net *net)
{
	struct rs_net *rsn = net_generic(net, rs_net_id);

	rs_counters_reset(rsn->cnt);
	if (net_eq(net, &init_net))
		rs_counters_reset(rs_global);
}

static int __net_init rs_stats_net_init(struct net *net)
{
	struct rs_net *rsn = net_generic(net, rs_net_id);

	rsn->cnt = alloc_percpu(struct rs_counters);
	return rsn->cnt ? 0 : -ENOMEM;
}

static void __net_exit rs_stats_net_exit(struct net *net)
{
	struct rs_net *rsn = net_generic(net, rs_net_id);

	free_percpu(rsn->cnt);
}

static struct pernet_operations rs_stats_net_ops = {
	.init = rs_stats_net_init,
	.exit = rs_stats_net_exit,
	.id = &rs_net_id,
	.size = sizeof(struct rs_net),
};

#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
static DECLARE_FAULT_ATTR(rs_fail_attr);
static struct dentry *rs_fail_dir;
static char rs_fail_point[32];
module_param_string(fail_point, rs_fail_point, sizeof(rs_fail_point), 0600);
MODULE_PARM_DESC(fail_point, "debug kernels: the step that fails as debugfs fail_rdmasock/ says");

bool rs_should_fail(const char *point)
{
	size_t n;

	if (likely(!READ_ONCE(rs_fail_point[0])))
		return false;
	n = strcspn(rs_fail_point, "\n");	/* as `echo point >` writes it */
	return !strncmp(point, rs_fail_point, n) && !point[n] && should_fail(&rs_fail_attr, 1);
}

static void rs_fail_init(void)
{
	rs_fail_dir = fault_create_debugfs_attr("fail_rdmasock", NULL, &rs_fail_attr);
	if (IS_ERR(rs_fail_dir))
		rs_fail_dir = NULL;	/* no fault points: the module works without */
}

static void rs_fail_exit(void)
{
	debugfs_remove_recursive(rs_fail_dir);
}
#else
static void rs_fail_init(void)
{
}

static void rs_fail_exit(void)
{
}
#endif

int rs_stats_init(void)
{
	int err;

	rs_global = alloc_percpu(struct rs_counters);
	if (!rs_global)
		return -ENOMEM;
	err = register_pernet_subsys(&rs_stats_net_ops);
	if (err)
		free_percpu(rs_global);
	else
		rs_fail_init();
	return err;
}

void rs_stats_exit(void)
{
	unregister_pernet_subsys(&rs_stats_net_ops);
	free_percpu(rs_global);
	rs_fail_exit();
}
