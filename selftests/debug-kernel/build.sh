#!/bin/bash
# Build (once) the debug kernel of the debug-kernel lane: Debian's linux-source-6.1, defconfig plus
# config.fragment (KASAN, lockdep, kmemleak, list/object debugging; subsystems the VM never uses
# off).  Cached outside the clone, keyed by its inputs, in
# $RDMASOCK_KERNEL_CACHE (default /var/cache/rdmasock/debug-kernel)/<source version>-<hash of the
# fragment and this script>/, so a machine that built it once (a developer's, or CI's in a fresh
# clone) never builds it again; build/debug-kernel/current points at it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
tarball=$(ls /usr/src/linux-source-6.1*.tar.xz | head -n 1)
srcver=$(dpkg-query -W -f='${Version}' linux-source-6.1)
hash=$(cat "$here/config.fragment" "$here/build.sh" | sha256sum | cut -c1-12)
cache=${RDMASOCK_KERNEL_CACHE:-/var/cache/rdmasock/debug-kernel}
dir=$cache/$srcver-$hash
mkdir -p "$top/build/debug-kernel"
if [ -s "$dir/release" ] && [ -s "$dir/bzImage" ]; then
	ln -sfn "$dir" "$top/build/debug-kernel/current"
	echo "debug kernel: cached ($(cat "$dir/release"))"
	exit 0
fi
mkdir -p "$dir"
if [ ! -d "$dir/src" ]; then
	echo "debug kernel: extracting $(basename "$tarball")"
	tar -xJf "$tarball" -C "$dir"
	mv "$dir"/linux-source-* "$dir/src"
fi
cd "$dir/src"
make -s defconfig
scripts/kconfig/merge_config.sh -m .config "$here/config.fragment" > /dev/null
make -s olddefconfig
# Every fragment line must have survived the merge, or the lane would test less (or build more)
# than it says.
missing=$(grep -E '^CONFIG_[A-Z0-9_]+=[yn]$' "$here/config.fragment" | while read -r l; do
	case $l in
	*=y) grep -qx "$l" .config || echo "$l" ;;
	*=n) ! grep -q "^${l%=n}=y" .config || echo "$l" ;;
	esac; done)
[ -z "$missing" ] || { echo "debug kernel: config lost: $missing" >&2; exit 1; }
echo "debug kernel: building (about 25 minutes on 2 idle cores)"
make -s -j"$(nproc)" bzImage modules
[ -s arch/x86/boot/bzImage ] || { echo "debug kernel: build failed" >&2; exit 1; }
cp arch/x86/boot/bzImage "$dir/bzImage"
make -s kernelrelease > "$dir/release"
ln -sfn "$dir" "$top/build/debug-kernel/current"
echo "debug kernel: built $(cat "$dir/release")"
