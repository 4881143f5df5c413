// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock: the socket family and its proto_ops.
 *
 * A socket of this family starts with no carrier.  connect() and listen() pick one: an RDMA RC QP
 * (cm.c, tx.c, rx.c) when the route has an RDMA device and the peer speaks rdmasock, kernel TCP
 * otherwise (fallback.c).  Every call here dispatches on rs->mode; in TCP mode it goes straight to
 * the kernel TCP socket, so a fallen-back socket costs what TCP costs.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/sockios.h>
#include <asm/ioctls.h>
#include <linux/tcp.h>
#include <net/tcp_states.h>
#include <net/tcp.h>
#include <net/protocol.h>
#include <net/inet_common.h>
#include <linux/bpf-cgroup.h>
#include <net/ipv6.h>
#include "rdmasock.h"
#include "close.h"
#include "cm.h"
#include "conn.h"
#include "core.h"
#include "dev.h"
#include "fallback.h"
#include "grow.h"
#include "keepalive.h"
#include "park.h"
#include "policy.h"
#include "proc.h"
#include "resume.h"
#include "rdma.h"
#include "stats.h"
#include "tx.h"
#include "wr.h"
#include "trace.h"

static int rs_family = RDMASOCK_FAMILY_DEFAULT;
module_param_named(family, rs_family, int, 0444);
MODULE_PARM_DESC(family, "socket family number to register (default 19, see docs/design.md)");

static int rs_ipproto = RDMASOCK_IPPROTO_DEFAULT;
module_param_named(ipproto, rs_ipproto, int, 0444);
MODULE_PARM_DESC(ipproto, "protocol number of rdmasock in AF_INET and AF_INET6 (default "
		 __stringify(RDMASOCK_IPPROTO_DEFAULT) ", 0: family only)");

static bool rs_fallback_default = true;
module_param_named(fallback, rs_fallback_default, bool, 0644);
MODULE_PARM_DESC(fallback, "fall back to TCP when RDMA is not possible (default on)");

static void rs_write_space(struct sock *sk)
{
	rs_wake(sk, EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND);
}

static void rs_sk_destruct(struct sock *sk)
{
	struct rs_sock *rs = rs_sk(sk);

	WARN_ON_ONCE(rs->cm_id || rs->link || rs->tcp || rs->port_holder);
	kvfree(rs->replay_buf);
	rs_policy_put(rs->policy);
	rs_proc_del(rs);
	if (rs->parent)
		sock_put(&rs->parent->sk);
}

static const struct proto_ops rs_proto_ops[2];
/* Whether rs_set_peek_off() is offered: TCP's choice, read once at load. */
static bool rs_peek_off __ro_after_init;
static struct proto rs_proto;

/* ---- the carrier of a connect(): RDMA, or TCP when RDMA cannot be had ---- */

/*
 * A full backlog drops a TCP SYN and the client retries for about two minutes.  A busy REJ makes
 * us retry RDMA 100 ms, 200 ms ... then every 1.6 s, for about 30 s, before TCP takes over.
 */
#define RS_BUSY_TRIES		22
#define RS_BUSY_BACKOFF_MS	100

/* An RDMA attempt; if none can be made, TCP (with the reason), unless fallback is off. */
static int rs_connect_rdma(struct rs_sock *rs, struct sockaddr *addr, int len)
{
	int reason, err;

	/* A QP parked by an earlier connection to @addr carries it, if there is one (park.c). */
	if (!rs_park_take(rs, addr, len))
		return 0;
	if (!rs->cm_id)
		rs_tcp_take_port(rs);
	err = rs_cm_connect(rs, addr, len, &reason);
	if (!err)
		return 0;
	if (rs->port_taken)
		rs_tcp_give_port(rs);
	if (rs->no_fallback)
		return err;
	return rs_tcp_connect_start(rs, addr, len, reason);
}

/* The set-up timer fired before rdma_cm said anything final. */
/* The backoff after a busy listener is over: a fresh attempt, with a fresh id. */
static void rs_connect_retry(struct rs_sock *rs)
{
	struct sock *sk = &rs->sk;
	int err;

	err = rs_connect_rdma(rs, (struct sockaddr *)&rs->peer_addr, rs->peer_addr_len);
	if (!err)
		return;
	WRITE_ONCE(sk->sk_err, -err);
	sk->sk_state = TCP_CLOSE;
	sk_error_report(sk);
}

/*
 * Runs under lock_sock: turn the CM outcome (rs_connect_done(), or the set-up timer) into the
 * socket's state, or choose TCP.  The lower layers only report; the choice of carrier is made
 * here, and at connect() (rs_connect_start()).
 */
static void rs_connect_work(struct work_struct *work)
{
	struct rs_sock *rs = container_of(to_delayed_work(work), struct rs_sock, connect_work);
	struct sock *sk = &rs->sk;
	int err, reason;

	lock_sock(sk);
	/* The bound id of a socket that has done nothing since its device went away. */
	if (test_bit(RS_F_DEV_GONE, &rs->flags) && sk->sk_state == TCP_CLOSE && !rs->link &&
	    !rs->parent) {
		clear_bit(RS_F_DEV_GONE, &rs->flags);
		rs_cm_id_drop(rs);
		goto out;
	}
	if (rs->parent) {
		/* A child whose client never sent its RTU or READY (rs_cm_request armed this). */
		if (sk->sk_state == TCP_SYN_RECV)
			rs_abort(rs, -ETIMEDOUT);
		goto out;
	}
	/* Closed meanwhile (close() tears the attempt down), or decided already. */
	if (sock_flag(sk, SOCK_DEAD) || sk->sk_state != TCP_SYN_SENT ||
	    rs->mode != RDMASOCK_MODE_NONE)
		goto out;
	if (rs->busy_tries && !rs->cm_id) {
		rs_connect_retry(rs);
		goto out;
	}
	/* A run armed for an earlier attempt (it waited for lock_sock): this one's is queued. */
	if (!test_bit(RS_F_CM_DONE, &rs->flags) && time_before(jiffies, rs->connect_deadline))
		goto out;
	rs_connect_record(rs, -ETIMEDOUT, RDMASOCK_REASON_TIMEOUT);	/* unless decided */
	err = rs->cm_result;
	reason = rs->reason;
	if (err && reason == RDMASOCK_REASON_PEER_BUSY && rs->busy_tries < RS_BUSY_TRIES) {
		/* As a SYN the full backlog dropped: wait, then try RDMA again. */
		rs_teardown_rdma(rs, false);
		rs_connect_work_arm(rs, msecs_to_jiffies(RS_BUSY_BACKOFF_MS <<
							 min(rs->busy_tries, 4U)));
		rs->busy_tries++;
		goto out;
	}
	if (!err) {
		rs_connect_established(rs);	/* (unless a waiter did it first) */
		goto out;
	}
	/* A parked QP that did not carry it (refused, gone): the CM's exchange, from scratch. */
	if (test_bit(RS_F_OPENING, &rs->flags)) {
		rs_reset_abandoned(rs);	/* (the server may have made it of our OPEN) */
		rs_conn_reset(rs);
		rs->no_reuse = true;
		rs->sk.sk_state = TCP_CLOSE;
		err = rs_connect_rdma(rs, (struct sockaddr *)&rs->peer_addr, rs->peer_addr_len);
		if (!err)
			goto out;
		goto failed;
	}
	rs_teardown_rdma(rs, false);
	if (rs->port_taken)
		rs_tcp_give_port(rs);
	if (reason == RDMASOCK_REASON_TIMEOUT || reason == RDMASOCK_REASON_PEER_REJECT)
		rs_neg_cache_add(sock_net(sk), (struct sockaddr *)&rs->peer_addr);
	if (!rs->no_fallback) {
		err = rs_tcp_connect_start(rs, (struct sockaddr *)&rs->peer_addr,
					   rs->peer_addr_len, reason);
		if (!err)
			goto out;
	}
failed:
	WRITE_ONCE(sk->sk_err, -err);
	sk->sk_state = TCP_CLOSE;
	sk_error_report(sk);
out:
	release_sock(sk);
	sock_put(sk);
}

static struct rs_sock *rs_new_child(struct rs_sock *listener);

/* What every rdmasock socket starts with, after sock_init_data(). */
static struct rs_sock *rs_sock_setup(struct sock *sk)
{
	struct rs_sock *rs = rs_sk(sk);

	sk->sk_destruct = rs_sk_destruct;
	sk->sk_write_space = rs_write_space;
	rs_sol_init(rs);
	spin_lock_init(&rs->lock);
	/* Once: a busy poller of an earlier connection may hold it. */
	spin_lock_init(&rs->cq_lock);
	INIT_LIST_HEAD(&rs->pending_q);
	INIT_LIST_HEAD(&rs->ready_q);
	INIT_LIST_HEAD(&rs->accept_node);
	INIT_LIST_HEAD(&rs->door_node);
	INIT_LIST_HEAD(&rs->dev_node);
	INIT_DELAYED_WORK(&rs->connect_work, rs_connect_work);
	INIT_WORK(&rs->teardown_work, rs_teardown_work);
	INIT_DELAYED_WORK(&rs->close_work, rs_close_work);
	rs_wr_init(rs);
	rs_park_init(rs);
	rs_keepalive_init(rs);
	rs_tx_init(rs);
	rs_grow_init(rs);
	rs_resume_sock_init(rs);
	init_waitqueue_head(&rs->close_wait);
	rs->no_fallback = !rs_fallback_default;
	rs->new_child = rs_new_child;
	rs_count(sock_net(sk), RS_CNT_SOCKETS);
	rs_proc_add(rs);
	return rs;
}

/*
 * An AF_INET/AF_INET6 rdmasock socket takes its TCP socket's lock inside its own (rs->tcp is of the
 * same family): its own lockdep class, as the family's sockets have by their family number.
 */
static void rs_inet_lock_class(struct sock *sk)
{
	static struct lock_class_key slock_key[2], sk_key[2];
	int v6 = sk->sk_family == AF_INET6;

	sock_lock_init_class_and_name(sk, v6 ? "slock-AF_INET6-RDMASOCK" : "slock-AF_INET-RDMASOCK",
				      &slock_key[v6],
				      v6 ? "sk_lock-AF_INET6-RDMASOCK" : "sk_lock-AF_INET-RDMASOCK",
				      &sk_key[v6]);
}

/*
 * A socket of the family, or (@like, a listener) one of @like's kind: a child of an
 * IPPROTO_RDMASOCK listener is an AF_INET/AF_INET6 socket as its listener.  Of what
 * inet_create()/inet6_create() set, nothing else is read: IP-level options and state are the
 * TCP socket's (rs->tcp), never this one's.
 */
static struct rs_sock *rs_alloc_sock(struct net *net, struct socket *sock, int kern,
				     const struct rs_sock *like)
{
	int family = like ? like->sk.sk_family : rs_family;
	struct sock *sk;

	sk = sk_alloc(net, family, GFP_KERNEL, like ? like->sk.sk_prot : &rs_proto, kern);
	if (!sk)
		return NULL;
	sock_init_data(sock, sk);
	/*
	 * sock_init_data() takes the type from @sock: a CM child has none yet (sock_graft() at
	 * accept() does not set it), and SO_TYPE must say SOCK_STREAM from the start, as a TCP
	 * clone's does (TLS libraries, sd_is_socket() and net.FileConn check it).
	 */
	sk->sk_type = SOCK_STREAM;
	sk->sk_protocol = like ? like->sk.sk_protocol : IPPROTO_TCP;
	/* As inet_create(): SO_TXREHASH starts at the namespace's net.core.txrehash. */
	sk->sk_txrehash = READ_ONCE(net->core.sysctl_txrehash);
	if (family == AF_INET || family == AF_INET6)
		rs_inet_lock_class(sk);
	if (family == AF_INET6)
		inet_sk(sk)->pinet6 = &container_of(rs_sk(sk), struct rs6_sock, rs)->inet6;
	return rs_sock_setup(sk);
}

/*
 * A listener's child, for a connection request the CM layer took (cm.c): a socket with the
 * listener's options, as a TCP child has, TCP's and its own.  A kernel listener's child is a
 * kernel socket too (as sk_clone_lock() makes it): its namespace may be going, and only its
 * owner's exit closes the listener.
 */
static struct rs_sock *rs_new_child(struct rs_sock *listener)
{
	struct rs_sock *child;

	child = rs_alloc_sock(sock_net(&listener->sk), NULL, !listener->sk.sk_net_refcnt,
			      listener);
	if (!child)
		return NULL;
	rs_sol_inherit(child, listener);
	child->nodelay = READ_ONCE(listener->nodelay);
	child->cork = READ_ONCE(listener->cork);
	child->user_timeout = READ_ONCE(listener->user_timeout);
	child->no_fallback = listener->no_fallback;
	child->ka_time = READ_ONCE(listener->ka_time);
	child->ka_intvl = READ_ONCE(listener->ka_intvl);
	child->ka_probes = READ_ONCE(listener->ka_probes);
#ifdef CONFIG_MEMCG
	/*
	 * Its rings are charged to the listener's cgroup, not to the CM's worker (nobody), from the
	 * CONNECT_REQUEST on: before accept() there is no other task to charge.
	 */
	if (!child->sk.sk_memcg && listener->sk.sk_memcg) {
		css_get(&listener->sk.sk_memcg->css);
		child->sk.sk_memcg = listener->sk.sk_memcg;
	}
#endif
	return child;
}

static int rs_create(struct net *net, struct socket *sock, int protocol, int kern)
{
	struct rs_sock *rs;

	if (sock->type != SOCK_STREAM)
		return -ESOCKTNOSUPPORT;
	if (protocol && protocol != IPPROTO_TCP)
		return -EPROTONOSUPPORT;
	sock->state = SS_UNCONNECTED;
	sock->ops = &rs_proto_ops[rs_peek_off];
	rs_set_custom_sockopt(sock);
	rs = rs_alloc_sock(net, sock, kern, NULL);
	if (!rs)
		return -ENOMEM;
	if (!kern)
		rs->policy = rs_policy_get_current();
	return 0;
}

/*
 * The carrier of the socket's calls: TCP once the socket fell back or was accepted from TCP (final
 * until release()), else RDMA, which also serves a socket that has no carrier yet.
 */
static const struct rs_carrier *rs_carrier(const struct rs_sock *rs)
{
	return rs_is_tcp(rs) ? &rs_tcp_carrier : &rs_rdma_carrier;
}

/*
 * Check an address as inet_bind/inet_stream_connect would, returning its family.  A socket of
 * the family takes both families (the first address decides); an IPPROTO_RDMASOCK socket only
 * its own, with TCP's errors: the length first, then the family (and AF_INET's bind takes
 * AF_UNSPEC with INADDR_ANY, as inet_bind does).
 */
static int rs_check_addr(struct rs_sock *rs, struct sockaddr *addr, int len, bool bind)
{
	int fixed = rs_inet_family(rs);

	if (len < (int)sizeof(addr->sa_family))
		return -EINVAL;
	if (fixed == AF_INET) {
		if (len < (int)sizeof(struct sockaddr_in))
			return -EINVAL;
		if (addr->sa_family == AF_INET ||
		    (bind && addr->sa_family == AF_UNSPEC &&
		     ((struct sockaddr_in *)addr)->sin_addr.s_addr == htonl(INADDR_ANY)))
			return AF_INET;
		return -EAFNOSUPPORT;
	}
	if (fixed == AF_INET6) {
		if (len < SIN6_LEN_RFC2133)
			return -EINVAL;
		return addr->sa_family == AF_INET6 ? AF_INET6 : -EAFNOSUPPORT;
	}
	switch (addr->sa_family) {
	case AF_INET:
		return len < (int)sizeof(struct sockaddr_in) ? -EINVAL : AF_INET;
	case AF_INET6:
		return len < SIN6_LEN_RFC2133 ? -EINVAL : AF_INET6;
	default:
		return -EAFNOSUPPORT;
	}
}

static int rs_bind(struct socket *sock, struct sockaddr *addr, int len)
{
	struct rs_sock *rs = rs_sk(sock->sk);
	struct sockaddr_in sin;
	int family, err;

	family = rs_check_addr(rs, addr, len, true);
	if (family < 0)
		return family;
	if (addr->sa_family == AF_UNSPEC) {	/* inet_bind's AF_UNSPEC with INADDR_ANY */
		sin = *(struct sockaddr_in *)addr;
		sin.sin_family = AF_INET;
		addr = (struct sockaddr *)&sin;
		len = sizeof(sin);
	}
	lock_sock(&rs->sk);
	err = -EINVAL;
	if (rs->sk.sk_state != TCP_CLOSE || rs->mode != RDMASOCK_MODE_NONE || rs->cm_id ||
	    (rs->tcp && inet_sk(rs->tcp->sk)->inet_num && !rs->port_taken))
		goto out;
	/* The TCP socket owns the port: TCP's permission and conflict rules apply as they are. */
	err = rs_tcp_ensure(rs, family);
	if (!err)
		err = kernel_bind(rs->tcp, addr, len);
	if (!err)	/* (rs_check_addr() checked the length: the port is there) */
		rs->port_auto = !rs_addr_port(addr);
	/*
	 * Not for SO_REUSEPORT: the port's one rdma_cm listener is its group's, made at listen.
	 * Nor without a port yet (IP_BIND_ADDRESS_NO_PORT): the id takes TCP's once TCP has one.
	 */
	if (!err && !rs->force_tcp && !rs->sk.sk_reuseport && inet_sk(rs->tcp->sk)->inet_num)
		rs_cm_bind(rs, addr, len);
out:
	release_sock(&rs->sk);
	return err;
}

/* Start a connect on an unconnected socket: RDMA first, TCP when RDMA cannot be had. */
static int rs_connect_start(struct rs_sock *rs, struct sockaddr *addr, int len)
{
	int err;

	/* Nothing of an earlier connection or attempt stays, whichever carrier this one takes. */
	rs_conn_reset(rs);
	rs->no_reuse = false;
	err = rs_tcp_ensure(rs, addr->sa_family);
	if (err)
		return err;
	rs_tcp_sync(rs);	/* the options RDMA's route follows too (SO_BINDTODEVICE) */
	/* The rules of its cgroup's switch (policy.c), as the preload shim applies its own. */
	if (!rs->force_tcp && !rs_policy_allows(rs->policy, addr, false))
		rs->force_tcp = true;
	if (rs->force_tcp)
		return rs_tcp_connect_start(rs, addr, len, RDMASOCK_REASON_FORCED);
	if (rs_neg_cache_hit(sock_net(&rs->sk), addr) && !rs->no_fallback)
		return rs_tcp_connect_start(rs, addr, len, RDMASOCK_REASON_NEG_CACHE);
	return rs_connect_rdma(rs, addr, len);
}

/* After a fallback, TCP owns the connect, with its own waiting, errors and EALREADY/EISCONN. */
static int rs_connect_tcp(struct rs_sock *rs, struct sockaddr *addr, int len, int flags,
			  bool started)
{
	struct socket *sock = rs->sk.sk_socket;
	int err;

	if (started && (flags & O_NONBLOCK) &&
	    READ_ONCE(rs->tcp->sk->sk_state) == TCP_SYN_SENT)
		return -EINPROGRESS;
	rs_tcp_sync(rs);
	release_sock(&rs->sk);
	err = rs->tcp->ops->connect(rs->tcp, addr, len, flags);
	lock_sock(&rs->sk);
	if (!err || err == -EISCONN)
		sock->state = SS_CONNECTED;
	/*
	 * The error TCP's connect() reported was its pending one (sock_error()): ours, its mirror
	 * (rs_tcp_mirror()), is spent with it, or SO_ERROR would report it again.
	 */
	else if (err != -EINPROGRESS && err != -EALREADY && !READ_ONCE(rs->tcp->sk->sk_err))
		WRITE_ONCE(rs->sk.sk_err, 0);
	return err;
}

/* The same state rules as inet_stream_connect(). */
static int rs_connect(struct socket *sock, struct sockaddr *addr, int len, int flags)
{
	struct rs_sock *rs = rs_sk(sock->sk);
	struct sockaddr_in6 sin6;
	struct sock *sk = &rs->sk;
	bool started = false;
	long timeo;
	int err;

	err = rs_check_addr(rs, addr, len, false);
	if (err < 0)
		return err;
	/*
	 * An RFC 2133 name has no scope: TCP takes none, and so must everything after this (rdma_cm
	 * reads a whole sockaddr_in6, past what the caller gave).
	 */
	if (err == AF_INET6 && len < (int)sizeof(sin6)) {
		memset(&sin6, 0, sizeof(sin6));
		memcpy(&sin6, addr, len);
		addr = (struct sockaddr *)&sin6;
		len = sizeof(sin6);
	}
	lock_sock(sk);
	if (rs_is_tcp(rs)) {
		err = rs_connect_tcp(rs, addr, len, flags, false);
		goto out;
	}
	switch (sock->state) {
	case SS_CONNECTED:
		err = -EISCONN;
		goto out;
	case SS_CONNECTING:
		err = -EALREADY;
		break;
	default:
		err = -EISCONN;
		if (sk->sk_state != TCP_CLOSE)
			goto out;
		err = rs_connect_start(rs, addr, len);
		if (err)
			goto out;
		sock->state = SS_CONNECTING;
		started = true;
		err = -EINPROGRESS;
		break;
	}

	timeo = sock_sndtimeo(sk, flags & O_NONBLOCK);
	if (sk->sk_state == TCP_SYN_SENT && !rs_is_tcp(rs)) {
		if (!timeo)
			goto out;	/* EINPROGRESS or EALREADY */
		err = rs_wait_connect(rs, &timeo);
		if (err)
			goto out;
	}
	if (rs_is_tcp(rs)) {
		err = rs_connect_tcp(rs, addr, len, flags, started);
		goto out;
	}
	if (sk->sk_state == TCP_ESTABLISHED || sk->sk_state == TCP_CLOSE_WAIT) {
		sock->state = SS_CONNECTED;
		err = 0;
	} else {
		err = sock_error(sk) ? : -ECONNABORTED;
		sock->state = SS_UNCONNECTED;
	}
out:
	release_sock(sk);
	return err;
}

static int rs_listen(struct socket *sock, int backlog)
{
	struct rs_sock *rs = rs_sk(sock->sk);
	struct sock *sk = &rs->sk;
	int err, cm_err;

	lock_sock(sk);
	err = -EINVAL;
	if (sock->state != SS_UNCONNECTED || (rs->mode != RDMASOCK_MODE_NONE &&
					      rs->mode != RDMASOCK_MODE_LISTEN))
		goto out;
	if (sk->sk_state == TCP_LISTEN) {
		WRITE_ONCE(sk->sk_max_ack_backlog, backlog);
		err = kernel_listen(rs->tcp, backlog);
		goto out;
	}
	err = rs_tcp_ensure(rs, AF_INET6);
	if (err)
		goto out;
	if (!rs->force_tcp && rs->policy) {
		struct sockaddr_storage ss;

		if (kernel_getsockname(rs->tcp, (struct sockaddr *)&ss) >= 0 &&
		    !rs_policy_allows(rs->policy, (struct sockaddr *)&ss, true))
			rs->force_tcp = true;
	}
	cm_err = rs->force_tcp ? -EPERM : 0;
	/*
	 * RDMA clients come through the namespace's door (cm.c), which gives each the listener
	 * TCP would give its SYN: an id bind() made for this socket has no use now.  Dropped
	 * before the socket is a listener: its DEVICE_REMOVAL is a bound socket's until then.
	 */
	rs_cm_id_drop(rs);
	/* TCP listens on the port: plain TCP clients are served by this socket too. */
	err = kernel_listen(rs->tcp, backlog);
	if (err)
		goto out;
	WRITE_ONCE(sk->sk_max_ack_backlog, backlog);
	rs->tcp_final = true;
	/* rs->tcp is final: poll may use it once it sees mode LISTEN (rs_accept_ready). */
	smp_store_release(&rs->mode, RDMASOCK_MODE_LISTEN);
	WRITE_ONCE(sk->sk_state, TCP_LISTEN);
	/* Its RDMA children may resume over TCP if the namespace has a resume port (resume.c). */
	if (!cm_err && !rs_resume_listen(sock_net(sk)))
		set_bit(RS_F_RESUMABLE, &rs->flags);
	/* Without the door (someone else holds its port), TCP alone until a listen() opens it. */
	if (!cm_err)
		cm_err = rs_door_join(rs);
	/*
	 * An RDMA listener now serves this port: this namespace's clients of it ride RDMA from now
	 * on, not the negative cache's TCP.  (Only then: a TCP-only listener's clients would pay
	 * one refused attempt each.)
	 */
	if (!cm_err)
		rs_neg_cache_forget_port(sock_net(sk), inet_sk(rs->tcp->sk)->inet_sport);
out:
	release_sock(sk);
	return err;
}

static int rs_accept_one(struct rs_sock *rs, struct socket *newsock, struct rs_accept_arg *arg)
{
	struct socket *tcp_child;
	struct rs_sock *child;
	int err;

	child = rs_cm_accept_ready(rs);
	if (child) {
		rs_resume_register(child);	/* its client may resume it from now on */
		sock_graft(&child->sk, newsock);
		newsock->ops = rs->sk.sk_socket->ops;
		newsock->state = SS_CONNECTED;
		rs_set_custom_sockopt(newsock);
		return 0;
	}
	err = kernel_accept(rs->tcp, &tcp_child, O_NONBLOCK);
	if (err)
		return err;
	/* A BPF sockmap holds this clone already: we cannot hook it without breaking that. */
	if (rs_tcp_foreign(tcp_child)) {
		sock_release(tcp_child);
		return -ECONNABORTED;
	}
	child = rs_alloc_sock(sock_net(&rs->sk), newsock, arg->kern, rs);
	if (!child) {
		sock_release(tcp_child);
		return -ENOMEM;
	}
	newsock->ops = rs->sk.sk_socket->ops;
	newsock->state = SS_CONNECTED;
	rs_set_custom_sockopt(newsock);
	child->mode = RDMASOCK_MODE_TCP;
	child->reason = RDMASOCK_REASON_PEER_TCP;
	/* Our listener's options, as an RDMA child takes them. */
	rs_sol_inherit(child, rs);
	/*
	 * The state as TCP's, then mirrored by the callbacks.  Under the TCP socket's lock, no
	 * change of state comes between reading it and hooking them.  Counted here, unless the
	 * handshake is still to complete (a Fast Open child): then its callback counts it.
	 */
	lock_sock(tcp_child->sk);
	child->sk.sk_state = tcp_child->sk->sk_state;
	if (child->sk.sk_state != TCP_SYN_RECV) {
		set_bit(RS_F_TCP_COUNTED, &child->flags);
		rs_count(sock_net(&rs->sk), RS_CNT_CONN_TCP);
	}
	rs_tcp_attach(child, tcp_child);
	rs_sol_seed_tcp_child(child, tcp_child->sk);
	release_sock(tcp_child->sk);
	rs_tcp_sync(child);	/* what our listener had that its TCP listener had not */
	rs_count_fallback(sock_net(&rs->sk), RDMASOCK_REASON_PEER_TCP);
	trace_rdmasock_accept(child);
	return 0;
}

static int rs_do_accept(struct socket *sock, struct socket *newsock, struct rs_accept_arg *arg)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	struct rs_sock *rs = rs_sk(sock->sk);
	struct sock *sk = &rs->sk;
	long timeo;
	int err;

	lock_sock(sk);
	err = -EINVAL;
	if (sk->sk_state != TCP_LISTEN)
		goto out;
	rs_tcp_sync(rs);	/* options set since listen(): for the handshakes to come */
	timeo = sock_rcvtimeo(sk, arg->flags & O_NONBLOCK);
	add_wait_queue(sk_sleep(sk), &wait);
	for (;;) {
		err = rs_accept_one(rs, newsock, arg);
		if (err != -EAGAIN)
			break;
		if (!timeo)
			break;
		if (signal_pending(current)) {
			err = sock_intr_errno(timeo);
			break;
		}
		sk_wait_event(sk, &timeo, rs_accept_ready(rs) || sk->sk_state != TCP_LISTEN, &wait);
		if (sk->sk_state != TCP_LISTEN) {
			err = -EINVAL;
			break;
		}
	}
	remove_wait_queue(sk_sleep(sk), &wait);
out:
	release_sock(sk);
	return err;
}

#ifdef RDMASOCK_PROTO_ACCEPT_ARG
static int rs_accept(struct socket *sock, struct socket *newsock, struct proto_accept_arg *parg)
{
	struct rs_accept_arg arg = { .flags = parg->flags, .kern = parg->kern };

	return rs_do_accept(sock, newsock, &arg);
}
#else
static int rs_accept(struct socket *sock, struct socket *newsock, int flags, bool kern)
{
	struct rs_accept_arg arg = { .flags = flags, .kern = kern };

	return rs_do_accept(sock, newsock, &arg);
}
#endif

static int rs_getname(struct socket *sock, struct sockaddr *addr, int peer)
{
	struct rs_sock *rs = rs_sk(sock->sk);
	int ret;

	lock_sock(&rs->sk);
	ret = rs_carrier(rs)->getname(rs, addr, peer);
	/*
	 * SO_PEERNAME (@peer 2) names the peer of a connection still being set up, or reset, as
	 * inet_getname() does while the socket has one (not after a failed connect(): TCP's
	 * tcp_disconnect() forgets it); getpeername() (1) says ENOTCONN then.  On TCP, TCP says.
	 * (While connecting, the CM handler may be filling in a link-local scope: either is right.)
	 */
	if (ret == -ENOTCONN && peer == 2 && sock->state != SS_UNCONNECTED && !rs_is_tcp(rs) &&
	    rs->peer_addr.ss_family)
		ret = rs_name_copy(rs, addr, (struct sockaddr *)&rs->peer_addr);
	release_sock(&rs->sk);
	return ret;
}

static __poll_t rs_poll(struct file *file, struct socket *sock, poll_table *wait)
{
	struct rs_sock *rs = rs_sk(sock->sk);

	/* All waiters sit on this socket's queue, whatever the carrier; fallback.c forwards. */
	sock_poll_wait(file, sock, wait);
	return rs_carrier(rs)->poll(rs, file);
}

static int rs_ioctl(struct socket *sock, unsigned int cmd, unsigned long arg)
{
	struct rs_sock *rs = rs_sk(sock->sk);

	return rs_carrier(rs)->ioctl(rs, cmd, arg);
}

static int rs_shutdown_op(struct socket *sock, int how)
{
	struct rs_sock *rs = rs_sk(sock->sk);
	int err;

	/* SHUT_RD=0, SHUT_WR=1, SHUT_RDWR=2 map onto RCV_SHUTDOWN|SEND_SHUTDOWN bits as +1. */
	how++;
	if ((how & ~SHUTDOWN_MASK) || !how)
		return -EINVAL;
	lock_sock(&rs->sk);
	/* As inet_shutdown(): a connect that succeeded meanwhile is a connection, shut as one. */
	rs_connect_established(rs);
	if (sock->state == SS_CONNECTING && (rs->sk.sk_state == TCP_ESTABLISHED ||
					     rs->sk.sk_state == TCP_CLOSE_WAIT))
		sock->state = SS_CONNECTED;
	err = rs_carrier(rs)->shutdown(rs, how);
	if (err > 0) {		/* the connect in progress was abandoned */
		sock->state = SS_UNCONNECTED;
		err = 0;
	}
	release_sock(&rs->sk);
	return err;
}

static int rs_int_opt(sockptr_t optval, unsigned int optlen, int *val)
{
	if (optlen < sizeof(int))
		return -EINVAL;
	return copy_from_sockptr(val, optval, sizeof(int)) ? -EFAULT : 0;
}

/* SO_REUSEPORT, as sk_setsockopt() sets it on a TCP socket; TCP's own rules apply at bind. */
static void rs_set_reuseport(struct rs_sock *rs, int val)
{
	lockdep_assert_held(&rs->sk.sk_lock);
	rs->sk.sk_reuseport = !!val;
	if (rs->tcp)
		rs_tcp_sync(rs);
}

static int rs_setsockopt_rdmasock(struct rs_sock *rs, int optname, sockptr_t optval,
				  unsigned int optlen)
{
	int val, err;

	err = rs_int_opt(optval, optlen, &val);
	if (err)
		return err;
	switch (optname) {
	case RDMASOCK_NO_FALLBACK:
		rs->no_fallback = !!val;
		return 0;
	case RDMASOCK_FORCE_TCP:
		if (rs->mode != RDMASOCK_MODE_NONE || rs->sk.sk_state != TCP_CLOSE)
			return -EISCONN;
		rs->force_tcp = !!val;
		return 0;
	case RDMASOCK_REUSEPORT:
		rs_set_reuseport(rs, val);
		return 0;
	case RDMASOCK_MODE:
	case RDMASOCK_FALLBACK_REASON:
	case RDMASOCK_INFO:
		return -EPERM;
	default:
		return -ENOPROTOOPT;
	}
}

/*
 * SOL_SOCKET, only where the kernel lets us see it (rs_set_custom_sockopt()): as sk_setsockopt()
 * on our socket, then at once on the TCP socket.  SO_REUSEPORT, which sk_setsockopt() refuses
 * to a family other than AF_INET/AF_INET6, is TCP's: its own reuseport rules apply at bind.
 */
static int rs_setsockopt_socket(struct socket *sock, int optname, sockptr_t optval,
				unsigned int optlen)
{
	struct rs_sock *rs = rs_sk(sock->sk);
	int err, val;

	if (optname == SO_REUSEPORT) {
		err = rs_int_opt(optval, optlen, &val);
		if (err)
			return err;
		lock_sock(&rs->sk);
		rs_set_reuseport(rs, val);
	} else if (optname == SO_ATTACH_REUSEPORT_CBPF || optname == SO_ATTACH_REUSEPORT_EBPF ||
		   optname == SO_DETACH_REUSEPORT_BPF) {
		/* The group is our TCP listeners' (RDMA clients are spread by hash alone). */
		lock_sock(&rs->sk);
		err = rs->tcp ? sock_setsockopt(rs->tcp, SOL_SOCKET, optname, optval, optlen) :
				-EOPNOTSUPP;
	} else {
		err = sock_setsockopt(sock, SOL_SOCKET, optname, optval, optlen);
		lock_sock(&rs->sk);
	}
	if (!err && rs->tcp)
		rs_tcp_sync(rs);
	release_sock(&rs->sk);
	return err;
}

static int rs_setsockopt(struct socket *sock, int level, int optname, sockptr_t optval,
			 unsigned int optlen)
{
	struct rs_sock *rs = rs_sk(sock->sk);
	int err;

	if (level == SOL_SOCKET)
		return rs_setsockopt_socket(sock, optname, optval, optlen);
	lock_sock(&rs->sk);
	if (level == SOL_RDMASOCK) {
		err = rs_setsockopt_rdmasock(rs, optname, optval, optlen);
		goto out;
	}
	if (level != SOL_TCP && level != SOL_IP && level != SOL_IPV6) {
		err = -ENOPROTOOPT;
		goto out;
	}
	/*
	 * TCP_NODELAY while there is no TCP socket (set before connect(), the commonest place, or
	 * on an accepted RDMA connection, which has none): kept here, with TCP's checks, for the
	 * TCP socket made later (rs_tcp_init_opts()).  One made now would cost ~30 us, and before
	 * connect() it might be of the other family, made again there.
	 */
	if (level == SOL_TCP && optname == TCP_NODELAY && !rs->tcp) {
		int val;

		err = rs_int_opt(optval, optlen, &val);
		if (err)
			goto out;
		rs->nodelay = !!val;
		/* As TCP: setting it sends what was held back, even while corked (tcp(7)). */
		if (val && rs->mode == RDMASOCK_MODE_RDMA)
			rs_tx_push(rs);
		goto out;
	}
	/*
	 * Protocol options always reach a TCP socket (created now if the family is not known yet,
	 * as IPv6 accepts every option IPv4 does): it is the fallback carrier and keeps the values
	 * getsockopt reports.  TCP_NODELAY and TCP_CORK also steer the RDMA path.
	 */
	err = rs_tcp_ensure(rs, level == SOL_IP ? AF_INET : AF_INET6);
	/* Under lock_sock: another thread may not replace rs->tcp meanwhile (rs_tcp_ensure). */
	if (!err)
		err = rs->tcp->ops->setsockopt(rs->tcp, level, optname, optval, optlen);
	if (!err && level == SOL_IP && optname == IP_TOS)
		rs_sol_adopt_priority(rs);	/* as TCP's: IP_TOS sets SO_PRIORITY too */
	if (!err && level == SOL_TCP) {
		struct tcp_sock *tp = tcp_sk(rs->tcp->sk);

		rs->nodelay = !!(tp->nonagle & TCP_NAGLE_OFF);
		rs->cork = !!(tp->nonagle & TCP_NAGLE_CORK);
		rs->user_timeout = READ_ONCE(inet_csk(rs->tcp->sk)->icsk_user_timeout);
		rs_keepalive_params(rs, tp);
		if (optname == TCP_KEEPIDLE)
			rs_keepalive_update(rs);
		/*
		 * As TCP: uncorking sends what was held back, and so does setting TCP_NODELAY,
		 * even while corked (tcp(7); TCP_CORK stays on for what is written after).
		 */
		if ((!rs->cork || (optname == TCP_NODELAY && rs->nodelay)) &&
		    rs->mode == RDMASOCK_MODE_RDMA)
			rs_tx_push(rs);
	}
out:
	release_sock(&rs->sk);
	return err;
}

static void rs_fill_info(struct rs_sock *rs, struct rdmasock_info *info)
{
	memset(info, 0, sizeof(*info));
	info->version = RDMASOCK_INFO_VERSION;
	info->resume_id = test_bit(RS_F_RESUMABLE, &rs->flags) ? rs->resume_id : 0;
	info->mode = rs->mode;
	info->fallback_reason = rs->reason;
	info->state = rs->sk.sk_state;
	if (READ_ONCE(rs->local_qpn)) {
		info->local_qpn = READ_ONCE(rs->local_qpn);
		info->remote_qpn = rs->remote_qpn;
	}
	spin_lock_bh(&rs->lock);
	info->rx_ring_size = rs_rx_ring_size(rs);
	info->tx_ring_size = rs->tx.size;
	info->bytes_sent = rs->bytes_sent;
	info->bytes_received = rs->bytes_received;
	info->rx_queued = rs->rx_prod - rs->rx_cons;
	info->tx_queued = rs->tx_staged - rs->tx_acked;
	info->protocol_errors = rs->proto_errors;
	spin_unlock_bh(&rs->lock);
}

static int rs_getsockopt_rdmasock(struct rs_sock *rs, int optname, char __user *optval,
				  int __user *optlen)
{
	struct rdmasock_info info;
	int len, val;

	if (get_user(len, optlen))
		return -EFAULT;
	if (len < 0)
		return -EINVAL;
	switch (optname) {
	case RDMASOCK_MODE:
		val = rs->mode;
		break;
	case RDMASOCK_FALLBACK_REASON:
		val = rs->reason;
		break;
	case RDMASOCK_NO_FALLBACK:
		val = rs->no_fallback;
		break;
	case RDMASOCK_FORCE_TCP:
		val = rs->force_tcp;
		break;
	case RDMASOCK_REUSEPORT:
		val = rs->sk.sk_reuseport;
		break;
	case RDMASOCK_INFO:
		rs_fill_info(rs, &info);
		len = min_t(int, len, sizeof(info));
		if (copy_to_user(optval, &info, len) || put_user(len, optlen))
			return -EFAULT;
		return 0;
	default:
		return -ENOPROTOOPT;
	}
	if (len < (int)sizeof(int))
		return -EINVAL;
	len = sizeof(int);
	if (copy_to_user(optval, &val, len) || put_user(len, optlen))
		return -EFAULT;
	return 0;
}

static int rs_getsockopt(struct socket *sock, int level, int optname, char __user *optval,
			 int __user *optlen)
{
	struct rs_sock *rs = rs_sk(sock->sk);
	int err;

	lock_sock(&rs->sk);
	if (level == SOL_RDMASOCK) {
		err = rs_getsockopt_rdmasock(rs, optname, optval, optlen);
	} else if (level == SOL_TCP && optname == TCP_INFO) {
		err = rs_carrier(rs)->tcp_info(rs, optval, optlen);
	} else if (level != SOL_TCP && level != SOL_IP && level != SOL_IPV6) {
		err = -ENOPROTOOPT;
	} else {
		err = rs_tcp_ensure_read(rs, level);
		/* Under lock_sock, as setsockopt: rs->tcp cannot change meanwhile. */
		if (!err)
			err = rs->tcp->ops->getsockopt(rs->tcp, level, optname, optval, optlen);
	}
	release_sock(&rs->sk);
	return err;
}

static int rs_sendmsg(struct socket *sock, struct msghdr *msg, size_t len)
{
	struct rs_sock *rs = rs_sk(sock->sk);

	return rs_carrier(rs)->sendmsg(rs, msg, len);
}

static int rs_recvmsg(struct socket *sock, struct msghdr *msg, size_t len, int flags)
{
	struct rs_sock *rs = rs_sk(sock->sk);

	return rs_carrier(rs)->recvmsg(rs, msg, len, flags);
}

static int rs_release_op(struct socket *sock)
{
	struct sock *sk = sock->sk;

	if (!sk)
		return 0;
	/* inet_release()'s: cgroup BPF saw this socket's creation in inet_create(). */
	if (rs_inet_family(rs_sk(sk)) && !sk->sk_kern_sock)
		BPF_CGROUP_RUN_PROG_INET_SOCK_RELEASE(sk);
	/*
	 * A connect whose success is recorded (its waiter or connect_work not run yet) is a
	 * connection: it closes as one, with a FIN, as TCP's would once ESTABLISHED.
	 */
	lock_sock(sk);
	rs_connect_established(rs_sk(sk));
	release_sock(sk);
	rs_release(rs_sk(sk));
	sock->sk = NULL;
	return 0;
}

static int rs_set_rcvlowat(struct sock *sk, int val)
{
	return rs_tcp_set_rcvlowat(rs_sk(sk), val);
}

/*
 * SO_PEEK_OFF, where the kernel's TCP has it (6.9+: inet_stream_ops.set_peek_off), so that
 * getsockopt() and setsockopt() answer as TCP's do on each kernel (EOPNOTSUPP before).  The
 * offset is ours (rx.c reads it) and the TCP socket's (rs_sol_apply()).
 */
static int rs_set_peek_off(struct sock *sk, int val)
{
	WRITE_ONCE(sk->sk_peek_off, val);
	return 0;
}

/*
 * The same calls for the family's sockets and for AF_INET's and AF_INET6's (.family differs), each
 * without and with SO_PEEK_OFF ([rs_peek_off]).
 */
#define RS_PROTO_OPS(fam, peek_off) {			\
	.family = (fam),				\
	.owner = THIS_MODULE,				\
	.release = rs_release_op,			\
	.bind = rs_bind,				\
	.connect = rs_connect,				\
	.socketpair = sock_no_socketpair,		\
	.accept = rs_accept,				\
	.getname = rs_getname,				\
	.poll = rs_poll,				\
	.ioctl = rs_ioctl,				\
	.listen = rs_listen,				\
	.shutdown = rs_shutdown_op,			\
	.setsockopt = rs_setsockopt,			\
	.getsockopt = rs_getsockopt,			\
	.sendmsg = rs_sendmsg,				\
	.recvmsg = rs_recvmsg,				\
	.mmap = sock_no_mmap,				\
	.set_rcvlowat = rs_set_rcvlowat,		\
	.set_peek_off = (peek_off),			\
}

static const struct proto_ops rs_proto_ops[2] = {
	RS_PROTO_OPS(PF_UNSPEC, NULL), RS_PROTO_OPS(PF_UNSPEC, rs_set_peek_off),
};

static const struct proto_ops rs_inet_ops[2] = {
	RS_PROTO_OPS(PF_INET, NULL), RS_PROTO_OPS(PF_INET, rs_set_peek_off),
};

static const struct proto_ops rs_inet6_ops[2] = {
	RS_PROTO_OPS(PF_INET6, NULL), RS_PROTO_OPS(PF_INET6, rs_set_peek_off),
};

static int rs_family_create(struct net *net, struct socket *sock, int protocol, int kern)
{
	return rs_create(net, sock, protocol, kern);
}

static struct net_proto_family rs_family_ops = {
	.create = rs_family_create,
	.owner = THIS_MODULE,
};

/* proto->keepalive: SO_KEEPALIVE, called under lock_sock before SOCK_KEEPOPEN changes. */
static void rs_set_keepalive(struct sock *sk, int on)
{
	struct rs_sock *rs = rs_sk(sk);

	sock_valbool_flag(sk, SOCK_KEEPOPEN, on);
	if (rs->tcp)
		rs_tcp_set_keepalive(rs->tcp->sk, on);
	rs_keepalive_set(rs, on);
}

/* proto->init of an IPPROTO_RDMASOCK socket: inet_create()/inet6_create() made the rest. */
static int rs_inet_init(struct sock *sk)
{
	struct rs_sock *rs;

	rs_inet_lock_class(sk);
	rs = rs_sock_setup(sk);
	if (sk->sk_socket)
		rs_set_custom_sockopt(sk->sk_socket);
	if (!sk->sk_kern_sock)
		rs->policy = rs_policy_get_current();
	return 0;
}

/* sk_common_release() calls it when inet_create() fails after init: nothing is hashed. */
static void rs_unhash(struct sock *sk)
{
}

static struct proto rs_inet_proto = {
	.name = "RDMASOCK-INET",
	.owner = THIS_MODULE,
	.obj_size = sizeof(struct rs_sock),
	.init = rs_inet_init,
	.unhash = rs_unhash,
	.keepalive = rs_set_keepalive,
};

static struct proto rs_inet6_proto = {
	.name = "RDMASOCK-INET6",
	.owner = THIS_MODULE,
	.obj_size = sizeof(struct rs6_sock),
#ifdef RDMASOCK_PROTO_IPV6_PINFO_OFFSET
	.ipv6_pinfo_offset = offsetof(struct rs6_sock, inet6),
#endif
	.init = rs_inet_init,
	.unhash = rs_unhash,
	.keepalive = rs_set_keepalive,
};

static struct inet_protosw rs_inet_protosw = {
	.type = SOCK_STREAM,
	.prot = &rs_inet_proto,
	.ops = rs_inet_ops,
};

static struct inet_protosw rs_inet6_protosw = {
	.type = SOCK_STREAM,
	.prot = &rs_inet6_proto,
	.ops = rs_inet6_ops,
};

/* socket(AF_INET or AF_INET6, SOCK_STREAM, IPPROTO_RDMASOCK), unless ipproto=0. */
static int rs_inet_register(void)
{
	int err;

	if (!rs_ipproto)
		return 0;
	/*
	 * Above 256 (IPPROTO_SMC) and below IPPROTO_MPTCP: never a protocol on IP's wire, and
	 * nothing in-tree to shadow (inet_register_protosw() puts us before any non-permanent
	 * entry of the same number).
	 */
	if (rs_ipproto <= 256 || rs_ipproto >= IPPROTO_MPTCP) {
		pr_err("ipproto=%d is not one of 257..%d\n", rs_ipproto, IPPROTO_MPTCP - 1);
		return -EINVAL;
	}
	err = proto_register(&rs_inet_proto, 1);
	if (err)
		return err;
	err = proto_register(&rs_inet6_proto, 1);
	if (err)
		goto out_inet;
	rs_inet_protosw.protocol = rs_ipproto;
	rs_inet6_protosw.protocol = rs_ipproto;
	rs_inet_protosw.ops = &rs_inet_ops[rs_peek_off];
	rs_inet6_protosw.ops = &rs_inet6_ops[rs_peek_off];
	inet_register_protosw(&rs_inet_protosw);
	err = inet6_register_protosw(&rs_inet6_protosw);
	if (err)
		goto out_protosw;
	return 0;

out_protosw:
	inet_unregister_protosw(&rs_inet_protosw);
	proto_unregister(&rs_inet6_proto);
out_inet:
	proto_unregister(&rs_inet_proto);
	return err;
}

static void rs_inet_unregister(void)
{
	if (!rs_ipproto)
		return;
	inet6_unregister_protosw(&rs_inet6_protosw);
	inet_unregister_protosw(&rs_inet_protosw);
	proto_unregister(&rs_inet6_proto);
	proto_unregister(&rs_inet_proto);
}

static struct proto rs_proto = {
	.name = "RDMASOCK",
	.owner = THIS_MODULE,
	/*
	 * sk_protocol says IPPROTO_TCP (SO_PROTOCOL, as applications check it), and BPF helpers
	 * that only test that (bpf_tcp_sock(), bpf_skc_to_tcp_sock()) read the socket as a
	 * tcp_sock: it must be at least that big, so they read wrong values, never past its end.
	 */
	.obj_size = sizeof(struct rs_sock) > sizeof(struct tcp_sock) ?
		    sizeof(struct rs_sock) : sizeof(struct tcp_sock),
	.keepalive = rs_set_keepalive,
};

static int __init rs_init(void)
{
	int err;

	BUILD_BUG_ON(RS_F_NR > BITS_PER_LONG);
	/* The wire format's sizes are the protocol's (proto.h), whatever the compiler pads. */
	BUILD_BUG_ON(sizeof(struct rs_hello) != RS_HELLO_SIZE);
	BUILD_BUG_ON(sizeof(struct rs_resize) != RS_RESIZE_SIZE);
	/* Cursors go mod 2^30, urgent marks mod 2^29: both larger than a ring. */
	BUILD_BUG_ON(RS_RING_MAX >= RS_CTRL_URG);
	/* Before 6.5, inet6_create() finds the ipv6_pinfo at the end of the object. */
	BUILD_BUG_ON(offsetof(struct rs6_sock, inet6) + sizeof(struct ipv6_pinfo) !=
		     sizeof(struct rs6_sock));
	rs_peek_off = !!inet_stream_ops.set_peek_off;
	if (rs_family <= AF_UNSPEC || rs_family >= NPROTO) {
		pr_err("family=%d is outside 1..%d\n", rs_family, NPROTO - 1);
		return -EINVAL;
	}
	/* Below 1024, where only privilege listens: rdma_cm's own rule (PROT_SOCK). */
	if (!rs_rdma_port || rs_rdma_port >= PROT_SOCK) {
		pr_err("rdma_port=%u is outside 1..%d\n", rs_rdma_port, PROT_SOCK - 1);
		return -EINVAL;
	}
	rs_wq = alloc_workqueue("rdmasock", WQ_MEM_RECLAIM, 0);
	if (!rs_wq)
		return -ENOMEM;
	err = rs_stats_init();
	if (err)
		goto out_wq;
	err = rs_park_module_init();
	if (err)
		goto out_stats;
	err = rs_cm_module_init();
	if (err)
		goto out_park;
	err = rs_proc_init();
	if (err)
		goto out_cm;
	err = rs_resume_init();
	if (err)
		goto out_proc_only;
	err = proto_register(&rs_proto, 1);
	if (err)
		goto out_proc;
	rs_family_ops.family = rs_family;
	err = sock_register(&rs_family_ops);
	if (err) {
		pr_err("cannot register family %d (%s): load with family=<free number>\n",
		       rs_family, err == -EEXIST ? "taken by another family" : "invalid");
		goto out_proto;
	}
	err = rs_dev_init();
	if (err)
		goto out_sock;
	err = rs_inet_register();
	if (err)
		goto out_dev;
	rs_policy_init(rs_ipproto);
	pr_info("family %d registered, and protocol %d of AF_INET and AF_INET6\n", rs_family,
		rs_ipproto);
	return 0;

out_dev:
	rs_dev_exit();
out_sock:
	sock_unregister(rs_family);
out_proto:
	proto_unregister(&rs_proto);
out_proc:
	rs_resume_exit();
out_proc_only:
	rs_proc_exit();
out_cm:
	rs_cm_module_exit();
out_park:
	rs_park_module_exit();
out_stats:
	rs_stats_exit();
out_wq:
	destroy_workqueue(rs_wq);
	rs_policy_exit();	/* what modprobe's cgroups= put there */
	return err;
}

static void __exit rs_exit(void)
{
	rs_inet_unregister();
	sock_unregister(rs_family);
	rs_policy_exit();
	rs_dev_exit();
	rs_resume_exit();
	destroy_workqueue(rs_wq);
	rs_neg_cache_exit();
	proto_unregister(&rs_proto);
	rs_proc_exit();
	rs_cm_module_exit();
	rs_park_module_exit();
	rs_stats_exit();
}

module_init(rs_init);
module_exit(rs_exit);
MODULE_LICENSE("GPL");
MODULE_VERSION(RDMASOCK_VERSION);
MODULE_DESCRIPTION("rdmasock: TCP-semantics stream sockets over RDMA RC queue pairs");
