#!/bin/bash
# `make soak`: longer runs than `make check` affords, inside the VM (selftests/vm/run calls it):
# 1,000 concurrent connections, ten fuzz runs (40,000 calls, each seed logged), the stress suite.
set -u
bin=$(cd "$(dirname "$0")/.." && pwd)/build/selftests
pass=0 fail=0
run() {
	echo "# ---- $*"
	if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
}
run "$bin/conn_test"
for i in $(seq 1 10); do
	run env RDMASOCK_FUZZ_SEED=$((RANDOM * 32768 + RANDOM)) "$bin/fuzz_test"
done
run "$bin/stress_test"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
