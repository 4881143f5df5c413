// SPDX-License-Identifier: GPL-2.0
/*
 * rs_bench: one benchmark program for both families, so that only the family differs.
 *   rs_bench pingpong tcp|rdma SIZE ITERS [SAMPLES_FILE]  round trips: avg, p50, p99 (us)
 *   rs_bench floor    unix SIZE ITERS                      the same over a UNIX socket pair whose
 *                                                          ends spin on non-blocking reads: what
 *                                                          4 socket calls cost with no transport
 *   rs_bench stream   tcp|rdma SIZE SECONDS                one-way throughput (MB/s, msgs/s)
 *   rs_bench connrate tcp|rdma COUNT                       connect+accept+close per second,
 *                                                          time to first byte (us); rdmasock:
 *                                                          how many rode RDMA, and the time
 *                                                          from connect() to riding it (waited
 *                                                          for off the clock, up to 2 s)
 *   rs_bench conns    tcp|rdma COUNT                       COUNT connections open at once, each
 *                                                          carrying data; memory per connection
 *                                                          end, connections opened per second
 * Server and client are two processes on the VM's own address.  Output: one JSON object per run.
 * RS_BENCH_BUF=N in the environment sets SO_RCVBUF and SO_SNDBUF to N on every socket (the ring
 * sizes of an rdmasock connection follow them); the carrier's name then ends in "-bufNk".
 * RS_BENCH_TAG=-x appends -x to the carrier's name (a module setting the caller changed).
 * RS_BENCH_BUSY_US=N sets the busy-poll budget of "rdma-busy" (default 200 us).
 * RS_BENCH_PIN=A,B pins the client (the writer of a stream) to CPU A and the server to CPU B.
 * RS_BENCH_SNAP=CMD: "conns" runs CMD (sh -c) while all its connections are open (a memory snapshot).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include "../lib.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int busy_poll_us;	/* "rdma-busy": SO_BUSY_POLL on both ends */
static int sock_buf;		/* RS_BENCH_BUF */
static char carrier_name[64];

static enum carrier parse_carrier(const char *s)
{
	enum carrier c = strcmp(s, "tcp") ? CARRIER_RDMASOCK : CARRIER_TCP;
	const char *buf = getenv("RS_BENCH_BUF");
	int n;

	if (!strcmp(s, "rdma-busy"))
		busy_poll_us = getenv("RS_BENCH_BUSY_US") ? atoi(getenv("RS_BENCH_BUSY_US")) : 200;
	sock_buf = buf ? atoi(buf) : 0;
	n = snprintf(carrier_name, sizeof(carrier_name), "%s",
		     !strcmp(s, "unix") ? "unix-spin" : c == CARRIER_TCP ? "tcp" :
		     busy_poll_us ? "rdmasock-busy" : "rdmasock");
	if (sock_buf)
		n += snprintf(carrier_name + n, sizeof(carrier_name) - n, "-buf%dk", sock_buf >> 10);
	if (getenv("RS_BENCH_TAG"))
		snprintf(carrier_name + n, sizeof(carrier_name) - n, "%s", getenv("RS_BENCH_TAG"));
	return c;
}

/* Busy poll and buffer sizes, for every socket the benchmark makes (before connect or listen). */
static void tune_socket(int fd)
{
	if (busy_poll_us)
		setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &busy_poll_us, sizeof(busy_poll_us));
	if (sock_buf) {
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sock_buf, sizeof(sock_buf));
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sock_buf, sizeof(sock_buf));
	}
}

/* A listener on the VM's own address, tuned like the clients (children inherit the settings). */
static int listener(enum carrier c, struct sockaddr_storage *ss, socklen_t *len, int backlog)
{
	int one = 1, fd = socket(carrier_family(c, AF_INET), SOCK_STREAM, 0);

	if (fd < 0)
		goto fail;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	tune_socket(fd);
	*len = host_addr(AF_INET, ss, 0);
	if (bind(fd, (struct sockaddr *)ss, *len) || listen(fd, backlog) ||
	    getsockname(fd, (struct sockaddr *)ss, len))
		goto fail;
	return fd;
fail:
	perror("rs_bench: listener");
	exit(1);
}

static int connect_to(enum carrier c, struct sockaddr_storage *ss, socklen_t len)
{
	/*
	 * The family's number read once: a sysfs file opened per connection was inside connrate's
	 * time to first byte, rdmasock's alone (~5 % of its CPU).
	 */
	static int family[CARRIER_IPPROTO + 1] = { -1, -1, -1 };
	int one = 1, fd;

	if (family[c] < 0)
		family[c] = carrier_family(c, AF_INET);
	fd = socket(family[c], SOCK_STREAM, 0);

	if (fd < 0) {
		perror("rs_bench: socket");
		exit(1);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	tune_socket(fd);
	if (connect(fd, (struct sockaddr *)ss, len)) {
		perror("rs_bench: connect");
		exit(1);
	}
	if (!carried_as_expected(c, fd)) {	/* a TCP figure labelled rdmasock would mislead */
		fprintf(stderr, "rs_bench: the connection fell back to TCP (reason %d)\n",
			rs_getint(fd, RDMASOCK_FALLBACK_REASON));
		exit(1);
	}
	return fd;
}

/* RS_BENCH_PIN=A,B: this process to CPU A (@which 0) or B (@which 1). */
static void pin_to_cpu(int which)
{
	const char *pin = getenv("RS_BENCH_PIN");
	int cpu[2];
	cpu_set_t set;

	if (!pin || sscanf(pin, "%d,%d", &cpu[0], &cpu[1]) != 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu[which], &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		perror("rs_bench: sched_setaffinity");
}

/* Print a ping-pong's round trips (sorts @rtt); the raw samples go to @samples if named. */
static void report_rtt(double *rtt, int iters, size_t size, const char *samples)
{
	double sum = 0;

	if (samples) {
		FILE *f = fopen(samples, "w");

		for (int i = 0; f && i < iters; i++)
			fprintf(f, "%.2f\n", rtt[i]);
		if (f)
			fclose(f);
	}
	for (int i = 0; i < iters; i++)
		sum += rtt[i];
	qsort(rtt, iters, sizeof(double), cmp_double);
	printf("{\"test\":\"pingpong\",\"carrier\":\"%s\",\"size\":%zu,\"iters\":%d,"
	       "\"avg_us\":%.2f,\"p50_us\":%.2f,\"p99_us\":%.2f}\n",
	       carrier_name, size, iters, sum / iters, rtt[iters / 2],
	       rtt[iters * 99 / 100]);
}

typedef int (*read_fn)(int fd, void *buf, size_t len);

/* The server's side of a ping-pong: echo what @rd reads until the peer is gone. */
static void echo_until_closed(int fd, char *buf, size_t size, read_fn rd)
{
	while (!rd(fd, buf, size))
		if (write_all(fd, buf, size))
			break;
}

/* The client's side: @iters timed round trips into @rtt after 100 untimed ones (warm-up). */
static int time_round_trips(int fd, char *buf, size_t size, int iters, double *rtt, read_fn rd)
{
	for (int i = 0; i < iters + 100; i++) {
		double t = now_us();

		if (write_all(fd, buf, size) || rd(fd, buf, size))
			return 1;
		if (i >= 100)
			rtt[i - 100] = now_us() - t;
	}
	return 0;
}

static int bench_pingpong(enum carrier c, size_t size, int iters, const char *samples)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int lfd = listener(c, &ss, &len, 16), fd, one = 1;
	char *buf = calloc(1, size);
	double *rtt = calloc(iters, sizeof(double));
	pid_t pid = fork();

	if (!pid) {
		pin_to_cpu(1);
		fd = accept(lfd, NULL, NULL);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		echo_until_closed(fd, buf, size, read_all);
		_exit(0);
	}
	pin_to_cpu(0);
	fd = connect_to(c, &ss, len);
	if (time_round_trips(fd, buf, size, iters, rtt, read_all))
		return 1;
	close(fd);
	waitpid(pid, NULL, 0);
	report_rtt(rtt, iters, size, samples);
	return 0;
}

/* The socket API's own share of a round trip: no transport, no sleeping, only the calls. */
static int read_spinning(int fd, void *buf, size_t size)
{
	size_t got = 0;

	while (got < size) {
		ssize_t n = recv(fd, (char *)buf + got, size - got, MSG_DONTWAIT);

		if (n > 0)
			got += n;
		else if (!n || errno != EAGAIN)
			return -1;
	}
	return 0;
}

static int bench_floor(size_t size, int iters)
{
	double *rtt = calloc(iters, sizeof(double));
	char *buf = calloc(1, size);
	int sv[2];
	pid_t pid;

	if (!rtt || !buf || socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		perror("rs_bench: socketpair");
		return 1;
	}
	pid = fork();
	if (!pid) {
		pin_to_cpu(1);
		close(sv[0]);
		echo_until_closed(sv[1], buf, size, read_spinning);
		_exit(0);
	}
	pin_to_cpu(0);
	close(sv[1]);
	if (time_round_trips(sv[0], buf, size, iters, rtt, read_spinning))
		return 1;
	close(sv[0]);
	waitpid(pid, NULL, 0);
	report_rtt(rtt, iters, size, NULL);
	return 0;
}

static int bench_stream(enum carrier c, size_t size, double seconds)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int lfd = listener(c, &ss, &len, 16), fd;
	char *buf = calloc(1, size > 65536 ? size : 65536);
	long long total = 0, msgs = 0;
	int pipefd[2];
	pid_t pid;

	if (pipe(pipefd))
		return 1;
	pid = fork();
	if (!pid) {
		ssize_t n;

		pin_to_cpu(1);
		fd = accept(lfd, NULL, NULL);
		while ((n = recv(fd, buf, 65536, 0)) > 0)
			total += n;
		if (write(pipefd[1], &total, sizeof(total)) != sizeof(total))
			_exit(1);
		_exit(0);
	}
	pin_to_cpu(0);
	fd = connect_to(c, &ss, len);
	double t0 = now_us(), t = t0;

	/*
	 * The clock is read every 16 writes: under TCG it is the emulated HPET, whose read cost
	 * more than a 64-byte write and varied with the host.  (The rate uses the time at the end.)
	 */
	do {
		if (write_all(fd, buf, size))
			return 1;
		if (!(++msgs % 16))
			t = now_us();
	} while (t - t0 < seconds * 1e6);
	shutdown(fd, SHUT_WR);
	if (read(pipefd[0], &total, sizeof(total)) != sizeof(total))
		return 1;
	t = now_us();
	waitpid(pid, NULL, 0);
	close(fd);
	printf("{\"test\":\"stream\",\"carrier\":\"%s\",\"size\":%zu,\"MBps\":%.2f,\"msgs_per_s\":%.0f,"
	       "\"bytes\":%lld}\n", carrier_name, size,
	       total / (t - t0), msgs / ((t - t0) / 1e6), total);
	return 0;
}

static int bench_connrate(enum carrier c, int count)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int lfd = listener(c, &ss, &len, 16), on_rdma = 0;
	double t0, ttfb = 0, to_rdma = 0, waited = 0;
	char b = 'x';
	pid_t pid = fork();

	if (!pid) {
		for (int i = 0; i < count; i++) {
			int fd = accept(lfd, NULL, NULL);

			if (fd < 0 || write(fd, &b, 1) != 1)
				_exit(1);
			close(fd);
		}
		_exit(0);
	}
	t0 = now_us();
	for (int i = 0; i < count; i++) {
		double t = now_us(), tc;
		int fd = connect_to(c, &ss, len), mode = -1;

		tc = now_us();
		if (c != CARRIER_TCP)
			mode = rs_getint(fd, RDMASOCK_MODE);
		if (read(fd, &b, 1) != 1)
			return 1;
		ttfb += now_us() - t;
		if (mode == RDMASOCK_MODE_RDMA) {
			/* Riding RDMA when connect() returned. */
			to_rdma += tc - t;
			on_rdma++;
		} else if (c != CARRIER_TCP) {
			/* Not yet (an upgrade in the background?): wait for it, off the clock. */
			double w0 = now_us(), w = w0;

			while (mode != RDMASOCK_MODE_RDMA && w - w0 < 2e6) {
				mode = rs_getint(fd, RDMASOCK_MODE);
				w = now_us();
			}
			if (mode == RDMASOCK_MODE_RDMA) {
				to_rdma += w - t;
				on_rdma++;
			}
			waited += w - w0;
		}
		close(fd);
	}
	double el = now_us() - t0 - waited;

	waitpid(pid, NULL, 0);
	printf("{\"test\":\"connrate\",\"carrier\":\"%s\",\"count\":%d,\"conn_per_s\":%.1f,"
	       "\"ttfb_us\":%.1f,\"rdma_conns\":%d", carrier_name, count,
	       count / (el / 1e6), ttfb / count, on_rdma);
	if (on_rdma)
		printf(",\"to_rdma_us\":%.1f", to_rdma / on_rdma);
	printf("}\n");
	return 0;
}

static long meminfo_kb(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	long v = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = atol(line + strlen(key) + 1);
	if (f)
		fclose(f);
	return v;
}

/* Registered memory (both rings) of one rdmasock connection end; 0 for TCP. */
static long long ring_bytes(enum carrier c, int fd)
{
	struct rdmasock_info info;
	socklen_t l = sizeof(info);

	if (c != CARRIER_RDMASOCK || getsockopt(fd, SOL_RDMASOCK, RDMASOCK_INFO, &info, &l))
		return 0;
	return (long long)info.rx_ring_size + info.tx_ring_size;
}

/*
 * COUNT connections open at once, all in this process (2 x COUNT descriptors), each carrying 64
 * bytes each way.  Memory per connection end (a host holds one end of a connection between two
 * hosts; here both are in one VM): MemAvailable before and after, and the rings' sizes.
 */
static int bench_conns(enum carrier c, int count)
{
	struct rlimit rl = { .rlim_cur = 2 * count + 64, .rlim_max = 2 * count + 64 };
	int *cfd = calloc(count, sizeof(int)), *sfd = calloc(count, sizeof(int));
	struct sockaddr_storage ss;
	long used0 = meminfo_kb("MemAvailable:"), used;
	long long registered = 0;
	int lfd, carried = 0;
	socklen_t len;
	char buf[64] = { 0 };
	double t0;

	if (setrlimit(RLIMIT_NOFILE, &rl)) {
		perror("rs_bench: RLIMIT_NOFILE");
		return 1;
	}
	lfd = listener(c, &ss, &len, count);
	t0 = now_us();
	for (int i = 0; i < count; i++) {
		cfd[i] = connect_to(c, &ss, len);
		sfd[i] = accept(lfd, NULL, NULL);
		if (sfd[i] < 0) {
			fprintf(stderr, "rs_bench: accept %d: %s\n", i, strerror(errno));
			return 1;
		}
	}
	t0 = now_us() - t0;
	for (int i = 0; i < count; i++) {
		if (write_all(cfd[i], buf, sizeof(buf)) || read_all(sfd[i], buf, sizeof(buf)) ||
		    write_all(sfd[i], buf, sizeof(buf)) || read_all(cfd[i], buf, sizeof(buf))) {
			fprintf(stderr, "rs_bench: connection %d: %s\n", i, strerror(errno));
			return 1;
		}
		carried++;
		registered += ring_bytes(c, cfd[i]) + ring_bytes(c, sfd[i]);
	}
	used = used0 - meminfo_kb("MemAvailable:");
	/* Where it goes: RS_BENCH_SNAP names a command run now, every connection still open. */
	if (getenv("RS_BENCH_SNAP") && system(getenv("RS_BENCH_SNAP")))
		fprintf(stderr, "rs_bench: RS_BENCH_SNAP failed\n");
	printf("{\"test\":\"conns\",\"carrier\":\"%s\",\"count\":%d,\"carried_data\":%d,"
	       "\"kernel_kb_per_conn\":%.1f,\"registered_kb_per_conn\":%.1f,\"open_per_s\":%.1f}\n",
	       carrier_name, count, carried, used / 2.0 / count, registered / 2048.0 / count,
	       count / (t0 / 1e6));
	for (int i = 0; i < count; i++) {
		close(cfd[i]);
		close(sfd[i]);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: see the comment at the top of rs_bench.c\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	enum carrier c = parse_carrier(argv[2]);

	if (!strcmp(argv[1], "pingpong") && argc >= 5)
		return bench_pingpong(c, atoi(argv[3]), atoi(argv[4]), argc > 5 ? argv[5] : NULL);
	if (!strcmp(argv[1], "floor") && argc >= 5)
		return bench_floor(atoi(argv[3]), atoi(argv[4]));
	if (!strcmp(argv[1], "stream") && argc >= 5)
		return bench_stream(c, atoi(argv[3]), atof(argv[4]));
	if (!strcmp(argv[1], "connrate"))
		return bench_connrate(c, atoi(argv[3]));
	if (!strcmp(argv[1], "conns"))
		return bench_conns(c, atoi(argv[3]));
	fprintf(stderr, "rs_bench: unknown test %s\n", argv[1]);
	return 2;
}
