#!/bin/bash
# Check that calls go down: every symbol one object of rdmasock.ko takes from another must come from
# a lower layer.  The layers are the ```layers block of docs/design.md, top first, one layer a line;
# files on one line are siblings (neither calls the other).  Reads the objects kbuild left in OBJDIR.
# Usage: kmod/layers.sh OBJDIR     (e.g. build/6.1.0-57-amd64/kmod)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
objdir=$1
spec=$(awk '/^```layers$/ { on = 1; next } on && /^```/ { exit } on' "$top/docs/design.md")
[ -n "$spec" ] || { echo "layers: no \`\`\`layers block in docs/design.md" >&2; exit 1; }

declare -A rank owner
r=0
while read -r line; do
	r=$((r + 1))
	for f in $line; do rank[$f]=$r; done
done <<< "$spec"

# Every source file has a layer, and every layer a file.
status=0
for c in "$top"/kmod/*.c; do
	f=$(basename "$c" .c)
	[ -n "${rank[$f]:-}" ] || { echo "layers: kmod/$f.c has no layer in docs/design.md" >&2; status=1; }
done
for f in "${!rank[@]}"; do
	[ -e "$top/kmod/$f.c" ] || { echo "layers: docs/design.md names $f, not in kmod/" >&2; status=1; }
done

for f in "${!rank[@]}"; do
	o=$objdir/$f.o
	[ -e "$o" ] || { echo "layers: no $o (build the module first)" >&2; exit 1; }
	while read -r _ _ sym; do owner[$sym]=$f; done < <(nm --defined-only "$o" | awk '$2 ~ /^[A-Z]$/')
done
for f in "${!rank[@]}"; do
	o=$objdir/$f.o
	while read -r sym; do
		d=${owner[$sym]:-}
		[ -n "$d" ] && [ "$d" != "$f" ] || continue
		if [ "${rank[$d]}" -le "${rank[$f]}" ]; then
			echo "layers: $f.c uses $sym of $d.c, which is not below it"
			status=1
		fi
	done < <(nm -u "$o" | awk '{ print $2 }' | sort -u)
done
[ $status = 0 ] && echo "layers: calls go down ($(wc -l <<< "$spec") layers)"
exit $status
