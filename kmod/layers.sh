#!/bin/bash
# Check that calls go down: every symbol one object of rdmasock.ko takes from another must come from
# a lower layer, and every header a file includes must be its own or a lower layer's.  The layers
# are the ```layers block of docs/design.md, top first, one layer a line; files on one line are
# siblings (neither calls the other).  Reads the objects kbuild left in OBJDIR.
# Usage: kmod/layers.sh OBJDIR     (e.g. build/6.1.0-57-amd64/kmod)
#
# What it cannot see, by design: calls through pointers a higher layer handed down (completion
# handlers, a listener's new_child, the fence's callback) and work items it set up: those are the
# upward signals docs/design.md allows.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
objdir=$1
spec=$(awk '/^```layers$/ { on = 1; next } on && /^```/ { exit } on' "$top/docs/design.md")
[ -n "$spec" ] || { echo "layers: no \`\`\`layers block in docs/design.md" >&2; exit 1; }

declare -A rank owner
r=0 status=0
while read -r line; do
	r=$((r + 1))
	for f in $line; do
		[ -z "${rank[$f]:-}" ] || { echo "layers: $f named twice in docs/design.md" >&2; status=1; }
		rank[$f]=$r
	done
done <<< "$spec"

# Every source file has a layer, and every layer a file.
for c in "$top"/kmod/*.c; do
	f=$(basename "$c" .c)
	[ -n "${rank[$f]:-}" ] || { echo "layers: kmod/$f.c has no layer in docs/design.md" >&2; status=1; }
done
for f in "${!rank[@]}"; do
	[ -e "$top/kmod/$f.c" ] || { echo "layers: docs/design.md names $f, not in kmod/" >&2; status=1; }
done

# Objects of the sources as they are now, and what each defines.
for f in "${!rank[@]}"; do
	o=$objdir/$f.o
	[ -e "$o" ] && [ "$o" -nt "$top/kmod/$f.c" ] ||
		{ echo "layers: $o missing or older than kmod/$f.c (build the module first)" >&2; exit 1; }
	defs=$(nm --defined-only "$o") || { echo "layers: nm $o failed" >&2; exit 1; }
	while read -r _ type sym; do
		[[ $type == [A-Z] ]] && owner[$sym]=$f
	done <<< "$defs"
done
for f in "${!rank[@]}"; do
	undef=$(nm -u "$objdir/$f.o") || { echo "layers: nm $objdir/$f.o failed" >&2; exit 1; }
	for sym in $(awk '{ print $2 }' <<< "$undef" | sort -u); do
		d=${owner[$sym]:-}
		[ -n "$d" ] && [ "$d" != "$f" ] || continue
		if [ "${rank[$d]}" -le "${rank[$f]}" ]; then
			echo "layers: $f.c uses $sym of $d.c, which is not below it"
			status=1
		fi
	done
	# Headers: a layer's header is included only by itself and the layers above it.
	for h in $(sed -n 's/^#include "\([a-z_]*\)\.h"$/\1/p' "$top/kmod/$f.c"); do
		[ -n "${rank[$h]:-}" ] || continue	# rdmasock.h, proto.h, compat.h, trace.h
		if [ "$h" != "$f" ] && [ "${rank[$h]}" -le "${rank[$f]}" ]; then
			echo "layers: $f.c includes $h.h, which is not below it"
			status=1
		fi
	done
done
# A layer's header includes no other layer's.
for h in "$top"/kmod/*.h; do
	for i in $(sed -n 's/^#include "\([a-z_]*\)\.h"$/\1/p' "$h"); do
		[ -z "${rank[$i]:-}" ] || { echo "layers: $(basename "$h") includes $i.h"; status=1; }
	done
done
[ $status = 0 ] && echo "layers: calls go down ($(wc -l <<< "$spec") layers)"
exit $status
