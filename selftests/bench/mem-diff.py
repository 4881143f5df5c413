#!/usr/bin/env python3
"""mem-diff.py DIR ENDS: per connection end, what DIR's snapshots 1 hold beyond snapshots 0
(mem-breakdown.sh): slab caches (whole slabs), vmalloc callers (areas with their guard page, and
their pages without), meminfo totals."""
import collections
import os
import re
import sys


def slab(path):
    caches = {}
    with open(path) as f:
        for line in f:
            if line.startswith(("slabinfo", "#")):
                continue
            p = line.split()
            # name active_objs num_objs objsize objperslab pagesperslab : tunables ... : slabdata active num
            caches[p[0]] = (int(p[1]), int(p[3]), int(p[14]) * int(p[5]) * 4096)
    return caches


def vmalloc(path):
    size, pages = collections.Counter(), collections.Counter()
    with open(path) as f:
        for line in f:
            p = line.split()
            caller = re.sub(r"\+0x.*", "", p[2]) if len(p) > 2 else "?"
            size[caller] += int(p[1])
            m = re.search(r"pages=(\d+)", line)
            pages[caller] += int(m.group(1)) * 4096 if m else 0
    return size, pages


def meminfo(path):
    with open(path) as f:
        return {l.split(":")[0]: int(l.split()[1]) for l in f}


def main():
    d, ends = sys.argv[1], int(sys.argv[2])
    kib = lambda b: b / ends / 1024
    a, b = slab(os.path.join(d, "slab.0")), slab(os.path.join(d, "slab.1"))
    rows = []
    for name, (objs, size, mem) in b.items():
        o = a.get(name, (0, 0, 0))
        rows.append((mem - o[2], (objs - o[0]) / ends, size, name))
    rows.sort(reverse=True)
    print("slab caches (KiB of slabs per end, objects per end x object size):")
    for mem, objs, size, name in rows:
        if kib(mem) >= 0.1:
            print("  %-28s %7.2f KiB  %6.2f x %d B" % (name, kib(mem), objs, size))
    print("  %-28s %7.2f KiB" % ("all slabs", kib(sum(r[0] for r in rows))))
    (sa, pa), (sb, pb) = vmalloc(os.path.join(d, "vmalloc.0")), vmalloc(os.path.join(d, "vmalloc.1"))
    print("vmalloc callers (KiB per end: areas with guard pages / pages):")
    for caller in sorted(sb, key=lambda c: -(sb[c] - sa[c])):
        if kib(sb[caller] - sa[caller]) >= 0.1:
            print("  %-40s %7.2f / %7.2f KiB" % (caller, kib(sb[caller] - sa[caller]),
                                                kib(pb[caller] - pa[caller])))
    ma, mb = meminfo(os.path.join(d, "mem.0")), meminfo(os.path.join(d, "mem.1"))
    print("meminfo (KiB per end):")
    for k in ("MemAvailable", "MemFree", "Slab", "SUnreclaim", "VmallocUsed", "KernelStack",
              "PageTables", "Percpu", "AnonPages"):
        if k in ma:
            print("  %-14s %8.2f" % (k, (mb[k] - ma[k]) / ends))


if __name__ == "__main__":
    main()
