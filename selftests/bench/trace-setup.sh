#!/bin/bash
# Trace connection set-up: where the time from connect() to the first byte goes
# (docs/performance.md, "Where a connection's set-up goes").  Runs inside the VM:
#   selftests/vm/run --mem 2048 --out DIR -- selftests/bench/trace-setup.sh [rdma|tcp] [COUNT] [PARK_MS]
# and leaves DIR/trace-setup-CARRIER.txt (ftrace's function tracer on the set-up path's rdmasock,
# rdma_cm, ib_cm, verbs and rxe functions, the socket system calls, the scheduler's switches and
# wake-ups, on the monotonic clock) and
# DIR/setup-phases-CARRIER.txt, each traced function's mean offset from connect() (setup-phases.py).
# Every traced event costs a few us under TCG: read the order and the large gaps, not small ones.
set -eu
carrier=${1:-rdma}
count=${2:-30}
park_ms=${3:-}	# set: the module's park_ms for the run (reused connections), restored after
here=$(cd "$(dirname "$0")" && pwd)
b=$here/../../build/selftests/rs_bench
. "$here/ftrace.sh"
# connect, accept, accept4, read, close: the calls rs_bench's connrate makes.
ftrace_start 16384 'id == 42 || id == 43 || id == 288 || id == 0 || id == 3' 'sched_switch sched_wakeup' \
	rs_connect rs_tcp_take_port rs_cm_connect rs_cm_handler rs_cm_route_resolved \
	rs_conn_create rs_qp_create rs_cq_create rs_ring_alloc rs_tx_ring_create rs_dev_attach \
	rs_cm_client_established rs_cm_request rs_child_alloc rs_cm_child_established \
	rs_cm_accept_ready rs_accept rs_release rs_close_work rs_teardown_rdma rs_teardown_work \
	rs_tcp_give_port rs_connect_work rs_recv_done __rdma_create_kernel_id rdma_bind_addr \
	rdma_resolve_addr rdma_resolve_ip addr_handler rdma_resolve_route cma_work_handler \
	cma_ib_handler cma_ib_req_handler rdma_connect_locked rdma_accept rdma_destroy_id \
	rdma_create_qp rdma_disconnect ib_send_cm_req cm_req_handler ib_send_cm_rep cm_rep_handler \
	ib_send_cm_rtu cm_rtu_handler ib_send_cm_dreq cm_dreq_handler ib_post_send_mad \
	__ib_alloc_pd ib_dealloc_pd_user __ib_alloc_cq ib_free_cq ib_create_qp_kernel \
	ib_destroy_qp_user ib_alloc_mr ib_dereg_mr_user ib_modify_qp rxe_create_qp rxe_create_cq \
	rxe_alloc_mr rxe_destroy_qp rxe_destroy_cq rxe_dereg_mr rxe_modify_qp tcp_v4_connect \
	tcp_v6_connect inet_csk_accept tcp_rcv_state_process \
	rs_park_take rs_park_offer rs_park_hold rs_park_work rs_park_freeze rs_park_move \
	rs_park_accept rs_park_flush rs_link_move rs_post_reopen rs_rx_hello \
	rs_cm_child_new rs_cm_child_queue rs_post_ready rs_client_ready rs_send_fin rs_comm_est \
	rs_tcp_ensure rs_conn_reset rs_check_addr rs_policy_allows rs_neg_cache_hit rs_wait_connect \
	rs_connect_established rs_park_settled kernel_getsockname rs_child_rtu rs_child_established \
	rs_wake rs_park_hello rs_hello_parse rs_rx_ctrl
p=/sys/module/rdmasock/parameters/park_ms
saved=$(cat $p)
[ -z "$park_ms" ] || echo "$park_ms" > $p
"$b" connrate "$carrier" 20 > /dev/null	# warm up (ARP, neighbour, rdma_cm's caches)
ftrace_capture "$RDMASOCK_OUT/trace-setup-$carrier.txt" \
	"$b" connrate "$carrier" "$count" > "$RDMASOCK_OUT/connrate-$carrier.json"
ftrace_stop
echo "$saved" > $p
grep -E '^(connections_reused|connections_rdma|parked) ' /proc/net/rdmasock_stat
python3 "$here/setup-phases.py" "$RDMASOCK_OUT/trace-setup-$carrier.txt" \
	> "$RDMASOCK_OUT/setup-phases-$carrier.txt"
cat "$RDMASOCK_OUT/connrate-$carrier.json" "$RDMASOCK_OUT/setup-phases-$carrier.txt"
