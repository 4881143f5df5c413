#!/bin/bash
# Install what rdmasock needs to build and test on Debian 12 (idempotent), and take the kselftest
# harness and checkpatch.pl from Debian's linux-source-6.1 into an ignored cache folder.
# Usage: deps.sh [--if-missing] [--packaging] [--bench] CACHE_DIR
set -euo pipefail
# --packaging: also what make deb and make check-install need (Debian's packaging tools, DKMS).
# --bench: also what make bench and make bench-wire need (plots, the raw-verbs and NVMe rows).
if_missing=0 packaging=0 bench=0
while [ $# -gt 1 ]; do
	case $1 in
	--if-missing) if_missing=1; shift ;;
	--packaging) packaging=1; shift ;;
	--bench) bench=1; shift ;;
	*) break ;;
	esac
done
cache=${1:?cache dir}

PKGS=(linux-image-amd64 linux-headers-amd64 linux-image-6.12-amd64 linux-headers-6.12-amd64
	qemu-system-x86 busybox-static rdma-core ibverbs-utils rdmacm-utils perftest libibverbs-dev
	librdmacm-dev iproute2 sparse linux-source-6.1 kmod xz-utils cpio gcc make bc flex bison
	libelf-dev procps iperf3 sockperf redis-server redis-tools nginx openssh-server
	openssh-client curl python3 libssl-dev libpython3.11-testsuite clang libbpf-dev bpftool
	golang-go openssl postgresql)
[ $packaging = 1 ] && PKGS+=(dpkg-dev debhelper dh-dkms dkms lintian fakeroot man-db)
[ $bench = 1 ] && PKGS+=(gnuplot-nox nvme-cli perftest librdmacm1)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}"
	[ "$(id -u)" = 0 ] || { echo "deps: run as root (apt-get install)" >&2; exit 1; }
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
elif [ $if_missing = 0 ]; then
	echo "deps: all packages present"
fi

if [ ! -s "$cache/selftests/kselftest_harness.h" ] || [ ! -s "$cache/scripts/checkpatch.pl" ]; then
	tarball=$(ls /usr/src/linux-source-6.1*.tar.xz | head -n 1)
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	tar -xJf "$tarball" -C "$tmp" --wildcards \
		'*/tools/testing/selftests/kselftest_harness.h' '*/tools/testing/selftests/kselftest.h' \
		'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' '*/scripts/const_structs.checkpatch'
	src=$(echo "$tmp"/linux-source-*)
	mkdir -p "$cache/selftests" "$cache/scripts"
	cp "$src"/tools/testing/selftests/kselftest{_harness,}.h "$cache/selftests/"
	cp "$src"/scripts/{checkpatch.pl,spelling.txt,const_structs.checkpatch} "$cache/scripts/"
	echo "deps: kselftest harness and checkpatch.pl taken from $(basename "$tarball")"
fi
