// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock counters, shown in /proc/net/rdmasock_stat (one "name value" line each).  Kept from the
 * first connection on: they answer "is my traffic accelerated, and if not, why?".
 */
#include <linux/atomic.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <net/net_namespace.h>
#include "rdmasock.h"

static atomic64_t rs_counters[RS_CNT_MAX];

static const char * const rs_counter_names[RS_CNT_MAX] = {
	[RS_CNT_SOCKETS] = "sockets_created",
	[RS_CNT_CONN_RDMA] = "connections_rdma",
	[RS_CNT_CONN_TCP] = "connections_tcp",
	[RS_CNT_FALLBACK + RDMASOCK_REASON_NONE] = "fallback_none",
	[RS_CNT_FALLBACK + RDMASOCK_REASON_NO_DEVICE] = "fallback_no_device",
	[RS_CNT_FALLBACK + RDMASOCK_REASON_PEER_REJECT] = "fallback_peer_reject",
	[RS_CNT_FALLBACK + RDMASOCK_REASON_TIMEOUT] = "fallback_timeout",
	[RS_CNT_FALLBACK + RDMASOCK_REASON_HELLO] = "fallback_hello",
	[RS_CNT_FALLBACK + RDMASOCK_REASON_RESOURCE] = "fallback_resource",
	[RS_CNT_FALLBACK + RDMASOCK_REASON_FORCED] = "fallback_forced",
	[RS_CNT_FALLBACK + RDMASOCK_REASON_NEG_CACHE] = "fallback_neg_cache",
	[RS_CNT_FALLBACK + RDMASOCK_REASON_PEER_TCP] = "fallback_peer_tcp",
	[RS_CNT_PROTO_ERR] = "peer_protocol_errors",
	[RS_CNT_CQ_ERR] = "completion_errors",
	[RS_CNT_DEV_REMOVAL] = "device_removals",
};

void rs_count(enum rs_counter c)
{
	atomic64_inc(&rs_counters[c]);
}

void rs_count_fallback(int reason)
{
	if (reason >= 0 && reason < RDMASOCK_REASON_MAX)
		rs_count(RS_CNT_FALLBACK + reason);
}

static int rs_stat_show(struct seq_file *seq, void *v)
{
	unsigned int i;

	for (i = 0; i < RS_CNT_MAX; i++)
		seq_printf(seq, "%s %lld\n", rs_counter_names[i],
			   (long long)atomic64_read(&rs_counters[i]));
	return 0;
}

static int __net_init rs_stats_net_init(struct net *net)
{
	if (!proc_create_net_single("rdmasock_stat", 0444, net->proc_net, rs_stat_show, NULL))
		return -ENOMEM;
	return 0;
}

static void __net_exit rs_stats_net_exit(struct net *net)
{
	remove_proc_entry("rdmasock_stat", net->proc_net);
}

static struct pernet_operations rs_stats_net_ops = {
	.init = rs_stats_net_init,
	.exit = rs_stats_net_exit,
};

int rs_stats_init(void)
{
	return register_pernet_subsys(&rs_stats_net_ops);
}

void rs_stats_exit(void)
{
	unregister_pernet_subsys(&rs_stats_net_ops);
}
