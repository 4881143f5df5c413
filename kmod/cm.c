// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock connection manager: rdma_cm ids, the hello exchange, connect, listen and accept.
 *
 * The CM handler runs in rdma_cm's process context with the id's handler mutex held.  It never
 * takes lock_sock (the socket owner may hold it while it destroys the id, which waits for the
 * handler):
 * it builds the QP and rings of a connection no one else can touch yet, records the outcome and
 * hands the socket state change to connect_work, which runs under lock_sock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/in.h>
#include <linux/in6.h>
#include <net/tcp_states.h>
#include <net/inet_sock.h>
#include <net/ipv6.h>
#include <linux/inetdevice.h>
#include <linux/memcontrol.h>
#include <linux/jhash.h>
#include <linux/rwsem.h>
#include <net/sock_reuseport.h>
#include <rdma/ib_cm.h>
#include "rdmasock.h"
#include "cm.h"
#include "conn.h"
#include "core.h"
#include "fallback.h"
#include "grow.h"
#include "hello.h"
#include "keepalive.h"
#include "ring.h"
#include "stats.h"
#include "wr.h"
#include "trace.h"

#define RS_RETRY_COUNT		6	/* 7 would mean "retry forever" on rxe */
/* Receive WRs are reposted at once, so an RNR NAK is transient: retry it for ever. */
#define RS_RNR_RETRY_INFINITE	7
#define RS_SYN_RECV_TIMEOUT	(10 * HZ)	/* a child waits this long for RTU and READY */

static int rs_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev);
static int rs_cm_request(struct rs_sock *listener, struct rdma_cm_id *id,
			 struct rdma_cm_event *ev);

/*
 * Keep the RDMA connection's addresses (the cm_id may be gone when /proc is read) and its path
 * MTU, the payload one packet carries (TCP_INFO's MSS fields): on RoCE rdma_cm takes it from the
 * netdev's MTU.  (IB and RoCE routes always have a path record; 1024 if one had none.)
 */
static void rs_note_addrs(struct rs_sock *rs, struct rdma_cm_id *id)
{
	int mtu = id->route.path_rec ? ib_mtu_enum_to_int(id->route.path_rec->mtu) : -1;
	int ifindex = id->route.addr.dev_addr.bound_dev_if;

	memcpy(&rs->local_addr, &id->route.addr.src_addr, sizeof(rs->local_addr));
	memcpy(&rs->peer_addr, &id->route.addr.dst_addr, sizeof(rs->peer_addr));
	rs_addr_scope_fill((struct sockaddr *)&rs->local_addr, ifindex);
	rs_addr_scope_fill((struct sockaddr *)&rs->peer_addr, ifindex);
	rs->path_mtu = mtu > 0 ? mtu : 1024;
}

static void rs_conn_param(struct rdma_conn_param *p, struct rs_hello_ext *e, u8 len)
{
	memset(p, 0, sizeof(*p));
	p->private_data = e;
	p->private_data_len = len;
	p->retry_count = RS_RETRY_COUNT;
	p->rnr_retry_count = RS_RNR_RETRY_INFINITE;
}

/* ---- active side ---- */

static void rs_cm_route_resolved(struct rs_sock *rs, struct rdma_cm_id *id)
{
	struct rdma_conn_param param;
	struct rs_hello_ext hello;
	int err;

	err = rs_conn_create(rs, id);
	if (err) {
		rs_connect_done(rs, err, err == -ENODEV ? RDMASOCK_REASON_NO_DEVICE :
					 RDMASOCK_REASON_RESOURCE);
		return;
	}
	rs_conn_param(&param, &hello, rs_hello_build(rs, &hello));
	err = rs_should_fail("rdma_connect") ? -EINVAL : rdma_connect_locked(id, &param);
	if (err)
		rs_connect_done(rs, err, RDMASOCK_REASON_RESOURCE);
}

static void rs_cm_client_established(struct rs_sock *rs, struct rdma_cm_event *ev)
{
	int err;

	err = rs_hello_parse(rs, ev->param.conn.private_data, ev->param.conn.private_data_len,
			     false);
	if (err) {
		rs_connect_done(rs, err, RDMASOCK_REASON_HELLO);
		return;
	}
	rs->remote_qpn = ev->param.conn.qp_num;
	rs_note_addrs(rs, rs->cm_id);
	err = rs_tx_ring_create(rs);
	if (!err)
		err = rs_post_reg_ring(rs, &rs->rx, true);
	if (!err)
		err = rs_post_reg_ring(rs, &rs->tx, false);
	/*
	 * Our READY waits for the server's, which waits for our RTU: were that lost, nothing would
	 * move before the REP's retransmit (ib_cm: 4 s, past our connect timeout).  A KEEPALIVE
	 * now tells the server's QP we are there (rs_comm_est()), as the RTU would, and says
	 * nothing of the connect's outcome.
	 */
	if (!err)
		err = rs_send_ctrl(rs, RS_IMM_CTRL, RS_CTRL_KEEPALIVE, false);
	if (err) {
		rs_connect_done(rs, err, RDMASOCK_REASON_RESOURCE);
		return;
	}
	/* Our READY follows the server's: the connect is done then (rs_client_ready()). */
	set_bit(RS_F_CM_EST, &rs->flags);
	rs_client_ready(rs);
}

/* An id of the socket's, in rdma_cm's TCP port space; its handler finds the socket by it. */
static struct rdma_cm_id *rs_cm_new_id(struct rs_sock *rs)
{
	return rdma_create_id(sock_net(&rs->sk), rs_cm_handler, rs, RDMA_PS_TCP, IB_QPT_RC);
}

/*
 * As the TCP socket: SO_REUSEADDR, and IPV6_V6ONLY (rdma_cm would take net.ipv6.bindv6only
 * instead, and then answer for an address family our TCP socket refuses, or leave a dual-stack
 * listener's IPv4 port to someone else).
 */
static int rs_id_bind(struct rs_sock *rs, struct rdma_cm_id *id, struct sockaddr *addr)
{
	if (rs->sk.sk_reuse)
		rdma_set_reuseaddr(id, 1);
	if (addr->sa_family == AF_INET6)
		rdma_set_afonly(id, ipv6_only_sock(rs->tcp->sk));
	return rdma_bind_addr(id, addr);
}

/*
 * Loopback and unspecified destinations have no RDMA path.  rdma_cm would still try some of them
 * (::1, or 127.0.0.1 from an id bound to 0.0.0.0, go through its loopback resolution) and send CM
 * MADs nowhere; in a test VM such attempts left rxe's CM path unable to deliver any REQ after.
 */
static bool rs_no_rdma_path(const struct sockaddr *addr)
{
	const struct sockaddr_in6 *sin6 = (const void *)addr;
	__be32 a4 = ((const struct sockaddr_in *)addr)->sin_addr.s_addr;

	if (addr->sa_family == AF_INET)
		return ipv4_is_loopback(a4) || ipv4_is_zeronet(a4) || ipv4_is_multicast(a4) ||
		       ipv4_is_lbcast(a4);
	return ipv6_addr_loopback(&sin6->sin6_addr) || ipv6_addr_any(&sin6->sin6_addr) ||
	       ipv6_addr_is_multicast(&sin6->sin6_addr) ||
	       ipv6_addr_v4mapped(&sin6->sin6_addr);
}

/*
 * A new id for an attempt from a socket that has none.  *@bound: @src holds the address (and
 * port, or none yet: IP_BIND_ADDRESS_NO_PORT) the attempt must start from, which the id is not
 * bound to yet.  An error: no id, and in *@reason why.
 */
static struct rdma_cm_id *rs_cm_connect_id(struct rs_sock *rs, const struct sockaddr *addr,
					   struct sockaddr_storage *src, bool *bound, int *reason)
{
	struct rdma_cm_id *id;
	int err;

	*reason = RDMASOCK_REASON_RESOURCE;
	id = rs_cm_new_id(rs);
	if (IS_ERR(id))
		return id;
	*bound = rs->tcp && kernel_getsockname(rs->tcp, (struct sockaddr *)src) >= 0 &&
		 (inet_sk(rs->tcp->sk)->inet_num || !rs_addr_any((struct sockaddr *)src));
	/*
	 * A port TCP chose (rs_tcp_take_port(), or bind() to port 0) is the id's too, so TCP hands
	 * none of our listeners a port our clients hold in rdma_cm's space.  If someone else holds
	 * it there, rdma_cm chooses one on the same address (only a port the user chose must be
	 * ours).
	 */
	if (!*bound || !(rs->port_auto || rs->port_taken))
		return id;
	*bound = false;
	err = rs_id_bind(rs, id, (struct sockaddr *)src);
	if (err == -EADDRINUSE || err == -EADDRNOTAVAIL) {
		/*
		 * -EADDRNOTAVAIL: no device has the address, or (for the wildcard, which needs
		 * none, or once -EADDRINUSE said there is one) rdma_cm has no port left.
		 */
		if (err == -EADDRNOTAVAIL && !rs_addr_any((struct sockaddr *)src))
			*reason = RDMASOCK_REASON_NO_DEVICE;
		rdma_destroy_id(id);
		id = rs_cm_new_id(rs);
		if (IS_ERR(id))
			return id;
		rs_addr_set_port((struct sockaddr *)src, 0);
		err = rs_id_bind(rs, id, (struct sockaddr *)src);
	}
	if (err) {
		if (err != -ENOMEM && err != -EADDRNOTAVAIL)
			*reason = RDMASOCK_REASON_NO_DEVICE;
		rdma_destroy_id(id);
		return ERR_PTR(err);
	}
	return id;
}

/*
 * The interface the route must take: the TCP socket's device binding (SO_BINDTODEVICE, or the
 * scope of a link-local address bind() gave it; rs_tcp_sync() has passed ours on), and a
 * link-local peer's scope.  rdma_cm takes a link-local destination's scope only when it binds the
 * id itself, from no source, and resolving uses the id's device binding alone (a link-local
 * source's scope, a bound address's device), which a wildcard source leaves unset.  So it goes
 * there, for an id bound or not (@src: the source resolution binds it to, or NULL).  What TCP's
 * connect() would refuse or route otherwise (a link-local peer without any scope, bindings that
 * disagree) is not for RDMA: TCP decides.
 */
static int rs_cm_scope(struct rs_sock *rs, struct rdma_cm_id *id, const struct sockaddr *addr,
		       const struct sockaddr *src)
{
	int want = READ_ONCE(rs->tcp->sk->sk_bound_dev_if);
	int dev = id->route.addr.dev_addr.bound_dev_if;

	if (src && rs_addr_ll6(src))
		dev = ((const struct sockaddr_in6 *)src)->sin6_scope_id;
	if (rs_addr_ll6(addr)) {
		int scope = ((const struct sockaddr_in6 *)addr)->sin6_scope_id;

		if (scope && want && scope != want)
			return -EINVAL;
		want = scope ? : want;
		if (!want)
			return -EINVAL;
	}
	if (!want)
		return 0;
	if (dev && dev != want)
		return -EINVAL;
	id->route.addr.dev_addr.bound_dev_if = want;
	return 0;
}

/*
 * Start an RDMA attempt: the user's connect() (rs_connect_start() reset everything of an earlier
 * one), or the retry after a busy listener's backoff (which keeps its count).  0: the attempt is
 * under way and its outcome comes to connect_work (rs_connect_done()).  Else no attempt was made:
 * the error, and in *@reason why RDMA cannot be had (the socket layer decides what follows).
 */
int rs_cm_connect(struct rs_sock *rs, struct sockaddr *addr, int len, int *reason)
{
	struct sockaddr_storage src;
	struct rdma_cm_id *id;
	bool bound = false;
	int err;

	sock_owned_by_me(&rs->sk);
	*reason = RDMASOCK_REASON_NO_DEVICE;
	if (rs_no_rdma_path(addr))
		return -ENETUNREACH;
	/*
	 * bind() gave the socket an id bound to its address and port already: connect from it.
	 * Creating another would leave that one behind, pointing at this socket once it is freed.
	 */
	id = rs->cm_id;
	if (!id) {
		id = rs_cm_connect_id(rs, addr, &src, &bound, reason);
		if (IS_ERR(id))
			return PTR_ERR(id);
		*reason = RDMASOCK_REASON_NO_DEVICE;
	}
	err = rs_cm_scope(rs, id, addr, bound ? (struct sockaddr *)&src : NULL);
	if (err) {
		if (id != rs->cm_id)
			rdma_destroy_id(id);
		return err;
	}
	memcpy(&rs->peer_addr, addr, min_t(int, len, sizeof(rs->peer_addr)));
	rs->peer_addr_len = len;
	rs->flags = 0;
	rs->reason = RDMASOCK_REASON_NONE;	/* a retry starts afresh */
	WRITE_ONCE(rs->sk.sk_shutdown, 0);	/* (an aborted attempt shut both ways) */
	rs->cm_result = 0;
	rs->cm_id = id;
	rs->sk.sk_state = TCP_SYN_SENT;
	trace_rdmasock_connect(rs);
	err = rdma_resolve_addr(id, bound ? (struct sockaddr *)&src : NULL, addr,
				rs_connect_timeout_ms);
	if (err) {
		/* No RDMA device on this route (127.0.0.1, a netdev without RDMA...). */
		rs->sk.sk_state = TCP_CLOSE;
		rs->cm_id = NULL;
		rdma_destroy_id(id);
		return err;
	}
	/* The timer bounds the whole set-up: a peer without RDMA makes rdma_cm retry for ~90 s. */
	rs->connect_deadline = jiffies + msecs_to_jiffies(rs_connect_timeout_ms);
	rs_connect_work_arm(rs, msecs_to_jiffies(rs_connect_timeout_ms));
	return 0;
}

/* ---- passive side ---- */

/*
 * Bind the RDMA id to the address the TCP socket got (same port).  Failing is not an error for the
 * socket: an address without an RDMA device (127.0.0.1) simply serves TCP only.
 */
int rs_cm_bind(struct rs_sock *rs, struct sockaddr *addr, int len)
{
	struct sockaddr_storage bound;
	struct rdma_cm_id *id;
	int err;

	err = kernel_getsockname(rs->tcp, (struct sockaddr *)&bound);
	if (err < 0)
		return err;
	clear_bit(RS_F_DEV_GONE, &rs->flags);	/* an earlier id's: this one is new */
	id = rs_cm_new_id(rs);
	if (IS_ERR(id))
		return PTR_ERR(id);
	err = rs_id_bind(rs, id, (struct sockaddr *)&bound);
	if (err) {
		rdma_destroy_id(id);
		return err;
	}
	rs->cm_id = id;
	return 0;
}

static int rs_cm_probe_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	return 0;	/* a DEVICE_REMOVAL meanwhile: nothing to do, we destroy it at once */
}

/*
 * Binding or listening on our port failed in rdma_cm's port space: is it because someone else holds
 * that port there?  An id on the same address with an ephemeral port binds if the address has an
 * RDMA device, so then the port was the problem.
 */
static bool rs_cm_port_taken(struct rs_sock *rs)
{
	struct sockaddr_storage addr;
	struct rdma_cm_id *id;
	bool taken;

	if (kernel_getsockname(rs->tcp, (struct sockaddr *)&addr) < 0)
		return false;
	rs_addr_set_port((struct sockaddr *)&addr, 0);
	id = rdma_create_id(sock_net(&rs->sk), rs_cm_probe_handler, NULL, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id))
		return false;
	taken = !rs_id_bind(rs, id, (struct sockaddr *)&addr);
	rdma_destroy_id(id);
	return taken;
}

/*
 * The listener's id, bound to the TCP socket's address and port (bind() may have made it, or
 * failed to).  -EADDRINUSE (counted) when someone else holds that port in rdma_cm's space.
 */
int rs_cm_bind_listener(struct rs_sock *rs)
{
	int err;

	if (rs->cm_id)
		return 0;
	err = rs_cm_bind(rs, NULL, 0);
	if ((err == -EADDRINUSE || err == -EADDRNOTAVAIL) && rs_cm_port_taken(rs)) {
		rs_count(sock_net(&rs->sk), RS_CNT_RDMA_PORT_TAKEN);
		return -EADDRINUSE;
	}
	return err;
}

/*
 * The id is ours (out of rs->cm_id) while rdma_listen() runs: a DEVICE_REMOVAL meanwhile cannot
 * have rdma_cm destroy it under us; it marks RS_F_DEV_GONE instead, and whichever of the two
 * finds the id back in rs->cm_id after setting its mark has it destroyed (rs_cm_device_removal).
 */
int rs_cm_listen(struct rs_sock *rs, int backlog)
{
	struct rdma_cm_id *id = xchg(&rs->cm_id, NULL);
	int err;

	if (!id)
		return -ENOENT;
	err = rdma_listen(id, backlog);
	if (!err) {
		xchg(&rs->cm_id, id);	/* a full barrier, before the test */
		if (test_bit(RS_F_DEV_GONE, &rs->flags) && cmpxchg(&rs->cm_id, id, NULL) == id)
			err = -ENODEV;
		else
			return 0;
	}
	rdma_destroy_id(id);
	return err;
}

/* ---- SO_REUSEPORT groups ---- */

/*
 * Listeners with SO_REUSEPORT on one address and port (pre-fork servers, nginx "reuseport") share
 * one rdma_cm listener, as rdma_cm has one per port: the group's.  Each RDMA client goes to the
 * member the kernel would give its TCP connection, chosen by TCP's reuseport group of our TCP
 * listeners (reuseport_select_sock(), by a hash of the client's address; a BPF selector needs a
 * packet, so it applies to TCP clients only).  When TCP's choice is a plain TCP listener in the
 * group, not ours, the client is rejected and falls back to TCP, where that choice is made again.
 *
 * The group's id carries the group as its context, tagged (RS_RP_TAG) so that rs_cm_handler()
 * tells it from a socket; a request's id starts with that context, until rs_cm_request() gives it
 * its child's.  rs_rp_mutex guards the list of groups and their ids; a group's members_sem is read
 * by the requests it handles (so a member that leaves waits for those that picked it) and written
 * by joins and leaves.
 */
#define RS_RP_TAG	1UL

struct rs_rp_group {
	struct list_head node;		/* on rs_rp_groups */
	struct net *net;		/* (no reference: the members' sockets hold it) */
	struct sockaddr_storage addr;	/* our TCP listeners' bound address and port */
	int bound_dev_if;
	bool v6only;
	struct rdma_cm_id *id;		/* NULL once its device went */
	bool dev_gone;			/* DEVICE_REMOVAL while rs_rp_join() still held the id */
	struct rw_semaphore members_sem;
	struct list_head members;	/* rs_sock.rp_node */
};

static LIST_HEAD(rs_rp_groups);
static DEFINE_MUTEX(rs_rp_mutex);

/*
 * Join the group of @rs's address (made, and listening, for the first member): 0 once @rs is a
 * member of a listening group; else an error, and @rs serves TCP only (-ENODEV: a member of a
 * group whose device went).
 */
int rs_rp_join(struct rs_sock *rs, int backlog)
{
	struct net *net = sock_net(&rs->sk);
	struct sockaddr_storage addr = {};
	struct rs_rp_group *g;
	struct rdma_cm_id *id;
	int err;

	lockdep_assert_held(&rs->sk.sk_lock);
	err = kernel_getsockname(rs->tcp, (struct sockaddr *)&addr);
	if (err < 0)
		return err;
	err = -ENOMEM;
	mutex_lock(&rs_rp_mutex);
	list_for_each_entry(g, &rs_rp_groups, node)
		if (net_eq(g->net, net) && g->bound_dev_if == rs->tcp->sk->sk_bound_dev_if &&
		    g->v6only == ipv6_only_sock(rs->tcp->sk) &&
		    rs_addr_equal((struct sockaddr *)&g->addr, (struct sockaddr *)&addr))
			goto join;
	g = kzalloc(sizeof(*g), GFP_KERNEL);
	if (!g)
		goto out;
	g->net = net;
	g->addr = addr;
	g->bound_dev_if = rs->tcp->sk->sk_bound_dev_if;
	g->v6only = ipv6_only_sock(rs->tcp->sk);
	init_rwsem(&g->members_sem);
	INIT_LIST_HEAD(&g->members);
	/* A member before it listens: no request finds the group empty. */
	list_add_tail(&rs->rp_node, &g->members);
	rs->rp_group = g;
	id = rdma_create_id(net, rs_cm_handler, (void *)((unsigned long)g | RS_RP_TAG),
			    RDMA_PS_TCP, IB_QPT_RC);
	err = IS_ERR(id) ? PTR_ERR(id) : rs_id_bind(rs, id, (struct sockaddr *)&addr);
	if (!err)
		err = rdma_listen(id, backlog);
	if (!err) {
		xchg(&g->id, id);	/* a full barrier, before the test (rs_rp_device_removal) */
		if (READ_ONCE(g->dev_gone) && cmpxchg(&g->id, id, NULL) == id)
			err = -ENODEV;
	}
	if (err) {
		if (err == -EADDRINUSE)
			rs_count(net, RS_CNT_RDMA_PORT_TAKEN);
		if (!IS_ERR(id))
			rdma_destroy_id(id);	/* its handlers are done: none sees @g after */
		list_del_init(&rs->rp_node);
		rs->rp_group = NULL;
		kfree(g);
		goto out;
	}
	list_add(&g->node, &rs_rp_groups);
	goto out;
join:
	down_write(&g->members_sem);
	list_add_tail(&rs->rp_node, &g->members);
	rs->rp_group = g;
	up_write(&g->members_sem);
	err = READ_ONCE(g->id) ? 0 : -ENODEV;	/* a member still, of a group its device left */
out:
	mutex_unlock(&rs_rp_mutex);
	return err;
}

/* A member stops listening: out of its group, no request picks it again; the last ends it. */
static void rs_rp_leave(struct rs_sock *rs)
{
	struct rs_rp_group *g = rs->rp_group;
	struct rdma_cm_id *id = NULL;
	bool last;

	if (!g)
		return;
	mutex_lock(&rs_rp_mutex);
	down_write(&g->members_sem);	/* waits for requests handled for this member */
	list_del_init(&rs->rp_node);
	rs->rp_group = NULL;
	last = list_empty(&g->members);
	up_write(&g->members_sem);
	if (last) {
		list_del(&g->node);
		id = xchg(&g->id, NULL);
		/*
		 * Under the mutex: a group made again for the port at once finds it free.  (No
		 * handler takes the mutex.)  It waits for its handlers: none sees @g after.
		 */
		if (id)
			rdma_destroy_id(id);
		kfree(g);
	}
	mutex_unlock(&rs_rp_mutex);
}

/* A spread over the client's address and port, as TCP hashes its connections for reuseport. */
static u32 rs_rp_hash(const struct sockaddr *sa)
{
	static u32 seed __read_mostly;

	net_get_random_once(&seed, sizeof(seed));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;

		return jhash_2words((__force u32)sin->sin_addr.s_addr, (__force u16)sin->sin_port,
				    seed);
	}
	return jhash2((const u32 *)&((const struct sockaddr_in6 *)sa)->sin6_addr, 4,
		      seed ^ (__force u16)((const struct sockaddr_in6 *)sa)->sin6_port);
}

/* The member this client goes to, as TCP's reuseport group chooses; NULL: not one of ours. */
static struct rs_sock *rs_rp_pick(struct rs_rp_group *g, struct rdma_cm_id *id)
{
	struct rs_sock *rs, *first, *owner = NULL;
	u32 hash = rs_rp_hash((struct sockaddr *)&id->route.addr.dst_addr);
	struct sock *sel;
	unsigned int n = 0;

	lockdep_assert_held(&g->members_sem);
	first = list_first_entry_or_null(&g->members, struct rs_sock, rp_node);
	if (!first)
		return NULL;
	rcu_read_lock();
	sel = reuseport_select_sock(first->tcp->sk, hash, NULL, 0);
	if (sel)
		owner = rs_tcp_owner(sel);	/* to compare, never to follow */
	rcu_read_unlock();
	if (!sel) {	/* no TCP group to ask (not while they listen): ours, by the hash */
		n = reciprocal_scale(hash, list_count_nodes(&g->members));
		list_for_each_entry(rs, &g->members, rp_node)
			if (!n--)
				return rs;
		return NULL;
	}
	/* Compared, never followed: only a member (members_sem keeps it) is used. */
	list_for_each_entry(rs, &g->members, rp_node)
		if (rs == owner)
			return rs;
	return NULL;
}

static int rs_rp_request(struct rs_rp_group *g, struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct rs_sock *listener;
	int err = -ECONNREFUSED;

	down_read(&g->members_sem);
	listener = rs_rp_pick(g, id);
	if (listener) {
		err = rs_cm_request(listener, id, ev);
	} else {
		/* Said so: the client goes to TCP at once, and does not remember us as TCP-only. */
		__be32 why = cpu_to_be32(RS_REJ_TCP);

		rs_count(g->net, RS_CNT_RP_TO_TCP);
		rdma_reject(id, &why, sizeof(why), IB_CM_REJ_CONSUMER_DEFINED);
	}
	up_read(&g->members_sem);
	return err;
}

/* DEVICE_REMOVAL of the group's id: destroyed (by rdma_cm), the members serve TCP alone. */
static int rs_rp_device_removal(struct rs_rp_group *g, struct rdma_cm_id *id)
{
	if (cmpxchg(&g->id, id, NULL) == id)
		return 1;
	/* rs_rp_join() holds it still (rdma_listen()): mark, then try once more (as listeners). */
	WRITE_ONCE(g->dev_gone, true);
	smp_mb();	/* pairs with the xchg in rs_rp_join() */
	if (cmpxchg(&g->id, id, NULL) == id)
		return 1;
	return 0;	/* rs_rp_join() saw the mark, or rs_rp_leave() destroys it */
}

static int rs_rp_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct rs_rp_group *g = (void *)((unsigned long)id->context & ~RS_RP_TAG);

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return rs_rp_request(g, id, ev);
	if (ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL)
		return rs_rp_device_removal(g, id);
	return 0;
}

/* The socket's id goes (a listen() that failed on the TCP side, a listener that closes). */
void rs_cm_id_drop(struct rs_sock *rs)
{
	struct rdma_cm_id *id = xchg(&rs->cm_id, NULL);

	if (id)
		rdma_destroy_id(id);
}

/* A child of @listener, with its options (the socket layer's rs_new_child()); no id yet. */
struct rs_sock *rs_cm_child_new(struct rs_sock *listener)
{
	struct rs_sock *child;

	child = listener->new_child(listener);
	if (!child)
		return NULL;
	sock_hold(&listener->sk);
	child->parent = listener;
	return child;
}

static struct rs_sock *rs_child_alloc(struct rs_sock *listener, struct rdma_cm_id *id)
{
	struct rs_sock *child = rs_cm_child_new(listener);

	if (!child)
		return NULL;
	child->cm_id = id;
	id->context = child;
	return child;
}

/*
 * Free a child that failed (@err) before rdma_accept(), from inside its id's handler: rdma_cm
 * destroys the id itself when the handler returns non-zero.  Unless something aborted the child
 * first: once rs_conn_create() put it on the device's list, a device removal or a fatal QP event
 * may have, and its teardown_work (waiting for this handler's lock) then frees the child and the
 * id, so the handler keeps the id (returns 0) and tears nothing down.  Taking RS_F_ABORTED here
 * makes any later rs_abort() a no-op: one teardown, always.
 */
static int rs_child_fail(struct rs_sock *child, int err)
{
	bool aborted;

	spin_lock_bh(&child->lock);
	aborted = test_and_set_bit(RS_F_ABORTED, &child->flags);
	spin_unlock_bh(&child->lock);
	if (!aborted) {
		rs_teardown_rdma(child, true);
		child->cm_id = NULL;
	}
	sock_put(&child->sk);
	return aborted ? 0 : err;
}

static int rs_reject_hello(struct rs_sock *child, struct rdma_cm_id *id)
{
	__be32 why = cpu_to_be32(RS_REJ_HELLO);

	rs_count(sock_net(&child->sk), RS_CNT_PROTO_ERR);
	rdma_reject(id, &why, sizeof(why), IB_CM_REJ_CONSUMER_DEFINED);
	return -EPROTO;
}

static int rs_reject_reason(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	const __be32 *why;
	u8 len = 0;

	why = rdma_consumer_reject_data(id, ev, &len);
	if (why && len >= sizeof(*why) && be32_to_cpu(*why) == RS_REJ_HELLO)
		return RDMASOCK_REASON_HELLO;
	if (why && len >= sizeof(*why) && be32_to_cpu(*why) == RS_REJ_BUSY)
		return RDMASOCK_REASON_PEER_BUSY;
	if (why && len >= sizeof(*why) && be32_to_cpu(*why) == RS_REJ_TCP)
		return RDMASOCK_REASON_PEER_TCP;
	return RDMASOCK_REASON_PEER_REJECT;
}

bool rs_backlog_full(struct rs_sock *listener)
{
	return READ_ONCE(listener->queued) > READ_ONCE(listener->sk.sk_max_ack_backlog);
}

/*
 * A child whose REP (or ACCEPT, park.c) may be out joins the listener's pending queue as a
 * SYN_RECV socket, until it has the client's READY (rs_child_established(); a reused QP's child
 * has it in the OPEN, and is established once its ACCEPT is out).  False if it was aborted
 * already: its teardown_work frees it.
 */
bool rs_cm_child_queue(struct rs_sock *child)
{
	struct rs_sock *listener = child->parent;
	bool linked;

	spin_lock_bh(&listener->lock);
	/* Not once the listener closed: its close emptied the queues (rs_cm_listener_close()). */
	linked = !test_bit(RS_F_ABORTED, &child->flags) &&
		 listener->sk.sk_state == TCP_LISTEN;
	if (linked) {
		child->sk.sk_state = TCP_SYN_RECV;
		list_add_tail(&child->accept_node, &listener->pending_q);
		set_bit(RS_F_PENDING, &child->flags);
		listener->queued++;
		/*
		 * As a SYN-RECV socket times out: the RTU and the client's READY must come
		 * within this (rs_child_established() cancels it).  Armed
		 * under the lock rs_abort()'s unqueue takes, so its cancel comes after.
		 */
		rs_connect_work_arm(child, RS_SYN_RECV_TIMEOUT);
	}
	spin_unlock_bh(&listener->lock);
	if (!linked)
		rs_abort(child, -ECONNRESET);	/* (a no-op if aborted already) */
	return linked;
}

static int rs_cm_request(struct rs_sock *listener, struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct rdma_conn_param param;
	struct rs_hello_ext hello;
	struct rs_sock *child;
	bool linked;
	int err;

	if (READ_ONCE(listener->sk.sk_state) != TCP_LISTEN)
		return -ECONNREFUSED;
	if (rs_backlog_full(listener)) {
		__be32 why = cpu_to_be32(RS_REJ_BUSY);

		rdma_reject(id, &why, sizeof(why), IB_CM_REJ_CONSUMER_DEFINED);
		return -ECONNREFUSED;
	}
	child = rs_child_alloc(listener, id);
	if (!child)
		return -ENOMEM;
	err = rs_hello_parse(child, ev->param.conn.private_data, ev->param.conn.private_data_len,
			     false);
	if (err) {
		err = rs_reject_hello(child, id);
		goto fail;
	}
	/* The client's REQ sets our QP's retry count: 7 would retry for ever (rxe). */
	if (ev->param.conn.retry_count > RS_RETRY_COUNT) {
		err = rs_reject_hello(child, id);
		goto fail;
	}
	/*
	 * The budget must hold both rings now (ours, and the staging ring allocated at the RTU):
	 * refused here, the client falls back before its connect completes, never after.
	 */
	if (!rs_ring_fits(rs_ring_start(child, id->device) +
			  rs_tx_ring_target(child, id->device, child->peer_ring_size))) {
		err = -ENOBUFS;	/* rdma_cm rejects the REQ */
		goto fail;
	}
	child->remote_qpn = ev->param.conn.qp_num;
	rs_note_addrs(child, id);
	/*
	 * Only our own receive ring now (RS_RING_START, our choice): the staging ring, whose size
	 * the client's hello chose, waits for the RTU (rs_cm_child_established), so a half-open
	 * connection pins 16 KiB and a QP, for RS_SYN_RECV_TIMEOUT at most (one whose client sent
	 * the RTU but not its READY: that ring too, as long at most, within the budget above).
	 */
	err = rs_conn_create(child, id);
	if (err)
		goto fail;
	rs_conn_param(&param, &hello, rs_hello_build(child, &hello));
	err = rs_should_fail("rdma_accept") ? -EINVAL : rdma_accept(id, &param);
	memzero_explicit(&hello, sizeof(hello));
	/*
	 * From rdma_accept() on the QP may be RTR and the REP out: a failure from here on is the
	 * connection's abort (the child is not linked below, and teardown_work alone frees it and
	 * its id: it disconnects, or rejects the REQ, as for a child a completion aborted).
	 */
	if (err || rs_post_reg_ring(child, &child->rx, true))
		rs_abort(child, -ECONNRESET);
	else
		set_bit(RS_F_CM_EST, &child->flags);	/* from now on a QP error is the child's */
	linked = rs_cm_child_queue(child);
	if (!linked) {	/* aborted (above, or by a completion): teardown_work destroys the id */
		sock_put(&child->sk);
		return 0;
	}
	/* The client's first message may have come before SYN_RECV was set: it tells the CM. */
	smp_mb();	/* the state before the mark: rs_comm_est() */
	if (test_bit(RS_F_HEARD, &child->flags))
		rs_comm_est(child);
	return 0;
fail:
	return rs_child_fail(child, err);
}

/*
 * The child's CM ESTABLISHED (the client's RTU): its staging ring and READY.  The client's READY
 * then puts it on the listener's ready queue (core.c, rs_child_established()).
 */
static void rs_cm_child_established(struct rs_sock *child)
{
	if (test_bit(RS_F_ABORTED, &child->flags))
		return;		/* its teardown is queued: no ring, no READY */
	child->mode = RDMASOCK_MODE_RDMA;
	/* The staging ring, now that the client proved it is there (nothing is on the SQ yet). */
	if (rs_tx_ring_create(child) || rs_post_reg_ring(child, &child->tx, false) ||
	    rs_post_ready(child)) {
		rs_abort(child, -ECONNRESET);
		return;
	}
	if (rs_child_rtu(child))
		rs_keepalive_update(child);
}

/* A CM event other than ESTABLISHED for a child still waiting for the RTU: it failed. */
static bool rs_cm_child_failed(struct rs_sock *child)
{
	if (READ_ONCE(child->sk.sk_state) != TCP_SYN_RECV)
		return false;
	rs_abort(child, -ECONNRESET);
	return true;
}

struct rs_sock *rs_cm_accept_ready(struct rs_sock *listener)
{
	struct rs_sock *child;

	spin_lock_bh(&listener->lock);
	child = list_first_entry_or_null(&listener->ready_q, struct rs_sock, accept_node);
	if (child) {
		list_del_init(&child->accept_node);
		listener->queued--;
	}
	spin_unlock_bh(&listener->lock);
	return child;
}

/*
 * Stop listening: no new CM requests, and every child not yet accepted is reset.  The children
 * leave the queues one at a time under the listener's lock, the lock a failing child's
 * rs_child_unqueue() takes: each is unlinked (and its reference dropped) exactly once.
 * rdma_destroy_id() has waited out any CONNECT_REQUEST handler, so nothing is added meanwhile.
 */
void rs_cm_listener_close(struct rs_sock *rs)
{
	struct rs_sock *child;

	rs_rp_leave(rs);
	rs_cm_id_drop(rs);
	spin_lock_bh(&rs->lock);
	rs->sk.sk_state = TCP_CLOSE;
	for (;;) {
		child = list_first_entry_or_null(&rs->pending_q, struct rs_sock, accept_node);
		if (!child)
			child = list_first_entry_or_null(&rs->ready_q, struct rs_sock, accept_node);
		if (!child)
			break;
		list_del_init(&child->accept_node);
		clear_bit(RS_F_PENDING, &child->flags);
		rs->queued--;
		spin_unlock_bh(&rs->lock);
		rs_abort(child, -ECONNRESET);
		/* The queue's reference: the abort's teardown work holds its own. */
		sock_put(&child->sk);
		spin_lock_bh(&rs->lock);
	}
	WARN_ON_ONCE(rs->queued);
	rs->queued = 0;
	spin_unlock_bh(&rs->lock);
}

/* ---- events ---- */

static void rs_cm_disconnected(struct rs_sock *rs)
{
	/* The peer's FIN may be in the CQ still, not yet polled: it decides reset or close. */
	rs_cq_poll_all(rs);
	/*
	 * No FIN, no RESET: the peer lost its path, or we did; both carry on over TCP.  After its
	 * FIN, an orderly close whose bytes stay readable to EOF (a peer that did not close and
	 * asks to resume still can: __rs_path_lost(asked), resume.c).  Resuming already: ours.
	 */
	if (test_bit(RS_F_RESUMING, &rs->flags) ||
	    (!test_bit(RS_F_PEER_FIN, &rs->flags) && rs_path_lost(rs, -ECONNRESET)))
		return;
	set_bit(RS_F_DISCONNECTED, &rs->flags);
	if (!test_bit(RS_F_PEER_FIN, &rs->flags))
		rs_abort(rs, -ECONNRESET);
	else
		rs_wake(&rs->sk, EPOLLOUT | EPOLLIN | EPOLLRDHUP);
	/* A parked QP whose peer went: park.c frees it now, not at park_ms. */
	smp_mb();	/* the bits before the state: park.c parks, then tests them */
	if (READ_ONCE(rs->park_state))
		rs_park_signal(rs);
}

static int rs_cm_device_removal(struct rs_sock *rs, struct rdma_cm_id *id)
{
	int state = READ_ONCE(rs->sk.sk_state);

	/* A listener bound to this device's address goes on serving TCP. */
	if (state == TCP_LISTEN) {
		if (cmpxchg(&rs->cm_id, id, NULL) == id)
			return 1;	/* rdma_cm destroys the id */
		/* listen() holds it (rs_cm_listen): mark, then try once more. */
		set_bit(RS_F_DEV_GONE, &rs->flags);
		smp_mb__after_atomic();	/* the mark before the second look, as rs_cm_listen() */
		if (cmpxchg(&rs->cm_id, id, NULL) == id)
			return 1;
		return 0;	/* rs_cm_listen() destroys it */
	}
	/*
	 * A socket only bound (no attempt yet) is not reset, and process context owns its id:
	 * connect_work destroys it under lock_sock if it is still unused then (a listen() or a
	 * connect() meanwhile destroys it themselves), so the removal does not wait for close().
	 */
	if (state == TCP_CLOSE && !rs->link) {
		set_bit(RS_F_DEV_GONE, &rs->flags);
		rs_connect_work_arm(rs, 0);
		return 0;
	}
	if (rs_path_lost(rs, -ENETDOWN))
		return 0;	/* teardown_work destroys the id, as after an abort */
	rs_connect_done(rs, -ENETUNREACH, RDMASOCK_REASON_NO_DEVICE);
	rs_abort(rs, -ENETDOWN);
	return 0;
}

static int rs_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct rs_sock *rs = id->context;

	if ((unsigned long)id->context & RS_RP_TAG)
		return rs_rp_handler(id, ev);

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return rs_cm_request(rs, id, ev);
	if (ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL)
		return rs_cm_device_removal(rs, id);
	/*
	 * A child's ESTABLISHED (the CM cancelled its REP), or a DISCONNECTED or REJECTED after
	 * which none can come: a teardown may wait for it, DYING or not (rs_comm_est_settle()).
	 */
	if (rs->parent && (ev->event == RDMA_CM_EVENT_ESTABLISHED ||
			   ev->event == RDMA_CM_EVENT_DISCONNECTED ||
			   ev->event == RDMA_CM_EVENT_REJECTED))
		rs_comm_est_settled(rs);
	if (test_bit(RS_F_DYING, &rs->flags))
		return 0;
	if (rs->parent && ev->event != RDMA_CM_EVENT_ESTABLISHED && rs_cm_child_failed(rs))
		return 0;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(id, rs_connect_timeout_ms))
			rs_connect_done(rs, -EHOSTUNREACH, RDMASOCK_REASON_NO_DEVICE);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		rs_cm_route_resolved(rs, id);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (rs->parent)
			rs_cm_child_established(rs);
		else
			rs_cm_client_established(rs, ev);
		break;
	case RDMA_CM_EVENT_REJECTED:
		pr_debug("%pISpc rejected the connection (CM reason %d)\n",
			 &id->route.addr.dst_addr, ev->status);
		rs_connect_done(rs, -ECONNREFUSED, rs_reject_reason(id, ev));
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		rs_connect_done(rs, -EHOSTUNREACH, RDMASOCK_REASON_NO_DEVICE);
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		rs_connect_done(rs, -ETIMEDOUT, RDMASOCK_REASON_TIMEOUT);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		rs_cm_disconnected(rs);
		break;
	default:
		break;
	}
	return 0;
}
