#!/bin/bash
# `make check`: on each kernel given, run the single-VM selftests and the two-VM test in the VM,
# then print one line "N passed, N failed" summed over everything.  Exit non-zero on any failure.
#
# "debug" is the debug-kernel lane (KASAN, lockdep, kmemleak: selftests/debug-kernel/): built once
# and cached, then RDMASOCK_DEBUG_TESTS run on it (default: the subset below, which keeps a CI run
# on a fresh machine under an hour with the kernel build; "all": every test, one VM and two VMs).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
total_pass=0 total_fail=0
digest=$(mktemp /tmp/rdmasock-check-digest.XXXXXX)
trap 'rm -f "$digest"' EXIT
# The debug lane's subset: the tests selftests/tests marks "debug".
DEBUG_SUBSET=$(awk '!/^#/ && $3 == "debug" { printf "%s ", $1 }' "$top/selftests/tests")

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
	[ "$fail" = 0 ] || failure_digest "$dir" "$rc" "$label" >> "$digest"
	total_pass=$((total_pass + pass)); total_fail=$((total_fail + fail))
}

# failure_digest DIR RC LABEL: what failed, short enough to read at the end of a long log (CI keeps
# only the tail): the failing tests, the programs that died, and for a VM that crashed or hung the
# kernel's reports and the console's last lines.
failure_digest() {
	local dir=$1 rc=$2 label=$3
	echo "---- $label (exit $rc, logs in $dir)"
	grep -H '^not ok' "$dir"/results/*.tap 2>/dev/null | sed 's|^.*/results/||' | head -n 20
	grep -E ' [0-9]+ [1-9][0-9]*$' "$dir/results/summary" 2>/dev/null
	[ -s "$dir/kernel-reports.log" ] && head -n 20 "$dir/kernel-reports.log"
	if [ ! -s "$dir/rc" ]; then
		echo "no exit status from the VM (a crash, a hung task or a timeout); its console ends:"
		tail -n 30 "$dir/console.log" 2>/dev/null
	fi
}

# debug_lane: build (or take from the cache) the debug kernel and the module for it.
debug_lane() {
	"$top/selftests/debug-kernel/build.sh" &&
		make -s -C "$top" KVER="$(cat "$top/build/debug-kernel/current/release")" modules
}

for k in "$@"; do
	out=$(mktemp -d /tmp/rdmasock-check.XXXXXX)
	echo "==== kernel $k (logs: $out)"
	mem=${RDMASOCK_VM_MEM:-1024} timeout=2400 tests=${RDMASOCK_TESTS:-} two_vm=1
	if [ "$k" = debug ]; then
		debug_lane || { add_results "$out" 1 "debug kernel build"; continue; }
		mem=2048 timeout=3600 tests=${RDMASOCK_DEBUG_TESTS:-$DEBUG_SUBSET}
		[ "$tests" = all ] && tests="" || two_vm=0
	fi
	# A selection without twovm_test leaves the two-VM run out (its server would wait for ever).
	[ -n "$tests" ] && ! grep -qw twovm_test <<< "$tests" && two_vm=0
	RDMASOCK_TESTS=$tests "$top/selftests/vm/run" --kernel "$k" --mem "$mem" --timeout "$timeout" \
		--out "$out/one" -- "$top/selftests/run_tests.sh"
	rc=$?
	# vm/run marks a run whose every kernel report came before any rdmasock code ran.
	if [ $rc = 125 ] && [ "$k" = debug ] && [ -e "$out/one/kernel-reports-before-ready" ]; then
		echo "check: the debug kernel reported a problem while booting, before any rdmasock code" \
			"ran (docs/testing.md, known issues); logs kept in $out/one-first; running again"
		mv "$out/one" "$out/one-first"
		RDMASOCK_TESTS=$tests "$top/selftests/vm/run" --kernel "$k" --mem "$mem" \
			--timeout "$timeout" --out "$out/one" -- "$top/selftests/run_tests.sh"
		rc=$?
	fi
	add_results "$out/one" $rc "kernel $k, one VM${tests:+ ($tests)}"
	[ $two_vm = 1 ] || continue
	RDMASOCK_TESTS=$tests "$top/selftests/vm/run" --kernel "$k" --mem "$mem" --two-vm --timeout 900 \
		--out "$out/two" -- "$top/selftests/run_tests.sh"
	add_results "$out/two/client" $? "kernel $k, two VMs"
done
if [ -s "$digest" ]; then
	echo "==== what failed"
	cat "$digest"
fi
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" = 0 ]
