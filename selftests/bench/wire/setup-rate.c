// SPDX-License-Identifier: GPL-2.0
/*
 * make bench-wire's set-up row: connections opened one after another, each carrying one byte
 * each way before it closes, as a program that opens a connection per request does.  Plain
 * socket calls, so that every carrier's preload (or none, for TCP) takes them as a program's.
 *
 *   setup-rate server ADDR PORT           accept, read a byte, answer it, close; for ever
 *   setup-rate client ADDR PORT SECONDS   one JSON line: connections, per second, the time from
 *                                         connect() to the answer (p50, p99, in us)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_SAMPLES 200000

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int addr_of(const char *host, const char *port, struct sockaddr_in *sin)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(atoi(port));
	return inet_pton(AF_INET, host, &sin->sin_addr) == 1 ? 0 : -1;
}

static int serve(struct sockaddr_in *sin)
{
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);
	char c;

	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(l, (struct sockaddr *)sin, sizeof(*sin)) || listen(l, 128)) {
		perror("setup-rate: listen");
		return 1;
	}
	for (;;) {
		int s = accept(l, NULL, NULL);

		if (s < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			perror("setup-rate: accept");
			return 1;
		}
		if (read(s, &c, 1) == 1 && write(s, &c, 1) != 1)
			perror("setup-rate: write");
		close(s);
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int run(struct sockaddr_in *sin, double secs)
{
	static double lat[MAX_SAMPLES];
	double start = now_us(), end = start + secs * 1e6, t;
	int n = 0, failed = 0, one = 1;
	char c = 'x';

	while ((t = now_us()) < end && n < MAX_SAMPLES) {
		int s = socket(AF_INET, SOCK_STREAM, 0);

		if (s < 0) {
			perror("setup-rate: socket");
			return 1;
		}
		setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(s, (struct sockaddr *)sin, sizeof(*sin)) || write(s, &c, 1) != 1 ||
		    read(s, &c, 1) != 1) {
			if (++failed > 100) {
				perror("setup-rate: connection");
				close(s);
				return 1;
			}
			close(s);
			usleep(100000);	/* its server is still coming up */
			continue;
		}
		lat[n++] = now_us() - t;
		close(s);
	}
	if (!n) {
		fprintf(stderr, "setup-rate: no connection\n");
		return 1;
	}
	qsort(lat, n, sizeof(lat[0]), cmp);
	printf("{\"conns\": %d, \"per_s\": %.1f, \"p50_us\": %.1f, \"p99_us\": %.1f, "
	       "\"failed\": %d}\n", n, n / ((now_us() - start) / 1e6), lat[n / 2],
	       lat[(int)(n * 0.99)], failed);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin;

	if (argc >= 4 && !strcmp(argv[1], "server") && !addr_of(argv[2], argv[3], &sin))
		return serve(&sin);
	if (argc >= 5 && !strcmp(argv[1], "client") && !addr_of(argv[2], argv[3], &sin))
		return run(&sin, atof(argv[4]));
	fprintf(stderr, "usage: setup-rate server ADDR PORT | client ADDR PORT SECONDS\n");
	return 2;
}
