// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock observability: the socket table /proc/net/rdmasock and the counter file
 * /proc/net/rdmasock_stat (the counters are stats.c's), in every network namespace.
 * Formats are documented in docs/observability.md and are stable: fields are only ever appended.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>
#include <net/net_namespace.h>
#include <net/inet_sock.h>
#include <net/ipv6.h>
#include "rdmasock.h"
#include "close.h"
#include "grow.h"
#include "park.h"
#include "proc.h"
#include "ring.h"
#include "stats.h"

#define RS_PROC_HEADER \
	"sl local_address remote_address st mode reason dev port lqpn rqpn tx_bytes rx_bytes rx_ring rx_queued tx_ring tx_queued uid inode\n"

static LIST_HEAD(rs_socks);
static DEFINE_SPINLOCK(rs_socks_lock);

static const char * const rs_reason_names[RDMASOCK_REASON_MAX] = {
	[RDMASOCK_REASON_NONE] = "none",
	[RDMASOCK_REASON_NO_DEVICE] = "no_device",
	[RDMASOCK_REASON_PEER_REJECT] = "peer_reject",
	[RDMASOCK_REASON_PEER_BUSY] = "peer_busy",
	[RDMASOCK_REASON_TIMEOUT] = "timeout",
	[RDMASOCK_REASON_HELLO] = "hello",
	[RDMASOCK_REASON_RESOURCE] = "resource",
	[RDMASOCK_REASON_FORCED] = "forced",
	[RDMASOCK_REASON_NEG_CACHE] = "neg_cache",
	[RDMASOCK_REASON_PEER_TCP] = "peer_tcp",
	[RDMASOCK_REASON_RDMA_LOST] = "rdma_lost",
};

static const char * const rs_mode_names[] = {
	[RDMASOCK_MODE_NONE] = "none",
	[RDMASOCK_MODE_RDMA] = "rdma",
	[RDMASOCK_MODE_TCP] = "tcp",
	[RDMASOCK_MODE_LISTEN] = "listen",
};

static const char * const rs_counter_names[RS_CNT_WC_ERR] = {
	[RS_CNT_SOCKETS] = "sockets_created",
	[RS_CNT_CONN_RDMA] = "connections_rdma",
	[RS_CNT_CONN_TCP] = "connections_tcp",
	[RS_CNT_BYTES_SENT] = "bytes_sent",
	[RS_CNT_BYTES_RECEIVED] = "bytes_received",
	[RS_CNT_WR_POSTED] = "work_requests_posted",
	[RS_CNT_COMPLETIONS] = "completions",
	[RS_CNT_PROTO_ERR] = "peer_protocol_errors",
	[RS_CNT_QP_FATAL] = "qp_fatal_events",
	[RS_CNT_DEV_REMOVAL] = "device_removals",
	[RS_CNT_KEEPALIVE_PROBE] = "keepalive_probes",
	[RS_CNT_KEEPALIVE_TIMEOUT] = "keepalive_timeouts",
	[RS_CNT_RDMA_PORT_TAKEN] = "listen_rdma_port_taken",
	[RS_CNT_CTRL_DEFERRED] = "ctrl_deferred_sq_full",
	[RS_CNT_ORPHAN_DROPPED] = "orphans_dropped",
	[RS_CNT_ORPHAN_TIMEOUT] = "orphans_timed_out",
	[RS_CNT_DOOR_TO_TCP] = "door_to_tcp",
	[RS_CNT_CGROUP_SOCKET] = "cgroup_sockets",
	[RS_CNT_RESUMED] = "resumes",
	[RS_CNT_RESUME_BYTES] = "resume_bytes_replayed",
	[RS_CNT_RESUME_FAILED] = "resume_failures",
	[RS_CNT_RESUME_TIMEOUT] = "resume_failed_timeout",
	[RS_CNT_RESUME_REFUSED] = "resume_failed_refused",
	[RS_CNT_RESUME_REJ_AUTH] = "resume_rejected_auth",
	[RS_CNT_RESUME_REJ_UNKNOWN] = "resume_rejected_unknown",
	[RS_CNT_RESUME_REJ_MALFORMED] = "resume_rejected_malformed",
	[RS_CNT_RESUME_REJ_BUSY] = "resume_rejected_busy",
	[RS_CNT_RESUME_NO_PORT] = "resume_port_unavailable",
	[RS_CNT_REUSED] = "connections_reused",
};

/* "name netns global", one counter a line; fallbacks and completion errors by name. */
static int rs_stat_show(struct seq_file *seq, void *v)
{
	struct net *net = seq_file_single_net(seq);
	unsigned int c;
	char name[48];

	seq_puts(seq, "counter netns global\n");
	for (c = 0; c < RS_CNT_MAX; c++) {
		if (c >= RS_CNT_FALLBACK && c < RS_CNT_FALLBACK + RDMASOCK_REASON_MAX)
			snprintf(name, sizeof(name), "fallback_%s",
				 rs_reason_names[c - RS_CNT_FALLBACK]);
		else if (c >= RS_CNT_WC_ERR)
			snprintf(name, sizeof(name), "wc_error_%s",
				 ib_wc_status_msg(c - RS_CNT_WC_ERR));
		else
			snprintf(name, sizeof(name), "%s", rs_counter_names[c]);
		strreplace(name, ' ', '_');
		seq_printf(seq, "%s %llu %llu\n", name, rs_count_read(net, c),
			   rs_count_read(NULL, c));
	}
	/* A gauge, module-wide (both columns): pages all rings pin now, within tcp_mem[2]. */
	seq_printf(seq, "ring_pages_pinned %ld %ld\n", rs_ring_pinned_pages(),
		   rs_ring_pinned_pages());
	/* And closed connections still delivering their last bytes, within max_orphans. */
	seq_printf(seq, "orphans %d %d\n", rs_orphan_count(), rs_orphan_count());
	/* And QPs kept for the next connection to their listener: max_parked in each namespace. */
	seq_printf(seq, "parked %u %u\n", rs_park_count(net), rs_park_count(NULL));
	return 0;
}

/* Writing "reset" zeroes this namespace's counters (and, from the initial one, the global ones). */
static int rs_stat_write(struct file *file, char *buf, size_t size)
{
	struct net *net = seq_file_single_net(file->private_data);

	if (!ns_capable(net->user_ns, CAP_NET_ADMIN))
		return -EPERM;
	if (size < 5 || strncmp(buf, "reset", 5))
		return -EINVAL;
	rs_count_reset(net);
	return 0;
}

/* ---- socket table ---- */

void rs_proc_add(struct rs_sock *rs)
{
	spin_lock_bh(&rs_socks_lock);
	list_add_tail(&rs->proc_node, &rs_socks);
	spin_unlock_bh(&rs_socks_lock);
}

void rs_proc_del(struct rs_sock *rs)
{
	spin_lock_bh(&rs_socks_lock);
	list_del(&rs->proc_node);
	spin_unlock_bh(&rs_socks_lock);
}

static void rs_seq_addr(struct seq_file *seq, const struct sockaddr_storage *ss)
{
	const struct sockaddr_in *sin = (const void *)ss;
	const struct sockaddr_in6 *sin6 = (const void *)ss;

	if (ss->ss_family == AF_INET)
		seq_printf(seq, " %pI4:%u", &sin->sin_addr, ntohs(sin->sin_port));
	else if (ss->ss_family == AF_INET6)
		seq_printf(seq, " [%pI6c]:%u", &sin6->sin6_addr, ntohs(sin6->sin6_port));
	else
		seq_puts(seq, " *:0");
}

/* The addresses of a socket carried (or listening) through its kernel TCP socket. */
static void rs_tcp_addrs(struct sock *tsk, struct sockaddr_storage *l, struct sockaddr_storage *r)
{
	struct inet_sock *inet = inet_sk(tsk);

	memset(l, 0, sizeof(*l));
	memset(r, 0, sizeof(*r));
	l->ss_family = tsk->sk_family;
	r->ss_family = tsk->sk_family;
	if (tsk->sk_family == AF_INET) {
		struct sockaddr_in *ls = (void *)l, *rs = (void *)r;

		ls->sin_addr.s_addr = inet->inet_rcv_saddr;
		ls->sin_port = inet->inet_sport;
		rs->sin_addr.s_addr = inet->inet_daddr;
		rs->sin_port = inet->inet_dport;
#if IS_ENABLED(CONFIG_IPV6)
	} else {
		struct sockaddr_in6 *ls = (void *)l, *rs = (void *)r;

		ls->sin6_addr = tsk->sk_v6_rcv_saddr;
		ls->sin6_port = inet->inet_sport;
		rs->sin6_addr = tsk->sk_v6_daddr;
		rs->sin6_port = inet->inet_dport;
#endif
	}
}

static void rs_seq_show_sock(struct seq_file *seq, struct rs_sock *rs, int idx)
{
	struct sockaddr_storage l, r;
	struct sock *tsk = NULL;
	u64 sent, rcvd;
	u32 rxq, txq, rx_ring, tx_ring;
	int mode = READ_ONCE(rs->mode);

	spin_lock(&rs->lock);
	if (mode != RDMASOCK_MODE_RDMA && rs->tcp) {
		tsk = rs->tcp->sk;
		sock_hold(tsk);
	}
	sent = rs->bytes_sent;
	rcvd = rs->bytes_received;
	rxq = rs->rx_prod - rs->rx_cons;
	txq = rs->tx_staged - rs->tx_acked;
	rx_ring = rs_rx_ring_size(rs);
	tx_ring = rs->tx.size;
	spin_unlock(&rs->lock);
	if (tsk) {
		rs_tcp_addrs(tsk, &l, &r);
		sock_put(tsk);
	} else {
		l = rs->local_addr;
		r = rs->peer_addr;
	}
	seq_printf(seq, "%d:", idx);
	rs_seq_addr(seq, &l);
	rs_seq_addr(seq, &r);
	seq_printf(seq, " %02X %s %s %s %u %u %u %llu %llu %u %u %u %u %u %lu\n",
		   READ_ONCE(rs->sk.sk_state), rs_mode_names[mode], rs_reason_names[rs->reason],
		   rs->devname[0] ? rs->devname : "-", rs->port_num,
		   READ_ONCE(rs->local_qpn), rs->remote_qpn, sent, rcvd, rx_ring, rxq,
		   tx_ring, txq, from_kuid_munged(seq_user_ns(seq), sock_i_uid(&rs->sk)),
		   sock_i_ino(&rs->sk));
}

static void *rs_seq_start(struct seq_file *seq, loff_t *pos)
	__acquires(&rs_socks_lock)
{
	spin_lock_bh(&rs_socks_lock);
	return seq_list_start_head(&rs_socks, *pos);
}

static void *rs_seq_next(struct seq_file *seq, void *v, loff_t *pos)
{
	return seq_list_next(v, &rs_socks, pos);
}

static void rs_seq_stop(struct seq_file *seq, void *v)
	__releases(&rs_socks_lock)
{
	spin_unlock_bh(&rs_socks_lock);
}

static int rs_seq_show(struct seq_file *seq, void *v)
{
	struct rs_sock *rs;

	if (v == &rs_socks) {
		seq_puts(seq, RS_PROC_HEADER);
		return 0;
	}
	rs = list_entry(v, struct rs_sock, proc_node);
	if (net_eq(sock_net(&rs->sk), seq_file_net(seq)))
		rs_seq_show_sock(seq, rs, (int)(seq->index - 1));
	return 0;
}

static const struct seq_operations rs_seq_ops = {
	.start = rs_seq_start,
	.next = rs_seq_next,
	.stop = rs_seq_stop,
	.show = rs_seq_show,
};

/* ---- namespaces and module ---- */

static int __net_init rs_proc_net_init(struct net *net)
{
	if (!proc_create_net_single_write("rdmasock_stat", 0644, net->proc_net, rs_stat_show,
					  rs_stat_write, NULL) ||
	    !proc_create_net("rdmasock", 0444, net->proc_net, &rs_seq_ops,
			     sizeof(struct seq_net_private))) {
		remove_proc_entry("rdmasock_stat", net->proc_net);
		return -ENOMEM;
	}
	return 0;
}

static void __net_exit rs_proc_net_exit(struct net *net)
{
	remove_proc_entry("rdmasock", net->proc_net);
	remove_proc_entry("rdmasock_stat", net->proc_net);
}

static struct pernet_operations rs_proc_net_ops = {
	.init = rs_proc_net_init,
	.exit = rs_proc_net_exit,
};

int rs_proc_init(void)
{
	return register_pernet_subsys(&rs_proc_net_ops);
}

void rs_proc_exit(void)
{
	unregister_pernet_subsys(&rs_proc_net_ops);
}
