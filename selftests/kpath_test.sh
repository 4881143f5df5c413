#!/bin/bash
# The kernel path (TAP): programs that LD_PRELOAD cannot reach (a static binary, a Go program)
# get rdmasock sockets from the cgroup switch (rdmasock-ctl: a BPF program on
# update_socket_protocol asks the module).  Each test checks the program's own bytes, what its
# sockets say they are (SO_DOMAIN, SO_PROTOCOL, RDMASOCK_MODE), and the module's counters.  On a
# kernel without the hook (6.1) it checks the clear error instead, and the preload path.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
ub=$top/build/userlib
run=$ub/rdmasock-run
ctl=$ub/rdmasock-ctl
goecho=$top/build/selftests/goecho
addr=${RDMASOCK_ADDR:?run inside the VM}
work=$(mktemp -d /tmp/rdmasock-kpath.XXXXXX)
n=0 pass=0 fail=0 skip=0
pids=()
proto=$(cat /sys/module/rdmasock/parameters/ipproto)
# shellcheck source=selftests/tap.sh
. "$top/selftests/tap.sh"
cleanup() {
	stop_all
	for c in /sys/fs/cgroup/kpath-*; do
		[ -d "$c" ] || continue
		"$ctl" disable --cgroup "$c" > /dev/null 2>&1
		rmdir "$c" 2>/dev/null
	done
	rm -rf "$work"
}
trap cleanup EXIT
begin() { rdma0=$(cnt connections_rdma); fb0=$(fallbacks); cg0=$(cnt cgroup_sockets); }
# since NAME: how much a counter (or "fallbacks") grew since begin.
since() {
	case $1 in
	fallbacks) echo $(( $(fallbacks) - fb0 )) ;;
	rdma) echo $(( $(cnt connections_rdma) - rdma0 )) ;;
	cgroup) echo $(( $(cnt cgroup_sockets) - cg0 )) ;;
	esac
}
# wait_refcnt N [TENTHS]: the module's refcount reaches N within TENTHS/10 s, 30 s by default
# (closed connections finish their teardown in the background, a detached BPF program is freed
# after RCU grace periods).
wait_refcnt() {
	for ((i = 0; i < ${2:-300}; i++)); do
		[ "$(cat /sys/module/rdmasock/refcnt)" = "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

echo "TAP version 13"
mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup

# The module's table (on every kernel): well-formed entries only, root only, read back whole.
tbl=/sys/module/rdmasock/parameters/cgroups
bad=0
# One write(2) each, as a multi-line entry must arrive whole (bash's printf writes a line a time).
tbl_write() { python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
os.write(fd, sys.argv[2].encode())' "$tbl" "$1" 2>/dev/null; }
for e in "+999 deny dst=10.0.0.1x" "+999 deny dst=fe80::1%eth0" "+999 deny port=70000" \
	 "+999 deny port=9-3" "+999 deny listen=10.0.0.0/33" "+999 frobnicate" "+0 deny" \
	 "999 deny" "-999 deny" "+999 deny program=a-name-longer-than-15" $'+999 deny\n+998 allow'; do
	tbl_write "$e" && { bad=1; echo "# accepted: $e"; }
done
tbl_write '+999 deny dst=10.0.0.0/8 port=22; allow program=x listen=fd11::/64 port=1-2'
st=$?
got=$(cat "$tbl")
tbl_write '-999'
st2=$?
tbl_write '-999' && bad=1	# no longer there: ENOENT
if [ $bad = 0 ] && [ $st = 0 ] && [ $st2 = 0 ] && [ -z "$(cat "$tbl")" ] &&
	[ "$got" = "999 deny dst=10.0.0.0/8 port=22; allow program=x listen=fd11::/64 port=1-2" ]; then
	ok "the module's cgroup table takes well-formed entries only"
else
	not_ok "the module's cgroup table takes well-formed entries only" "status $st/$st2, read '$got'"
fi

if ! "$ctl" check 2> "$work/check.err"; then
	# No hook (6.1): the clear error, from rdmasock-run and rdmasock-ctl alike.
	sed 's/^/# /' "$work/check.err"
	"$run" -- busybox true > "$work/out" 2>&1
	st=$?
	if [ $st = 3 ] && grep -q "static binary" "$work/out" && grep -q "Linux 6.6 or later" "$work/out"; then
		ok "a static binary on a kernel without the hook: a clear error (status 3)"
	else
		not_ok "a static binary on a kernel without the hook: a clear error (status 3)" \
			"status $st" "$(cat "$work/out")"
	fi
	mkdir -p /sys/fs/cgroup/kpath-none
	"$ctl" enable --cgroup /sys/fs/cgroup/kpath-none > "$work/out" 2>&1
	st=$?
	if [ $st = 3 ] && grep -q "update_socket_protocol" "$work/out"; then
		ok "rdmasock-ctl enable without the hook: a clear error (status 3)"
	else
		not_ok "rdmasock-ctl enable without the hook: a clear error (status 3)" "status $st" \
			"$(cat "$work/out")"
	fi
	rmdir /sys/fs/cgroup/kpath-none
	# The preload path still works here, with AF_INET sockets of IPPROTO_RDMASOCK.
	out=$("$run" -q -- python3 -c "
import socket
s = socket.socket()
print(s.getsockopt(socket.SOL_SOCKET, socket.SO_DOMAIN), s.getsockopt(socket.SOL_SOCKET, socket.SO_PROTOCOL))")
	if [ "$out" = "2 $proto" ]; then
		ok "the preload path works without the hook (AF_INET, protocol $proto)"
	else
		not_ok "the preload path works without the hook" "got '$out', want '2 $proto'"
	fi
	for t in "Go pair" "static busybox nc" "outside the cgroup" "enable an existing cgroup" \
		 "cgroup removed with sockets open" "policy" "unprivileged" "unload refused"; do
		skip_test "$t" "no update_socket_protocol hook on $(uname -r) (6.6+)"
	done
	tap_end
	exit
fi

# 1. A Go echo pair, both ends through rdmasock-run: the kernel path, RDMA on every connection.
begin
"$run" -d -- "$goecho" serve "$addr:7411" 2 > "$work/gs.out" 2> "$work/gs.err" &
pids+=($!)
wait_port 7411
"$run" -d -- "$goecho" send "$addr:7411" 4000000 > "$work/gc.out" 2> "$work/gc.err" &&
	"$run" -- "$goecho" send "$addr:7411" 100000 >> "$work/gc.out" 2>&1
st=$?
wait "${pids[0]}"
sst=$?
pids=()
want="domain 2 protocol $proto"
if [ $st = 0 ] && [ $sst = 0 ] && grep -q "kernel path (go binary)" "$work/gc.err" &&
	[ "$(grep -c "connected $want mode 1" "$work/gc.out")" = 2 ] &&
	[ "$(grep -c "accepted $want mode 1 type 1" "$work/gs.out")" = 2 ] &&
	grep -q "listening $want" "$work/gs.out" && grep -q "echoed 4000000 bytes" "$work/gc.out" &&
	[ "$(since rdma)" -ge 4 ] && [ "$(since fallbacks)" = 0 ] && [ "$(since cgroup)" -ge 3 ]; then
	ok "a Go echo pair runs over RDMA through the kernel path ($(since rdma) RDMA connection ends)"
else
	not_ok "a Go echo pair runs over RDMA through the kernel path" "status $st/$sst," \
		"$(since rdma) RDMA ends, $(since fallbacks) fallbacks, $(since cgroup) cgroup sockets" \
		"$(cat "$work/gs.out" "$work/gc.out" "$work/gs.err" "$work/gc.err")"
fi
[ -z "$(ls -d /sys/fs/cgroup/rdmasock-run-* 2>/dev/null)" ] && ! grep -q . /sys/module/rdmasock/parameters/cgroups &&
	[ ! -e /sys/fs/bpf/rdmasock/redirect ] && ok "rdmasock-run leaves no cgroup, table entry or BPF program" ||
	not_ok "rdmasock-run leaves no cgroup, table entry or BPF program" \
		"$(ls -d /sys/fs/cgroup/rdmasock-run-* 2>&1)" "$(cat /sys/module/rdmasock/parameters/cgroups)"

# 2. A static binary: busybox's nc, both ends.
begin
"$run" -- busybox nc -l -p 7412 > "$work/nc.out" 2>&1 &
pids+=($!)
wait_port 7412
echo "a line from a static binary" | "$run" -- busybox nc "$addr" 7412
st=$?
wait "${pids[0]}"
pids=()
if [ $st = 0 ] && [ "$(cat "$work/nc.out")" = "a line from a static binary" ] &&
	[ "$(since rdma)" = 2 ] && [ "$(since fallbacks)" = 0 ]; then
	ok "busybox's static nc runs over RDMA through the kernel path"
else
	not_ok "busybox's static nc runs over RDMA through the kernel path" "status $st," \
		"$(since rdma) RDMA ends, $(since fallbacks) fallbacks" "$(cat "$work/nc.out")"
fi

# 3. A process outside the cgroup keeps plain TCP (the server's child is a TCP child).
begin
"$run" -- "$goecho" serve "$addr:7413" 1 > "$work/gs.out" 2>&1 &
pids+=($!)
wait_port 7413
"$goecho" send "$addr:7413" 100000 > "$work/gc.out" 2>&1
st=$?
wait "${pids[0]}"
pids=()
if [ $st = 0 ] && grep -q "connected domain 2 protocol 6 mode -1" "$work/gc.out" &&
	grep -q "accepted domain 2 protocol $proto mode 2" "$work/gs.out" &&
	[ "$(since rdma)" = 0 ] && [ "$(since cgroup)" -ge 1 ]; then
	ok "a process outside the cgroup keeps plain TCP"
else
	not_ok "a process outside the cgroup keeps plain TCP" "status $st, $(since cgroup) cgroup sockets" \
		"$(cat "$work/gs.out" "$work/gc.out")"
fi

# 4. An existing cgroup switched on and off (a slice, a container): its processes, and only
# while it is on.
cg=/sys/fs/cgroup/kpath-slice
mkdir -p "$cg"
in_cg() { bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' - "$cg" "$@"; }
"$ctl" enable --cgroup "$cg" > "$work/ctl.out" 2>&1
st=$?
"$ctl" status >> "$work/ctl.out" 2>&1
begin
in_cg "$goecho" serve "$addr:7414" 2 > "$work/gs.out" 2>&1 &
pids+=($!)
wait_port 7414
in_cg "$goecho" send "$addr:7414" 200000 > "$work/gc.out" 2>&1
st1=$?
"$ctl" disable --cgroup "$cg" >> "$work/ctl.out" 2>&1
st2=$?
in_cg "$goecho" send "$addr:7414" 200000 >> "$work/gc.out" 2>&1
st3=$?
wait "${pids[0]}"
pids=()
if [ $st = 0 ] && [ $st1 = 0 ] && [ $st2 = 0 ] && [ $st3 = 0 ] &&
	grep -q "^  $cg id" "$work/ctl.out" && grep -q "BPF program: attached" "$work/ctl.out" &&
	[ "$(head -n 1 "$work/gc.out")" = "connected domain 2 protocol $proto mode 1 type 1" ] &&
	grep -q "connected domain 2 protocol 6 mode -1" "$work/gc.out" &&
	[ "$(since rdma)" = 2 ] && [ "$(since cgroup)" -ge 2 ] && [ ! -e /sys/fs/bpf/rdmasock/redirect ]; then
	ok "rdmasock-ctl enable/disable switches an existing cgroup"
else
	not_ok "rdmasock-ctl enable/disable switches an existing cgroup" \
		"status $st/$st1/$st2/$st3, $(since rdma) RDMA ends, $(since cgroup) cgroup sockets" \
		"$(cat "$work/ctl.out" "$work/gs.out" "$work/gc.out")"
fi

# 5. The cgroup removed while its sockets are open: the listener keeps serving over RDMA.
"$ctl" enable --cgroup "$cg" > "$work/ctl.out" 2>&1
begin
in_cg "$goecho" serve "$addr:7415" 1 > "$work/gs.out" 2>&1 &
pids+=($!)
wait_port 7415
# Its processes (goecho, under the shell in_cg ran in the background) leave for the root.
for p in $(cat "$cg/cgroup.procs"); do echo "$p" > /sys/fs/cgroup/cgroup.procs; done
"$ctl" disable --cgroup "$cg" >> "$work/ctl.out" 2>&1
rmdir "$cg"
st=$?
"$run" -- "$goecho" send "$addr:7415" 300000 > "$work/gc.out" 2>&1
st1=$?
wait "${pids[0]}"
st2=$?
pids=()
if [ $st = 0 ] && [ $st1 = 0 ] && [ $st2 = 0 ] && [ ! -d "$cg" ] &&
	grep -q "accepted domain 2 protocol $proto mode 1" "$work/gs.out" && [ "$(since rdma)" = 2 ]; then
	ok "a cgroup removed while its sockets are open: they go on over RDMA"
else
	not_ok "a cgroup removed while its sockets are open" "status $st/$st1/$st2" \
		"$(cat "$work/ctl.out" "$work/gs.out" "$work/gc.out")"
fi

# 6. Policy: a rule without an address decides at socket(), one with an address at connect().
begin
"$run" -- "$goecho" serve "$addr:7416" 2 > "$work/gs.out" 2>&1 &
pids+=($!)
wait_port 7416
"$run" --policy "deny port=7416" -- "$goecho" send "$addr:7416" 100000 > "$work/gc.out" 2>&1
st1=$?
"$run" --policy "deny program=goecho" -- "$goecho" send "$addr:7416" 100000 >> "$work/gc.out" 2>&1
st2=$?
wait "${pids[0]}"
pids=()
if [ $st1 = 0 ] && [ $st2 = 0 ] && [ "$(sed -n 1p "$work/gc.out")" = "connected domain 2 protocol $proto mode 2 type 1" ] &&
	grep -q "connected domain 2 protocol 6 mode -1" "$work/gc.out" && [ "$(since rdma)" = 0 ] &&
	[ "$(cnt fallback_forced)" -ge 1 ]; then
	ok "policy rules: deny port= at connect (forced TCP), deny program= at socket()"
else
	not_ok "policy rules: deny port= at connect, deny program= at socket()" "status $st1/$st2," \
		"$(since rdma) RDMA ends, $(since cgroup) cgroup sockets, forced $(cnt fallback_forced)" \
		"$(cat "$work/gs.out" "$work/gc.out")"
fi

# 7. Unprivileged users switch nobody's cgroup, and cannot write the module's table.
mkdir -p "$cg"
out=$(setpriv --reuid 65534 --regid 65534 --clear-groups "$ctl" enable --cgroup "$cg" 2>&1)
st=$?
out2=$(setpriv --reuid 65534 --regid 65534 --clear-groups sh -c \
	"echo +1 > /sys/module/rdmasock/parameters/cgroups" 2>&1)
st2=$?
if [ $st != 0 ] && grep -q "needs root" <<< "$out" && [ $st2 != 0 ] &&
	! grep -q . /sys/module/rdmasock/parameters/cgroups; then
	ok "an unprivileged user cannot switch a cgroup"
else
	not_ok "an unprivileged user cannot switch a cgroup" "status $st/$st2" "$out" "$out2"
fi

# 8. The module cannot go while the BPF program or a socket holds it; it can after.
"$ctl" enable --cgroup "$cg" > "$work/ctl.out" 2>&1
wait_refcnt 1	# the program's reference, and no socket's
rm1=$(rmmod rdmasock 2>&1)
st1=$?
"$ctl" disable --cgroup "$cg" >> "$work/ctl.out" 2>&1
python3 -c "
import socket, subprocess, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM, $proto)
r = subprocess.run(['rmmod', 'rdmasock'], capture_output=True)
sys.exit(0 if r.returncode != 0 else 1)"
st2=$?
# The program's reference goes after RCU grace periods and a work item: slow in a loaded VM.
wait_refcnt 0 600
ref3=$(cat /sys/module/rdmasock/refcnt)
rm3=$(rmmod rdmasock 2>&1)
st3=$?
insmod "$RDMASOCK_MODULE"
st4=$?
rmdir "$cg"
if [ $st1 != 0 ] && grep -q "in use" <<< "$rm1" && [ $st2 = 0 ] && [ $st3 = 0 ] && [ $st4 = 0 ]; then
	ok "module unload refused while the BPF program or a socket holds it, clean after"
else
	not_ok "module unload refused while the BPF program or a socket holds it, clean after" \
		"rmmod with the program: status $st1 ($rm1); with a socket: $st2;" \
		"after: $st3 (refcnt $ref3: $rm3); insmod: $st4" \
		"$(cat "$work/ctl.out")"
fi

tap_end
