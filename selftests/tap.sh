# Shared by the shell selftests (sourced): TAP lines, the module's counters (and a test's deltas
# of them: begin, check), servers in the background.  The test sets n=0 pass=0 fail=0 skip=0 and
# pids=() before.
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

# nginx_conf DIR SERVER: DIR/nginx.conf for an unprivileged nginx (pid, logs and temporary files
# in DIR/nginx) whose one server has SERVER's directives and serves DIR/www.
nginx_conf() {
	mkdir -p "$1/nginx"
	cat > "$1/nginx.conf" <<CONF
pid $1/nginx/nginx.pid;
error_log $1/nginx/error.log;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path $1/nginx; proxy_temp_path $1/nginx; fastcgi_temp_path $1/nginx;
	uwsgi_temp_path $1/nginx; scgi_temp_path $1/nginx;
	server { $2 root $1/www; }
}
CONF
}

# begin: the counters before a test; check NAME MIN_RDMA_CONNS EXPECT_FALLBACKS STATUS [LOG...]:
# record that test from their deltas (at least MIN_RDMA_CONNS RDMA connection ends, exactly
# EXPECT_FALLBACKS fallbacks, STATUS 0); on failure show the tail of the logs named.
begin() { rdma0=$(cnt connections_rdma); fb0=$(fallbacks); }
check() {
	local name=$1 min=$2 fb=$3 status=$4 rdma=$(( $(cnt connections_rdma) - rdma0 ))
	local fbs=$(( $(fallbacks) - fb0 ))
	shift 4
	if [ "$status" = 0 ] && [ "$rdma" -ge "$min" ] && [ "$fbs" = "$fb" ]; then
		ok "$name ($rdma RDMA connection ends, $fbs fallbacks)"
	else
		not_ok "$name" "status $status, $rdma RDMA connection ends (want >= $min), $fbs fallbacks (want $fb)"
		for log in "$@"; do tail -n 5 "$log" | sed "s|^|# $(basename "$log"): |"; done
	fi
}

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
