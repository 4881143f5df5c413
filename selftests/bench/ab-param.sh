#!/bin/bash
# A/B one module parameter in one VM, so that both settings see the same host: ROUNDS interleaved
# rounds of `rs_bench connrate rdma COUNT` with PARAM at OLD, then at NEW, and TCP's in the same
# round as the yardstick.  #22's reused connections, say:
#   selftests/vm/run --kernel 6.1 --mem 2048 -- selftests/bench/ab-param.sh park_ms 0 1000 6 300
set -u
param=$1 old=$2 new=$3 rounds=${4:-4} count=${5:-300}
b=$(cd "$(dirname "$0")/../.." && pwd)/build/selftests/rs_bench
p=/sys/module/rdmasock/parameters/$param
saved=$(cat "$p")

$b connrate tcp 50 > /dev/null
$b connrate rdma 50 > /dev/null	# warm up (ARP, neighbours, rdma_cm's caches)
for ((r = 1; r <= rounds; r++)); do
	for v in "$old" "$new"; do
		echo "$v" > "$p"
		echo "$param=$v $($b connrate rdma "$count")"
	done
	echo "tcp $($b connrate tcp "$count")"
done
echo "$saved" > "$p"
grep -E '^(connections_reused|connections_rdma|parked) ' /proc/net/rdmasock_stat
