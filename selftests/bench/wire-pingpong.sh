#!/bin/bash
# sockperf 64 B ping-pong across the two-VM wire, plain TCP and rdmasock (rdmasock-run), in
# interleaved rounds; prints each round's one-way p50 and average and fails unless every rdmasock
# connection rode an RC QP.  The first measure of #23 (docs/performance.md, "The two-VM wire"):
#   selftests/vm/run --kernel 6.1 --two-vm -- selftests/bench/wire-pingpong.sh [ROUNDS]
set -u
rounds=${1:-2}
bin=$RDMASOCK_TOP/build/userlib
ctl=11199	# the client says "done" here; the server then stops its sockperf servers

rdma_conns() { "$bin/rdmasock-stat" -s -j | python3 -c 'import json, sys
print(json.load(sys.stdin)["connections_rdma"]["netns"])'; }

if [ "$RDMASOCK_VM_ROLE" = server ]; then
	sockperf server -i "$RDMASOCK_ADDR" -p 11111 --tcp > /dev/null 2>&1 &
	tcp=$!
	"$bin/rdmasock-run" -q -- sockperf server -i "$RDMASOCK_ADDR" -p 11112 --tcp \
		> /dev/null 2>&1 &
	rs=$!
	timeout 600 python3 - "$RDMASOCK_ADDR" "$ctl" <<'PY'
import socket, sys
l = socket.create_server((sys.argv[1], int(sys.argv[2])))
c, _ = l.accept()
c.recv(1)
PY
	st=$?
	kill $tcp $rs
	exit $st
fi

up=0
for ((i = 0; i < 600; i++)); do
	python3 -c "import socket; socket.create_connection(('$RDMASOCK_PEER_ADDR', 11112), 1).close()" \
		2> /dev/null && { up=1; break; }
	sleep 0.2
done
[ $up = 1 ] || { echo "wire-pingpong: the server never came up" >&2; exit 1; }
before=$(rdma_conns)
for ((round = 1; round <= rounds; round++)); do
	for carrier in tcp rdmasock; do
		if [ $carrier = tcp ]; then
			out=$(sockperf ping-pong -i "$RDMASOCK_PEER_ADDR" -p 11111 --tcp -t 4 -m 64 2>&1)
		else
			out=$("$bin/rdmasock-run" -q -- sockperf ping-pong -i "$RDMASOCK_PEER_ADDR" \
				-p 11112 --tcp -t 4 -m 64 2>&1)
		fi
		p50=$(sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p' <<< "$out")
		avg=$(sed -n 's/.*avg-latency=\([0-9.]*\).*/\1/p' <<< "$out")
		echo "round $round $carrier: one-way p50 ${p50:-?} us, average ${avg:-?} us"
	done
done
after=$(rdma_conns)
python3 -c "import socket; socket.create_connection(('$RDMASOCK_PEER_ADDR', $ctl)).send(b'q')"
if [ $((after - before)) -ne "$rounds" ]; then
	echo "wire-pingpong: $((after - before)) rdmasock connection(s) over RDMA, want $rounds" >&2
	exit 1
fi
echo "wire-pingpong: all $rounds rdmasock connections rode RC QPs"
