#!/bin/bash
# A/B two builds of the module in one VM, so that both see the same host: loads OLD.ko and NEW.ko in
# turn, ROUNDS times, and runs the ping-pong (blocking and busy-poll; AB_SIZE bytes, 64) with each,
# or with AB_BENCH=conns 1,000 connections at once (memory per end) and the connection rate, or
# with AB_BENCH=stream 2 s streams of 64 KiB and 4 KiB writes.  Inside:
#   selftests/vm/run --mem 2048 -- selftests/bench/ab-modules.sh OLD.ko NEW.ko [ROUNDS]
# (copy the old build's rdmasock.ko aside before rebuilding: build/ is shared with the VM).
set -u
old=$1 new=$2 rounds=${3:-3}
b=$(cd "$(dirname "$0")/../.." && pwd)/build/selftests/rs_bench

load() {	# connections close asynchronously: wait until the module can go
	local i
	for ((i = 0; i < 300; i++)); do
		rmmod rdmasock 2> /dev/null && break
		sleep 0.1
	done
	! lsmod | grep -q '^rdmasock ' || { echo "ab: rdmasock stays in use" >&2; exit 1; }
	insmod "$1" ${AB_PARAMS:-} || exit 1	# AB_PARAMS: module parameters for both, park_ms=1000 say
}

for ((r = 1; r <= rounds; r++)); do
	# The set-up's yardstick, TCP over loopback, in the same rounds (rdmasock's TCP: no module).
	case ${AB_BENCH:-} in
	conns) echo "tcp $($b connrate tcp 100)" ;;
	connrate) echo "tcp $($b connrate tcp "${AB_COUNT:-300}")" ;;
	esac
	for m in old new; do
		if [ $m = old ]; then load "$old"; else load "$new"; fi
		case ${AB_BENCH:-pingpong} in
		pingpong)
			for c in rdma rdma-busy; do
				echo "$m $($b pingpong $c "${AB_SIZE:-64}" 2000)"
			done ;;
		conns)	# memory per connection end, set-up rate, time to first byte
			echo "$m $($b conns rdma 1000)"
			echo "$m $($b connrate rdma 100)" ;;
		connrate)	# the set-up alone: connect+accept+close per second, time to first byte
			echo "$m $($b connrate rdma "${AB_COUNT:-300}")" ;;
		stream)
			for size in 65536 4096; do
				echo "$m $($b stream rdma $size 2)"
			done ;;
		esac
	done
done
