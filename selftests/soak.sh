#!/bin/bash
# `make soak`: longer runs than `make check` affords, inside the VM (selftests/vm/run calls it),
# by default on the debug kernel (KASAN, lockdep, kmemleak): 1,000 concurrent connections and the
# stress suite once, then for SOAK_MINUTES (60) rounds of the concurrent syscall fuzzer (20,000
# calls a thread) and of the mutating hostile peer (20 rounds), each seed logged.
set -u
bin=$(cd "$(dirname "$0")/.." && pwd)/build/selftests
pass=0 fail=0
end=$((SECONDS + ${SOAK_MINUTES:-60} * 60))
run() {
	echo "# ---- $*"
	if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
}
run "$bin/conn_test"
run "$bin/stress_test"
while [ "$SECONDS" -lt "$end" ]; do
	run env RDMASOCK_FUZZ_SEED=$((RANDOM * 32768 + RANDOM)) RDMASOCK_FUZZ_ITER=20000 \
		"$bin/fuzz_test"
	run env RDMASOCK_MUTATE_SEED=$((RANDOM * 32768 + RANDOM)) RDMASOCK_MUTATE_ROUNDS=20 \
		"$bin/hostile_test"
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
