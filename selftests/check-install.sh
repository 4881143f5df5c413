#!/bin/bash
# make check-install: the packages of make deb (in DEBDIR) installed, used and purged in a fresh
# VM on each kernel (selftests/install_test.sh, booted with --no-module: nothing of the tree's
# module is loaded), then one line "N passed, N failed".  DKMS compiles the module inside the VM
# for every kernel with headers, so this takes long under TCG; it is not part of make check.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
debs=$(cd "${1:?folder of the .deb files}" && pwd)
total_pass=0 total_fail=0
for k in ${CHECK_INSTALL_KERNELS:-6.1 6.12}; do
	out=$(mktemp -d /tmp/rdmasock-check-install.XXXXXX)
	echo "==== kernel $k (logs: $out)"
	"$top/selftests/vm/run" --kernel "$k" --mem 3072 --no-module --timeout 2400 --out "$out" -- \
		"$top/selftests/install_test.sh" "$debs"
	rc=$?
	pass=$(grep -cE '^ok [0-9]+' "$out/console.log")
	fail=$(grep -cE '^not ok [0-9]+' "$out/console.log")
	grep -qE '^# Totals' "$out/console.log" || fail=$((fail + 1))
	[ "$rc" != 0 ] && [ "$fail" = 0 ] && fail=1
	echo "==== kernel $k: $pass passed, $fail failed"
	total_pass=$((total_pass + pass)) total_fail=$((total_fail + fail))
done
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" = 0 ]
