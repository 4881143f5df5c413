#!/bin/bash
# Where the CPU goes while connections are set up and closed (docs/performance.md, "What a
# connection costs in CPU"): perf's cpu-clock sampling on every CPU (TCG has no PMU) while
# `rs_bench connrate CARRIER COUNT` runs.  The trace of set-up (trace-setup.sh) says when things
# happen; this says what the CPUs are busy with, the teardown of earlier connections included.
# Inside the VM, with perf (Debian's linux-perf) on the host:
#   selftests/vm/run --mem 2048 --out DIR -- selftests/bench/profile-setup.sh [rdma|tcp] [COUNT]
# leaves DIR/profile-CARRIER.txt: the self time by module and function, then the time by caller
# (children included) of the set-up's and teardown's own functions.
set -eu
carrier=${1:-rdma}
count=${2:-300}
here=$(cd "$(dirname "$0")" && pwd)
b=$here/../../build/selftests/rs_bench
command -v perf > /dev/null || { echo "profile: perf is not installed (apt-get install linux-perf)"; exit 1; }
echo -1 > /proc/sys/kernel/perf_event_paranoid
echo 0 > /proc/sys/kernel/kptr_restrict
"$b" connrate "$carrier" 20 > /dev/null	# warm up (ARP, neighbour, rdma_cm's caches)
# In guest memory: written to the runner's 9p folder, perf's own writes took a tenth of the CPU.
tmp=$(mktemp -d /dev/shm/profile.XXXXXX)
data=$tmp/perf-$carrier.data
perf record -q -e cpu-clock -F 4000 -a -g -o "$data" -- \
	"$b" connrate "$carrier" "$count" > "$RDMASOCK_OUT/connrate-$carrier.json"
out=$RDMASOCK_OUT/profile-$carrier.txt
{
	cat "$RDMASOCK_OUT/connrate-$carrier.json"
	echo "== self time by module"
	perf report -q -i "$data" --no-children --sort dso --stdio 2> /dev/null | head -n 20
	echo "== self time by function"
	perf report -q -i "$data" --no-children --sort dso,sym --stdio -g none 2> /dev/null | head -n 60
	echo "== time with children, by function"
	perf report -q -i "$data" --children --sort sym --stdio -g none 2> /dev/null | head -n 120
} > "$out"
rm -r "$tmp"
cat "$out"
