#!/bin/bash
# make deb: rdmasock-dkms and rdmasock-tools built with Debian's tooling (dpkg-buildpackage,
# debhelper, dh-dkms) from a copy of the tree in OUT/src, then checked with lintian: an error
# fails the build.  debian/changelog is written there from VERSION (the one version).
# Usage: packaging/deb.sh OUT
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?output folder}
version=$(cat "$top/VERSION")
need=(dpkg-buildpackage dh dh_dkms lintian fakeroot clang bpftool)
for t in "${need[@]}"; do
	command -v "$t" >/dev/null || {
		echo "deb: $t missing: apt-get install dpkg-dev debhelper dh-dkms lintian fakeroot" \
		     "clang bpftool libbpf-dev" >&2
		exit 1
	}
done
rm -rf "$out"
src=$out/src/rdmasock-$version
mkdir -p "$src"
# The tree as it is (tracked and untracked, not its build outputs or its history).
tar -C "$top" --exclude=./build --exclude=./.git -cf - . | tar -C "$src" -xf -
when=$(git -C "$top" log -1 --format=%cD 2>/dev/null || date -R)
{
	echo "rdmasock ($version) unstable; urgency=medium"
	echo
	echo "  * rdmasock $version$(git -C "$top" describe --always --dirty 2>/dev/null |
		sed 's/^/ (git /; s/$/)/')."
	echo
	echo " -- rdmasock developers <rdmasock@lists.invalid>  $when"
} > "$src/debian/changelog"
(cd "$src" && unset MAKEFLAGS MAKELEVEL MFLAGS && dpkg-buildpackage -b -us -uc > "$out/build.log" 2>&1) || {
	tail -n 40 "$out/build.log" >&2
	echo "deb: dpkg-buildpackage failed (log: $out/build.log)" >&2
	exit 1
}
changes=$(ls "$out"/src/rdmasock_"$version"_*.changes)
lintian --fail-on error --tag-display-limit 0 "$changes" > "$out/lintian.log" 2>&1 ||
	{ cat "$out/lintian.log" >&2; echo "deb: lintian found errors" >&2; exit 1; }
grep -v '^running with root privileges' "$out/lintian.log" | sed 's/^/lintian: /' || true
mv "$out"/src/*.deb "$out/"
ls "$out"/*.deb
