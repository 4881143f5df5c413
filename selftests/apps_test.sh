#!/bin/bash
# Unchanged real applications over rdmasock, through rdmasock-run (TAP output).  Each test checks
# the application's own result (bytes, checksums, exit status) and that its connections were
# carried by RDMA: the module's counters must show RDMA connections and no fallback.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
run="$top/build/userlib/rdmasock-run -q --"
addr=${RDMASOCK_ADDR:?run inside the VM}
work=$(mktemp -d /tmp/rdmasock-apps.XXXXXX)
chmod 755 "$work"	# nginx workers and sshd drop privileges
n=0 pass=0 fail=0
pids=()
# shellcheck source=selftests/tap.sh
. "$top/selftests/tap.sh"
trap 'stop_all; rm -rf "$work"' EXIT

echo "TAP version 13"
head -c 24M /dev/urandom > "$work/blob"

# iperf3, both directions.
begin
$run iperf3 -s -B "$addr" -p 5201 > "$work/iperf3-s.log" 2>&1 &
pids+=($!)
wait_port 5201
$run iperf3 -c "$addr" -p 5201 -t 2 > "$work/iperf3.log" 2>&1 &&
	$run iperf3 -c "$addr" -p 5201 -t 2 -R >> "$work/iperf3.log" 2>&1
st=$?
grep -E 'receiver' "$work/iperf3.log" | sed 's/^/# /'
check "iperf3 both directions" 8 0 $st
stop_all

# sockperf ping-pong.
begin
$run sockperf server --tcp -i "$addr" -p 11111 > "$work/sockperf-s.log" 2>&1 &
pids+=($!)
wait_port 11111
$run sockperf ping-pong --tcp -i "$addr" -p 11111 -t 2 > "$work/sockperf.log" 2>&1
st=$?
grep -q 'avg-latency\|avg-lat' "$work/sockperf.log" || st=1
grep -E 'avg-lat' "$work/sockperf.log" | head -n 1 | sed 's/^/# /'
check "sockperf ping-pong" 2 0 $st
stop_all

# redis: SET/GET of a multi-megabyte value, then redis-benchmark.
begin
$run redis-server --bind "$addr" --port 6390 --save '' --appendonly no --protected-mode no \
	--dir "$work" > "$work/redis.log" 2>&1 &
pids+=($!)
wait_port 6390
base64 -w0 < "$work/blob" | head -c 8M > "$work/value"
$run redis-cli -h "$addr" -p 6390 -x SET big < "$work/value" > /dev/null &&
	$run redis-cli -h "$addr" -p 6390 --raw GET big | head -c 8M | cmp -s - "$work/value" &&
	$run redis-benchmark -h "$addr" -p 6390 -n 2000 -c 4 -q -t set,get > "$work/rb.log" 2>&1
st=$?
sed 's/^/# /; s/\r/\n# /g' "$work/rb.log" | grep -E 'SET|GET' | tail -n 2
check "redis SET/GET 8 MiB and redis-benchmark" 6 0 $st
stop_all

# nginx + curl: a 24 MiB download, checksum compared.
begin
mkdir -p "$work/www"
cp "$work/blob" "$work/www/blob"
nginx_conf "$work" "listen $addr:8080; sendfile on;"
$run nginx -c "$work/nginx.conf" -g 'daemon off; master_process on;' > "$work/nginx.log" 2>&1 &
pids+=($!)
wait_port 8080
$run curl -sSf -o "$work/got" "http://$addr:8080/blob" 2> "$work/curl.log"
st=$?
cmp -s "$work/got" "$work/blob" || st=1
check "nginx + curl 24 MiB download, checksum" 2 0 $st "$work/curl.log" "$work/nginx.log" \
	"$work/nginx/error.log"
rm -f "$work/got"
stop_all

# OpenSSH: sshd with privilege separation, a remote command and scp.
begin
mkdir -p /run/sshd "$work/ssh"
ssh-keygen -q -t ed25519 -N '' -f "$work/ssh/host" && ssh-keygen -q -t ed25519 -N '' -f "$work/ssh/id"
mkdir -p /root/.ssh && cp "$work/ssh/id.pub" /root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys
$run /usr/sbin/sshd -D -e -p 2222 -h "$work/ssh/host" -o ListenAddress="$addr" -o UsePAM=no \
	-o PermitRootLogin=yes -o StrictModes=no > "$work/sshd.log" 2>&1 &
pids+=($!)
wait_port 2222
sshopt=(-i "$work/ssh/id" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR)
out=$($run ssh "${sshopt[@]}" -p 2222 root@"$addr" 'echo remote:$(hostname)') &&
	$run scp -q "${sshopt[@]}" -P 2222 "$work/blob" root@"$addr":"$work/blob.copy"
st=$?
[ "$out" = "remote:$(hostname)" ] && cmp -s "$work/blob" "$work/blob.copy" || st=1
check "OpenSSH remote command and scp 24 MiB" 4 0 $st
stop_all

# Python http.server + curl.
begin
$run python3 -m http.server 8000 --bind "$addr" --directory "$work/www" > /dev/null 2>&1 &
pids+=($!)
wait_port 8000
$run curl -sSf -o "$work/got" "http://$addr:8000/blob" 2> "$work/curl.log"
st=$?
cmp -s "$work/got" "$work/blob" || st=1
check "python http.server + curl, checksum" 2 0 $st "$work/curl.log"
rm -f "$work/got"

# Mixed: the same server, a client without the shim (plain TCP, served by the same listener).
begin
curl -sSf -o "$work/got" "http://$addr:8000/blob" 2> "$work/curl.log"
st=$?
cmp -s "$work/got" "$work/blob" || st=1
check "mixed: plain TCP client of a shimmed server" 0 1 $st "$work/curl.log"
stop_all

# Policy: a denied port stays TCP (forced), the data is the same.
begin
$run iperf3 -s -B "$addr" -p 5202 > /dev/null 2>&1 &
pids+=($!)
wait_port 5202
RDMASOCK_POLICY="deny dst=$addr/32 port=5202" $run iperf3 -c "$addr" -p 5202 -t 1 > /dev/null 2>&1
st=$?
# iperf3 opens two connections: each is forced at the client and a plain-TCP child at the server.
check "policy: denied destination runs over TCP" 0 4 $st
stop_all

# Policy errors are reported with their rule / line number, and the program still runs.
printf 'allow port=5000\nbogus rule\ndeny dst=300.1.1.1\n' > "$work/policy"
out=$(RDMASOCK_POLICY='deny port=99999' "$top/build/userlib/rdmasock-run" -q -f "$work/policy" -- true 2>&1)
st=$?
if [ $st = 0 ] && grep -q 'RDMASOCK_POLICY rule 1: bad port' <<< "$out" &&
	grep -q "policy:2: expected allow" <<< "$out" && grep -q "policy:3: bad address" <<< "$out"; then
	ok "policy errors reported with rule and line numbers"
else
	not_ok "policy errors reported with rule and line numbers" "status $st" "$out"
fi

# The shim's sockets: AF_INET/AF_INET6 of IPPROTO_RDMASOCK by default (a program inspecting
# its socket finds its own family), the family's with --family.
fam=$(cat /sys/module/rdmasock/parameters/family)
proto=$(cat /sys/module/rdmasock/parameters/ipproto)
inspect="
import socket
for f in (socket.AF_INET, socket.AF_INET6):
    s = socket.socket(f)
    print(s.getsockopt(socket.SOL_SOCKET, socket.SO_DOMAIN), s.getsockopt(socket.SOL_SOCKET, socket.SO_PROTOCOL))"
out=$($run python3 -c "$inspect" | tr '\n' ' ')
out2=$("$top/build/userlib/rdmasock-run" -q --family -- python3 -c "$inspect" | tr '\n' ' ')
if [ "$out" = "2 $proto 10 $proto " ] && [ "$out2" = "$fam 6 $fam 6 " ]; then
	ok "the shim's sockets: AF_INET/AF_INET6 of protocol $proto; the family's with --family"
else
	not_ok "the shim's sockets: AF_INET/AF_INET6 of protocol $proto; the family's with --family" \
		"default: '$out', want '2 $proto 10 $proto '" "--family: '$out2', want '$fam 6 $fam 6 '"
fi

# The family path still carries a real program over RDMA.
begin
$run python3 -m http.server --bind "$addr" 8091 --directory "$work" > /dev/null 2>&1 &
pids+=($!)
wait_port 8091
sum=$("$top/build/userlib/rdmasock-run" -q --family -- curl -s "http://$addr:8091/blob" | sha256sum)
st=$?
[ "$sum" = "$(sha256sum < "$work/blob")" ] || st=1
check "preload with --family: curl from python http.server, checksum" 2 0 $st
stop_all

# rmmod is refused while an rdmasock socket is open (the socket pins the module), either kind.
for how in "$fam, socket.SOCK_STREAM" "socket.AF_INET, socket.SOCK_STREAM, $proto" \
	   "socket.AF_INET6, socket.SOCK_STREAM, $proto"; do
	if python3 -c "
import socket, subprocess, sys
s = socket.socket($how)
r = subprocess.run(['rmmod', 'rdmasock'], capture_output=True)
sys.exit(0 if r.returncode != 0 else 1)" && [ -d /sys/module/rdmasock ]; then
		ok "rmmod refused while a socket is open: socket($how)"
	else
		not_ok "rmmod refused while a socket is open: socket($how)"
	fi
done

tap_end
