#!/bin/bash
# Trace a 64-byte ping-pong: where one round trip's time goes (docs/performance.md, "Where a 64-byte
# round trip goes").  Runs inside the VM:
#   selftests/vm/run --mem 2048 --out DIR -- selftests/bench/trace-pingpong.sh [rdma|rdma-busy|tcp]
# and leaves DIR/trace-CARRIER.txt: ftrace's function tracer on the data path's rdmasock and rxe
# functions, the send/recv system calls and the scheduler's wakeups, on the monotonic clock.
# Every traced event costs a few us under TCG: read the order and the large gaps, not small ones.
set -eu
carrier=${1:-rdma}
b=$(cd "$(dirname "$0")/../.." && pwd)/build/selftests/rs_bench
. "$(dirname "$0")/ftrace.sh"
# sendto, recvfrom: the calls rs_bench's ping-pong makes.
ftrace_start 8192 'id == 44 || id == 45' "sched_switch sched_wakeup" \
	rs_rdma_sendmsg rs_rdma_recvmsg rs_cq_event rs_cq_irq_poll rs_recv_done rs_send_done \
	rxe_requester rxe_xmit_packet rxe_rcv rxe_responder rxe_completer rxe_cq_post \
	rxe_send_complete tcp_sendmsg tcp_recvmsg tcp_v4_rcv
"$b" pingpong "$carrier" 64 1000 > /dev/null	# warm up
ftrace_capture "$RDMASOCK_OUT/trace-$carrier.txt" \
	"$b" pingpong "$carrier" 64 300 > "$RDMASOCK_OUT/pingpong-$carrier.json"
ftrace_stop
echo "trace: $RDMASOCK_OUT/trace-$carrier.txt ($(wc -l < "$RDMASOCK_OUT/trace-$carrier.txt") lines)"
