#!/bin/bash
# `make demo`: boot the VM, run an unchanged TCP program pair (iperf3) through the preload shim,
# and show that its connections ran over RDMA: the shim's decisions, the QPs while it runs, and
# the module's counters before and after.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" != --inside ]; then
	exec "$top/selftests/vm/run" --kernel "${RDMASOCK_DEMO_KERNEL:-6.1}" --timeout 600 \
		-- "$top/selftests/demo.sh" --inside
fi

shim=$top/build/userlib/librdmasock-preload.so
counters() { grep -E '^(connections_rdma|connections_tcp) ' /proc/net/rdmasock_stat | tr '\n' ' '; }
echo "== rdmasock demo: iperf3 server and client, unchanged, with LD_PRELOAD=$shim"
echo "== counters before: $(counters)"
RDMASOCK_DEBUG=1 LD_PRELOAD=$shim iperf3 -s -1 -B "$RDMASOCK_ADDR" -p 5201 > /tmp/demo-server.log 2>&1 &
server=$!
for ((i = 0; i < 100; i++)); do
	ss -ltn 'sport = :5201' | grep -q LISTEN && break
	sleep 0.1
done
( sleep 2; echo "== QPs while iperf3 runs:"; rdma resource show qp | grep -v ' qp-type UD\| lqpn 1 ' ) &
RDMASOCK_DEBUG=1 LD_PRELOAD=$shim iperf3 -c "$RDMASOCK_ADDR" -p 5201 -t 4 -f m
rc=$?
wait
echo "== server side:"
grep -E 'rdmasock|receiver|sender' /tmp/demo-server.log
before_after=$(counters)
echo "== counters after:  $before_after"
rdma=$(awk '/^connections_rdma /{print $2}' /proc/net/rdmasock_stat)
if [ "$rc" = 0 ] && [ "$rdma" -ge 2 ]; then
	echo "== demo: iperf3 ran over RDMA ($rdma connections carried by RC QPs)"
else
	echo "== demo: FAILED (iperf3 exit $rc, $rdma RDMA connections)"
	exit 1
fi
