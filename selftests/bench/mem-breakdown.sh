#!/bin/sh
# Where an idle connection end's kernel memory goes (#22), inside a VM:
#   selftests/vm/run --mem 4096 --out DIR -- selftests/bench/mem-breakdown.sh [COUNT [CARRIER]]
# Opens COUNT connections (default 1000; rs_bench conns, both ends in this VM), snapshots slabinfo,
# vmallocinfo and meminfo before and while they are all open, and prints the difference per end:
# each slab cache, each vmalloc caller, the meminfo totals.  The snapshots stay in DIR.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
n=${1:-1000}
carrier=${2:-rdma}
out=${RDMASOCK_OUT:-/tmp}/mem-$carrier
mkdir -p "$out"
# As `make bench`'s connection rows: a ring budget (TCP's tcp_mem[2]) that holds them all.
sysctl -q -w net.ipv4.tcp_mem="262144 393216 524288"
sync
echo 3 > /proc/sys/vm/drop_caches
snap="cat /proc/slabinfo > $out/slab.%s; cat /proc/vmallocinfo > $out/vmalloc.%s; cat /proc/meminfo > $out/mem.%s"
sh -c "$(printf "$snap" 0 0 0)"
RS_BENCH_SNAP="$(printf "$snap" 1 1 1)" "$top/build/selftests/rs_bench" conns "$carrier" "$n"
python3 "$top/selftests/bench/mem-diff.py" "$out" $((2 * n))
