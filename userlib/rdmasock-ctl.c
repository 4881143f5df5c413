// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasock-ctl: the per-cgroup switch.  Processes of an enabled cgroup v2 group (and of its
 * descendants) get rdmasock sockets from socket(AF_INET*, SOCK_STREAM, 0 | IPPROTO_TCP) without
 * LD_PRELOAD: static binaries, Go programs, containers, systemd slices.  Needs a kernel with the
 * update_socket_protocol BPF hook (6.6+), the rdmasock module, and root (CAP_BPF and
 * CAP_SYS_ADMIN).  docs/man/rdmasock-ctl.8 says how.
 *
 * The BPF program (redirect.bpf.c) is attached once and pinned in bpffs; the cgroups and their
 * policy rules are the module's table (/sys/module/rdmasock/parameters/cgroups).  The program is
 * unpinned (and so detached) when the last cgroup is disabled.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/magic.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "redirect.skel.h"

#define TABLE		"/sys/module/rdmasock/parameters/cgroups"
#define BPFFS		"/sys/fs/bpf"
#define PIN_DIR		BPFFS "/rdmasock"
#define PIN_LINK	PIN_DIR "/redirect"
#define CGROOT		"/sys/fs/cgroup"

/* Exit codes: 1 usage or failure, 3 this kernel cannot (no hook), 4 no module. */
enum { EX_FAIL = 1, EX_NOHOOK = 3, EX_NOMOD = 4 };

static bool debug;

static void die(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("rdmasock-ctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

static void dbg(const char *fmt, ...)
{
	va_list ap;

	if (!debug)
		return;
	fputs("rdmasock-ctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int libbpf_quiet(enum libbpf_print_level level __attribute__((unused)), const char *fmt,
			va_list ap)
{
	return debug ? vfprintf(stderr, fmt, ap) : 0;
}

/* ---- what the kernel can do ---- */

/* The reason the kernel path cannot work here, or NULL; *code: the exit code that says it. */
static const char *kernel_path_missing(int *code)
{
	static char why[512];
	struct utsname u;
	struct btf *btf;
	bool hook;

	*code = EX_NOHOOK;
	uname(&u);
	libbpf_set_print(libbpf_quiet);
	btf = btf__load_vmlinux_btf();
	if (!btf) {
		snprintf(why, sizeof(why), "this kernel (%s) has no BTF (/sys/kernel/btf/vmlinux): "
			 "the cgroup switch needs Linux 6.6 or later built with BTF", u.release);
		return why;
	}
	hook = btf__find_by_name_kind(btf, "update_socket_protocol", BTF_KIND_FUNC) > 0;
	btf__free(btf);
	if (!hook) {
		snprintf(why, sizeof(why), "this kernel (%s) has no update_socket_protocol BPF hook: "
			 "static and Go programs need Linux 6.6 or later; dynamically linked programs "
			 "work with rdmasock-run's preload path on any kernel", u.release);
		return why;
	}
	*code = EX_NOMOD;
	if (access(TABLE, F_OK))
		return "the rdmasock module is not loaded (no " TABLE ")";
	return NULL;
}

static void need_kernel_path(void)
{
	int code;
	const char *why = kernel_path_missing(&code);

	if (why)
		die(code, "%s", why);
	if (geteuid())
		die(EX_FAIL, "the cgroup switch needs root: loading the BPF program takes CAP_BPF "
		    "and CAP_SYS_ADMIN, changing the module's table CAP_SYS_ADMIN");
}

/* ---- the BPF program, pinned ---- */

static int lock_fd = -1;

/* One rdmasock-ctl at a time changes the table and the pin (enable vs the last disable). */
static void lock_state(void)
{
	struct statfs fs;

	if (statfs(BPFFS, &fs) || fs.f_type != BPF_FS_MAGIC) {
		mkdir(BPFFS, 0700);
		if (mount("bpf", BPFFS, "bpf", 0, "mode=0700"))
			die(EX_FAIL, "cannot mount bpffs on " BPFFS ": %s", strerror(errno));
	}
	if (mkdir(PIN_DIR, 0700) && errno != EEXIST)
		die(EX_FAIL, "mkdir " PIN_DIR ": %s", strerror(errno));
	lock_fd = open(PIN_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lock_fd < 0 || flock(lock_fd, LOCK_EX))
		die(EX_FAIL, "cannot lock " PIN_DIR ": %s", strerror(errno));
}

static void unlock_state(void)
{
	close(lock_fd);
	lock_fd = -1;
}

static bool attached(void)
{
	return !access(PIN_LINK, F_OK);
}

static void attach(void)
{
	struct redirect *skel;
	int err;

	if (attached())
		return;
	skel = redirect__open_and_load();
	if (!skel)
		die(EX_FAIL, "cannot load the BPF program (%s): is the rdmasock module built with BTF "
		    "(its kfunc bpf_rdmasock_socket)? --debug shows libbpf's log", strerror(errno));
	err = redirect__attach(skel);
	if (!err)
		err = bpf_link__pin(skel->links.rdmasock_redirect, PIN_LINK);
	if (err)
		die(EX_FAIL, "cannot attach the BPF program on update_socket_protocol: %s",
		    strerror(-err));
	dbg("BPF program attached on update_socket_protocol, pinned at %s", PIN_LINK);
	redirect__destroy(skel);	/* the pin keeps the link */
}

/* ---- the module's table ---- */

static char *read_table(void)
{
	static char buf[8192];
	int fd = open(TABLE, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		die(EX_NOMOD, "the rdmasock module is not loaded (%s: %s)", TABLE, strerror(errno));
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

static int write_table(const char *line)
{
	int fd = open(TABLE, O_WRONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		die(errno == ENOENT ? EX_NOMOD : EX_FAIL, "%s: %s", TABLE, strerror(errno));
	if (write(fd, line, strlen(line)) < 0)
		err = errno;
	close(fd);
	return err;
}

/* The cgroup id of a cgroup v2 directory: its inode number. */
static unsigned long long cgroup_id(const char *path)
{
	struct statfs fs;
	struct stat st;

	if (statfs(path, &fs) || stat(path, &st))
		die(EX_FAIL, "%s: %s", path, strerror(errno));
	if (fs.f_type != CGROUP2_SUPER_MAGIC || !S_ISDIR(st.st_mode))
		die(EX_FAIL, "%s is not a cgroup v2 directory", path);
	return st.st_ino;
}

static void enable_id(unsigned long long id, const char *rules)
{
	char line[1024];
	int err;

	snprintf(line, sizeof(line), "+%llu %s", id, rules ? rules : "");
	lock_state();
	attach();
	err = write_table(line);
	unlock_state();
	if (err)
		die(EX_FAIL, "the module refused cgroup %llu%s%s: %s", id, rules ? " with rules " : "",
		    rules ? rules : "", err == EINVAL ? "bad rule (see rdmasock-run(1))" :
		    err == ENOSPC ? "64 cgroups are enabled already" : strerror(err));
}

static int disable_id(unsigned long long id)
{
	char line[32];
	int err;

	snprintf(line, sizeof(line), "-%llu", id);
	lock_state();
	err = write_table(line);
	if (!*read_table() && attached()) {
		unlink(PIN_LINK);	/* the last one: the program goes */
		dbg("no cgroup left: BPF program detached");
	}
	unlock_state();
	return err;
}

/* Rules from --policy and --policy-file, as one ';'-separated string. */
static char *rules_from(const char *policy, const char *file)
{
	static char rules[1024];
	char line[512];
	FILE *f;

	snprintf(rules, sizeof(rules), "%s", policy ? policy : "");
	if (!file)
		return rules;
	f = fopen(file, "re");
	if (!f)
		die(EX_FAIL, "%s: %s", file, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *hash = strchr(line, '#');

		if (hash)
			*hash = 0;
		line[strcspn(line, "\n")] = 0;
		if (strlen(rules) + strlen(line) + 2 >= sizeof(rules))
			die(EX_FAIL, "%s: too many rules", file);
		if (*line)
			strcat(strcat(rules, *rules ? ";" : ""), line);
	}
	fclose(f);
	return rules;
}

/* ---- what a binary needs ---- */

/* "static", "go" (both need the kernel path), "dynamic", or "other" (a script, not ELF). */
static const char *binary_kind(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	const char *kind = "other";
	bool interp = false, go = false;
	Elf64_Ehdr eh;
	char *strtab = NULL;

	if (fd < 0)
		die(EX_FAIL, "%s: %s", path, strerror(errno));
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64)
		goto out;
	for (int i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), eh.e_phoff + (off_t)i * eh.e_phentsize) == sizeof(ph) &&
		    ph.p_type == PT_INTERP)
			interp = true;
	}
	if (eh.e_shstrndx && eh.e_shstrndx < eh.e_shnum) {
		Elf64_Shdr sh;

		if (pread(fd, &sh, sizeof(sh), eh.e_shoff + (off_t)eh.e_shstrndx * eh.e_shentsize) ==
		    sizeof(sh) && sh.sh_size < (1 << 20)) {
			strtab = calloc(1, sh.sh_size + 1);
			if (strtab && pread(fd, strtab, sh.sh_size, sh.sh_offset) != (ssize_t)sh.sh_size)
				*strtab = 0;
			for (int i = 0; strtab && i < eh.e_shnum; i++) {
				Elf64_Shdr s;

				if (pread(fd, &s, sizeof(s), eh.e_shoff + (off_t)i * eh.e_shentsize) ==
				    sizeof(s) && s.sh_name < sh.sh_size &&
				    !strcmp(strtab + s.sh_name, ".go.buildinfo"))
					go = true;
			}
		}
	}
	kind = go ? "go" : interp ? "dynamic" : "static";
out:
	free(strtab);
	close(fd);
	return kind;
}

/* ---- run: a program in a fresh cgroup of its own ---- */

static pid_t child;

static void forward(int sig)
{
	if (child > 0)
		kill(child, sig);
}

static int run(const char *parent, const char *rules, char **argv)
{
	char cg[PATH_MAX], procs[PATH_MAX + 16];
	unsigned long long id;
	int status, fd;

	need_kernel_path();
	snprintf(cg, sizeof(cg), "%s/rdmasock-run-%d", parent, getpid());
	if (mkdir(cg, 0755))
		die(EX_FAIL, "cannot make the cgroup %s: %s", cg, strerror(errno));
	id = cgroup_id(cg);
	enable_id(id, rules);
	dbg("kernel path: %s runs in cgroup %s (id %llu)%s%s", argv[0], cg, id,
	    rules && *rules ? ", rules: " : "", rules ? rules : "");
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
	child = fork();
	if (child < 0)
		die(EX_FAIL, "fork: %s", strerror(errno));
	if (!child) {
		fd = open(procs, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, "0", 1) != 1) {
			fprintf(stderr, "rdmasock-ctl: cannot join %s: %s\n", cg, strerror(errno));
			_exit(126);
		}
		close(fd);
		execvp(argv[0], argv);
		fprintf(stderr, "rdmasock-ctl: %s: %s\n", argv[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	signal(SIGINT, forward);
	signal(SIGTERM, forward);
	signal(SIGHUP, forward);
	signal(SIGQUIT, forward);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	disable_id(id);
	/* Processes it left behind (a daemon) keep the cgroup; its sockets keep their rules. */
	if (rmdir(cg))
		dbg("cgroup %s stays: %s", cg, strerror(errno));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ---- status ---- */

/* The path below /sys/fs/cgroup of cgroup @id, found by walking the tree (or NULL). */
static bool find_cgroup(const char *dir, unsigned long long id, char *out, size_t size)
{
	char cmd[PATH_MAX + 64];
	FILE *p;
	bool found = false;

	snprintf(cmd, sizeof(cmd), "find '%s' -xdev -type d -inum %llu 2>/dev/null", dir, id);
	p = popen(cmd, "re");
	if (p && fgets(out, size, p)) {
		out[strcspn(out, "\n")] = 0;
		found = true;
	}
	if (p)
		pclose(p);
	return found;
}

static int status(void)
{
	int code;
	const char *why = kernel_path_missing(&code);
	char *t, *line, *save, path[PATH_MAX];

	printf("kernel path: %s\n", why ? why : "available");
	printf("BPF program: %s\n", attached() ? "attached (" PIN_LINK ")" : "not attached");
	if (access(TABLE, F_OK))
		return EX_NOMOD;
	t = read_table();
	printf("cgroups:%s\n", *t ? "" : " none");
	for (line = strtok_r(t, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long id = strtoull(line, NULL, 10);
		const char *rules = strchr(line, ' ');

		if (!find_cgroup(CGROOT, id, path, sizeof(path)))
			snprintf(path, sizeof(path), "(gone: disable --id %llu)", id);
		printf("  %s id %llu%s%s\n", path, id, rules && rules[1] ? " rules:" : "",
		       rules && rules[1] ? rules : "");
	}
	return 0;
}

static void usage(FILE *f)
{
	fputs("usage: rdmasock-ctl enable --cgroup PATH [--policy RULES] [--policy-file F]\n"
	      "       rdmasock-ctl disable --cgroup PATH | --id ID\n"
	      "       rdmasock-ctl status\n"
	      "       rdmasock-ctl run [--parent CGROUP] [--policy RULES] [--policy-file F] -- "
	      "PROGRAM [ARGS]\n"
	      "       rdmasock-ctl kind FILE      (static, go, dynamic or other)\n"
	      "       rdmasock-ctl check          (exit 0 if the cgroup switch can work here)\n"
	      "       rdmasock-ctl --version\n"
	      "options: -d/--debug; rules as in rdmasock-run(1); see rdmasock-ctl(8)\n", f);
}

int main(int argc, char **argv)
{
	const char *cmd, *cgroup = NULL, *policy = NULL, *file = NULL, *parent = CGROOT;
	unsigned long long id = 0;
	int i;

	if (argc < 2) {
		usage(stderr);
		return EX_FAIL;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) {
		printf("rdmasock-ctl %s\n", RDMASOCK_VERSION);
		return 0;
	}
	for (i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--")) {
			i++;
			break;
		} else if (!strcmp(a, "-d") || !strcmp(a, "--debug")) {
			debug = true;
			continue;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (a[0] != '-') {
			break;
		}
		if (!v)
			die(EX_FAIL, "%s needs a value", a);
		if (!strcmp(a, "--cgroup"))
			cgroup = v;
		else if (!strcmp(a, "--policy") || !strcmp(a, "-p"))
			policy = v;
		else if (!strcmp(a, "--policy-file") || !strcmp(a, "-f"))
			file = v;
		else if (!strcmp(a, "--parent"))
			parent = v;
		else if (!strcmp(a, "--id"))
			id = strtoull(v, NULL, 10);
		else
			die(EX_FAIL, "unknown option %s (--help)", a);
		i++;
	}
	if (!strcmp(cmd, "kind")) {
		if (i >= argc)
			die(EX_FAIL, "kind needs a file");
		puts(binary_kind(argv[i]));
		return 0;
	}
	if (!strcmp(cmd, "check")) {
		int code;
		const char *why = kernel_path_missing(&code);

		if (why)
			fprintf(stderr, "rdmasock-ctl: %s\n", why);
		return why ? code : 0;
	}
	if (!strcmp(cmd, "status"))
		return status();
	if (!strcmp(cmd, "run")) {
		if (i >= argc)
			die(EX_FAIL, "run needs a program (--help)");
		return run(parent, rules_from(policy, file), argv + i);
	}
	if (!strcmp(cmd, "enable")) {
		if (!cgroup)
			die(EX_FAIL, "enable needs --cgroup PATH");
		need_kernel_path();
		id = cgroup_id(cgroup);
		enable_id(id, rules_from(policy, file));
		printf("enabled %s (id %llu)\n", cgroup, id);
		return 0;
	}
	if (!strcmp(cmd, "disable")) {
		int err;

		if (cgroup)
			id = cgroup_id(cgroup);
		if (!id)
			die(EX_FAIL, "disable needs --cgroup PATH or --id ID");
		if (geteuid())
			die(EX_FAIL, "the cgroup switch needs root (CAP_SYS_ADMIN)");
		err = disable_id(id);
		if (err)
			die(EX_FAIL, "cgroup %llu: %s", id, err == ENOENT ? "not enabled" :
			    strerror(err));
		printf("disabled %s (id %llu)\n", cgroup ? cgroup : "cgroup", id);
		return 0;
	}
	usage(stderr);
	return EX_FAIL;
}
