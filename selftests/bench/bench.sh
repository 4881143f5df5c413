#!/bin/bash
# `make bench`: boot the VM once (2 vCPUs), run every measurement, print one table with the figures
# and the ratios, keep the results as JSON and a latency plot (PNG) in build/bench/.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
# (Its packages: selftests/deps.sh --bench, which make runs first.)
out=$top/build/bench/$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
"$top/selftests/vm/run" --kernel "${RDMASOCK_BENCH_KERNEL:-6.1}" --mem 4096 --timeout 1800 \
	--out "$out" -- "$top/selftests/bench/inside.sh" > "$out/vm.log" 2>&1 ||
	{ tail -n 30 "$out/vm.log"; echo "bench: the VM run failed (log: $out/vm.log)"; exit 1; }
# With an earlier run on record, the report adds each ratio's spread between the two runs.
earlier=()
[ -s "$top/build/bench/latest.jsonl" ] && earlier=("$top/build/bench/latest.jsonl")
python3 "$top/selftests/bench/report.py" "$out/bench.jsonl" "${earlier[@]}" | tee "$out/report.txt"
cp "$out/bench.jsonl" "$top/build/bench/latest.jsonl"
if command -v gnuplot > /dev/null && [ -s "$out/lat-tcp.txt" ] && [ -s "$out/lat-rdma.txt" ]; then
	gnuplot <<PLOT
set terminal png size 900,500
set output "$out/latency.png"
set title "64 B ping-pong round trip, CDF (rxe, TCG VM, 2 vCPUs)"
set xlabel "round trip (us)"; set ylabel "fraction"; set grid; set key bottom right
set logscale x
plot "< sort -n $out/lat-tcp.txt | awk -v n=$(wc -l < "$out/lat-tcp.txt") '{print \$1, NR/n}'" with lines lw 2 title "kernel TCP", \
     "< sort -n $out/lat-rdma.txt | awk -v n=$(wc -l < "$out/lat-rdma.txt") '{print \$1, NR/n}'" with lines lw 2 title "rdmasock", \
     "< sort -n $out/lat-rdma-busy.txt | awk -v n=$(wc -l < "$out/lat-rdma-busy.txt") '{print \$1, NR/n}'" with lines lw 2 title "rdmasock, busy poll"
PLOT
	echo "bench: plot $out/latency.png"
fi
echo "bench: results in $out"
