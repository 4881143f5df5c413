#!/bin/bash
# Rounds of rs_bench connrate over rdmasock, each with how many connection ends rode a parked QP
# (connections_reused) and how many were RDMA at all (connections_rdma), from
# /proc/net/rdmasock_stat before and after (docs/performance.md, #22).  Runs inside the VM:
#   selftests/vm/run --kernel 6.1 --mem 2048 -- selftests/bench/connrate-rounds.sh [ROUNDS] [COUNT]
set -eu
rounds=${1:-8}
count=${2:-300}
b=$(cd "$(dirname "$0")/../.." && pwd)/build/selftests/rs_bench
stat() { awk -v k="$1" '$1 == k { print $2 }' /proc/net/rdmasock_stat; }
"$b" connrate rdma 50 > /dev/null	# warm up (ARP, neighbour, rdma_cm's caches)
for ((i = 1; i <= rounds; i++)); do
	r0=$(stat connections_reused) d0=$(stat connections_rdma)
	out=$("$b" connrate rdma "$count")
	echo "$out reused=$(($(stat connections_reused) - r0)) rdma=$(($(stat connections_rdma) - d0))"
done
