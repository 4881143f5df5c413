#!/bin/bash
# `make check`: run the selftests in the VM on each kernel given, then print one line
# "N passed, N failed" summed over all of them.  Exit non-zero on any failure.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
total_pass=0 total_fail=0
for k in "$@"; do
	out=$(mktemp -d /tmp/rdmasock-check.XXXXXX)
	echo "==== kernel $k (logs: $out)"
	"$top/selftests/vm/run" --kernel "$k" --timeout 1800 --out "$out" -- "$top/selftests/run_tests.sh"
	rc=$?
	pass=0 fail=0
	if [ -s "$out/results/summary" ]; then
		while read -r _ name p f; do
			pass=$((pass + p)); fail=$((fail + f))
		done < "$out/results/summary"
	fi
	# The VM itself failing (kernel warning, timeout, rmmod refused) is one more failure.
	if [ "$rc" != 0 ] && [ "$fail" = 0 ]; then
		echo "check: the VM run on $k failed (exit $rc) with no failing test: counted as a failure"
		fail=$((fail + 1))
	fi
	echo "==== kernel $k: $pass passed, $fail failed"
	total_pass=$((total_pass + pass)); total_fail=$((total_fail + fail))
done
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" = 0 ]
