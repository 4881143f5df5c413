// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock resume: a connection whose RDMA path is lost (a device removed, a port down, RC retries
 * exhausted, a fatal QP event, the peer's disconnect without FIN) carries on over kernel TCP,
 * where its stream stood, with nothing lost or repeated.  docs/design.md, "Resume", has the state
 * machine.
 *
 *   lower layers: rs_path_lost() (core.c) sets RS_F_RESUMING and queues teardown_work
 *   teardown_work (conn.c): the QP goes; tx.c keeps what the peer has not consumed (replay_buf),
 *     our reader's position is resume_rx; then resume_work
 *   resume_work, client: TCP to the server's resume port, HELLO / CHALLENGE / PROOF / ACCEPT
 *     (proto.h), then rs_resume_attach()
 *   the server's resume listener (one per network namespace, resume_port): each accepted socket's
 *     handshake in a work of its own; a proof for a connection still on RDMA tears its path down
 *     first; then rs_resume_attach()
 *   rs_resume_attach(): mode TCP (reason rdma_lost), readers go to TCP at once; resume_work
 *     replays replay_buf from the peer's position, then our FIN if one was due; writers wait for it
 *   past resume_deadline, or on a refusal: the error the loss would have given (rs_abort()).
 *
 * Each end consumed up to its reader's position; the sender holds everything from the peer's
 * position on (it frees staging only on the peer's CONSUMED), so replaying from there loses and
 * repeats nothing; the ring's unread bytes are dropped and come again.  The key is the XOR of two
 * secrets of the RDMA hello, never sent over TCP; the MACs cover both nonces, so a recorded
 * handshake proves nothing the next time.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/hashtable.h>
#include <linux/mutex.h>
#include <linux/wait_bit.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <net/ipv6.h>
#include <net/tcp_states.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include "rdmasock.h"
#include "core.h"
#include "conn.h"
#include "fallback.h"
#include "resume.h"
#include "stats.h"
#include "trace.h"

static unsigned int rs_resume_max_pending = 256;
module_param_named(resume_max_pending, rs_resume_max_pending, uint, 0644);
MODULE_PARM_DESC(resume_max_pending,
		 "resume handshakes a server runs at once; more are turned away (counted)");

#define RS_RESUME_RETRY		(HZ / 10)
/*
 * The server's wait for a HELLO, which its client sends as soon as it is connected: short, so
 * that silent connections cannot hold the handshakes' slots for long.  The later steps have
 * the whole deadline: the client proved it names a connection of its own address.
 */
#define RS_RESUME_HELLO_MS	2000

static atomic_t rs_resume_pending = ATOMIC_INIT(0);
/* The server's handshakes, apart from resume_work (whose replays may block for long). */
static struct workqueue_struct *rs_resume_hs_wq;
/*
 * A client's attempt under way (rs->resume_try): published so that close() can shut it, and
 * not wait for it to time out.  One lock for all: it is held for moments, and only by
 * connections that resume, or close while resuming.
 */
static DEFINE_MUTEX(rs_resume_try_lock);

/* ---- the table of connections a client may resume (servers' accepted children) ---- */

static DEFINE_HASHTABLE(rs_resume_tab, 10);
static DEFINE_SPINLOCK(rs_resume_lock);

/* accept(): the child may be resumed by its client from now on (RS_F_RESUMABLE, an id). */
void rs_resume_register(struct rs_sock *rs)
{
	struct rs_sock *o;

	if (!test_bit(RS_F_RESUMABLE, &rs->flags) || !rs->resume_id)
		return;
	spin_lock_bh(&rs_resume_lock);
	hash_for_each_possible(rs_resume_tab, o, resume_node, rs->resume_id) {
		if (o->resume_id == rs->resume_id) {
			/* Two draws of 64 random bits alike: this one does not resume. */
			clear_bit(RS_F_RESUMABLE, &rs->flags);
			spin_unlock_bh(&rs_resume_lock);
			return;
		}
	}
	hash_add(rs_resume_tab, &rs->resume_node, rs->resume_id);
	spin_unlock_bh(&rs_resume_lock);
}

static void rs_resume_unregister(struct rs_sock *rs)
{
	spin_lock_bh(&rs_resume_lock);
	if (!hlist_unhashed(&rs->resume_node))
		hlist_del_init(&rs->resume_node);
	spin_unlock_bh(&rs_resume_lock);
}

/* The connection @id of @net, with a reference, or NULL. */
static struct rs_sock *rs_resume_lookup(struct net *net, u64 id)
{
	struct rs_sock *o, *found = NULL;

	spin_lock_bh(&rs_resume_lock);
	hash_for_each_possible(rs_resume_tab, o, resume_node, id) {
		if (o->resume_id == id && net_eq(sock_net(&o->sk), net)) {
			sock_hold(&o->sk);
			found = o;
			break;
		}
	}
	spin_unlock_bh(&rs_resume_lock);
	return found;
}

/* ---- the handshake's messages ---- */

static void rs_resume_msg_init(struct rs_resume_msg *m, u8 type, u8 status, u64 id)
{
	memset(m, 0, sizeof(*m));
	m->magic = cpu_to_be32(RS_RESUME_MAGIC);
	m->version = RS_PROTO_VERSION;
	m->type = type;
	m->status = status;
	m->conn_id = cpu_to_be64(id);
}

/*
 * Each step of a handshake may take what is left until @deadline: a host that is slow to answer
 * (hundreds of connections resuming at once, a loaded machine) is waited for, never given up on
 * early and asked again, which would only add to its load.
 */
static void rs_resume_timeouts(struct socket *sock, unsigned long deadline)
{
	long left = (long)(deadline - jiffies);

	left = max(left, 1L);
	sock->sk->sk_rcvtimeo = left;
	sock->sk->sk_sndtimeo = left;
}

/* Exactly one message, whole, by @deadline; else an error. */
static int rs_resume_send(struct socket *sock, struct rs_resume_msg *m, unsigned long deadline)
{
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
	struct kvec iov = { .iov_base = m, .iov_len = sizeof(*m) };
	int n;

	rs_resume_timeouts(sock, deadline);
	n = kernel_sendmsg(sock, &msg, &iov, 1, sizeof(*m));
	return n == sizeof(*m) ? 0 : n < 0 ? n : -EPIPE;
}

/* The next message, of @type, whole, by @deadline; else an error. */
static int rs_resume_recv(struct socket *sock, struct rs_resume_msg *m, u8 type,
			  unsigned long deadline)
{
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
	struct kvec iov = { .iov_base = m, .iov_len = sizeof(*m) };
	int n;

	rs_resume_timeouts(sock, deadline);
	n = kernel_recvmsg(sock, &msg, &iov, 1, sizeof(*m), MSG_WAITALL);
	if (n != sizeof(*m))
		return n < 0 ? n : -EPROTO;	/* (a short message: the peer closed) */
	if (be32_to_cpu(m->magic) != RS_RESUME_MAGIC || m->version != RS_PROTO_VERSION ||
	    m->type != type || m->reserved)
		return -EPROTO;
	return 0;
}

static u64 rs_resume_mac(const struct rs_sock *rs, u64 label, u64 id, const u8 *nc,
			 const u8 *ns, u64 pos)
{
	struct rs_resume_mac in;

	/* Little-endian words, so that hosts of either byte order agree. */
	memset(&in, 0, sizeof(in));
	in.label = (__force __u64)cpu_to_le64(label);
	in.conn_id = (__force __u64)cpu_to_le64(id);
	memcpy(in.client_nonce, nc, sizeof(in.client_nonce));
	memcpy(in.server_nonce, ns, sizeof(in.server_nonce));
	in.pos = (__force __u64)cpu_to_le64(pos);
	return siphash(&in, sizeof(in), &rs->resume_key);
}

/* ---- both ends ---- */

static void rs_resume_wake(struct rs_sock *rs)
{
	rs_wake(&rs->sk, EPOLLIN | EPOLLRDNORM | EPOLLOUT | EPOLLWRNORM);
	wake_up_all(&rs->close_wait);
}

/*
 * Arm resume_work @delay from now, with its reference; never once release() began (it sets
 * RS_F_CLOSING under rs->lock, then cancels the work: nothing re-arms it behind the cancel).
 */
static void rs_resume_work_arm(struct rs_sock *rs, unsigned long delay)
{
	spin_lock_bh(&rs->lock);
	if (!test_bit(RS_F_CLOSING, &rs->flags)) {
		sock_hold(&rs->sk);
		if (mod_delayed_work(rs_resume_wq, &rs->resume_work, delay))
			sock_put(&rs->sk);
	}
	spin_unlock_bh(&rs->lock);
}

/*
 * lock_sock held: the connection cannot resume (@cnt says why): it fails as the loss would have
 * made it fail without resume.
 */
static void rs_resume_fail(struct rs_sock *rs, enum rs_counter cnt)
{
	sock_owned_by_me(&rs->sk);
	rs_resume_unregister(rs);
	clear_bit(RS_F_RESUMABLE, &rs->flags);
	if (!test_bit(RS_F_RESUMING, &rs->flags))
		return;
	kvfree(rs->replay_buf);
	rs->replay_buf = NULL;
	rs->replay_ok = false;
	rs_count(sock_net(&rs->sk), RS_CNT_RESUME_FAILED);
	rs_count(sock_net(&rs->sk), cnt);
	/* The error first: a reader that sees RESUMING go must find it (not an EOF). */
	rs_abort(rs, rs->resume_err ? : -ECONNRESET);
	clear_bit(RS_F_RESUMING, &rs->flags);
	rs_resume_wake(rs);
}

/*
 * lock_sock held, the handshake proved: the connection carries on over @tcp from here.  The
 * peer's reader consumed up to @peer_pos; resume_work replays the rest.
 */
static void rs_resume_attach(struct rs_sock *rs, struct socket *tcp, u64 peer_pos,
			     u64 peer_urg_read)
{
	sock_owned_by_me(&rs->sk);
	/* The handshake's step timeouts go: the stream's own are the user's, on our socket. */
	tcp->sk->sk_rcvtimeo = MAX_SCHEDULE_TIMEOUT;
	tcp->sk->sk_sndtimeo = MAX_SCHEDULE_TIMEOUT;
	rs_sk_net_hold(tcp->sk);	/* (it outlives us in TIME_WAIT: so must its namespace) */
	/* A shutdown(SHUT_WR) while resuming: its FIN goes after the replay. */
	if (READ_ONCE(rs->sk.sk_shutdown) & SEND_SHUTDOWN)
		rs->resume_fin = true;
	rs_resume_unregister(rs);
	clear_bit(RS_F_RESUMABLE, &rs->flags);
	rs->replay_from = peer_pos;
	/*
	 * The peer's reader took our urgent byte out of band already: it goes no more.  Only ours
	 * (replay_urg) is left out, so a lying peer can only lose a byte it alone would get.  One
	 * it read of an earlier mark goes inline, as TCP's reader gets it once a later mark came.
	 */
	rs->replay_urg_skip = peer_urg_read && peer_urg_read - 1 == rs->replay_urg &&
			      rs->replay_urg >= peer_pos;
	set_bit(RS_F_RESUMED, &rs->flags);
	set_bit(RS_F_REPLAY, &rs->flags);	/* before mode TCP: no write overtakes it */
	rs_tcp_resume_attach(rs, tcp, RDMASOCK_REASON_RDMA_LOST);
	clear_bit(RS_F_RESUMING, &rs->flags);
	rs_count(sock_net(&rs->sk), RS_CNT_RESUMED);
	trace_rdmasock_resumed(rs);
	rs_resume_wake(rs);
	rs_resume_work_arm(rs, 0);
}

/* A peer's position must be one it can have: at least what it reported, at most what we sent. */
static bool rs_resume_pos_ok(const struct rs_sock *rs, u64 pos)
{
	return rs->replay_ok && pos >= rs->replay_base && pos <= rs->replay_prod;
}

/* lock_sock held: may a handshake attach now?  Not once release() began, nor without a snapshot. */
static bool rs_resume_can_attach(struct rs_sock *rs)
{
	sock_owned_by_me(&rs->sk);
	return test_bit(RS_F_RESUMING, &rs->flags) && !test_bit(RS_F_CLOSING, &rs->flags) &&
	       !test_bit(RS_F_ABORTED, &rs->flags) && rs->replay_ok;
}

/* resume_work, mode TCP: what the peer missed, then our FIN if one was due; then writers go. */
static void rs_resume_replay(struct rs_sock *rs)
{
	struct socket *tcp = rs->tcp;	/* final: mode TCP; release() waits for us */
	u64 pos = rs->replay_from;
	bool fin;
	int err = 0;

	while (pos < rs->replay_end) {
		struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
		struct kvec iov;
		int n;

		iov.iov_base = rs->replay_buf + (pos - rs->replay_base);
		iov.iov_len = min_t(u64, rs->replay_end - pos, SZ_256K);
		/*
		 * Our urgent byte goes alone, with MSG_OOB (TCP marks the last byte a send took,
		 * which a partial send would make the wrong one): the peer's TCP then keeps it
		 * out of the stream, as its RDMA ring did.
		 */
		if (rs->replay_urg == pos && rs->replay_urg_skip) {
			pos++;
			continue;
		} else if (rs->replay_urg == pos) {
			iov.iov_len = 1;
			msg.msg_flags |= MSG_OOB;
		} else if (rs->replay_urg > pos && rs->replay_urg < pos + iov.iov_len) {
			iov.iov_len = rs->replay_urg - pos;
		}
		n = kernel_sendmsg(tcp, &msg, &iov, 1, iov.iov_len);
		if ((n == -EAGAIN || n == -EINTR) && !test_bit(RS_F_CLOSING, &rs->flags))
			continue;	/* the user's SO_SNDTIMEO: go on, as the writer would */
		if (n <= 0) {
			err = n ? n : -EPIPE;
			break;
		}
		pos += n;
		rs_count_add(sock_net(&rs->sk), RS_CNT_RESUME_BYTES, n);
	}
	kvfree(rs->replay_buf);
	rs->replay_buf = NULL;
	/*
	 * Under rs->lock, as shutdown() tests REPLAY: a FIN asked for meanwhile is ours to send,
	 * and goes before REPLAY clears, so no write of a waiting writer gets ahead of it.
	 */
	spin_lock_bh(&rs->lock);
	fin = rs->resume_fin;
	if (!fin)
		clear_bit(RS_F_REPLAY, &rs->flags);
	spin_unlock_bh(&rs->lock);
	if (fin) {
		if (!err)
			kernel_sock_shutdown(tcp, SHUT_WR);
		clear_bit(RS_F_REPLAY, &rs->flags);
	}
	rs_resume_wake(rs);
}

/* ---- client ---- */

/*
 * The attempt's socket @tcp is close()'s to shut from here on (NULL: no longer); false, and
 * not published, once close() began.
 */
static bool rs_resume_try_publish(struct rs_sock *rs, struct socket *tcp)
{
	bool closing;

	mutex_lock(&rs_resume_try_lock);
	closing = tcp && test_bit(RS_F_CLOSING, &rs->flags);
	if (!closing)
		rs->resume_try = tcp;
	mutex_unlock(&rs_resume_try_lock);
	return !closing;
}

/*
 * Connect @tcp (published), by the deadline, or until close() began: not blocking in connect()
 * itself, which a shutdown before it started would not end.
 */
static int rs_resume_connect(struct rs_sock *rs, struct socket *tcp, struct sockaddr *dst,
			     int len)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	struct sock *sk = tcp->sk;
	long left;
	int err;

	err = kernel_connect(tcp, dst, len, O_NONBLOCK);
	if (err != -EINPROGRESS)
		return err;
	lock_sock(sk);
	add_wait_queue(sk_sleep(sk), &wait);
	for (;;) {
		smp_mb();	/* the state before CLOSING: rs_resume_stop() shuts, then we test */
		left = (long)(rs->resume_deadline - jiffies);
		if (!((1 << sk->sk_state) & (TCPF_SYN_SENT | TCPF_SYN_RECV)) || left <= 0 ||
		    test_bit(RS_F_CLOSING, &rs->flags))
			break;
		release_sock(sk);
		wait_woken(&wait, TASK_INTERRUPTIBLE, left);	/* (a kworker: no signal comes) */
		lock_sock(sk);
	}
	remove_wait_queue(sk_sleep(sk), &wait);
	err = sk->sk_state == TCP_ESTABLISHED ? 0 : sock_error(sk) ? : -ETIMEDOUT;
	release_sock(sk);
	return err;
}

/* One attempt: 0 (resumed), or an error, with the server's status if it gave one. */
static int rs_resume_try(struct rs_sock *rs, u8 *status)
{
	struct sockaddr_storage dst = rs->peer_addr, src;
	struct rs_resume_msg m;
	u8 nc[16], ns[16];
	struct socket *tcp;
	u64 id = rs->resume_id, pos, spos;
	int len, err;

	*status = RS_RESUME_OK;
	if (dst.ss_family == AF_INET6) {
		((struct sockaddr_in6 *)&dst)->sin6_port = htons(rs_resume_port);
		len = sizeof(struct sockaddr_in6);
	} else {
		((struct sockaddr_in *)&dst)->sin_port = htons(rs_resume_port);
		len = sizeof(struct sockaddr_in);
	}
	/* A socket of the namespace's own (it holds the namespace), as rs_tcp_ensure()'s. */
	err = __sock_create(sock_net(&rs->sk), dst.ss_family, SOCK_STREAM, IPPROTO_TCP, &tcp, 0);
	if (err)
		return err;
	tcp->sk->sk_uid = rs->sk.sk_uid;
	if (!rs_resume_try_publish(rs, tcp)) {
		sock_release(tcp);
		return -ECANCELED;
	}
	/* From the connection's own address, which the server checks (any port). */
	src = rs->local_addr;
	rs_addr_set_port((struct sockaddr *)&src, 0);
	if (src.ss_family == dst.ss_family)
		kernel_bind(tcp, (struct sockaddr *)&src, len);	/* (else the route's choice) */
	err = rs_resume_connect(rs, tcp, (struct sockaddr *)&dst, len);
	if (err)
		goto out;
	get_random_bytes(nc, sizeof(nc));
	rs_resume_msg_init(&m, RS_RESUME_HELLO, RS_RESUME_OK, id);
	memcpy(m.nonce, nc, sizeof(nc));
	err = rs_resume_send(tcp, &m, rs->resume_deadline);
	if (!err)
		err = rs_resume_recv(tcp, &m, RS_RESUME_CHALLENGE, rs->resume_deadline);
	if (err)
		goto out;
	if (m.status != RS_RESUME_OK || be64_to_cpu(m.conn_id) != id) {
		*status = m.status != RS_RESUME_OK ? m.status : RS_RESUME_DENIED;
		err = -ECONNREFUSED;
		goto out;
	}
	memcpy(ns, m.nonce, sizeof(ns));
	pos = rs->resume_rx;	/* (set by teardown, which came before this work) */
	rs_resume_msg_init(&m, RS_RESUME_PROOF, RS_RESUME_OK, id);
	m.pos = cpu_to_be64(pos);
	m.urg_read = cpu_to_be64(rs->resume_urg_read);
	m.mac = cpu_to_be64(rs_resume_mac(rs, RS_RESUME_LABEL_CLIENT, id, nc, ns, pos));
	err = rs_resume_send(tcp, &m, rs->resume_deadline);
	if (!err)
		err = rs_resume_recv(tcp, &m, RS_RESUME_ACCEPT, rs->resume_deadline);
	if (err)
		goto out;
	spos = be64_to_cpu(m.pos);
	if (m.status != RS_RESUME_OK || be64_to_cpu(m.conn_id) != id ||
	    be64_to_cpu(m.mac) != rs_resume_mac(rs, RS_RESUME_LABEL_SERVER, id, nc, ns, spos) ||
	    !rs_resume_pos_ok(rs, spos)) {
		*status = m.status != RS_RESUME_OK ? m.status : RS_RESUME_DENIED;
		err = -ECONNREFUSED;
		goto out;
	}
	/* Ours alone from here: a close() meanwhile is seen by the attach's test. */
	rs_resume_try_publish(rs, NULL);
	lock_sock(&rs->sk);
	err = -ECANCELED;
	if (rs_resume_can_attach(rs)) {
		rs_resume_attach(rs, tcp, spos, be64_to_cpu(m.urg_read));
		tcp = NULL;
		err = 0;
	}
	release_sock(&rs->sk);
out:
	if (tcp) {
		rs_resume_try_publish(rs, NULL);
		sock_release(tcp);
	}
	return err;
}

static void rs_resume_client(struct rs_sock *rs)
{
	enum rs_counter why = RS_CNT_RESUME_TIMEOUT;
	u8 status;

	while (test_bit(RS_F_RESUMING, &rs->flags) && !test_bit(RS_F_CLOSING, &rs->flags) &&
	       !test_bit(RS_F_ABORTED, &rs->flags) && rs->replay_ok &&
	       time_before(jiffies, rs->resume_deadline)) {
		if (!rs_resume_try(rs, &status))
			return;
		/* Refused (no such connection, a bad proof): no point in asking again. */
		if (status == RS_RESUME_UNKNOWN || status == RS_RESUME_DENIED) {
			why = RS_CNT_RESUME_REFUSED;
			break;
		}
		schedule_timeout_uninterruptible(RS_RESUME_RETRY);
	}
	lock_sock(&rs->sk);
	rs_resume_fail(rs, why);
	release_sock(&rs->sk);
}

/* ---- server ---- */

/*
 * lock_sock held: a proof came for a connection that may still be on RDMA (its path looks fine
 * from here, or nothing of ours was in flight): its RDMA half goes now.  0 if it is detached.
 */
static int rs_resume_detach(struct rs_sock *rs)
{
	sock_owned_by_me(&rs->sk);
	if (!test_bit(RS_F_RESUMING, &rs->flags) && !__rs_path_lost(rs, -ECONNRESET, true))
		return -ENOENT;
	if (!test_bit(RS_F_RESUME_DETACHED, &rs->flags))
		rs_teardown_rdma(rs, false);	/* (teardown_work, queued, finds it done) */
	if (!rs_resume_can_attach(rs))
		return -ENOENT;
	return 0;
}

/* The resume comes from the host the connection was with (another would need the key, too). */
static bool rs_resume_from_peer(struct rs_sock *rs, struct socket *sock)
{
	const struct sockaddr_storage *want = &rs->peer_addr;
	struct sockaddr_storage got;
	struct in6_addr a, b;

	if (kernel_getpeername(sock, (struct sockaddr *)&got) < 0)
		return false;
	if (got.ss_family == AF_INET6)
		a = ((struct sockaddr_in6 *)&got)->sin6_addr;
	else
		ipv6_addr_set_v4mapped(((struct sockaddr_in *)&got)->sin_addr.s_addr, &a);
	if (want->ss_family == AF_INET6)
		b = ((const struct sockaddr_in6 *)want)->sin6_addr;
	else
		ipv6_addr_set_v4mapped(((const struct sockaddr_in *)want)->sin_addr.s_addr, &b);
	return ipv6_addr_equal(&a, &b);
}

struct rs_resume_net {
	struct mutex lock;		/* creating the listener */
	struct socket *lsock;
	struct work_struct accept_work;
	struct net *net;
	bool failed;			/* the port was taken: no resume in this namespace */
	atomic_t hs_count;		/* handshakes not finished: the exit waits for them */
};

static unsigned int rs_resume_net_id;

struct rs_resume_hs {
	struct work_struct work;
	struct socket *sock;
	struct rs_resume_net *rn;
	struct net *net;
	unsigned long hello_by;	/* the HELLO's bound: RS_RESUME_HELLO_MS from the accept */
	unsigned long deadline;	/* the whole handshake's: resume_timeout_ms from the accept */
};

static void rs_resume_server_work(struct work_struct *work)
{
	struct rs_resume_hs *hs = container_of(work, struct rs_resume_hs, work);
	struct net *net = hs->net;
	struct rs_resume_net *rn;
	struct rs_sock *rs = NULL;
	struct rs_resume_msg m;
	u8 nc[16], ns[16];
	u64 id, cpos, curg;
	int err;

	err = rs_resume_recv(hs->sock, &m, RS_RESUME_HELLO, hs->hello_by);
	if (err || m.status || m.pos || m.mac || !m.conn_id) {
		rs_count(net, RS_CNT_RESUME_REJ_MALFORMED);
		goto out;
	}
	id = be64_to_cpu(m.conn_id);
	memcpy(nc, m.nonce, sizeof(nc));
	rs = rs_resume_lookup(net, id);
	if (rs && !rs_resume_from_peer(rs, hs->sock)) {
		sock_put(&rs->sk);
		rs = NULL;	/* as unknown: nothing tells another host the id exists */
	}
	if (!rs) {
		rs_count(net, RS_CNT_RESUME_REJ_UNKNOWN);
		rs_resume_msg_init(&m, RS_RESUME_CHALLENGE, RS_RESUME_UNKNOWN, id);
		rs_resume_send(hs->sock, &m, hs->deadline);
		goto out;
	}
	get_random_bytes(ns, sizeof(ns));
	rs_resume_msg_init(&m, RS_RESUME_CHALLENGE, RS_RESUME_OK, id);
	memcpy(m.nonce, ns, sizeof(ns));
	err = rs_resume_send(hs->sock, &m, hs->deadline);
	if (!err)
		err = rs_resume_recv(hs->sock, &m, RS_RESUME_PROOF, hs->deadline);
	if (err || m.status || be64_to_cpu(m.conn_id) != id) {
		rs_count(net, RS_CNT_RESUME_REJ_MALFORMED);
		goto out;
	}
	cpos = be64_to_cpu(m.pos);
	curg = be64_to_cpu(m.urg_read);
	if (be64_to_cpu(m.mac) != rs_resume_mac(rs, RS_RESUME_LABEL_CLIENT, id, nc, ns, cpos)) {
		/* Not the client: it gets nothing, and the connection goes on as it was. */
		rs_count(net, RS_CNT_RESUME_REJ_AUTH);
		rs_resume_msg_init(&m, RS_RESUME_ACCEPT, RS_RESUME_DENIED, id);
		rs_resume_send(hs->sock, &m, hs->deadline);
		goto out;
	}
	lock_sock(&rs->sk);
	err = rs_resume_detach(rs);
	if (err && test_bit(RS_F_RESUMING, &rs->flags))
		rs_resume_fail(rs, RS_CNT_RESUME_REFUSED);	/* (no snapshot: none) */
	if (!err && !rs_resume_pos_ok(rs, cpos)) {
		/* The client holds the key but not the stream: it cannot resume. */
		rs_resume_fail(rs, RS_CNT_RESUME_REFUSED);
		err = -EPROTO;
	}
	rs_resume_msg_init(&m, RS_RESUME_ACCEPT, err ? RS_RESUME_DENIED : RS_RESUME_OK, id);
	if (!err) {
		m.pos = cpu_to_be64(rs->resume_rx);
		m.urg_read = cpu_to_be64(rs->resume_urg_read);
		m.mac = cpu_to_be64(rs_resume_mac(rs, RS_RESUME_LABEL_SERVER, id, nc, ns,
						  rs->resume_rx));
	}
	if (rs_resume_send(hs->sock, &m, hs->deadline) && !err) {
		rs_resume_fail(rs, RS_CNT_RESUME_TIMEOUT);
		err = -EPIPE;
	}
	if (!err) {
		rs_resume_attach(rs, hs->sock, cpos, curg);
		hs->sock = NULL;
	}
	release_sock(&rs->sk);
out:
	if (rs)
		sock_put(&rs->sk);
	if (hs->sock)
		sock_release(hs->sock);
	atomic_dec(&rs_resume_pending);
	rn = hs->rn;
	kfree(hs);
	/* The last touch of the namespace's state: its exit may go on from here. */
	if (atomic_dec_and_test(&rn->hs_count))
		wake_up_var(&rn->hs_count);
}

/* resume_work: the client's handshake; the replay; a server's bound on waiting for its client. */
static void rs_resume_work(struct work_struct *work)
{
	struct rs_sock *rs = container_of(to_delayed_work(work), struct rs_sock, resume_work);

	if (test_bit(RS_F_REPLAY, &rs->flags)) {
		/*
		 * Only once the attach published mode TCP (and so rs->tcp): a server's wait for
		 * its client may run while its handshake attaches, which queues us again.
		 */
		if (rs_is_tcp(rs))
			rs_resume_replay(rs);
	} else if (test_bit(RS_F_RESUMING, &rs->flags) && !rs->parent) {
		rs_resume_client(rs);
	} else if (test_bit(RS_F_RESUMING, &rs->flags)) {
		/* Under lock_sock, as the attach: never re-armed behind it (it clears RESUMING). */
		/* (Attached meanwhile: its replay is queued.) */
		lock_sock(&rs->sk);
		if (test_bit(RS_F_RESUMING, &rs->flags) &&
		    time_before(jiffies, rs->resume_deadline))
			rs_resume_work_arm(rs, rs->resume_deadline - jiffies);
		else if (test_bit(RS_F_RESUMING, &rs->flags))
			rs_resume_fail(rs, RS_CNT_RESUME_TIMEOUT);
		release_sock(&rs->sk);
	}
	sock_put(&rs->sk);
}

void rs_resume_sock_init(struct rs_sock *rs)
{
	INIT_DELAYED_WORK(&rs->resume_work, rs_resume_work);
	INIT_HLIST_NODE(&rs->resume_node);
}

/*
 * release(), RS_F_CLOSING set: no resume starts, attaches or re-arms from here on; one that did
 * not attach yet fails (its peer gets the error).  A replay finishes first, for up to twice
 * resume_timeout_ms, as TCP's close() leaves its send queue to go out.
 */
void rs_resume_stop(struct rs_sock *rs)
{
	long wait = 2 * msecs_to_jiffies(READ_ONCE(rs_resume_timeout_ms)) + HZ;

	rs_resume_unregister(rs);
	/*
	 * A client's attempt under way ends now (its wait returns), not at its deadline.  Only
	 * while resuming: RESUMING is set under rs->lock with CLOSING tested, so not from here on.
	 */
	if (test_bit(RS_F_RESUMING, &rs->flags)) {
		mutex_lock(&rs_resume_try_lock);
		if (rs->resume_try)
			kernel_sock_shutdown(rs->resume_try, SHUT_RDWR);
		mutex_unlock(&rs_resume_try_lock);
	}
	/* (A resume still to attach never will: it fails below, as the loss made it.) */
	if (test_bit(RS_F_REPLAY, &rs->flags))
		wait_event_timeout(rs->close_wait, !test_bit(RS_F_REPLAY, &rs->flags), wait);
	/*
	 * Still replaying (the peer takes nothing): what it missed is lost, so the peer gets a
	 * reset, never a FIN that would pass a cut stream for a whole one; the replay's send fails.
	 */
	if (test_bit(RS_F_REPLAY, &rs->flags) && rs_is_tcp(rs))
		tcp_abort(rs->tcp->sk, ECONNABORTED);
	if (cancel_delayed_work_sync(&rs->resume_work))
		sock_put(&rs->sk);
	lock_sock(&rs->sk);
	/* (A server's connection whose client did not come: it fails as the loss made it.) */
	if (test_bit(RS_F_RESUMING, &rs->flags))
		rs_resume_fail(rs, RS_CNT_RESUME_TIMEOUT);
	/*
	 * Attached after the tests above (CLOSING is set under rs->lock, the attach tests it under
	 * lock_sock): its replay was never armed, so the peer misses bytes: a reset, never a FIN.
	 * (Not again after the abort above, whose replay was cancelled before it ran.)
	 */
	if (test_bit(RS_F_REPLAY, &rs->flags) && rs_is_tcp(rs) &&
	    READ_ONCE(rs->tcp->sk->sk_state) != TCP_CLOSE)
		tcp_abort(rs->tcp->sk, ECONNABORTED);
	kvfree(rs->replay_buf);
	rs->replay_buf = NULL;
	rs->replay_ok = false;
	clear_bit(RS_F_REPLAY, &rs->flags);
	release_sock(&rs->sk);
}

/* ---- the resume listener, one per network namespace ---- */

/* TCP's own data_ready (every TCP socket's): the accepted sockets get it back. */
static void (*rs_resume_def_ready)(struct sock *sk);

static void rs_resume_listen_ready(struct sock *sk)
{
	struct rs_resume_net *rn;

	read_lock_bh(&sk->sk_callback_lock);
	rn = (void *)((uintptr_t)rcu_dereference_check(__sk_user_data(sk),
						       lockdep_is_held(&sk->sk_callback_lock)) &
		      SK_USER_DATA_PTRMASK);
	if (rn)
		queue_work(rs_wq, &rn->accept_work);
	read_unlock_bh(&sk->sk_callback_lock);
	rs_resume_def_ready(sk);
}

static void rs_resume_accept_work(struct work_struct *work)
{
	struct rs_resume_net *rn = container_of(work, struct rs_resume_net, accept_work);
	struct rs_resume_hs *hs;
	struct socket *nsock;
	unsigned long now;

	while (!kernel_accept(rn->lsock, &nsock, O_NONBLOCK)) {
		/* A clone of the listener: its callback is the listener's. */
		write_lock_bh(&nsock->sk->sk_callback_lock);
		nsock->sk->sk_data_ready = rs_resume_def_ready;
		write_unlock_bh(&nsock->sk->sk_callback_lock);
		hs = NULL;
		if (atomic_inc_return(&rs_resume_pending) <= READ_ONCE(rs_resume_max_pending))
			hs = kzalloc(sizeof(*hs), GFP_KERNEL);
		if (!hs) {
			struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
			struct rs_resume_msg m;
			struct kvec iov = { .iov_base = &m, .iov_len = sizeof(m) };

			/* (A fresh socket's send buffer takes these 48 bytes at once.) */
			atomic_dec(&rs_resume_pending);
			rs_count(rn->net, RS_CNT_RESUME_REJ_BUSY);
			rs_resume_msg_init(&m, RS_RESUME_CHALLENGE, RS_RESUME_BUSY, 0);
			kernel_sendmsg(nsock, &msg, &iov, 1, sizeof(m));
			sock_release(nsock);
			continue;
		}
		hs->sock = nsock;
		hs->rn = rn;
		hs->net = rn->net;
		now = jiffies;
		hs->deadline = now + msecs_to_jiffies(READ_ONCE(rs_resume_timeout_ms));
		hs->hello_by = now + msecs_to_jiffies(RS_RESUME_HELLO_MS);
		if (time_after(hs->hello_by, hs->deadline))
			hs->hello_by = hs->deadline;
		INIT_WORK(&hs->work, rs_resume_server_work);
		atomic_inc(&rn->hs_count);
		queue_work(rs_resume_hs_wq, &hs->work);
	}
}

static int rs_resume_listen_create(struct rs_resume_net *rn, u16 port)
{
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct sockaddr *addr = (struct sockaddr *)&sin6;
	int len = sizeof(sin6);
	struct socket *sock;
	int err;

	/* IPv6 with IPv4 mapped: one socket for both; IPv4 alone where there is no IPv6. */
	err = sock_create_kern(rn->net, AF_INET6, SOCK_STREAM, IPPROTO_TCP, &sock);
	if (!err) {
		lock_sock(sock->sk);
		sock->sk->sk_ipv6only = false;
		release_sock(sock->sk);
	} else {
		err = sock_create_kern(rn->net, AF_INET, SOCK_STREAM, IPPROTO_TCP, &sock);
		addr = (struct sockaddr *)&sin;
		len = sizeof(sin);
	}
	if (err)
		return err;
	sock_set_reuseaddr(sock->sk);
	err = kernel_bind(sock, addr, len);
	if (!err)
		err = kernel_listen(sock, 128);
	if (err) {
		sock_release(sock);
		return err;
	}
	write_lock_bh(&sock->sk->sk_callback_lock);
	if (!rs_resume_def_ready)
		rs_resume_def_ready = sock->sk->sk_data_ready;
	__rcu_assign_sk_user_data_with_flags(sock->sk, rn, SK_USER_DATA_NOCOPY);
	sock->sk->sk_data_ready = rs_resume_listen_ready;
	write_unlock_bh(&sock->sk->sk_callback_lock);
	rn->lsock = sock;
	return 0;
}

/* listen(): 0 if this namespace takes resumes (its listener exists, or is made now). */
int rs_resume_listen(struct net *net)
{
	struct rs_resume_net *rn = net_generic(net, rs_resume_net_id);
	unsigned int port = READ_ONCE(rs_resume_port);
	int err = 0;

	if (!port || port > U16_MAX)
		return -ENOPROTOOPT;
	mutex_lock(&rn->lock);
	if (!rn->lsock) {
		err = rn->failed ? -EADDRINUSE : rs_resume_listen_create(rn, port);
		if (err && !rn->failed) {
			pr_warn_ratelimited("resume port %u: %d: connections of this namespace will not resume\n",
					    port, err);
			rs_count(net, RS_CNT_RESUME_NO_PORT);
			rn->failed = true;
		}
	}
	mutex_unlock(&rn->lock);
	return err;
}

static int __net_init rs_resume_net_init(struct net *net)
{
	struct rs_resume_net *rn = net_generic(net, rs_resume_net_id);

	mutex_init(&rn->lock);
	atomic_set(&rn->hs_count, 0);
	INIT_WORK(&rn->accept_work, rs_resume_accept_work);
	rn->net = net;
	return 0;
}

static void __net_exit rs_resume_net_exit(struct net *net)
{
	struct rs_resume_net *rn = net_generic(net, rs_resume_net_id);

	if (rn->lsock) {
		write_lock_bh(&rn->lsock->sk->sk_callback_lock);
		rcu_assign_sk_user_data(rn->lsock->sk, NULL);
		rn->lsock->sk->sk_data_ready = rs_resume_def_ready;
		write_unlock_bh(&rn->lsock->sk->sk_callback_lock);
		cancel_work_sync(&rn->accept_work);
		sock_release(rn->lsock);
		rn->lsock = NULL;
	}
	/*
	 * Handshakes hold kernel sockets of this namespace: wait for ours (none starts now, the
	 * accepts are done), never for other namespaces'.  A handshake that found its connection
	 * holds it, and so the namespace: one left now waits for its HELLO, RS_RESUME_HELLO_MS at
	 * most.  (A resumed connection's socket holds the namespace itself.)
	 */
	wait_var_event(&rn->hs_count, !atomic_read(&rn->hs_count));
}

static struct pernet_operations rs_resume_net_ops = {
	.init = rs_resume_net_init,
	.exit = rs_resume_net_exit,
	.id = &rs_resume_net_id,
	.size = sizeof(struct rs_resume_net),
};

int rs_resume_init(void)
{
	int err;

	BUILD_BUG_ON(sizeof(struct rs_resume_msg) != RS_RESUME_MSG_SIZE);
	BUILD_BUG_ON(sizeof(struct rs_hello) + sizeof(struct rs_hello_resume) !=
		     RS_HELLO_RESUME_SIZE);
	rs_resume_wq = alloc_workqueue("rdmasock_resume", WQ_UNBOUND, 0);
	if (!rs_resume_wq)
		return -ENOMEM;
	rs_resume_hs_wq = alloc_workqueue("rdmasock_resume_hs", WQ_UNBOUND, 0);
	if (!rs_resume_hs_wq) {
		destroy_workqueue(rs_resume_wq);
		return -ENOMEM;
	}
	err = register_pernet_subsys(&rs_resume_net_ops);
	if (err) {
		destroy_workqueue(rs_resume_hs_wq);
		destroy_workqueue(rs_resume_wq);
	}
	return err;
}

void rs_resume_exit(void)
{
	unregister_pernet_subsys(&rs_resume_net_ops);
	destroy_workqueue(rs_resume_hs_wq);
	destroy_workqueue(rs_resume_wq);
}
