#!/bin/bash
# CPython's TCP stream tests (test.test_socket, Debian's libpython3.11-testsuite, unchanged; see
# pysock/run_cpython_tcp.py) as an outside oracle, inside the VM (TAP output): first over plain
# TCP, then the same run under rdmasock-run.  Every test that passes over TCP must pass over
# rdmasock; one that does not pass over TCP here is skipped.  The connections must have ridden RC
# QPs: the module's counters show at least one RDMA connection per test that connects.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
addr=${RDMASOCK_ADDR:?run inside the VM}
runner=$top/selftests/pysock/run_cpython_tcp.py
work=$(mktemp -d /tmp/rdmasock-pysock.XXXXXX)
trap 'rm -rf "$work"' EXIT
cnt() { awk -v k="$1" '$1 == k { print $2 }' /proc/net/rdmasock_stat; }

n=0 pass=0 fail=0 skip=0
if ! python3 -c 'import test.test_socket' 2>/dev/null; then
	echo "1..0 # SKIP libpython3.11-testsuite is not installed (make deps)"
	echo "# Totals: pass:0 fail:0 xfail:0 xpass:0 skip:1 error:0"
	exit 0
fi
timeout 900 python3 "$runner" "$addr" "$work/tcp" 2>"$work/tcp.log"
tcp_status=$?
rdma0=$(cnt connections_rdma)
timeout 900 "$top/build/userlib/rdmasock-run" -q -- python3 "$runner" "$addr" "$work/rdma" \
	2>"$work/rdma.log"
rdma_status=$?
rdma=$(( $(cnt connections_rdma) - rdma0 ))

if [ $tcp_status != 0 ] || [ ! -s "$work/tcp" ] || [ $rdma_status != 0 ] || [ ! -s "$work/rdma" ]; then
	echo "not ok 1 the runs completed (TCP: status $tcp_status, rdmasock: status $rdma_status)"
	tail -n 20 "$work/tcp.log" "$work/rdma.log" | sed 's/^/# /'
	echo "# Totals: pass:0 fail:1 xfail:0 xpass:0 skip:0 error:0"
	exit 1
fi
declare -A over_rdma
while read -r outcome id; do over_rdma[$id]=$outcome; done < "$work/rdma"
while read -r outcome id; do
	n=$((n + 1))
	if [ "$outcome" != ok ]; then
		skip=$((skip + 1))
		echo "ok $n $id # SKIP $outcome over TCP here"
	elif [ "${over_rdma[$id]:-missing}" = ok ]; then
		pass=$((pass + 1))
		echo "ok $n $id"
	else
		fail=$((fail + 1))
		echo "not ok $n $id (over rdmasock: ${over_rdma[$id]:-missing})"
	fi
done < "$work/tcp"
# Which failed, and why (the rdmasock run's own report).
[ $fail = 0 ] || grep -A 12 -E '^(FAIL|ERROR):' "$work/rdma.log" | head -n 120 | sed 's/^/# /'
n=$((n + 1)) passed=$pass
if [ "$rdma" -ge "$passed" ]; then
	pass=$((pass + 1))
	echo "ok $n connections over RDMA: $rdma connection ends for $passed tests"
else
	fail=$((fail + 1))
	echo "not ok $n connections over RDMA: $rdma connection ends, fewer than the $passed tests"
fi
echo "1..$n"
echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:$skip error:0"
[ $fail = 0 ]
