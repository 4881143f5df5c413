// SPDX-License-Identifier: GPL-2.0
/*
 * hostile_peer: a user-space rdmasock client (librdmacm + libibverbs) that speaks the wire protocol
 * of docs/design.md and breaks it on purpose.  Used by hostile_test.c against a kernel listener.
 *
 *   hostile_peer ADDR PORT CASE
 *
 * The request goes to the kernel's door (the rdma_port module parameter, read from sysfs) and its
 * hello names PORT, the TCP port of the kernel listener, as a kernel client's does.
 *
 * Hello cases (the kernel must reject the connection): hello_short, hello_magic, hello_version,
 * hello_size, hello_flags, hello_port0 (names no port), hello_reserved (a reserved field set),
 * hello_other_port (names a port no rdmasock listener has).  Cases after a valid set-up (the kernel must reset the connection):
 * data_overflow (an immediate claiming more than the ring), data_zero, consumed_ahead (a cursor
 * past what was sent), bad_type, bad_ctrl, double_fin, write_outside (an RDMA write past the
 * ring: the HCA refuses it), flood (writes without credit), disconnect (gone mid-transfer),
 * consumed_payload (a payload where none belongs), switch_unasked (SWITCH without our RESIZE),
 * resize_small (a RESIZE to a smaller, odd size), resize_twice (a second offer before the switch),
 * resize_long (a RESIZE longer than the receive buffer, 64 bytes: the receive fails).
 * data_before_ready (a WRITE before our READY), early_bad_ctrl (a violation at once, before READY).
 * "no_ready" completes the CM handshake (librdmacm sends the RTU) and never sends its READY, TCP's
 * ACK: prints "no_ready: established", then within 20 s "no_ready: dropped by the kernel" (or
 * "NOT dropped").
 * "ring_addr" checks that the ring address in the kernel's hello is a page-aligned virtual one (an
 * FRWR iova of ours), not a DMA address: without an IOMMU a physical one, and on rxe (a software
 * device: DMA addresses are kernel virtual addresses) a kernel pointer.
 * "valid" behaves: sends "hello" and expects it echoed.
 * Reuse (the kernel's park_ms set; kmod/park.c): "hello", our FIN, the kernel's FIN, then OPEN on
 * the same QP.  "reuse_valid": a valid OPEN (our READY too); the kernel's ACCEPT (a new key, its
 * READY too) must come, and "again" goes at once (prints "reuse_valid: accepted"); then the
 * kernel's FIN must come, and no READY before it (prints "reuse_valid: FIN", waits to be killed).
 * "reuse_ready": the same, but a READY after ACCEPT, which the kernel must take as a violation
 * (prints "reuse_ready: reset").
 * "reuse_old_rkey": the same, but "again" goes with the previous connection's key: the kernel's
 * HCA must refuse it (prints "reuse_old_rkey: refused (status N)").  An OPEN the kernel must
 * refuse (tear the QP down, never ACCEPT; prints "CASE: refused"): open_magic, open_short,
 * open_size, open_flags, open_conn_id (a client naming the connection), open_long (longer than
 * any receive buffer), open_early (before any FIN), open_noready (without RS_HELLO_F_READY, as an
 * earlier version's).  "open_twice": a valid OPEN twice; the kernel
 * may take the first, and the second resets it (prints "open_twice: reset").
 * "fin_dead" sends "hello" and its FIN, then puts its QP in the error state and stays (prints
 * "quiet", waits to be killed): a peer whose host died after it shut its write side.
 * "late_rtu" brings its own QP up (not the id's, so librdmacm sends no RTU) and never sends the
 * RTU: its READY and "hello" are the first the kernel hears of the completed handshake (prints
 * "late_rtu: sent", then waits to be killed).
 * "stall_recv:S" posts no receive after READY, so the kernel's writes meet RNR NAKs (its QP retries
 * for ever, as TCP probes a zero window); prints "stalled", waits S seconds, then posts receives
 * and reports what arrives within 5 s: "got N bytes, fin" (N bytes of DATA, their contents
 * "0123..." checked, then the FIN), "... reset" (then a RESET), or "... no fin" when the kernel
 * gave up on the connection without either.
 * "mutate" (RDMASOCK_MUTATE_SEED, RDMASOCK_MUTATE_STEPS): after a valid set-up, a stream of
 * messages taken from valid traffic (DATA at the right cursor, CONSUMED, READY, FIN, RESIZE,
 * SWITCH, KEEPALIVE) with fields mutated at random: lengths, cursors, remote addresses, codes,
 * opcodes, payload sizes and contents, order (data before READY's turn, READY twice, SWITCH
 * without RESIZE, RESIZE storms).  The kernel may take it or reset the connection; the test
 * checks that it survives, reports nothing and keeps other connections untouched.
 *
 *   hostile_peer --listen ADDR PORT CASE
 *
 * A user-space rdma_cm listener on ADDR:PORT.  "hold" only listens (prints "listening", then waits
 * to be killed): it holds the port in rdma_cm's port space.  "watch" listens, and prints "request"
 * for each connection request that comes, which it rejects (run as an unprivileged user on a TCP
 * service's port: rdmasock clients of that service must never come to it).  The other cases take a
 * kernel client's request, so they listen on the door's port; their hello names the port the
 * client's did.  "data_before_ready" accepts a kernel
 * client with a valid hello, WRITEs into its ring and never sends READY.  "ready_reset" and
 * "ready_fin" accept one, send READY and at once a RESET or a FIN (print "CASE: sent", then wait
 * to be killed).
 *   hostile_peer --half-open ADDR PORT N
 *
 * N connection requests with valid hellos (each announcing a 4 MiB ring) that are never completed:
 * each id has its own event channel and none is ever read, so librdmacm never answers the kernel's
 * REP with the RTU.  Once every channel holds its answer (REP, or the busy REJ) it prints
 * "answered K", then waits to be killed: the ids go with the process.
 * Exit status: 0 when the kernel reacted as expected (reject, or the QP/connection went down).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>
#include "../kmod/proto.h"	/* the wire format, the module's own */

_Static_assert(sizeof(struct rs_hello) == RS_HELLO_SIZE, "the hello is 32 bytes on the wire");
_Static_assert(sizeof(struct rs_resize) == RS_RESIZE_SIZE, "RESIZE's payload is 16 bytes");

#define RING	(64 << 10)

static struct rdma_event_channel *ch;
static struct rdma_cm_id *id;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static int late_rtu;	/* "late_rtu": our own QP, no RTU sent */
static struct ibv_mr *mr;
static char *ring;
static struct ibv_mr *rmr;	/* reuse cases: the receives' buffer (ACCEPT's hello lands there) */
static char *rbuf;
static uint64_t peer_addr;
static uint32_t peer_rkey, peer_size;
static uint16_t tcp_port;	/* the TCP port our hello names (host order) */

static int die(const char *what)
{
	fprintf(stderr, "hostile_peer: %s: %s\n", what, strerror(errno));
	exit(3);
}

static unsigned int mseed;
static uint64_t acked;	/* the kernel's last CONSUMED cursor, widened to 64 bits */

static unsigned int mrnd(unsigned int n)
{
	return n ? (unsigned int)rand_r(&mseed) % n : 0;
}

/* Pick a value near a valid one: mostly right, sometimes off by a little, sometimes anything. */
static uint32_t mutate32(uint32_t valid)
{
	switch (mrnd(8)) {
	case 0:
		return mrnd(0xffffffffu);
	case 1:
		return valid + mrnd(64) - 32;
	case 2:
		return valid ^ (1u << mrnd(32));
	default:
		return valid;
	}
}

static struct rdma_cm_event *wait_event(enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	if (ev->event != want) {
		fprintf(stderr, "hostile_peer: got %s, wanted %s\n", rdma_event_str(ev->event),
			rdma_event_str(want));
		return ev;
	}
	return ev;
}

static int no_repost;	/* "stall_recv": drain_cq() does not replace the receives it consumes */

static void post_recvs(int n)
{
	struct ibv_recv_wr wr = { .wr_id = 1 }, *bad;
	struct ibv_sge sge;

	if (rmr) {
		sge = (struct ibv_sge){ .addr = (uintptr_t)rbuf, .length = 64, .lkey = rmr->lkey };
		wr.sg_list = &sge;
		wr.num_sge = 1;
	}
	while (n--)
		if (ibv_post_recv(qp, &wr, &bad))
			die("post_recv");
}

static int post(enum ibv_wr_opcode op, uint32_t imm, uint64_t raddr, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)ring, .length = len, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .opcode = op, .send_flags = IBV_SEND_SIGNALED,
				  .imm_data = htobe32(imm), .sg_list = &sge, .num_sge = len ? 1 : 0 },
		*bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = peer_rkey;
	return ibv_post_send(qp, &wr, &bad);
}

/* @count RESIZE offers of our own ring, claiming @size bytes, in @len bytes of payload. */
static void post_resize(uint32_t size, uint32_t len, int count)
{
	struct rs_resize r = {
		htobe64((uintptr_t)ring), htobe32(mr->rkey), htobe32(size)
	};

	memset(ring, 0, len);
	memcpy(ring, &r, sizeof(r));
	while (count--)
		post(IBV_WR_SEND_WITH_IMM, rs_imm(RS_IMM_CTRL, RS_CTRL_RESIZE), 0, len);
}

/* Poll completions for up to @ms; returns the first non-success status seen, or 0. */
static int drain_cq(int ms, int *recvs)
{
	struct ibv_wc wc;

	for (int t = 0; t < ms; t++) {
		int n;

		while ((n = ibv_poll_cq(cq, 1, &wc)) > 0) {
			if (wc.status != IBV_WC_SUCCESS)
				return wc.status;
			if (wc.opcode & IBV_WC_RECV) {
				uint32_t imm = be32toh(wc.imm_data);

				if (rs_imm_type(imm) == RS_IMM_CONSUMED)
					acked += (imm - (uint32_t)acked) & RS_IMM_ARG_MASK;
				(*recvs)++;
				if (!no_repost)
					post_recvs(1);
			}
		}
		usleep(1000);
	}
	return 0;
}

/* Did the kernel drop us?  A DISCONNECTED event or a failed QP within @ms. */
static int kernel_dropped_us(int ms)
{
	struct rdma_cm_event *ev;
	int recvs = 0;

	for (int t = 0; t < ms; t += 50) {
		if (drain_cq(50, &recvs))
			return 1;
		if (!rdma_get_cm_event(ch, &ev)) {
			int gone = ev->event == RDMA_CM_EVENT_DISCONNECTED;

			rdma_ack_cm_event(ev);
			if (gone)
				return 1;
		}
	}
	return 0;
}

/* PD, CQ, our ring and its MR, and the QP on @id; receives posted. */
static void resources(void)
{
	struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 256, .max_recv_wr = 256,
						.max_send_sge = 1, .max_recv_sge = 1 },
				       .qp_type = IBV_QPT_RC };

	pd = ibv_alloc_pd(id->verbs);
	cq = ibv_create_cq(id->verbs, 1024, NULL, NULL, 0);
	qa.send_cq = qa.recv_cq = cq;
	ring = aligned_alloc(4096, RING);
	mr = ibv_reg_mr(pd, ring, RING, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!pd || !cq || !mr)
		die("resources");
	if (rbuf) {
		rmr = ibv_reg_mr(pd, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);
		if (!rmr)
			die("resources");
	}
	if (late_rtu) {		/* not the id's: librdmacm leaves its states and the RTU to us */
		qp = ibv_create_qp(pd, &qa);
		if (!qp)
			die("create qp");
		return;		/* receives once it is out of RESET */
	}
	if (rdma_create_qp(id, pd, &qa))
		die("resources");
	qp = id->qp;
	post_recvs(no_repost ? 1 : 200);	/* stall_recv: the READY's alone */
}

/* "late_rtu": bring our own QP up as librdmacm would, but send no RTU (rdma_establish()). */
static void late_rtu_qp(void)
{
	static const enum ibv_qp_state states[] = { IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS };

	for (int i = 0; i < 3; i++) {
		struct ibv_qp_attr attr = { .qp_state = states[i] };
		int mask;

		if (rdma_init_qp_attr(id, &attr, &mask) || ibv_modify_qp(qp, &attr, mask))
			die("modify qp");
		if (i == 0)
			post_recvs(200);
	}
}

/* "stall_recv:S": the kernel's first write after READY finds no receive; S seconds later it does. */
static int stall_recv(int seconds)
{
	struct rdma_cm_event *ev;
	struct ibv_wc wc;
	int bytes = 0, fin = 0, reset = 0, gone = 0;

	printf("stalled\n");
	fflush(stdout);
	sleep(seconds);
	post_recvs(200);
	for (int t = 0; t < 5000 && !fin && !reset && !gone; t++) {
		while (!fin && !reset && ibv_poll_cq(cq, 1, &wc) > 0) {
			uint32_t imm = be32toh(wc.imm_data);

			if (wc.status != IBV_WC_SUCCESS) {
				gone = 1;
				break;
			}
			if (!(wc.opcode & IBV_WC_RECV))
				continue;
			if (rs_imm_type(imm) == RS_IMM_DATA)
				bytes += imm;
			else if (imm == rs_imm(RS_IMM_CTRL, RS_CTRL_FIN))
				fin = 1;
			else if (imm == rs_imm(RS_IMM_CTRL, RS_CTRL_RESET))
				reset = 1;
		}
		if (!rdma_get_cm_event(ch, &ev)) {
			gone |= ev->event == RDMA_CM_EVENT_DISCONNECTED;
			rdma_ack_cm_event(ev);
		}
		usleep(1000);
	}
	for (int i = 0; i < bytes; i++)
		if (ring[i] != '0' + i % 10)
			bytes = -1;
	printf("got %d bytes, %s\n", bytes, fin ? "fin" : reset ? "reset" : "no fin");
	return fin ? 0 : 1;
}

static void hello_valid(struct rs_hello *h)
{
	memset(h, 0, sizeof(*h));
	h->magic = htobe32(RS_HELLO_MAGIC);
	h->version = RS_PROTO_VERSION;
	h->len = htobe16(sizeof(*h));
	h->ring_addr = htobe64((uintptr_t)ring);
	h->ring_rkey = htobe32(mr->rkey);
	h->ring_size = htobe32(RING);
	h->port = htobe16(tcp_port);
}

/* The kernel's door: every rdmasock connection request goes to this rdma_cm port. */
static uint16_t door_port(void)
{
	FILE *f = fopen("/sys/module/rdmasock/parameters/rdma_port", "r");
	unsigned int port = RS_RDMA_PORT_DEFAULT;

	if (f) {
		if (fscanf(f, "%u", &port) != 1)
			port = RS_RDMA_PORT_DEFAULT;
		fclose(f);
	}
	return port;
}

/*
 * Wait up to @ms for a message from the kernel: returns its immediate (in *@len its payload's
 * length), or 0 when the kernel dropped us (a DISCONNECTED, a failed WR) or nothing came.  A
 * KEEPALIVE (its orphan's probe, or what retires its last unsignaled WR) and a CONSUMED say
 * nothing here: skipped.
 */
static uint32_t next_msg(int ms, uint32_t *len)
{
	struct rdma_cm_event *ev;
	struct ibv_wc wc;

	for (int t = 0; t < ms; t++) {
		while (ibv_poll_cq(cq, 1, &wc) > 0) {
			if (wc.status != IBV_WC_SUCCESS)
				return 0;
			if (!(wc.opcode & IBV_WC_RECV))
				continue;
			post_recvs(1);
			*len = wc.byte_len;
			if (be32toh(wc.imm_data) == rs_imm(RS_IMM_CTRL, RS_CTRL_KEEPALIVE) ||
			    rs_imm_type(be32toh(wc.imm_data)) == RS_IMM_CONSUMED)
				continue;
			return be32toh(wc.imm_data);
		}
		if (!rdma_get_cm_event(ch, &ev)) {
			int gone = ev->event == RDMA_CM_EVENT_DISCONNECTED;

			rdma_ack_cm_event(ev);
			if (gone)
				return 0;
		}
		usleep(1000);
	}
	return 0;
}

/*
 * The reuse cases (the kernel's park_ms set): see the top of this file.  "hello" and our FIN on a
 * valid connection, the kernel's FIN (its side closed), then OPEN on the same QP.
 */
static int reuse(const char *c)
{
	struct { struct rs_hello h; struct rs_hello_resume r; } e;
	uint32_t imm, len = sizeof(e.h), old_rkey = peer_rkey;
	int valid = !strcmp(c, "reuse_valid") || !strcmp(c, "reuse_old_rkey") ||
		    !strcmp(c, "reuse_ready");

	if (strcmp(c, "open_early")) {
		memcpy(ring, "hello", 5);
		post(IBV_WR_RDMA_WRITE_WITH_IMM, 5, peer_addr, 5);
		post(IBV_WR_SEND_WITH_IMM, rs_imm(RS_IMM_CTRL, RS_CTRL_FIN), 0, 0);
		do
			imm = next_msg(10000, &len);
		while (imm && imm != rs_imm(RS_IMM_CTRL, RS_CTRL_FIN));
		if (!imm) {
			printf("%s: no FIN from the kernel\n", c);
			return 3;
		}
	}
	memset(&e, 0, sizeof(e));
	hello_valid(&e.h);
	e.h.ring_size = htobe32(RS_RING_MIN);
	if (strcmp(c, "open_noready"))	/* as an earlier version's, which would send READY */
		e.h.flags = RS_HELLO_F_READY;
	len = sizeof(e.h);
	if (!strcmp(c, "open_magic"))
		e.h.magic = htobe32(0xdeadbeef);
	if (!strcmp(c, "open_short"))
		len = 16;
	if (!strcmp(c, "open_size"))
		e.h.ring_size = htobe32(12345);
	if (!strcmp(c, "open_flags"))
		e.h.flags |= 0x80;
	if (!strcmp(c, "open_conn_id")) {	/* a client never names the connection */
		e.h.flags |= RS_HELLO_F_RESUME;
		e.h.len = htobe16(sizeof(e));
		e.r.conn_id = htobe64(42);
		len = sizeof(e);
	}
	if (!strcmp(c, "open_long"))	/* more than any receive buffer of the kernel's */
		len = 200;
	memcpy(ring, &e, len < sizeof(e) ? len : sizeof(e));
	post(IBV_WR_SEND_WITH_IMM, rs_imm(RS_IMM_CTRL, RS_CTRL_OPEN), 0, len);
	if (!strcmp(c, "open_twice")) {
		/* The first may be taken (ACCEPT): the second breaks what it opened. */
		post(IBV_WR_SEND_WITH_IMM, rs_imm(RS_IMM_CTRL, RS_CTRL_OPEN), 0, len);
		int dropped = kernel_dropped_us(10000);

		printf("%s: %s\n", c, dropped ? "reset" : "NOT reset");
		return dropped ? 0 : 1;
	}
	imm = next_msg(valid ? 10000 : 5000, &len);
	if (!valid) {
		/* No ACCEPT, ever: the kernel tears the QP down. */
		while (imm && imm != rs_imm(RS_IMM_CTRL, RS_CTRL_ACCEPT))
			imm = next_msg(5000, &len);
		printf("%s: %s\n", c, imm ? "ACCEPTED" : "refused");
		return imm ? 1 : 0;
	}
	if (imm != rs_imm(RS_IMM_CTRL, RS_CTRL_ACCEPT) || len < sizeof(e.h)) {
		printf("%s: no ACCEPT (%#x)\n", c, imm);
		return 1;
	}
	memcpy(&e, rbuf, sizeof(e.h));
	peer_addr = be64toh(e.h.ring_addr);
	peer_rkey = be32toh(e.h.ring_rkey);
	peer_size = be32toh(e.h.ring_size);
	if (peer_rkey == old_rkey || !(e.h.flags & RS_HELLO_F_READY)) {
		printf("%s: the same key, or not a READY\n", c);
		return 1;
	}
	if (!strcmp(c, "reuse_ready")) {	/* ACCEPT and OPEN were the READYs */
		post(IBV_WR_SEND_WITH_IMM, rs_imm(RS_IMM_CTRL, RS_CTRL_READY), 0, 0);
		int dropped = kernel_dropped_us(10000);

		printf("%s: %s\n", c, dropped ? "reset" : "NOT reset");
		return dropped ? 0 : 1;
	}
	memcpy(ring, "again", 5);
	if (!strcmp(c, "reuse_old_rkey")) {
		int recvs = 0, status;

		peer_rkey = old_rkey;
		post(IBV_WR_RDMA_WRITE_WITH_IMM, 5, peer_addr, 5);
		status = drain_cq(5000, &recvs);
		printf("%s: %s (status %d)\n", c, status ? "refused" : "NOT refused", status);
		fflush(stdout);
		return status ? 0 : 1;
	}
	post(IBV_WR_RDMA_WRITE_WITH_IMM, 5, peer_addr, 5);
	printf("%s: accepted\n", c);
	fflush(stdout);
	/* The test reads "again" and closes: its FIN, and no READY (ACCEPT was it). */
	imm = next_msg(10000, &len);
	printf("%s: %s\n", c, imm == rs_imm(RS_IMM_CTRL, RS_CTRL_FIN) ? "FIN" :
	       imm == rs_imm(RS_IMM_CTRL, RS_CTRL_READY) ? "READY after ACCEPT" : "no FIN");
	fflush(stdout);
	pause();	/* until the test kills us */
	return 0;
}

/* The "mutate" case: see the top of this file.  Returns 0 (the kernel side is what is judged). */
static int mutate(void)
{
	const char *s = getenv("RDMASOCK_MUTATE_SEED"), *n = getenv("RDMASOCK_MUTATE_STEPS");
	int steps = n ? atoi(n) : 200, recvs = 0, posted = 0;
	uint64_t cursor = 0;	/* bytes we placed in the kernel's ring, honestly */

	mseed = s ? strtoul(s, NULL, 0) : 1;
	printf("mutate: seed %u, %d steps\n", mseed, steps);
	for (int i = 0; i < RING; i++)
		ring[i] = mrnd(256);
	for (int i = 0; i < steps; i++) {
		uint32_t len = 1 + mrnd(512), imm, code;
		uint64_t off = cursor % peer_size;
		enum ibv_wr_opcode op;

		if (off + len > peer_size)
			len = peer_size - off;
		if (mrnd(12)) {
			/* Mostly honest traffic, so mutations meet a connection in every state. */
			if (cursor + len - acked <= peer_size) {
				if (post(IBV_WR_RDMA_WRITE_WITH_IMM, len, peer_addr + off, len))
					goto out;
				cursor += len;
			} else if (post(IBV_WR_SEND_WITH_IMM,
					rs_imm(RS_IMM_CTRL, RS_CTRL_WANT_CONSUMED), 0, 0) ||
				   drain_cq(2, &recvs)) {	/* WANT_CONSUMED, then wait */
				goto out;
			}
		} else switch (mrnd(10)) {
		case 0: case 1: case 2: case 3:	/* DATA, mostly honest */
			imm = mutate32(len);
			op = mrnd(16) ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_SEND_WITH_IMM;
			if (post(op, rs_imm_arg(imm), peer_addr + mutate32(off), len))
				goto out;
			if (imm == len && op == IBV_WR_RDMA_WRITE_WITH_IMM)
				cursor += len;
			break;
		case 4:				/* CONSUMED: a cursor near nothing, or anything */
			if (post(IBV_WR_SEND_WITH_IMM, rs_imm(RS_IMM_CONSUMED, mutate32(0)), 0,
				 mrnd(4) ? 0 : mrnd(32)))
				goto out;
			break;
		case 5: case 6: {		/* control codes, valid and not, some with payloads */
			static const uint32_t codes[] = { 1, 2, 3, 4, 5, 6, 7, 0, 8, 77 };

			code = codes[mrnd(sizeof(codes) / sizeof(codes[0]))];
			if (code == 6) {
				post_resize(mutate32(2 * RING), mrnd(4) ? 16 : mrnd(64), 1 + mrnd(3));
				break;
			}
			if (post(IBV_WR_SEND_WITH_IMM, rs_imm(RS_IMM_CTRL, code), 0,
				 mrnd(6) ? 0 : mrnd(32)))
				goto out;
			break;
		}
		case 7:				/* an unknown type */
			if (post(IBV_WR_SEND_WITH_IMM, rs_imm(3 /* no such type */, mrnd(1 << 30)), 0, 0))
				goto out;
			break;
		default:			/* give the kernel time to answer */
			drain_cq(mrnd(3), &recvs);
			break;
		}
		posted++;
		if (posted % 8 == 0 && drain_cq(1, &recvs))
			break;		/* our QP failed: the kernel reset us */
	}
out:
	drain_cq(100, &recvs);
	printf("mutate: %d messages posted, %d received, %llu bytes placed honestly\n", posted,
	       recvs, (unsigned long long)cursor);
	return 0;
}

/* --listen: a user-space listener, for the cases where the kernel is the client. */
static int serve(const char *addr, const char *port, const char *c)
{
	struct rdma_conn_param param = { .retry_count = 6, .rnr_retry_count = 7 };
	struct rdma_cm_id *lid;
	struct rdma_cm_event *ev;
	struct addrinfo *ai;
	struct rs_hello h;

	if (getaddrinfo(addr, port, NULL, &ai))
		die("getaddrinfo");
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP))
		die("create id");
	if (rdma_bind_addr(lid, ai->ai_addr) || rdma_listen(lid, 8))
		die("listen");
	printf("listening\n");
	fflush(stdout);
	if (!strcmp(c, "hold")) {
		pause();
		return 0;
	}
	if (!strcmp(c, "watch")) {
		for (;;) {
			if (rdma_get_cm_event(ch, &ev))
				die("rdma_get_cm_event");
			if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
				printf("request\n");
				fflush(stdout);
				rdma_reject(ev->id, NULL, 0);
			}
			rdma_ack_cm_event(ev);
		}
	}
	if (strcmp(c, "data_before_ready") && strcmp(c, "ready_reset") && strcmp(c, "ready_fin"))
		return 2;
	ev = wait_event(RDMA_CM_EVENT_CONNECT_REQUEST);
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		return 3;
	const struct rs_hello *ph = ev->param.conn.private_data;

	id = ev->id;
	tcp_port = be16toh(ph->port);	/* our REP names the port the client connected to */
	peer_addr = be64toh(ph->ring_addr);
	peer_rkey = be32toh(ph->ring_rkey);
	peer_size = be32toh(ph->ring_size);
	rdma_ack_cm_event(ev);
	resources();
	hello_valid(&h);
	param.private_data = &h;
	param.private_data_len = sizeof(h);
	if (rdma_accept(id, &param))
		die("accept");
	ev = wait_event(RDMA_CM_EVENT_ESTABLISHED);
	if (ev->event != RDMA_CM_EVENT_ESTABLISHED)
		return 3;
	rdma_ack_cm_event(ev);
	if (strcmp(c, "data_before_ready")) {
		/* READY and at once a RESET or a FIN: both before the client's connect() returns. */
		post(IBV_WR_SEND_WITH_IMM, rs_imm(RS_IMM_CTRL, RS_CTRL_READY), 0, 0);
		post(IBV_WR_SEND_WITH_IMM, rs_imm(RS_IMM_CTRL, strcmp(c, "ready_fin") ?
						  RS_CTRL_RESET : RS_CTRL_FIN), 0, 0);
		printf("%s: sent\n", c);
		fflush(stdout);
		pause();
		return 0;
	}
	fcntl(ch->fd, F_SETFL, O_NONBLOCK);
	/* DATA into the client's ring, and never the READY that must come first. */
	memcpy(ring, "early", 5);
	post(IBV_WR_RDMA_WRITE_WITH_IMM, 5, peer_addr, 5);
	int dropped = kernel_dropped_us(15000);

	printf("%s: %s\n", c, dropped ? "connection reset by the kernel" : "NOT reset");
	return dropped ? 0 : 1;
}

/*
 * A new event channel and id (ch, id), its address and route resolved towards @ai's host, at the
 * kernel's door; the hello names @ai's port.
 */
static void resolve(const struct addrinfo *ai)
{
	struct sockaddr_storage door;

	memcpy(&door, ai->ai_addr, ai->ai_addrlen);
	tcp_port = ntohs(((struct sockaddr_in *)&door)->sin_port);	/* (same place in sin6) */
	((struct sockaddr_in *)&door)->sin_port = htons(door_port());
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		die("create id");
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&door, 2000))
		die("resolve addr");
	rdma_ack_cm_event(wait_event(RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(id, 2000))
		die("resolve route");
	rdma_ack_cm_event(wait_event(RDMA_CM_EVENT_ROUTE_RESOLVED));
}

/* --half-open: see the top of this file. */
static int half_open(const char *addr, const char *port, int n)
{
	struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 },
				       .qp_type = IBV_QPT_RC };
	struct rdma_conn_param param = { .retry_count = 6, .rnr_retry_count = 7 };
	struct pollfd pfd[64];
	struct addrinfo *ai;
	struct rs_hello h;
	int answered = 0;

	if (n < 1 || n > 64 || getaddrinfo(addr, port, NULL, &ai))
		return 2;
	for (int i = 0; i < n; i++) {
		resolve(ai);
		if (!pd) {
			pd = ibv_alloc_pd(id->verbs);
			cq = ibv_create_cq(id->verbs, 256, NULL, NULL, 0);
			ring = aligned_alloc(4096, RING);
			mr = pd && ring ? ibv_reg_mr(pd, ring, RING, IBV_ACCESS_LOCAL_WRITE |
						     IBV_ACCESS_REMOTE_WRITE) : NULL;
			if (!cq || !mr)
				die("resources");
		}
		qa.send_cq = qa.recv_cq = cq;
		if (rdma_create_qp(id, pd, &qa))
			die("create qp");
		hello_valid(&h);
		h.ring_size = htobe32(4 << 20);	/* what an old kernel would stage for us at once */
		param.private_data = &h;
		param.private_data_len = sizeof(h);
		if (rdma_connect(id, &param))
			die("connect");
		pfd[i] = (struct pollfd){ .fd = ch->fd, .events = POLLIN };
	}
	/* Readable: the answer is queued (and stays there: reading a REP would send the RTU). */
	for (int t = 0; t < 200 && answered < n; t++) {
		if (poll(pfd, n, 100) < 0)
			die("poll");
		for (int i = 0; i < n; i++) {
			if (pfd[i].fd >= 0 && (pfd[i].revents & POLLIN)) {
				pfd[i].fd = -1;		/* answered: poll ignores it from now on */
				answered++;
			}
		}
	}
	for (int i = 0; i < n && answered < n; i++)
		if (pfd[i].fd >= 0)
			fprintf(stderr, "hostile_peer: request %d: no answer\n", i);
	printf("answered %d\n", answered);
	fflush(stdout);
	pause();
	return 0;
}

int main(int argc, char **argv)
{
	struct rdma_conn_param param = { .retry_count = 6, .rnr_retry_count = 7 };
	struct rs_hello h = { 0 };
	struct addrinfo *ai;
	struct rdma_cm_event *ev;
	const char *c;
	int recvs = 0;

	if (argc == 5 && !strcmp(argv[1], "--listen"))
		return serve(argv[2], argv[3], argv[4]);
	if (argc == 5 && !strcmp(argv[1], "--half-open"))
		return half_open(argv[2], argv[3], atoi(argv[4]));
	if (argc == 5 && !strcmp(argv[1], "--client"))	/* as spawn_peer() calls it */
		argv++, argc--;
	if (argc != 4)
		return 2;
	c = argv[3];
	no_repost = !strncmp(c, "stall_recv:", 11);
	if (!strncmp(c, "reuse_", 6) || !strncmp(c, "open_", 5))
		rbuf = aligned_alloc(64, 64);
	late_rtu = !strcmp(c, "late_rtu");
	if (getaddrinfo(argv[1], argv[2], NULL, &ai))
		die("getaddrinfo");
	resolve(ai);
	resources();
	hello_valid(&h);
	if (!strcmp(c, "hello_magic"))
		h.magic = htobe32(0xdeadbeef);
	if (!strcmp(c, "hello_version"))
		h.version = 99;
	if (!strcmp(c, "hello_size"))
		h.ring_size = htobe32(12345);
	if (!strcmp(c, "hello_flags"))
		h.flags = 0x80;
	if (!strcmp(c, "hello_port0"))
		h.port = 0;
	if (!strcmp(c, "hello_reserved"))
		h.reserved16 = htobe16(1);
	if (!strcmp(c, "hello_other_port"))
		h.port = htobe16(tcp_port ^ 1);
	if (rbuf)	/* a ring at the first size the kernel's own start with: one it parks */
		h.ring_size = htobe32(RS_RING_MIN);
	param.private_data = &h;
	param.private_data_len = !strcmp(c, "hello_short") ? 8 : sizeof(h);
	param.qp_num = qp->qp_num;
	if (rdma_connect(id, &param))
		die("connect");
	ev = wait_event(late_rtu ? RDMA_CM_EVENT_CONNECT_RESPONSE : RDMA_CM_EVENT_ESTABLISHED);
	if (late_rtu && ev->event == RDMA_CM_EVENT_CONNECT_RESPONSE) {
		late_rtu_qp();
		ev->event = RDMA_CM_EVENT_ESTABLISHED;	/* for us; the kernel never hears it */
	}
	if (!strncmp(c, "hello_", 6)) {
		int rejected = ev->event == RDMA_CM_EVENT_REJECTED;

		rdma_ack_cm_event(ev);
		printf("%s: %s\n", c, rejected ? "rejected" : "NOT rejected");
		return rejected ? 0 : 1;
	}
	if (ev->event != RDMA_CM_EVENT_ESTABLISHED)
		return 3;
	const struct rs_hello *ph = ev->param.conn.private_data;

	peer_addr = be64toh(ph->ring_addr);
	peer_rkey = be32toh(ph->ring_rkey);
	peer_size = be32toh(ph->ring_size);
	rdma_ack_cm_event(ev);
	fcntl(ch->fd, F_SETFL, O_NONBLOCK);	/* from now on, poll for the kernel's DISCONNECTED */
	if (!strcmp(c, "data_before_ready") || !strcmp(c, "early_bad_ctrl")) {
		memcpy(ring, "early", 5);
		if (c[0] == 'd')
			post(IBV_WR_RDMA_WRITE_WITH_IMM, 5, peer_addr, 5);
		else
			post(IBV_WR_SEND_WITH_IMM, rs_imm(RS_IMM_CTRL, 77), 0, 0);
		int dropped = kernel_dropped_us(10000);

		printf("%s: %s\n", c, dropped ? "connection reset by the kernel" : "NOT reset");
		return dropped ? 0 : 1;
	}
	if (!strcmp(c, "no_ready")) {	/* the RTU (librdmacm's), then never our READY */
		printf("no_ready: established\n");
		fflush(stdout);
		int dropped = kernel_dropped_us(20000);

		printf("no_ready: %s\n", dropped ? "dropped by the kernel" : "NOT dropped");
		fflush(stdout);
		return dropped ? 0 : 1;
	}
	/* Our READY (we register nothing more: the MR is ready), then wait for the kernel's. */
	post(IBV_WR_SEND_WITH_IMM, rs_imm(RS_IMM_CTRL, RS_CTRL_READY), 0, 0);
	for (int i = 0; i < 2000 && !recvs; i++)
		drain_cq(1, &recvs);
	if (!recvs) {
		fprintf(stderr, "hostile_peer: no READY from the kernel\n");
		return 3;
	}
	memcpy(ring, "hello", 5);

	if (no_repost)
		return stall_recv(atoi(c + 11));
	if (rbuf)
		return reuse(c);
	if (!strcmp(c, "mutate"))
		return mutate();
	if (!strcmp(c, "fin_dead")) {	/* "hello", FIN, then a dead QP and no disconnect */
		post(IBV_WR_RDMA_WRITE_WITH_IMM, 5, peer_addr, 5);
		post(IBV_WR_SEND_WITH_IMM, rs_imm(RS_IMM_CTRL, RS_CTRL_FIN), 0, 0);
		drain_cq(200, &recvs);
		struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };

		if (ibv_modify_qp(qp, &qa, IBV_QP_STATE))
			die("modify qp");
		printf("quiet\n");
		fflush(stdout);
		pause();
		return 0;
	}
	if (!strcmp(c, "ring_addr")) {	/* the kernel's ring address must say nothing physical */
		printf("ring_addr: %#llx\n", (unsigned long long)peer_addr);
		/* Not a physical address (< 2^40 here), not a kernel pointer (rxe's DMA addresses). */
		return peer_addr >= 1ULL << 40 && peer_addr < 1ULL << 63 && !(peer_addr & 4095) ?
		       0 : 1;
	}
	if (!strcmp(c, "valid") || late_rtu)
		post(IBV_WR_RDMA_WRITE_WITH_IMM, 5, peer_addr, 5);
	else if (!strcmp(c, "data_overflow"))
		post(IBV_WR_RDMA_WRITE_WITH_IMM, peer_size + 1, peer_addr, 5);
	else if (!strcmp(c, "data_zero"))
		post(IBV_WR_RDMA_WRITE_WITH_IMM, 0, peer_addr, 0);
	else if (!strcmp(c, "consumed_ahead"))
		post(IBV_WR_SEND_WITH_IMM, rs_imm(RS_IMM_CONSUMED, 4096), 0, 0);
	else if (!strcmp(c, "bad_type"))
		post(IBV_WR_SEND_WITH_IMM, rs_imm(3, 0), 0, 0);
	else if (!strcmp(c, "bad_ctrl"))
		post(IBV_WR_SEND_WITH_IMM, rs_imm(RS_IMM_CTRL, 77), 0, 0);
	else if (!strcmp(c, "double_fin")) {
		post(IBV_WR_SEND_WITH_IMM, rs_imm(RS_IMM_CTRL, RS_CTRL_FIN), 0, 0);
		post(IBV_WR_SEND_WITH_IMM, rs_imm(RS_IMM_CTRL, RS_CTRL_FIN), 0, 0);
	} else if (!strcmp(c, "write_outside"))
		post(IBV_WR_RDMA_WRITE_WITH_IMM, 5, peer_addr + peer_size, 5);
	else if (!strcmp(c, "flood"))
		for (int i = 0; i < 64; i++)
			post(IBV_WR_RDMA_WRITE_WITH_IMM, peer_size / 16, peer_addr, 16);
	else if (!strcmp(c, "consumed_payload"))
		post(IBV_WR_SEND_WITH_IMM, rs_imm(RS_IMM_CONSUMED, 0), 0, 16);
	else if (!strcmp(c, "switch_unasked"))
		post(IBV_WR_SEND_WITH_IMM, rs_imm(RS_IMM_CTRL, RS_CTRL_SWITCH), 0, 0);
	else if (!strcmp(c, "resize_small"))
		post_resize(12345, 16, 1);
	else if (!strcmp(c, "resize_twice"))
		post_resize(2 * RING, 16, 2);
	else if (!strcmp(c, "resize_long"))	/* past the 56-byte buffer (OPEN's and ACCEPT's) */
		post_resize(2 * RING, 64, 1);
	else if (!strcmp(c, "disconnect")) {
		post(IBV_WR_RDMA_WRITE_WITH_IMM, 5, peer_addr, 5);
		drain_cq(100, &recvs);
		rdma_disconnect(id);
		printf("%s: disconnected\n", c);
		return 0;
	} else {
		return 2;
	}
	if (!strcmp(c, "valid")) {
		drain_cq(200, &recvs);
		printf("%s: sent\n", c);
		return 0;
	}
	if (late_rtu) {		/* "hello" went; stay until killed, never sending the RTU */
		drain_cq(200, &recvs);
		printf("%s: sent\n", c);
		fflush(stdout);
		for (;;)
			drain_cq(1000, &recvs);
	}
	int dropped = kernel_dropped_us(10000);

	printf("%s: %s\n", c, dropped ? "connection reset by the kernel" : "NOT reset");
	return dropped ? 0 : 1;
}
