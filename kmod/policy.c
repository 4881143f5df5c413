// SPDX-License-Identifier: GPL-2.0
/*
 * The per-cgroup switch: the cgroup v2 groups whose processes' TCP sockets become rdmasock
 * sockets without LD_PRELOAD, and the policy rules (rdmasock-run(1)'s grammar) their sockets
 * follow.
 *
 * On kernels with the update_socket_protocol BPF hook (6.6+), rdmasock-ctl(8) attaches a BPF
 * fmod_ret program there that calls the kfunc bpf_rdmasock_socket(): it answers IPPROTO_RDMASOCK
 * for socket(AF_INET or AF_INET6, SOCK_STREAM, 0 or IPPROTO_TCP) in an enabled cgroup (or below
 * one: the nearest enabled ancestor's entry counts), unless a rule that needs no address denies the
 * program outright.  The rules that need an address are applied where the module sees it:
 * connect() and listen() (af_rdmasock.c); a denied socket is plain kernel TCP (reason FORCED), as
 * under the preload shim.  The kfunc also makes the loaded program hold the module.
 *
 * The table is /sys/module/rdmasock/parameters/cgroups (mode 0600, and CAP_SYS_ADMIN to write):
 *   "+ID RULES"   enable cgroup ID (the inode number of its directory) with RULES, ';'-separated
 *   "-ID"         disable it
 *   reading       one line per enabled cgroup, "ID RULES"
 * A socket keeps the entry it was created under (a reference) until it is freed, whatever
 * happens to the entry or the cgroup meanwhile.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bpf.h>
#include <linux/btf.h>
#include <linux/btf_ids.h>
#include <linux/ctype.h>
#include <linux/cgroup.h>
#include <linux/inet.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/kref.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/net.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include "compat.h"
#include "policy.h"
#include "stats.h"

#define RS_POLICY_CGROUPS	64	/* enabled cgroups */
#define RS_POLICY_RULES		32	/* rules per cgroup */
#define RS_POLICY_TEXT		512	/* a write, and the rules as given */

struct rs_rule {
	bool allow;
	bool listen_only;		/* listen= */
	bool connect_only;		/* dst= */
	u8 af;				/* 0: no address condition */
	u8 prefix;
	u8 addr[16];
	u16 port_lo, port_hi;
	char program[TASK_COMM_LEN];	/* empty: any */
};

struct rs_policy {
	struct kref ref;
	struct rcu_head rcu;
	u64 cgid;
	int nrules;
	char text[RS_POLICY_TEXT];
	struct rs_rule rules[RS_POLICY_RULES];
};

static struct rs_policy __rcu *rs_cgroups[RS_POLICY_CGROUPS];
static DEFINE_MUTEX(rs_policy_mutex);	/* writers of rs_cgroups */
static int rs_policy_ipproto;
static bool rs_policy_dying;		/* unloading: the table takes no more (under the mutex) */
static atomic_t rs_policy_n = ATOMIC_INIT(0);	/* enabled cgroups: none, no walk */

static void rs_policy_free(struct kref *ref)
{
	kfree_rcu(container_of(ref, struct rs_policy, ref), rcu);
}

void rs_policy_put(struct rs_policy *p)
{
	if (p)
		kref_put(&p->ref, rs_policy_free);
}

/* ---- rules: allow|deny [program=NAME] [dst=|listen=|addr=PREFIX] [port=N[-M]] ---- */

static int rs_parse_prefix(struct rs_rule *r, char *v)
{
	char *slash = strchr(v, '/');
	const char *end;
	unsigned int max;
	u8 bits;

	if (slash)
		*slash++ = 0;
	/* The whole word is the address: no tail ("10.0.0.1x", "fe80::1%eth0") is dropped. */
	if (in4_pton(v, -1, r->addr, -1, &end) && !*end) {
		r->af = AF_INET;
		max = 32;
	} else if (in6_pton(v, -1, r->addr, -1, &end) && !*end) {
		r->af = AF_INET6;
		max = 128;
	} else {
		return -EINVAL;
	}
	r->prefix = max;
	if (slash) {
		if (kstrtou8(slash, 10, &bits) || bits > max)
			return -EINVAL;
		r->prefix = bits;
	}
	return 0;
}

static int rs_parse_ports(struct rs_rule *r, char *v)
{
	char *dash = strchr(v, '-');
	u16 lo, hi;

	if (dash)
		*dash++ = 0;
	if (kstrtou16(v, 10, &lo) || (dash && kstrtou16(dash, 10, &hi)))
		return -EINVAL;
	if (!dash)
		hi = lo;
	if (lo > hi)
		return -EINVAL;
	r->port_lo = lo;
	r->port_hi = hi;
	return 0;
}

static int rs_parse_word(struct rs_rule *r, char *w)
{
	char *eq = strchr(w, '=');

	if (!strcmp(w, "allow") || !strcmp(w, "deny")) {
		r->allow = w[0] == 'a';
		return 0;
	}
	if (!eq)
		return -EINVAL;
	*eq++ = 0;
	if (!strcmp(w, "program")) {
		if (!*eq || strlen(eq) >= TASK_COMM_LEN)
			return -EINVAL;
		strscpy(r->program, eq, sizeof(r->program));
		return 0;
	}
	if (!strcmp(w, "dst") || !strcmp(w, "listen") || !strcmp(w, "addr")) {
		r->connect_only = w[0] == 'd';
		r->listen_only = w[0] == 'l';
		return rs_parse_prefix(r, eq);
	}
	if (!strcmp(w, "port"))
		return rs_parse_ports(r, eq);
	return -EINVAL;
}

/* Parse @text (modified) into @p's rules: one per ';'-separated item, blank items are none. */
static int rs_parse_rules(struct rs_policy *p, char *text)
{
	char *item, *w;
	int err;

	while ((item = strsep(&text, ";")) != NULL) {
		struct rs_rule r = { .allow = true, .port_lo = 0, .port_hi = 65535 };
		bool empty = true;

		while ((w = strsep(&item, " \t\n")) != NULL) {
			if (!*w)
				continue;
			empty = false;
			err = rs_parse_word(&r, w);
			if (err)
				return err;
		}
		if (empty)
			continue;
		if (p->nrules == RS_POLICY_RULES)
			return -E2BIG;
		p->rules[p->nrules++] = r;
	}
	return 0;
}

static bool rs_rule_addr_match(const struct rs_rule *r, const struct sockaddr *sa)
{
	const u8 *a;
	int bits = r->prefix;

	if (!r->af)
		return true;
	if (sa->sa_family != r->af)
		return false;
	a = r->af == AF_INET ? (const u8 *)&((const struct sockaddr_in *)sa)->sin_addr :
			       (const u8 *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
	for (int i = 0; bits > 0; i++, bits -= 8) {
		u8 mask = bits >= 8 ? 0xff : (u8)(0xff << (8 - bits));

		if ((a[i] ^ r->addr[i]) & mask)
			return false;
	}
	return true;
}

static bool rs_rule_program_match(const struct rs_rule *r)
{
	char comm[TASK_COMM_LEN];

	if (!r->program[0])
		return true;
	/* Without task_lock, as bpf_get_current_comm(): the kfunc runs in a BPF trampoline. */
	strscpy_pad(comm, current->comm, sizeof(comm));
	return !strcmp(comm, r->program);
}

/*
 * May a socket under @p connect to (listen on) @sa?  The first matching rule decides; none
 * matching means yes.  The caller's process is the one whose program= rules count.
 */
bool rs_policy_allows(const struct rs_policy *p, const struct sockaddr *sa, bool listening)
{
	unsigned int port;

	if (!p || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
		return true;
	port = ntohs(sa->sa_family == AF_INET ? ((const struct sockaddr_in *)sa)->sin_port :
						((const struct sockaddr_in6 *)sa)->sin6_port);
	for (int i = 0; i < p->nrules; i++) {
		const struct rs_rule *r = &p->rules[i];

		if ((r->listen_only && !listening) || (r->connect_only && listening))
			continue;
		if (!rs_rule_program_match(r) || !rs_rule_addr_match(r, sa) ||
		    port < r->port_lo || port > r->port_hi)
			continue;
		return r->allow;
	}
	return true;
}

/* ---- the table ---- */

/* The entry of the current task's cgroup or its nearest enabled ancestor (RCU read side). */
static struct rs_policy *rs_policy_find_current(void)
{
	struct cgroup *cg;

	RCU_LOCKDEP_WARN(!rcu_read_lock_held(), "the cgroup table is read under RCU");
	for (cg = task_dfl_cgroup(current); cg; cg = cgroup_parent(cg)) {
		u64 id = cgroup_id(cg);

		for (int i = 0; i < RS_POLICY_CGROUPS; i++) {
			struct rs_policy *p = rcu_dereference(rs_cgroups[i]);

			if (p && p->cgid == id)
				return p;
		}
	}
	return NULL;
}

/* For a socket a process creates: its cgroup's entry, referenced, or NULL. */
struct rs_policy *rs_policy_get_current(void)
{
	struct rs_policy *p;

	if (!atomic_read(&rs_policy_n))
		return NULL;
	rcu_read_lock();
	p = rs_policy_find_current();
	if (p && !kref_get_unless_zero(&p->ref))
		p = NULL;
	rcu_read_unlock();
	return p;
}

static int rs_policy_slot(u64 id)
{
	lockdep_assert_held(&rs_policy_mutex);
	for (int i = 0; i < RS_POLICY_CGROUPS; i++) {
		struct rs_policy *p = rcu_dereference_protected(rs_cgroups[i],
								lockdep_is_held(&rs_policy_mutex));

		if (p && p->cgid == id)
			return i;
	}
	return -1;
}

/* Replace slot @i's entry (NULL: remove); the old one goes when its last socket does. */
static void rs_policy_replace(int i, struct rs_policy *p)
{
	struct rs_policy *old;

	lockdep_assert_held(&rs_policy_mutex);
	old = rcu_replace_pointer(rs_cgroups[i], p, lockdep_is_held(&rs_policy_mutex));
	if (old)
		atomic_dec(&rs_policy_n);
	if (p)
		atomic_inc(&rs_policy_n);
	rs_policy_put(old);
}

/* The bytes reading the table gives now, without slot @skip's entry (one to be replaced). */
static size_t rs_policy_text_len(int skip)
{
	size_t n = 0;

	lockdep_assert_held(&rs_policy_mutex);
	for (int i = 0; i < RS_POLICY_CGROUPS; i++) {
		struct rs_policy *p = rcu_dereference_protected(rs_cgroups[i],
								lockdep_is_held(&rs_policy_mutex));

		if (p && i != skip)
			n += strlen(p->text) + 22;	/* the id, a space, a newline */
	}
	return n;
}

static int rs_policy_enable(u64 id, char *rules)
{
	struct rs_policy *p;
	char *copy;
	int i, err;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	copy = kstrdup(rules, GFP_KERNEL);	/* parsing cuts it up; the text stays */
	err = -ENOMEM;
	if (!p || !copy)
		goto out;
	kref_init(&p->ref);
	p->cgid = id;
	strscpy(p->text, strim(rules), sizeof(p->text));
	err = rs_parse_rules(p, copy);
	if (err)
		goto out;
	mutex_lock(&rs_policy_mutex);
	i = rs_policy_slot(id);
	for (int j = 0; i < 0 && j < RS_POLICY_CGROUPS; j++)
		if (!rcu_access_pointer(rs_cgroups[j]))
			i = j;
	/* Reading the table gives every entry whole, in one page. */
	if (rs_policy_dying || rs_policy_text_len(i) + strlen(p->text) + 22 >= PAGE_SIZE)
		i = -1;
	if (i >= 0)
		rs_policy_replace(i, p);
	mutex_unlock(&rs_policy_mutex);
	err = i >= 0 ? 0 : -ENOSPC;
	if (!err)
		p = NULL;
out:
	kfree(copy);
	kfree(p);
	return err;
}

static int rs_policy_disable(u64 id)
{
	int i;

	mutex_lock(&rs_policy_mutex);
	i = rs_policy_slot(id);
	if (i >= 0)
		rs_policy_replace(i, NULL);
	mutex_unlock(&rs_policy_mutex);
	return i >= 0 ? 0 : -ENOENT;
}

static int rs_cgroups_set(const char *val, const struct kernel_param *kp)
{
	char buf[RS_POLICY_TEXT], *rest;
	u64 id;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (strscpy(buf, val, sizeof(buf)) < 0)
		return -E2BIG;
	strim(buf);
	/* One line per entry when read back: no control characters but tabs. */
	for (char *c = buf; *c; c++)
		if (iscntrl(*c) && *c != '\t')
			return -EINVAL;
	if (buf[0] != '+' && buf[0] != '-')
		return -EINVAL;
	rest = strpbrk(buf + 1, " \t\n");
	if (rest)
		*rest++ = 0;
	if (kstrtou64(buf + 1, 10, &id) || !id)
		return -EINVAL;
	if (buf[0] == '-')
		return rest && *strim(rest) ? -EINVAL : rs_policy_disable(id);
	return rs_policy_enable(id, rest ? rest : buf + strlen(buf));
}

static int rs_cgroups_get(char *buf, const struct kernel_param *kp)
{
	int n = 0;

	rcu_read_lock();
	for (int i = 0; i < RS_POLICY_CGROUPS; i++) {
		struct rs_policy *p = rcu_dereference(rs_cgroups[i]);

		if (p)
			n += scnprintf(buf + n, PAGE_SIZE - n, "%llu %s\n", p->cgid, p->text);
	}
	rcu_read_unlock();
	return n;
}

static const struct kernel_param_ops rs_cgroups_ops = {
	.set = rs_cgroups_set,
	.get = rs_cgroups_get,
};
module_param_cb(cgroups, &rs_cgroups_ops, NULL, 0600);
MODULE_PARM_DESC(cgroups, "cgroups whose TCP sockets are rdmasock's: +ID RULES, -ID (rdmasock-ctl)");

/* ---- the kfunc the BPF program on update_socket_protocol calls ---- */

#ifdef RDMASOCK_BTF_KFUNCS
/*
 * At socket() time there is no address: the first rule for this program decides only if it
 * needs none; otherwise connect() and listen() will.
 */
static bool rs_policy_socket_allows(const struct rs_policy *p)
{
	for (int i = 0; i < p->nrules; i++) {
		const struct rs_rule *r = &p->rules[i];

		if (!rs_rule_program_match(r))
			continue;
		if (r->af || r->listen_only || r->connect_only || r->port_lo || r->port_hi != 65535)
			return true;
		return r->allow;
	}
	return true;
}

__bpf_kfunc_start_defs();

/*
 * The protocol socket(@family, @type, @protocol) should have: IPPROTO_RDMASOCK for a TCP socket of
 * a process in an enabled cgroup (that a program= rule does not exclude), else @protocol.
 */
__bpf_kfunc int bpf_rdmasock_socket(int family, int type, int protocol)
{
	struct rs_policy *p;
	bool yes;

	if ((family != AF_INET && family != AF_INET6) || (type & SOCK_TYPE_MASK) != SOCK_STREAM ||
	    (protocol && protocol != IPPROTO_TCP) || !rs_policy_ipproto ||
	    !atomic_read(&rs_policy_n))
		return protocol;
	rcu_read_lock();
	p = rs_policy_find_current();
	yes = p && rs_policy_socket_allows(p);
	rcu_read_unlock();
	if (!yes)
		return protocol;
	rs_count(current->nsproxy ? current->nsproxy->net_ns : NULL, RS_CNT_CGROUP_SOCKET);
	return rs_policy_ipproto;
}

__bpf_kfunc_end_defs();

BTF_KFUNCS_START(rs_kfunc_ids)
BTF_ID_FLAGS(func, bpf_rdmasock_socket)
BTF_KFUNCS_END(rs_kfunc_ids)

/*
 * Only the program it is for: fmod_ret on update_socket_protocol, in a socket() call (not a
 * tracing program in any context, counting sockets nobody makes).
 */
static int rs_kfunc_filter(const struct bpf_prog *prog, u32 kfunc_id)
{
	const char *fn = prog->aux->attach_func_name;

	return prog->expected_attach_type == BPF_MODIFY_RETURN && fn &&
	       !strcmp(fn, "update_socket_protocol") ? 0 : -EACCES;
}

static const struct btf_kfunc_id_set rs_kfunc_set = {
	.owner = THIS_MODULE,
	.set = &rs_kfunc_ids,
	.filter = rs_kfunc_filter,
};
#endif

void rs_policy_init(int ipproto)
{
	rs_policy_ipproto = ipproto;
#ifdef RDMASOCK_BTF_KFUNCS
	/* Without it (no module BTF), only the cgroup switch is missing: say so, go on. */
	if (ipproto && register_btf_kfunc_id_set(BPF_PROG_TYPE_TRACING, &rs_kfunc_set))
		pr_warn("no BTF kfunc: rdmasock-ctl's cgroup switch is unavailable\n");
#endif
}

/*
 * Unload, or a failed load (modprobe's cgroups= may have filled the table): empty it, and take
 * nothing more (the parameter's file outlives the module's exit a moment).  Every socket is gone
 * by then; kfree_rcu() needs no code of ours.
 */
void rs_policy_exit(void)
{
	mutex_lock(&rs_policy_mutex);
	rs_policy_dying = true;
	for (int i = 0; i < RS_POLICY_CGROUPS; i++)
		rs_policy_replace(i, NULL);
	mutex_unlock(&rs_policy_mutex);
}
