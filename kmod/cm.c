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
#include <linux/rwsem.h>
#include <net/l3mdev.h>
#include <net/addrconf.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <linux/cred.h>
#include <net/inet_hashtables.h>
#include <net/inet6_hashtables.h>
#include <linux/hash.h>
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
			 struct rdma_cm_event *ev, __be16 port);

unsigned int rs_rdma_port = RS_RDMA_PORT_DEFAULT;
module_param_named(rdma_port, rs_rdma_port, uint, 0444);
MODULE_PARM_DESC(rdma_port,
		 "the rdma_cm port (below 1024) of every namespace's one RDMA listener, the module's");

/*
 * Keep the connection's addresses (the cm_id may be gone when /proc is read, and getname() reads
 * them) and its path MTU, the payload one packet carries (TCP_INFO's MSS fields): on RoCE rdma_cm
 * takes it from the netdev's MTU.  (IB and RoCE routes always have a path record; 1024 if one had
 * none.)  The id's port at the server is the module's (the door): the connection's is @port, the
 * TCP port the client connected to.
 */
static void rs_note_addrs(struct rs_sock *rs, struct rdma_cm_id *id, __be16 port)
{
	int mtu = id->route.path_rec ? ib_mtu_enum_to_int(id->route.path_rec->mtu) : -1;
	int ifindex = id->route.addr.dev_addr.bound_dev_if;

	memcpy(&rs->local_addr, &id->route.addr.src_addr, sizeof(rs->local_addr));
	memcpy(&rs->peer_addr, &id->route.addr.dst_addr, sizeof(rs->peer_addr));
	rs_addr_set_port((struct sockaddr *)(rs->parent ? &rs->local_addr : &rs->peer_addr), port);
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
	__be16 port = rs_addr_port((struct sockaddr *)&rs->peer_addr);
	int err;

	err = rs_hello_parse(rs, ev->param.conn.private_data, ev->param.conn.private_data_len,
			     false, port);
	if (err) {
		rs_connect_done(rs, err, RDMASOCK_REASON_HELLO);
		return;
	}
	rs->remote_qpn = ev->param.conn.qp_num;
	rs_note_addrs(rs, rs->cm_id, port);
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
	*bound = rs->tcp && kernel_getsockname(rs->tcp, (struct sockaddr *)src) >= 0 &&
		 (inet_sk(rs->tcp->sk)->inet_num || !rs_addr_any((struct sockaddr *)src));
	/*
	 * A socket bound to the door's port (root's): the id would take the door's port in
	 * rdma_cm's space, or another port that is not the socket's name.  TCP carries it.
	 */
	if (*bound && rs_addr_port((struct sockaddr *)src) == htons(rs_rdma_port))
		return ERR_PTR(-EADDRINUSE);
	id = rs_cm_new_id(rs);
	if (IS_ERR(id))
		return id;
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
	struct sockaddr_storage src, door;
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
	/* The request goes to the peer's door; its hello names the port (rs_hello_build()). */
	memcpy(&door, addr, min_t(int, len, sizeof(door)));
	rs_addr_set_port((struct sockaddr *)&door, htons(READ_ONCE(rs_rdma_port)));
	err = rdma_resolve_addr(id, bound ? (struct sockaddr *)&src : NULL,
				(struct sockaddr *)&door, rs_connect_timeout_ms);
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
	/* Not the door's port: a connect() from it takes another in rdma_cm's space. */
	if (rs_addr_port((struct sockaddr *)&bound) == htons(rs_rdma_port))
		return 0;
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

/* ---- the door: the namespace's one rdma_cm listener ---- */

/*
 * An RDMA client's request never goes to the TCP port it connects to: rdma_cm's port space is not
 * TCP's, and any local user may listen on a port there (/dev/infiniband/rdma_cm is open to all;
 * rdma_cm asks for privilege below 1024 only).  It goes to the namespace's door instead: the
 * module's one rdma_cm listener, on rdma_port (below 1024), bound with kernel credentials.  The
 * request's hello names the TCP port, and the door gives the request to the listener TCP's own
 * lookup gives a SYN from that client to that port (__inet_lookup_listener(): the port's owner,
 * its address, device and VRF binding, SO_REUSEPORT's choice by the client's address, a BPF
 * sk_lookup program), for a local address of the device it came on, as TCP's input takes only
 * those.  When that is no rdmasock listener, the client is refused and goes to TCP, where the
 * same choice is made again.  So the RDMA clients of a port go to whoever owns that port in
 * TCP's space, and to no one else.
 *
 * Each namespace has one struct rs_door (its generic data), whose members are its rdmasock
 * listeners: a listen() joins, a close leaves.  Its id is opened by a listen() that finds none
 * (the first, or one after a failed open: whoever held the port may have let it go), and shut
 * when the last member leaves, so the id (which holds the namespace) never outlives the
 * listeners.  The door's lock serializes opening, shutting and the member count; its members_sem
 * is read by the request handler for the whole request (so a listener that leaves waits for
 * requests that picked it) and written by joins and leaves.  The handler takes neither lock_sock
 * nor the lock.  The id is bound to the wildcard address: rdma_cm listens on each device as it
 * comes and goes, and sends the door no DEVICE_REMOVAL.
 */
#define RS_DOOR_TAG	1UL
#define RS_DOOR_BITS	6

struct rs_door {
	struct net *net;
	struct mutex lock;		/* opening, shutting, @n */
	struct rdma_cm_id *id;		/* NULL: shut, or it could not be opened */
	unsigned int n;			/* members */
	struct rw_semaphore members_sem;
	struct list_head members[1 << RS_DOOR_BITS];	/* listeners (rs_sock.door_node), by port */
};

static unsigned int rs_door_net_id __read_mostly;

static struct rs_door *rs_door_of(struct net *net)
{
	return net_generic(net, rs_door_net_id);
}

static struct list_head *rs_door_bucket(struct rs_door *d, u16 port)
{
	return &d->members[hash_32(port, RS_DOOR_BITS)];
}

/* One id, listening on @family's wildcard address at rdma_port; IPv6's takes IPv4 clients too. */
static int rs_door_listen(struct rs_door *d, sa_family_t family)
{
	struct sockaddr_storage any = { .ss_family = family };
	struct rdma_cm_id *id;
	int err;

	id = rdma_create_id(d->net, rs_cm_handler, (void *)((unsigned long)d | RS_DOOR_TAG),
			    RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	rs_addr_set_port((struct sockaddr *)&any, htons(rs_rdma_port));
	err = family == AF_INET6 ? rdma_set_afonly(id, 0) : 0;
	if (!err)
		err = rdma_bind_addr(id, (struct sockaddr *)&any);
	if (!err)
		err = rdma_listen(id, SOMAXCONN);
	if (err) {
		rdma_destroy_id(id);
		return err;
	}
	d->id = id;
	return 0;
}

/*
 * Open the door (its lock held).  rdma_cm asks capable(CAP_NET_BIND_SERVICE) of whoever binds a
 * port below 1024: a listen() by any user, or in a container, would be refused.  The port is the
 * module's, so it binds with the kernel's credentials, in the caller's context.  (A device whose
 * listen makes sockets, siw's, makes them in the caller's namespace, which may not be the
 * socket's: #49.)  Not where rdma_cm would hand the port to anyone's id as an ephemeral one
 * (ip_local_port_range covers it): whoever got it while the door was shut would get every
 * request.
 */
static int rs_door_open(struct rs_door *d)
{
	const struct cred *old;
	struct cred *kcred;
	int err, low, high;

	lockdep_assert_held(&d->lock);
	inet_get_local_port_range(d->net, &low, &high);
	if (rs_rdma_port >= low && rs_rdma_port <= high) {
		pr_warn_ratelimited("rdma_port %u is inside ip_local_port_range (%d-%d): no RDMA listener\n",
				    rs_rdma_port, low, high);
		return -EADDRNOTAVAIL;
	}
	kcred = prepare_kernel_cred(&init_task);
	if (!kcred)
		return -ENOMEM;
	old = override_creds(kcred);
	err = rs_door_listen(d, AF_INET6);
	/*
	 * No IPv6 in this kernel or namespace: IPv4 clients still come.  (A wildcard bind meets
	 * a port taken on any address with -EADDRNOTAVAIL, rdma_cm's cma_check_port().)
	 */
	if (err && err != -EADDRINUSE && err != -EADDRNOTAVAIL && err != -ENOMEM)
		err = rs_door_listen(d, AF_INET);
	revert_creds(old);
	put_cred(kcred);
	return err;
}

/*
 * A listener (lock_sock held, TCP listening on its port) joins its namespace's door: its RDMA
 * clients come to it once the door is open.  0: it is; else the error that kept it shut (counted
 * when someone else holds rdma_port in rdma_cm's space), and it serves TCP alone until
 * a later listen() opens it.
 */
int rs_door_join(struct rs_sock *rs)
{
	struct rs_door *d = rs_door_of(sock_net(&rs->sk));
	u16 port = inet_sk(rs->tcp->sk)->inet_num;
	int err = 0;

	sock_owned_by_me(&rs->sk);
	if (!port || rs->door)
		return -EINVAL;
	/*
	 * The door's id holds its namespace; a kernel socket does not.  A kernel listener in
	 * another namespace would keep that namespace alive through the door, and with it the
	 * listener (only its namespace's exit closes it): TCP alone.
	 */
	if (!rs->sk.sk_net_refcnt && !net_eq(d->net, &init_net))
		return -EPERM;
	mutex_lock(&d->lock);
	down_write(&d->members_sem);
	list_add_tail(&rs->door_node, rs_door_bucket(d, port));
	rs->door = d;
	d->n++;
	up_write(&d->members_sem);
	if (!d->id) {
		err = rs_door_open(d);
		if (err == -EADDRINUSE || err == -EADDRNOTAVAIL)
			rs_count(d->net, RS_CNT_RDMA_PORT_TAKEN);
	}
	mutex_unlock(&d->lock);
	return err;
}

/* A listener stops listening: no request picks it again; the last one shuts the door. */
static void rs_door_leave(struct rs_sock *rs)
{
	struct rs_door *d = rs->door;

	if (!d)
		return;
	mutex_lock(&d->lock);
	down_write(&d->members_sem);	/* waits for requests handled for this listener */
	list_del_init(&rs->door_node);
	rs->door = NULL;
	d->n--;
	up_write(&d->members_sem);
	if (!d->n && d->id) {
		/*
		 * Under the lock: a door opened again at once finds the port free.  It waits for
		 * its handlers: none sees the door after.
		 */
		rdma_destroy_id(d->id);
		d->id = NULL;
	}
	mutex_unlock(&d->lock);
}

/*
 * The address a request names for our end: one TCP would take a SYN for on @dev, or none.
 * rdma_cm checks only that the client's address routes back through @dev; the rest of its
 * header is the client's word.  So, as ip_route_input() and ip6_input() would: not loopback
 * (which would reach listeners bound to 127.0.0.1 or ::1), not a broadcast, multicast or
 * wildcard address, and a local address (of @dev itself, for an IPv6 link-local one).
 */
static bool rs_door_local(struct net *net, struct net_device *dev, const struct sockaddr *l)
{
	if (l->sa_family == AF_INET) {
		__be32 a = ((const struct sockaddr_in *)l)->sin_addr.s_addr;

		return !ipv4_is_loopback(a) && !ipv4_is_multicast(a) && !ipv4_is_lbcast(a) &&
		       !ipv4_is_zeronet(a) && inet_addr_type_dev_table(net, dev, a) == RTN_LOCAL;
	}
#if IS_ENABLED(CONFIG_IPV6)
	if (l->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)l)->sin6_addr;
		int type = ipv6_addr_type(a);

		if (type & (IPV6_ADDR_LOOPBACK | IPV6_ADDR_MULTICAST | IPV6_ADDR_MAPPED) ||
		    type == IPV6_ADDR_ANY)
			return false;
		/* Any device's (of @dev's VRF), but @dev's own for a link-local address. */
		return ipv6_chk_addr_and_flags(net, a, dev, !(type & IPV6_ADDR_LINKLOCAL), 0,
					       IFA_F_TENTATIVE);
	}
#endif
	return false;
}

/*
 * The listener TCP gives a SYN from the request's client to @port (network order), if it is one
 * of ours; else NULL, and *@group says whether it is in a SO_REUSEPORT group (where another client
 * address may be given one of ours).
 */
static struct rs_sock *rs_door_pick(struct rs_door *d, struct rdma_cm_id *id, __be16 port,
				    bool *group)
{
	const struct sockaddr *l = (const struct sockaddr *)&id->route.addr.src_addr;
	const struct sockaddr *r = (const struct sockaddr *)&id->route.addr.dst_addr;
	struct inet_hashinfo *h = d->net->ipv4.tcp_death_row.hashinfo;
	struct rs_sock *rs, *owner = NULL;
	struct net_device *dev;
	struct sock *sk = NULL;
	int dif, sdif = 0;
	u16 num = 0;

	lockdep_assert_held(&d->members_sem);
	*group = false;
	if (l->sa_family != r->sa_family)
		return NULL;
	rcu_read_lock();
	dev = dev_get_by_index_rcu(d->net, id->route.addr.dev_addr.bound_dev_if);
	if (!dev || !rs_door_local(d->net, dev, l))
		goto out;
	/* As TCP's input names the device: a VRF's, with its slave as sdif. */
	dif = dev->ifindex;
	if (netif_is_l3_slave(dev)) {
		sdif = dif;
		dif = l3mdev_master_ifindex_rcu(dev);
	}
	if (l->sa_family == AF_INET) {
		const struct sockaddr_in *l4 = (const void *)l, *r4 = (const void *)r;

		sk = __inet_lookup_listener(d->net, h, NULL, 0, r4->sin_addr.s_addr, r4->sin_port,
					    l4->sin_addr.s_addr, ntohs(port), dif, sdif);
#if IS_ENABLED(CONFIG_IPV6)
	} else {
		const struct sockaddr_in6 *l6 = (const void *)l, *r6 = (const void *)r;

		sk = inet6_lookup_listener(d->net, h, NULL, 0, &r6->sin6_addr, r6->sin6_port,
					   &l6->sin6_addr, ntohs(port), dif, sdif);
#endif
	}
	if (!IS_ERR_OR_NULL(sk)) {
		owner = rs_tcp_owner(sk);	/* compared, never followed */
		num = sk->sk_num;		/* (a sk_lookup program may pick another port's) */
		*group = !!rcu_access_pointer(sk->sk_reuseport_cb);
	}
out:
	rcu_read_unlock();
	if (!owner)
		return NULL;
	/* Only a member (members_sem keeps it) is used. */
	list_for_each_entry(rs, rs_door_bucket(d, num), door_node)
		if (rs == owner)
			return rs;
	return NULL;
}

static int rs_door_request(struct rs_door *d, struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	__be16 port = rs_hello_peek_port(ev->param.conn.private_data,
					 ev->param.conn.private_data_len);
	struct rs_sock *listener;
	bool group;
	__be32 why;
	int err;

	if (!port) {
		why = cpu_to_be32(RS_REJ_HELLO);
		rs_count(d->net, RS_CNT_PROTO_ERR);
		rdma_reject(id, &why, sizeof(why), IB_CM_REJ_CONSUMER_DEFINED);
		return -EPROTO;		/* rdma_cm destroys the id */
	}
	down_read(&d->members_sem);
	listener = rs_door_pick(d, id, port, &group);
	if (listener) {
		err = rs_cm_request(listener, id, ev, port);
	} else {
		/*
		 * Said so: the client goes to TCP at once.  It remembers this host and port as
		 * TCP's (the negative cache), unless a SO_REUSEPORT group may give its next
		 * connection to one of ours.
		 */
		why = cpu_to_be32(group ? RS_REJ_TCP : RS_REJ_NOT_OURS);
		rs_count(d->net, RS_CNT_DOOR_TO_TCP);
		rdma_reject(id, &why, sizeof(why), IB_CM_REJ_CONSUMER_DEFINED);
		err = -ECONNREFUSED;
	}
	up_read(&d->members_sem);
	return err;
}

static int rs_door_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct rs_door *d = (void *)((unsigned long)id->context & ~RS_DOOR_TAG);

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return rs_door_request(d, id, ev);
	return 0;
}

static int __net_init rs_door_net_init(struct net *net)
{
	struct rs_door *d = rs_door_of(net);
	int i;

	d->net = net;
	mutex_init(&d->lock);
	init_rwsem(&d->members_sem);
	for (i = 0; i < ARRAY_SIZE(d->members); i++)
		INIT_LIST_HEAD(&d->members[i]);
	return 0;
}

/* Listeners hold the namespace, and the last one shut the door. */
static void __net_exit rs_door_net_exit(struct net *net)
{
	struct rs_door *d = rs_door_of(net);

	WARN_ON_ONCE(d->n || d->id);
	mutex_destroy(&d->lock);
}

static struct pernet_operations rs_door_net_ops = {
	.init = rs_door_net_init,
	.exit = rs_door_net_exit,
	.id = &rs_door_net_id,
	.size = sizeof(struct rs_door),
};

int rs_cm_module_init(void)
{
	return register_pernet_subsys(&rs_door_net_ops);
}

void rs_cm_module_exit(void)
{
	unregister_pernet_subsys(&rs_door_net_ops);
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
	/* As from a host without rdmasock: remembered (the negative cache). */
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

/* A request the door gave @listener, for its TCP port @port. */
static int rs_cm_request(struct rs_sock *listener, struct rdma_cm_id *id, struct rdma_cm_event *ev,
			 __be16 port)
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
	rs_note_addrs(child, id, port);
	err = rs_hello_parse(child, ev->param.conn.private_data, ev->param.conn.private_data_len,
			     false, port);
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

	rs_door_leave(rs);
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

	if ((unsigned long)id->context & RS_DOOR_TAG)
		return rs_door_handler(id, ev);

	/* Only the door listens: a socket's id never has a request (rdma_cm destroys it). */
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return -EINVAL;
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
