#!/bin/bash
# `make bench-wire`: the carriers side by side across the runner's two-VM wire (#23), on each kernel:
# TCP, rsockets (rdma-core's librspreload, with rs-compat.so for two of its bugs), SMC-R v2 (where
# it runs: 6.12; AF_SMC through smc-preload.so, a UEID through wire/smc.py) and rdmasock, in
# interleaved rounds (selftests/bench/wire/wire.py): 64 B ping-pong (and busy-polling), 64 KiB and
# 4 KiB streams, connection set-up (wire/setup-rate.c), redis-benchmark SET and GET.  Results: build/bench-wire/<time>/ (one JSON
# line per measurement, summary.json with medians and spreads, a plot when gnuplot is there).
# RDMASOCK_WIRE_KERNELS (default "6.1 6.12"), RDMASOCK_WIRE_ROUNDS (3), RDMASOCK_WIRE_SECONDS (4),
# RDMASOCK_WIRE_ROWS (default all: pingpong,pingpong_busy,stream,setup,redis, or a subset).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
kernels=${RDMASOCK_WIRE_KERNELS:-6.1 6.12}
rounds=${RDMASOCK_WIRE_ROUNDS:-3}
secs=${RDMASOCK_WIRE_SECONDS:-4}
rows=${RDMASOCK_WIRE_ROWS:-all}
# (Its packages: selftests/deps.sh --bench, which make runs first.)
mkdir -p "$top/build/bench-wire"
gcc -O2 -Wall -Wextra -shared -fPIC -o "$top/build/bench-wire/rs-compat.so" \
	"$top/selftests/bench/wire/rs-compat.c" -ldl || exit 1
gcc -O2 -Wall -Wextra -o "$top/build/bench-wire/setup-rate" \
	"$top/selftests/bench/wire/setup-rate.c" || exit 1
gcc -O2 -Wall -Wextra -shared -fPIC -o "$top/build/bench-wire/smc-preload.so" \
	"$top/selftests/bench/wire/smc-preload.c" -ldl || exit 1
out=$top/build/bench-wire/$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
results=()
for k in $kernels; do
	"$top/selftests/vm/run" --kernel "$k" --two-vm --timeout 1800 --out "$out/$k" -- \
		"$top/selftests/bench/wire/wire.py" "$rounds" "$secs" "$rows" > "$out/vm-$k.log" 2>&1
	st=$?
	grep -h '^wire: ' "$out/$k/client/console.log" 2>/dev/null | sed "s/^/[$k] /"
	[ -s "$out/$k/client/wire.jsonl" ] && results+=("$out/$k/client/wire.jsonl")
	[ $st = 0 ] || echo "bench-wire: the $k run failed (status $st, log: $out/vm-$k.log)"
done
[ ${#results[@]} -gt 0 ] || { echo "bench-wire: no results"; exit 1; }
python3 "$top/selftests/bench/wire/report.py" "$out/summary.json" "$out" "${results[@]}" |
	tee "$out/report.txt"
rst=${PIPESTATUS[0]}
if command -v gnuplot > /dev/null; then
	for what in pingpong stream; do
		[ "$what" = pingpong ] && y="one-way p50 (us)" || y="Mbit/s"
		# A column per carrier that ran (report.py's header line names them).
		plot=$(head -1 "$out/$what.dat" | awk -v f="$out/$what.dat" '{
			for (i = 3; i <= NF; i++)
				printf "%s\"%s\" using %d%s title \"%s\"", (i > 3 ? ", " : "plot "),
					(i > 3 ? "" : f), i - 1, (i > 3 ? "" : ":xtic(1)"), $i }')
		gnuplot <<PLOT
set terminal png size 900,500
set output "$out/$what.png"
set title "two VMs on one wire, rxe under TCG: $what, medians of $rounds rounds"
set ylabel "$y"; set yrange [0:*]; set grid y; set key top left
set style data histogram; set style histogram cluster gap 1; set style fill solid border -1
$plot
PLOT
		echo "bench-wire: plot $out/$what.png"
	done
fi
echo "bench-wire: results in $out"
exit "$rst"
