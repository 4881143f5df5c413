// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock's RDMA carrier: the socket calls of a connection carried by an RC QP, and of a socket
 * that has no carrier yet (unconnected, connecting, listening), whose calls behave as a TCP
 * socket's in the same state.  The socket layer reaches it only through rs_rdma_carrier (struct
 * rs_carrier, rdmasock.h); fallback.c's rs_tcp_carrier is the other one.
 *
 * A call that finds a connect in progress waits for its outcome first (as TCP waits in
 * sk_stream_wait_connect()): the outcome may be TCP, and the call then goes there.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/sockios.h>
#include <asm/ioctls.h>
#include <linux/tcp.h>
#include <net/tcp_states.h>
#include <net/inet_connection_sock.h>
#include <net/ipv6.h>
#include "rdmasock.h"
#include "close.h"
#include "core.h"
#include "fallback.h"
#include "keepalive.h"
#include "rdma.h"
#include "rx.h"
#include "stats.h"
#include "tx.h"
#include "trace.h"
/* Is there a connection to accept, from RDMA or from TCP? */
bool rs_accept_ready(struct rs_sock *rs)
{
	struct sock *tsk = NULL;

	/* Pairs with the release store in rs_listen(): rs->tcp is final then. */
	if (smp_load_acquire(&rs->mode) == RDMASOCK_MODE_LISTEN)
		tsk = rs->tcp->sk;

	return !list_empty_careful(&rs->ready_q) ||
	       (tsk && !reqsk_queue_empty(&inet_csk(tsk)->icsk_accept_queue));
}

/* The RDMA connect succeeded (our READY is out), and the socket is not established yet. */
static bool rs_connect_won(struct rs_sock *rs)
{
	return test_bit(RS_F_CM_DONE, &rs->flags) && !READ_ONCE(rs->cm_result);
}

/*
 * lock_sock held: an RDMA connect whose success is recorded becomes established.  By connect_work,
 * or first by a caller that waits for the outcome (rs_wait_connect()): the client's READY wakes it
 * at once, and the first byte does not wait for a worker to be scheduled (on a busy CPU, 0.7 ms
 * in the set-up trace).  Whichever comes second finds the socket established and does nothing.
 * Under rs->lock, against an rs_abort() after the success (it wins: the socket stays closed, with
 * its error, and teardown_work takes the rest), and against the peer's FIN (rx.c), which may have
 * come already.
 */
void rs_connect_established(struct rs_sock *rs)
{
	struct sock *sk = &rs->sk;
	bool aborted;

	sock_owned_by_me(sk);
	if (sock_flag(sk, SOCK_DEAD) || sk->sk_state != TCP_SYN_SENT ||
	    rs->mode != RDMASOCK_MODE_NONE || !rs_connect_won(rs))
		return;
	spin_lock_bh(&rs->lock);
	/* (The outcome again, under the lock it is recorded under: the test above is a hint.) */
	aborted = test_bit(RS_F_ABORTED, &rs->flags) || rs->cm_result;
	if (!aborted) {
		WRITE_ONCE(rs->mode, RDMASOCK_MODE_RDMA);
		WRITE_ONCE(sk->sk_state, sk->sk_shutdown & RCV_SHUTDOWN ?
			   TCP_CLOSE_WAIT : TCP_ESTABLISHED);
	}
	spin_unlock_bh(&rs->lock);
	if (aborted)
		return;
	rs_count(sock_net(sk), RS_CNT_CONN_RDMA);
	trace_rdmasock_established(rs);
	rs_keepalive_update(rs);
	rs_wake(sk, EPOLLOUT | EPOLLWRNORM);
}

/* Wait (lock_sock held) for the outcome of a connect in progress: RDMA, TCP, or an error. */
int rs_wait_connect(struct rs_sock *rs, long *timeo)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	struct sock *sk = &rs->sk;
	int err = 0;

	sock_owned_by_me(sk);
	add_wait_queue(sk_sleep(sk), &wait);
	while (READ_ONCE(sk->sk_state) == TCP_SYN_SENT && !rs_is_tcp(rs)) {
		if (rs_connect_won(rs)) {
			rs_connect_established(rs);
			continue;	/* established, or aborted meanwhile: closed */
		}
		if (!*timeo) {
			err = -EINPROGRESS;
			break;
		}
		if (signal_pending(current)) {
			err = sock_intr_errno(*timeo);
			break;
		}
		sk_wait_event(sk, timeo, READ_ONCE(sk->sk_state) != TCP_SYN_SENT || rs_is_tcp(rs) ||
			      rs_connect_won(rs), &wait);
	}
	remove_wait_queue(sk_sleep(sk), &wait);
	return err;
}

static __poll_t rs_rdma_poll(struct rs_sock *rs, struct file *file)
{
	struct sock *sk = &rs->sk;
	int state = READ_ONCE(sk->sk_state);
	u8 shutdown = READ_ONCE(sk->sk_shutdown);
	__poll_t mask = 0;

	if (state == TCP_LISTEN)
		return rs_accept_ready(rs) ? EPOLLIN | EPOLLRDNORM : 0;
	/* Resuming: the peer's FIN comes again after what it sends again (resume.c). */
	if (test_bit(RS_F_RESUMING, &rs->flags))
		shutdown &= ~RCV_SHUTDOWN;
	/* The same rules as tcp_poll(). */
	if (shutdown == SHUTDOWN_MASK || state == TCP_CLOSE)
		mask |= EPOLLHUP;
	if (shutdown & RCV_SHUTDOWN)
		mask |= EPOLLIN | EPOLLRDNORM | EPOLLRDHUP;
	if (state != TCP_SYN_SENT) {
		if (rs_rx_readable(rs, sock_rcvlowat(sk, 0, INT_MAX)))
			mask |= EPOLLIN | EPOLLRDNORM;
		if (rs_urg_pending(rs))
			mask |= EPOLLPRI;
		/*
		 * Writable when a write would not block: room, or it fails at once.  In CLOSE_WAIT
		 * too (an epoll writer must not spin on EAGAIN, nor wait for ever on a dead QP).
		 */
		if ((shutdown & SEND_SHUTDOWN) || state == TCP_CLOSE || rs_tx_error(rs) ||
		    rs_tx_space(rs))
			mask |= EPOLLOUT | EPOLLWRNORM;
	}
	if (READ_ONCE(sk->sk_err))
		mask |= EPOLLERR;
	return mask;
}

/* TCP_INFO of a connection carried by RDMA: what TCP would report that has a meaning here. */
static int rs_rdma_tcp_info(struct rs_sock *rs, char __user *optval, int __user *optlen)
{
	struct tcp_info info = {};
	int len;

	if (get_user(len, optlen))
		return -EFAULT;
	if (len < 0)
		return -EINVAL;		/* as do_tcp_getsockopt() */
	len = min_t(unsigned int, len, sizeof(info));
	info.tcpi_state = rs->sk.sk_state;
	/* The largest payload one packet carries on the path, as TCP's MSS is on its own. */
	info.tcpi_snd_mss = rs->path_mtu;
	info.tcpi_rcv_mss = rs->path_mtu;
	info.tcpi_advmss = rs->path_mtu;
	spin_lock_bh(&rs->lock);
	info.tcpi_bytes_sent = rs->bytes_sent;
	info.tcpi_bytes_acked = rs->tx_acked;
	info.tcpi_bytes_received = rs->bytes_received;
	spin_unlock_bh(&rs->lock);
	if (put_user(len, optlen) || copy_to_user(optval, &info, len))
		return -EFAULT;
	return 0;
}

/*
 * A call on a socket whose connect is still in progress waits for the outcome first (as TCP waits
 * in sk_stream_wait_connect), since that outcome may be a fallback to TCP.  Returns with lock_sock
 * held, or an error (nonblocking: -EAGAIN) without it.
 */
static int rs_lock_connected(struct rs_sock *rs, bool nonblock)
{
	long timeo = nonblock ? 0 : MAX_SCHEDULE_TIMEOUT;
	int err;

	lock_sock(&rs->sk);
	if (rs->sk.sk_state != TCP_SYN_SENT || rs_is_tcp(rs))
		return 0;
	err = rs_wait_connect(rs, &timeo);
	if (err) {
		release_sock(&rs->sk);
		return err == -EINPROGRESS ? -EAGAIN : err;
	}
	return 0;
}

/*
 * lock_sock held: did the socket fall back to TCP meanwhile (the connect it waited for, or another
 * thread's)?  Then the lock is released and the call goes to the TCP carrier.
 */
static bool rs_unlock_if_tcp(struct rs_sock *rs)
{
	if (!rs_is_tcp(rs))
		return false;
	release_sock(&rs->sk);
	return true;
}

static int rs_rdma_sendmsg_op(struct rs_sock *rs, struct msghdr *msg, size_t len)
{
	int ret;

	ret = rs_lock_connected(rs, msg->msg_flags & MSG_DONTWAIT);
	if (ret)
		return ret;
	if (rs_unlock_if_tcp(rs))
		return rs_tcp_carrier.sendmsg(rs, msg, len);
	ret = rs_rdma_sendmsg(rs, msg, len);
	release_sock(&rs->sk);
	/* The connection resumed over TCP while we waited (resume.c): the rest goes there. */
	if (ret == -EXDEV)
		return rs_tcp_carrier.sendmsg(rs, msg, len);
	if (ret >= 0 && ret < len && rs_is_tcp(rs) && !(msg->msg_flags & MSG_DONTWAIT)) {
		int more = rs_tcp_carrier.sendmsg(rs, msg, len - ret);

		if (more > 0)
			ret += more;
	}
	return ret;
}

/* recv(MSG_OOB), as tcp_recv_urg(): never waits, not for a connect either. */
static int rs_rdma_recv_oob(struct rs_sock *rs, struct msghdr *msg, size_t len, int flags)
{
	int ret;

	lock_sock(&rs->sk);
	if (rs_unlock_if_tcp(rs))
		return rs_tcp_carrier.recvmsg(rs, msg, len, flags);
	if (rs->sk.sk_state == TCP_LISTEN)
		ret = -ENOTCONN;
	else
		ret = rs_rdma_recv_urg(rs, msg, len, flags);
	release_sock(&rs->sk);
	return ret;
}

static int rs_rdma_recvmsg_op(struct rs_sock *rs, struct msghdr *msg, size_t len, int flags)
{
	int ret;

	/* As tcp_recvmsg(): nothing is ever queued on our error queue (no timestamps, zerocopy). */
	if (flags & MSG_ERRQUEUE)
		return -EAGAIN;
	if (flags & MSG_OOB)
		return rs_rdma_recv_oob(rs, msg, len, flags);
	ret = rs_lock_connected(rs, flags & MSG_DONTWAIT);
	if (ret)
		return ret;
	if (rs_unlock_if_tcp(rs))
		return rs_tcp_carrier.recvmsg(rs, msg, len, flags);
	ret = rs_rdma_recvmsg(rs, msg, len, flags);
	release_sock(&rs->sk);
	/* The connection resumed over TCP while we waited (resume.c): the rest comes from there. */
	if (ret == -EXDEV)
		return rs_tcp_carrier.recvmsg(rs, msg, len, flags);
	if (ret > 0 && ret < len && (flags & MSG_WAITALL) && !(flags & MSG_PEEK) &&
	    rs_is_tcp(rs)) {
		int more = rs_tcp_carrier.recvmsg(rs, msg, len - ret, flags);

		if (more > 0)
			ret += more;
	}
	return ret;
}

static int rs_rdma_ioctl(struct rs_sock *rs, unsigned int cmd, unsigned long arg)
{
	int val;

	switch (cmd) {
	case SIOCINQ:
		if (rs->sk.sk_state == TCP_LISTEN)
			return -EINVAL;
		val = rs_rx_avail(rs);
		break;
	case SIOCATMARK:
		val = rs_urg_at_mark(rs);	/* (0 on a listener, as TCP's) */
		break;
	case SIOCOUTQ:
		if (rs->sk.sk_state == TCP_LISTEN)
			return -EINVAL;
		spin_lock_bh(&rs->lock);
		val = rs->tx_staged - rs->tx_acked;
		spin_unlock_bh(&rs->lock);
		break;
	default:
		return -ENOIOCTLCMD;
	}
	return put_user(val, (int __user *)arg);
}

/* 0, an error, or 1 when a connect in progress was abandoned (the socket is unconnected). */
static int rs_rdma_shutdown(struct rs_sock *rs, int how)
{
	sock_owned_by_me(&rs->sk);
	return rs_shutdown(rs, how);
}

/*
 * The connection's addresses as the CM set it up (rs_note_addrs(): the server's port is the TCP
 * port the client connected to, not the door's); before there is one, the TCP socket's.
 */
static int rs_rdma_getname(struct rs_sock *rs, struct sockaddr *addr, int peer)
{
	sock_owned_by_me(&rs->sk);
	if (rs->mode != RDMASOCK_MODE_RDMA || !rs->cm_id)
		return rs_tcp_carrier.getname(rs, addr, peer);
	if (peer && rs->sk.sk_state != TCP_ESTABLISHED && !(rs->sk.sk_shutdown & RCV_SHUTDOWN))
		return -ENOTCONN;
	/* An AF_INET6 socket names an IPv4 peer as TCP's does: v4-mapped. */
	return rs_name_copy(rs, addr, (struct sockaddr *)(peer ? &rs->peer_addr : &rs->local_addr));
}

/* TCP_INFO: ours for a connection on RDMA, else the TCP socket's (a listener's, say). */
static int rs_rdma_info(struct rs_sock *rs, char __user *optval, int __user *optlen)
{
	sock_owned_by_me(&rs->sk);
	if (rs->mode != RDMASOCK_MODE_RDMA)
		return rs_tcp_carrier.tcp_info(rs, optval, optlen);
	return rs_rdma_tcp_info(rs, optval, optlen);
}

const struct rs_carrier rs_rdma_carrier = {
	.name = "rdma",
	.sendmsg = rs_rdma_sendmsg_op,
	.recvmsg = rs_rdma_recvmsg_op,
	.poll = rs_rdma_poll,
	.ioctl = rs_rdma_ioctl,
	.shutdown = rs_rdma_shutdown,
	.getname = rs_rdma_getname,
	.tcp_info = rs_rdma_info,
};
