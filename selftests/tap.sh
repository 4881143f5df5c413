# Shared by the shell selftests (sourced): TAP lines, the module's counters, servers in the
# background.  The test sets n=0 pass=0 fail=0 skip=0 and pids=() before.
# shellcheck shell=bash

ok() { n=$((n + 1)); pass=$((pass + 1)); echo "ok $n $1"; }
not_ok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n $1"; shift; for l in "$@"; do echo "# $l"; done; }
skip_test() { n=$((n + 1)); skip=$((skip + 1)); echo "ok $n $1 # SKIP $2"; }
# The summary lines run_tests.sh and check.sh read; the status says whether all passed.
tap_end() {
	echo "1..$n"
	echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:${skip:-0} error:0"
	[ "$fail" = 0 ]
}

# A counter of /proc/net/rdmasock_stat, and all fallbacks summed.
cnt() { awk -v k="$1" '$1 == k { print $2 }' /proc/net/rdmasock_stat; }
fallbacks() { awk '/^fallback_/ { s += $2 } END { print s }' /proc/net/rdmasock_stat; }

# Until something listens on TCP port $1 (an rdmasock listener's TCP socket counts), 30 s at most.
wait_port() {
	for ((i = 0; i < 300; i++)); do
		ss -ltn "sport = :$1" | grep -q LISTEN && return 0
		sleep 0.1
	done
	return 1
}

# Stop and reap the servers in pids.
stop_all() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	pids=()
}
