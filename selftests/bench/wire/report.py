#!/usr/bin/env python3
"""make bench-wire's report: per kernel, row and carrier the median over rounds and its spread
(min..max), CPU per round trip or per MB, and whether every measurement ran as its carrier.

usage: report.py SUMMARY.json PLOTDIR WIRE.jsonl...
(prints the table; writes the summary, PLOTDIR/pingpong.dat and PLOTDIR/stream.dat for gnuplot)
"""
import json
import statistics
import sys

CARRIERS = ["tcp", "rsockets", "smc-r", "rdmasock"]
# Peers the bench cannot run, per kernel series, with the reason.
NOT_RUN = {
    "smc-r": "not measured yet: bench-wire's first slice has TCP, rsockets and rdmasock "
             "(SMC-R v2 needs a UEID on both hosts; on 6.1 it does not run on stock rxe)",
}


def med(vals):
    return statistics.median(vals) if vals else None


def main():
    summary_path, plot_dir, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
    recs = []
    for p in paths:
        with open(p) as f:
            recs += [json.loads(line) for line in f if line.strip()]
    kernels = sorted({r["kernel"] for r in recs})
    rows = [("pingpong", None, "p50_us", "cpu_us_per_round_trip", "64 B ping-pong p50 (us)"),
            ("pingpong", None, "p99_us", None, "64 B ping-pong p99 (us)"),
            ("stream", 65536, "mbit_s", "cpu_ms_per_mb", "64 KiB stream (Mbit/s)"),
            ("stream", 4096, "mbit_s", "cpu_ms_per_mb", "4 KiB stream (Mbit/s)")]
    summary = {"kernels": {}, "not_run": NOT_RUN, "all_ran_as_carrier": True}
    plot = []
    for k in kernels:
        print("\n== %s (two VMs, rxe, TCG: ratios only)" % k)
        print("%-26s %s" % ("", "".join("%-24s" % c for c in CARRIERS)))
        ks = summary["kernels"][k] = {}
        for row, size, key, cpukey, label in rows:
            cells, cpus = [], []
            for c in CARRIERS:
                sel = [r for r in recs if r["kernel"] == k and r["carrier"] == c and
                       r["row"] == row and r["size"] == size]
                if not sel:
                    cells.append("-")
                    cpus.append("-")
                    continue
                if not all(r["ran_as_carrier"] for r in sel):
                    summary["all_ran_as_carrier"] = False
                vals = [r[key] for r in sel if key in r and r["ran_as_carrier"]]
                cv = [r[cpukey] for r in sel if cpukey and cpukey in r and r["ran_as_carrier"]]
                m = med(vals)
                ks.setdefault(c, {})["%s_%d_%s" % (row, size or 64, key)] = {
                    "median": m, "min": min(vals) if vals else None,
                    "max": max(vals) if vals else None, "n": len(vals), "of": len(sel),
                    "cpu_median": med(cv), "cpu_unit": cpukey}
                cells.append("-" if m is None else "%.0f (%.0f..%.0f)%s" % (
                    m, min(vals), max(vals), "" if len(vals) == len(sel) else " !"))
                cpus.append("-" if not cv else "%.1f" % med(cv))
                if key in ("p50_us", "mbit_s"):
                    plot.append((k, row, size, c, m))
            print("%-26s %s" % (label, "".join("%-24s" % x for x in cells)))
            if cpukey:
                unit = "us CPU / round trip" if cpukey == "cpu_us_per_round_trip" else \
                    "ms CPU / MB"
                print("%-26s %s" % ("  " + unit, "".join("%-24s" % x for x in cpus)))
    for c, why in NOT_RUN.items():
        print("%s: %s" % (c, why))
    bad = [r for r in recs if not r["ran_as_carrier"]]
    for r in bad:
        print("NOT AS ITS CARRIER: %s round %d %s %s: %s" % (r["kernel"], r["round"],
              r["carrier"], r["row"], r.get("why")))
    with open(summary_path, "w") as f:
        json.dump(summary, f, indent=1)
    # One line per kernel (and stream size), a column per carrier that ran: gnuplot histograms.
    ran = [c for c in CARRIERS if c not in NOT_RUN]
    for name, row in (("pingpong", "pingpong"), ("stream", "stream")):
        with open("%s/%s.dat" % (plot_dir, name), "w") as f:
            f.write("# %s %s\n" % (name, " ".join(ran)))
            for k in kernels:
                for size in sorted({p[2] for p in plot if p[1] == row}, key=lambda x: x or 0):
                    vals = {p[3]: p[4] for p in plot if p[0] == k and p[1] == row and p[2] == size}
                    tag = ".".join(k.split(".")[:2]) + ("" if size is None else
                                                            "/%dK" % (size // 1024))
                    f.write("%s %s\n" % (tag, " ".join("NaN" if vals.get(c) is None else
                                                       "%g" % vals[c] for c in ran)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
