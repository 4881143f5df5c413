#!/bin/bash
# make check-install, inside a fresh VM booted without the tree's module (vm/run --no-module): the
# packages from make deb are installed into the guest's overlay with apt-get, DKMS builds the
# module for the booted kernel, modprobe loads it, rdmasock-run from PATH carries iperf3 over RC
# QPs, one version is shown everywhere, and apt-get remove --purge leaves nothing behind.
# Usage: install_test.sh DEBDIR
set -u
debs=${1:?folder of the .deb files}
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=selftests/tap.sh
. "$top/selftests/tap.sh"
n=0 pass=0 fail=0 skip=0 pids=()
kver=$(uname -r)
version=$(cat "$top/VERSION")
addr=${RDMASOCK_ADDR:?}
work=$(mktemp -d)
export DEBIAN_FRONTEND=noninteractive PATH=/usr/sbin:/usr/bin:/sbin:/bin

# Nothing of rdmasock may be there before: not the tree's module, not an earlier install.
if lsmod | grep -q '^rdmasock ' || [ -e /usr/bin/rdmasock-run ] || [ -e /usr/src/rdmasock-"$version" ] ||
   ls /lib/modules/*/updates/dkms/rdmasock.ko* > /dev/null 2>&1; then
	not_ok "a clean guest to start from" "$(lsmod | grep rdmasock)" "$(ls /usr/bin/rdmasock-* 2>&1)"
	tap_end
	exit
fi
ok "a clean guest: no rdmasock module loaded, no tools, no DKMS tree"

# The guest's root is the host's over 9p without a cache, where the thousands of header reads of a
# kernel build and every exec of the compiler crawl: copy the headers and the toolchain up into
# the overlay's memory first (touch does), so DKMS compiles from RAM.  The same files, read faster.
t0=$(date +%s)
find /usr/src/linux-headers-* /usr/lib/gcc/x86_64-linux-gnu "$(readlink -f /usr/bin/as)" \
	"$(readlink -f /usr/bin/ld)" "$(readlink -f /usr/bin/gcc)" /usr/lib/x86_64-linux-gnu/libbfd* \
	/usr/lib/x86_64-linux-gnu/libopcodes* /usr/lib/x86_64-linux-gnu/libctf* -type f -print0 \
	2>/dev/null | xargs -0 -r touch -c
echo "# headers and toolchain copied up in $(( $(date +%s) - t0 )) s"

# 1. Both packages, as a user would install them (apt resolves dkms from what is installed).
if apt-get install -y -q "$debs"/rdmasock-dkms_"$version"_all.deb \
	"$debs"/rdmasock-tools_"$version"_*.deb > "$work/apt.log" 2>&1; then
	ok "apt-get install rdmasock-dkms rdmasock-tools"
else
	not_ok "apt-get install rdmasock-dkms rdmasock-tools" "$(tail -n 20 "$work/apt.log")"
	tap_end
	exit
fi
sed -n 's/^/# apt: /p' "$work/apt.log" | grep -i -E 'dkms|rdmasock|building|installing' | head -n 12

# 2. DKMS built it for the booted kernel and installed it where modprobe finds it by name.
st=$(dkms status -m rdmasock 2>&1)
echo "# dkms status: $st"
if grep -q "rdmasock/$version, $kver, .*: installed" <<< "$st" &&
   modinfo -n rdmasock 2>/dev/null | grep -q "/lib/modules/$kver/updates/dkms/rdmasock.ko"; then
	ok "DKMS built and installed rdmasock $version for $kver"
else
	not_ok "DKMS built and installed rdmasock $version for $kver" "modinfo -n: $(modinfo -n rdmasock 2>&1)" \
		"$(find /var/lib/dkms/rdmasock -name make.log -exec tail -n 20 {} \; 2>/dev/null)"
fi
# And every other kernel with headers: the package's postinst built the newest one too; one it did
# not gets it as a newly installed kernel would, from the hook a kernel package runs (AUTOINSTALL).
others="" bad=""
for d in /lib/modules/*/build; do
	k=$(basename "$(dirname "$d")")
	[ "$k" = "$kver" ] && continue
	if dkms status -m rdmasock -k "$k" 2>/dev/null | grep -q ': installed'; then
		others+=" $k(postinst)"
	else
		/etc/kernel/postinst.d/dkms "$k" > "$work/hook-$k.log" 2>&1
		others+=" $k(kernel hook)"
	fi
	dkms status -m rdmasock -k "$k" 2>/dev/null | grep -q "rdmasock/$version, $k, .*: installed" ||
		bad+=" $k"
done
if [ -z "$bad" ]; then
	ok "DKMS built rdmasock for every other kernel with headers too:${others:- none}"
else
	not_ok "DKMS built rdmasock for every kernel with headers" "not for:$bad" \
		"$(cat "$work"/hook-*.log 2>/dev/null | tail -n 20)"
fi

# 3. One version: modinfo, the package, every tool.
versions="modinfo=$(modinfo -F version rdmasock 2>&1) dkms-pkg=$(dpkg-query -W -f='${Version}' rdmasock-dkms)"
versions+=" tools-pkg=$(dpkg-query -W -f='${Version}' rdmasock-tools)"
for t in rdmasock-run rdmasock-stat rdmasock-ctl; do
	versions+=" $t=$($t --version 2>&1 | awk '{ print $2 }')"
done
if [ "$(tr ' ' '\n' <<< "$versions" | cut -d= -f2 | sort -u)" = "$version" ]; then
	ok "one version everywhere ($version): $versions"
else
	not_ok "one version everywhere ($version)" "$versions"
fi

# 4. modprobe by name, and the example options file is there and changes nothing.
if modprobe rdmasock && lsmod | grep -q '^rdmasock ' && [ -r /etc/modprobe.d/rdmasock.conf ] &&
   ! grep -q '^options' /etc/modprobe.d/rdmasock.conf; then
	ok "modprobe rdmasock loads the DKMS module; /etc/modprobe.d/rdmasock.conf is all comments"
else
	not_ok "modprobe rdmasock" "$(dmesg | tail -n 5)"
fi

# 5. Every tool from PATH, each with its man page; rdmasock-run finds the installed library.
missing=""
for t in rdmasock-run:1 rdmasock-stat:1 rdmasock-ctl:8 rdmasock:7; do
	name=${t%:*} sec=${t#*:}
	[ "$name" = rdmasock ] || [ "$(command -v "$name")" = "/usr/bin/$name" ] ||
		[ "$(command -v "$name")" = "/usr/sbin/$name" ] || missing+=" $name(not in PATH)"
	[ -e "/usr/share/man/man$sec/$name.$sec.gz" ] || missing+=" $name.$sec(no man page)"
done
if [ -z "$missing" ]; then
	ok "rdmasock-run, rdmasock-stat, rdmasock-ctl in PATH; man pages for each and rdmasock(7)"
else
	not_ok "tools in PATH and their man pages" "missing:$missing"
fi

# 6. iperf3 through rdmasock-run from PATH: its connections on RC QPs, its bytes through rxe.
rdma0=$(cnt connections_rdma)
pkts0=$(cat /sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts)
rdmasock-run iperf3 -s -1 -B "$addr" -p 5201 > "$work/iperf3-s.log" 2>&1 &
pids+=($!)
if wait_port 5201; then
	rdmasock-run iperf3 -c "$addr" -p 5201 -t 3 -f m > "$work/iperf3.log" 2>&1 &
	client=$!
	qps=0
	# While it runs: its connection ends on RDMA, each on an RC QP of its own with the peer's
	# (rdmasock-stat -e from PATH: the local and remote QP numbers).
	for ((i = 0; i < 100 && qps < 2; i++)); do
		qps=$(rdmasock-stat -e -j --mode rdma --port 5201 | python3 -c 'import json, sys
print(sum(1 for r in json.load(sys.stdin) if r["lqpn"] > 1 and r["rqpn"] > 1))')
		[ "$qps" -ge 2 ] || sleep 0.1
	done
	wait "$client"
	st=$?
else
	st=1 qps=0
fi
stop_all
rdma=$(( $(cnt connections_rdma) - rdma0 ))
pkts=$(( $(cat /sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts) - pkts0 ))
grep -E 'receiver' "$work/iperf3.log" | sed 's/^/# /'
if [ "$st" = 0 ] && [ "$qps" -ge 2 ] && [ "$rdma" -ge 4 ] && [ "$pkts" -ge 1000 ]; then
	ok "rdmasock-run iperf3 over RDMA: $qps connection ends on RC QPs seen, $rdma RDMA connection ends, $pkts rxe packets"
else
	not_ok "rdmasock-run iperf3 over RDMA" "iperf3 exit $st, RC QPs $qps, RDMA connection ends $rdma," \
		"rxe packets $pkts" "$(tail -n 5 "$work/iperf3.log")"
fi

# 7. apt-get remove --purge: module, DKMS tree, tools, man pages and the options file all go.
modprobe -r rdmasock
if apt-get remove --purge -y -q rdmasock-dkms rdmasock-tools > "$work/remove.log" 2>&1; then
	left=$(ls -d /lib/modules/*/updates/dkms/rdmasock.ko* /usr/src/rdmasock-* /var/lib/dkms/rdmasock \
		/usr/bin/rdmasock-* /usr/sbin/rdmasock-* /usr/lib/rdmasock /usr/share/man/man*/rdmasock* \
		/etc/modprobe.d/rdmasock.conf /usr/share/doc/rdmasock-* 2>/dev/null)
	if [ -z "$left" ] && ! modinfo rdmasock > /dev/null 2>&1 &&
	   ! dpkg-query -W -f='${Status}\n' rdmasock-dkms rdmasock-tools 2>/dev/null | grep -q installed; then
		ok "apt-get remove --purge leaves nothing (module, DKMS tree, tools, man pages, conffile)"
	else
		not_ok "apt-get remove --purge leaves nothing" "left: $left" "modinfo: $(modinfo -n rdmasock 2>&1)"
	fi
else
	not_ok "apt-get remove --purge" "$(tail -n 20 "$work/remove.log")"
fi
rm -rf "$work"
tap_end
