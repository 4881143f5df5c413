#!/bin/bash
# `make check`: on each kernel given, run the single-VM selftests and the two-VM test in the VM,
# then print one line "N passed, N failed" summed over everything.  Exit non-zero on any failure.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
total_pass=0 total_fail=0

# add_results DIR RC LABEL: sum DIR/results/summary; a failed VM run with no failing test counts 1.
add_results() {
	local dir=$1 rc=$2 label=$3 pass=0 fail=0 p f
	if [ -s "$dir/results/summary" ]; then
		while read -r _ _ p f; do
			pass=$((pass + p)); fail=$((fail + f))
		done < "$dir/results/summary"
	fi
	if [ "$rc" != 0 ] && [ "$fail" = 0 ]; then
		echo "check: $label failed (exit $rc) with no failing test: counted as a failure"
		fail=1
	fi
	echo "==== $label: $pass passed, $fail failed"
	total_pass=$((total_pass + pass)); total_fail=$((total_fail + fail))
}

for k in "$@"; do
	out=$(mktemp -d /tmp/rdmasock-check.XXXXXX)
	echo "==== kernel $k (logs: $out)"
	"$top/selftests/vm/run" --kernel "$k" --mem "${RDMASOCK_VM_MEM:-1024}" --timeout 2400 --out "$out/one" -- "$top/selftests/run_tests.sh"
	add_results "$out/one" $? "kernel $k, one VM"
	"$top/selftests/vm/run" --kernel "$k" --mem "${RDMASOCK_VM_MEM:-1024}" --two-vm --timeout 900 --out "$out/two" -- "$top/selftests/run_tests.sh"
	add_results "$out/two/client" $? "kernel $k, two VMs"
done
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" = 0 ]
