#!/bin/bash
# Run the rdmasock selftests inside the VM (called by check.sh through selftests/vm/run).
# Each program's TAP goes to the console and to $RDMASOCK_OUT/results/<name>.tap; a line
# "summary: <name> <passed> <failed>" per program lets the host add them up.
# In a --two-vm run the server role serves twovm_test and the client role runs it.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$top/build/selftests
out=${RDMASOCK_OUT:-/tmp}/results
mkdir -p "$out"
only=${RDMASOCK_TESTS:-}
ran=()

run_one() {
	local name=$1; shift
	local tap=$out/$name.tap pass fail pid left
	[ -n "$only" ] && ! grep -qw "$name" <<< "$only" && return 0
	echo "# ---- $name"
	# In a session of its own, its output in a file that the console follows until it exits:
	# whatever it leaves running holds no pipe of ours (a test's forked child, blocked in
	# accept() after its test failed, once held `| tee` open until the VM's timeout) and is
	# found and stopped afterwards.  (A background job's stdin is /dev/null anyway.)
	: > "$tap"
	setsid "$@" >> "$tap" 2>&1 < /dev/null &
	pid=$!
	tail -n +1 -f --pid="$pid" "$tap"
	wait "$pid"
	pass=$(grep -cE '^ok [0-9]+' "$tap")
	fail=$(grep -cE '^not ok [0-9]+' "$tap")
	# A program that died before its summary counts as one more failure.
	grep -qE '^# (Totals|PASSED|FAILED)' "$tap" || fail=$((fail + 1))
	# So does one that left processes behind (setsid made it the leader of session $pid).
	left=$(pgrep -s "$pid")
	if [ -n "$left" ]; then
		echo "# run_tests: $name left processes running: $(ps -o pid=,args= -p "${left//$'\n'/,}" | tr '\n' ';')" |
			tee -a "$tap"
		pkill -KILL -s "$pid"
		fail=$((fail + 1))
	fi
	echo "summary: $name $pass $fail" | tee -a "$out/summary"
}

case ${RDMASOCK_VM_ROLE:-single} in
server)
	exec "$bin/twovm_test"
	;;
client)
	run_one twovm_test "$bin/twovm_test"
	;;
*)
	# selftests/tests: every test, in order (devremove_test last: it takes the device away).
	# (The list comes on fd 3: a test reading stdin must not eat it.)
	while read -r name kind lanes _ <&3; do
		case $name in '' | '#'*) continue ;; esac
		[ "$lanes" = two-vm ] && continue
		if [ "$kind" = sh ]; then
			run_one "$name" "$top/selftests/$name.sh"
		else
			run_one "$name" "$bin/$name"
		fi
		ran+=("$name")
	done 3< "$top/selftests/tests"
	# Every test the list and RDMASOCK_TESTS ask for ran: one that did not is a failure.
	for name in $(awk '!/^#/ && NF && $3 != "two-vm" { print $1 }' "$top/selftests/tests"); do
		[ -n "$only" ] && ! grep -qw "$name" <<< "$only" && continue
		grep -qw "$name" <<< "${ran[*]}" && continue
		echo "run_tests: $name never ran"
		echo "summary: $name 0 1" | tee -a "$out/summary"
	done
	;;
esac
