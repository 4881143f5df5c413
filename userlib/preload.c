// SPDX-License-Identifier: GPL-2.0
/*
 * librdmasock-preload.so: make an unchanged program's TCP sockets rdmasock sockets.
 *
 * socket(AF_INET or AF_INET6, SOCK_STREAM, 0 or IPPROTO_TCP) becomes socket(AF_INET or AF_INET6,
 * SOCK_STREAM, IPPROTO_RDMASOCK): the same family, so a program that inspects its socket finds
 * AF_INET/AF_INET6 (SO_PROTOCOL says IPPROTO_RDMASOCK).  Where the module has no protocol number
 * (loaded with ipproto=0), or with RDMASOCK_FAMILY=1, it becomes socket(<rdmasock family>, ...)
 * instead.  Both numbers are read once from the module's sysfs parameters.  When the module is
 * absent or refuses, the original call is made: nothing breaks, everything stays TCP.  Other
 * sockets are not touched.
 *
 * setsockopt(SOL_SOCKET, SO_REUSEPORT), which kernels before 6.6 refuse to other families than
 * AF_INET and AF_INET6, is passed as RDMASOCK_REUSEPORT on a socket of the family.
 *
 * Policy (which connections may use RDMA) needs the address, so connect() and listen() are
 * intercepted too: a socket a rule excludes is switched to plain kernel TCP with the
 * RDMASOCK_FORCE_TCP option before the call, and stays a real kernel socket.  Rules come from
 * RDMASOCK_POLICY (";"-separated) and RDMASOCK_POLICY_FILE (one per line); grammar in
 * rdmasock-run(1).  Everything is parsed once, at load; the intercepted calls allocate nothing
 * and take no lock.  RDMASOCK_DEBUG=1 logs one line per decision to stderr.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/rdmasock.h>

#define MAX_RULES	64
#define EXPORT		__attribute__((visibility("default")))

struct rule {
	bool allow;
	char program[32];		/* empty: any */
	int af;				/* 0: no address condition */
	unsigned char addr[16];
	int prefix;
	bool listen_only, connect_only;	/* "listen=" / "dst=" */
	unsigned int port_lo, port_hi;	/* 0-65535 when absent */
};

static int (*real_socket)(int, int, int);
static int (*real_connect)(int, const struct sockaddr *, socklen_t);
static int (*real_listen)(int, int);
static int (*real_setsockopt)(int, int, int, const void *, socklen_t);
static int rdmasock_family = -1;
static int rdmasock_ipproto = -1;
static bool debug;
static struct rule rules[MAX_RULES];
static int nrules;
static char progname[32];

/* Logging with write(2) only: no stdio locks, safe in any thread, after fork, in handlers. */
static void say(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n, m;

	n = snprintf(line, sizeof(line), "rdmasock[%d]: ", getpid());
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	n += m < (int)(sizeof(line) - n - 1) ? m : (int)(sizeof(line) - n - 2);
	line[n++] = '\n';
	(void)!write(2, line, n);
}

/* ---- policy grammar: [allow|deny] [program=NAME] [dst=|listen=|addr=PREFIX] [port=N[-M]] ---- */

static int parse_prefix(struct rule *r, const char *v)
{
	char buf[64], *slash;
	int max;

	snprintf(buf, sizeof(buf), "%s", v);
	slash = strchr(buf, '/');
	if (slash)
		*slash = 0;
	if (inet_pton(AF_INET, buf, r->addr) == 1)
		r->af = AF_INET, max = 32;
	else if (inet_pton(AF_INET6, buf, r->addr) == 1)
		r->af = AF_INET6, max = 128;
	else
		return -1;
	r->prefix = max;
	if (slash) {
		char *end;
		long p = strtol(slash + 1, &end, 10);

		if (*end || p < 0 || p > max)
			return -1;
		r->prefix = p;
	}
	return 0;
}

static int parse_ports(struct rule *r, const char *v)
{
	char *end;
	long lo = strtol(v, &end, 10), hi = lo;

	if (*end == '-')
		hi = strtol(end + 1, &end, 10);
	if (*end || lo < 0 || hi > 65535 || lo > hi)
		return -1;
	r->port_lo = lo;
	r->port_hi = hi;
	return 0;
}

static const char *parse_word(struct rule *r, char *w)
{
	char *eq = strchr(w, '=');

	if (!strcmp(w, "allow") || !strcmp(w, "deny")) {
		r->allow = w[0] == 'a';
		return NULL;
	}
	if (!eq)
		return "expected allow, deny or key=value";
	*eq++ = 0;
	if (!strcmp(w, "program")) {
		snprintf(r->program, sizeof(r->program), "%s", eq);
		return NULL;
	}
	if (!strcmp(w, "dst") || !strcmp(w, "listen") || !strcmp(w, "addr")) {
		r->connect_only = w[0] == 'd';
		r->listen_only = w[0] == 'l';
		return parse_prefix(r, eq) ? "bad address prefix" : NULL;
	}
	if (!strcmp(w, "port"))
		return parse_ports(r, eq) ? "bad port or port range" : NULL;
	return "unknown key (program, dst, listen, addr, port)";
}

/* Parse one rule; returns an error message or NULL.  Blank lines and comments are no rule. */
static const char *parse_rule(char *text, bool *empty)
{
	struct rule r = { .allow = true, .port_lo = 0, .port_hi = 65535 };
	char *save, *w;
	const char *err;
	char *hash = strchr(text, '#');

	if (hash)
		*hash = 0;
	*empty = true;
	for (w = strtok_r(text, " \t\r\n", &save); w; w = strtok_r(NULL, " \t\r\n", &save)) {
		*empty = false;
		err = parse_word(&r, w);
		if (err)
			return err;
	}
	if (*empty)
		return NULL;
	if (nrules == MAX_RULES)
		return "too many rules";
	rules[nrules++] = r;
	return NULL;
}

static void load_policy_env(const char *env)
{
	char *copy = strdup(env), *save, *item;
	int n = 0;

	for (item = strtok_r(copy, ";", &save); item; item = strtok_r(NULL, ";", &save)) {
		bool empty;
		const char *err = parse_rule(item, &empty);

		n++;
		if (err)
			say("RDMASOCK_POLICY rule %d: %s (rule ignored)", n, err);
	}
	free(copy);
}

static void load_policy_file(const char *path)
{
	FILE *f = fopen(path, "re");
	char line[512];
	int n = 0;

	if (!f) {
		say("policy file %s: %s", path, strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		bool empty;
		const char *err = parse_rule(line, &empty);

		n++;
		if (err)
			say("%s:%d: %s (rule ignored)", path, n, err);
	}
	fclose(f);
}

static bool prefix_match(const struct rule *r, const struct sockaddr *sa)
{
	const unsigned char *a;
	int bits = r->prefix;

	if (!r->af)
		return true;
	if (sa->sa_family != r->af)
		return false;
	a = r->af == AF_INET ? (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr :
			       (const unsigned char *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
	for (int i = 0; bits > 0; i++, bits -= 8) {
		unsigned char mask = bits >= 8 ? 0xff : (unsigned char)(0xff << (8 - bits));

		if ((a[i] ^ r->addr[i]) & mask)
			return false;
	}
	return true;
}

static unsigned int port_of(const struct sockaddr *sa)
{
	return ntohs(sa->sa_family == AF_INET ? ((const struct sockaddr_in *)sa)->sin_port :
						((const struct sockaddr_in6 *)sa)->sin6_port);
}

/* First matching rule decides; no rule matching means allowed. */
static bool policy_allows(const struct sockaddr *sa, bool listening)
{
	for (int i = 0; i < nrules; i++) {
		const struct rule *r = &rules[i];
		unsigned int port = port_of(sa);

		if ((r->listen_only && !listening) || (r->connect_only && listening))
			continue;
		if (r->program[0] && strcmp(r->program, progname))
			continue;
		if (!prefix_match(r, sa) || port < r->port_lo || port > r->port_hi)
			continue;
		return r->allow;
	}
	return true;
}

/* A module parameter's number; -1 when the module is not loaded. */
static int read_param(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char buf[16];
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return atoi(buf);
}

__attribute__((constructor)) static void rdmasock_preload_init(void)
{
	const char *d = getenv("RDMASOCK_DEBUG"), *p;

	real_socket = dlsym(RTLD_NEXT, "socket");
	real_connect = dlsym(RTLD_NEXT, "connect");
	real_listen = dlsym(RTLD_NEXT, "listen");
	real_setsockopt = dlsym(RTLD_NEXT, "setsockopt");
	debug = d && *d && strcmp(d, "0");
	snprintf(progname, sizeof(progname), "%s", program_invocation_short_name);
	p = getenv("RDMASOCK_POLICY");
	if (p && *p)
		load_policy_env(p);
	p = getenv("RDMASOCK_POLICY_FILE");
	if (p && *p)
		load_policy_file(p);
	rdmasock_family = read_param(RDMASOCK_FAMILY_PARAM);
	p = getenv("RDMASOCK_FAMILY");
	if (!p || !*p || !strcmp(p, "0"))
		rdmasock_ipproto = read_param(RDMASOCK_IPPROTO_PARAM);
}

static bool eligible(int domain, int type, int protocol)
{
	int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);

	return (domain == AF_INET || domain == AF_INET6) && base == SOCK_STREAM &&
	       (protocol == 0 || protocol == IPPROTO_TCP);
}

/* One way to an rdmasock socket, skipped when its number is unknown; -1 if refused. */
static int try_rdmasock(int domain, int type, int family, int protocol, const char *how, int num)
{
	int fd;

	if (num <= 0)
		return -1;	/* errno stays the other way's (one of the two is known) */
	fd = real_socket(family, type, protocol);
	if (fd >= 0 && debug)
		say("socket(%s) fd %d: rdmasock (%s %d)", domain == AF_INET ? "AF_INET" : "AF_INET6",
		    fd, how, num);
	return fd;
}

EXPORT int socket(int domain, int type, int protocol)
{
	int fd, err;

	if (!eligible(domain, type, protocol) || (rdmasock_family <= 0 && rdmasock_ipproto <= 0))
		return real_socket(domain, type, protocol);
	/* AF_INET/AF_INET6 of IPPROTO_RDMASOCK first, the family's socket second. */
	fd = try_rdmasock(domain, type, domain, rdmasock_ipproto, "IPPROTO", rdmasock_ipproto);
	if (fd < 0)
		fd = try_rdmasock(domain, type, rdmasock_family, protocol, "family", rdmasock_family);
	if (fd >= 0)
		return fd;
	err = errno;
	fd = real_socket(domain, type, protocol);
	if (debug)
		say("socket fd %d: tcp (rdmasock refused: %s)", fd, strerror(err));
	return fd;
}

static bool is_rdmasock(int fd)
{
	int val = -1;
	socklen_t len = sizeof(val);

	if (rdmasock_ipproto > 0 && !getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &val, &len) &&
	    val == rdmasock_ipproto)
		return true;
	len = sizeof(val);
	return rdmasock_family > 0 && !getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &val, &len) &&
	       val == rdmasock_family;
}

/* Apply the policy to an rdmasock socket about to connect to / listen on @sa. */
static void apply_policy(int fd, const struct sockaddr *sa, bool listening)
{
	int one = 1, saved = errno;
	char addr[INET6_ADDRSTRLEN] = "?";

	if (!nrules || !sa || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6) ||
	    !is_rdmasock(fd))
		return;
	if (!policy_allows(sa, listening)) {
		setsockopt(fd, SOL_RDMASOCK, RDMASOCK_FORCE_TCP, &one, sizeof(one));
		if (debug) {
			inet_ntop(sa->sa_family, sa->sa_family == AF_INET ?
				  (const void *)&((const struct sockaddr_in *)sa)->sin_addr :
				  (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr,
				  addr, sizeof(addr));
			say("fd %d %s %s port %u: tcp (policy)", fd,
			    listening ? "listen on" : "connect to", addr, port_of(sa));
		}
	}
	errno = saved;
}

EXPORT int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	if (len >= sizeof(sa_family_t))
		apply_policy(fd, sa, false);
	return real_connect(fd, sa, len);
}

EXPORT int listen(int fd, int backlog)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (nrules && !getsockname(fd, (struct sockaddr *)&ss, &len))
		apply_policy(fd, (struct sockaddr *)&ss, true);
	return real_listen(fd, backlog);
}

/*
 * SO_REUSEPORT: a kernel before 6.6 refuses it (EOPNOTSUPP) to a family other than AF_INET and
 * AF_INET6; rdmasock takes it as RDMASOCK_REUSEPORT there.
 */
EXPORT int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	int ret, saved;

	if (!real_setsockopt)	/* called from another library's constructor, before ours */
		real_setsockopt = dlsym(RTLD_NEXT, "setsockopt");
	ret = real_setsockopt(fd, level, name, val, len);
	saved = errno;
	if (ret && saved == EOPNOTSUPP && level == SOL_SOCKET && name == SO_REUSEPORT &&
	    is_rdmasock(fd)) {
		ret = real_setsockopt(fd, SOL_RDMASOCK, RDMASOCK_REUSEPORT, val, len);
		if (debug)
			say("fd %d: SO_REUSEPORT as RDMASOCK_REUSEPORT: %s", fd,
			    ret ? strerror(errno) : "ok");
		if (!ret)
			return 0;
	}
	errno = saved;		/* the caller's error, not our attempt's */
	return ret;
}
