// SPDX-License-Identifier: GPL-2.0
/* Probe: a module can declare BPF kfuncs with BTF_KFUNCS_START and __bpf_kfunc (6.9+). */
#include <linux/bpf.h>
#include <linux/btf.h>
#include <linux/btf_ids.h>

__bpf_kfunc_start_defs();
__bpf_kfunc int probe_kfunc(int x)
{
	return x;
}

__bpf_kfunc_end_defs();

BTF_KFUNCS_START(probe_ids)
BTF_ID_FLAGS(func, probe_kfunc)
BTF_KFUNCS_END(probe_ids)

const struct btf_kfunc_id_set probe_set = {
	.owner = THIS_MODULE,
	.set = &probe_ids,
};
