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


def med(vals):
    return statistics.median(vals) if vals else None


def where(k, recs, ks):
    """Where the CPU went: each guest's busiest tasks (wire.py's snap), summed over the rounds, as
    a share of both guests' busy time.  On 6.12 rxe's work shows as kworker-rxe_wq."""
    print("where the CPU went (busiest tasks, share of both guests' busy time over all rounds):")
    for row, size, label in (("pingpong", None, "ping-pong"), ("stream", 65536, "64 KiB stream"),
                             ("setup", None, "set-up")):
        for c in CARRIERS:
            sel = [r for r in recs if r["kernel"] == k and r["carrier"] == c and
                   r["row"] == row and r["size"] == size and r["ran_as_carrier"] and
                   "busiest" in r["client"]]
            total = sum(r["cpu_s"]["client"] + r["cpu_s"]["server"] for r in sel)
            if not sel or total <= 0:
                continue
            parts, out = [], {}
            for side in ("client", "server"):
                by = {}
                for r in sel:
                    for name, sec in r[side]["busiest"]:
                        by[name] = by.get(name, 0) + sec
                top = sorted(by.items(), key=lambda x: -x[1])[:3]
                out[side] = [[n, round(sec / total, 3)] for n, sec in top]
                parts.append("%s: %s" % (side, ", ".join("%s %.0f %%" % (n, 100 * sec / total)
                                                        for n, sec in top)))
            ks.setdefault(c, {})["%s_%s_busiest" % (row, size or 64)] = out
            print("  %-14s %-9s %s" % (label, c, "; ".join(parts)))


def main():
    summary_path, plot_dir, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
    recs = []
    for p in paths:
        with open(p) as f:
            recs += [json.loads(line) for line in f if line.strip()]
    # Carriers that cannot run on a kernel, with the reason (wire.py's smc_setup()).
    not_run, cannot = {}, {}
    for r in recs:
        if "not_run" in r and "row" in r:
            cannot.setdefault(r["kernel"], {})[(r["carrier"], r["row"])] = r["not_run"]
        elif "not_run" in r:
            not_run.setdefault(r["kernel"], {})[r["carrier"]] = r["not_run"]
    recs = [r for r in recs if "not_run" not in r]
    kernels = sorted({r["kernel"] for r in recs})
    rows = [("pingpong", None, "p50_us", "cpu_us_per_round_trip", "64 B ping-pong p50 (us)"),
            ("pingpong", None, "p99_us", None, "64 B ping-pong p99 (us)"),
            ("pingpong_busy", None, "p50_us", "cpu_us_per_round_trip", "  busy-polling p50 (us)"),
            ("stream", 65536, "mbit_s", "cpu_ms_per_mb", "64 KiB stream (Mbit/s)"),
            ("stream", 4096, "mbit_s", "cpu_ms_per_mb", "4 KiB stream (Mbit/s)"),
            ("setup", None, "per_s", "cpu_us_per_connection", "set-up (connections/s)"),
            ("setup", None, "p50_us", None, "  connect to 1st byte (us)"),
            ("redis", "set", "rps", "cpu_us_per_request", "redis SET (requests/s)"),
            ("redis", "get", "rps", "cpu_us_per_request", "redis GET (requests/s)")]
    units = {"cpu_us_per_round_trip": "us CPU / round trip", "cpu_ms_per_mb": "ms CPU / MB",
             "cpu_us_per_connection": "us CPU / connection",
             "cpu_us_per_request": "us CPU / request"}
    summary = {"kernels": {}, "not_run": not_run, "all_ran_as_carrier": True,
               "rows_not_run": {k: {"%s %s" % cr: why for cr, why in v.items()}
                                for k, v in cannot.items()}}
    plot = []
    for k in kernels:
        print("\n== %s (two VMs, rxe, TCG: ratios only)" % k)
        print("%-26s %s" % ("", "".join("%-24s" % c for c in CARRIERS)))
        ks = summary["kernels"][k] = {}
        for row, size, key, cpukey, label in rows:
            cells, cpus, soft = [], [], []
            for c in CARRIERS:
                sel = [r for r in recs if r["kernel"] == k and r["carrier"] == c and
                       r["row"] == row and r["size"] == size]
                if not sel:
                    cells.append("not run" if c in not_run.get(k, {}) or
                                 (c, row) in cannot.get(k, {}) else "-")
                    cpus.append("-")
                    soft.append("-")
                    continue
                if not all(r["ran_as_carrier"] for r in sel):
                    summary["all_ran_as_carrier"] = False
                vals = [r[key] for r in sel if key in r and r["ran_as_carrier"]]
                cv = [r[cpukey] for r in sel if cpukey and cpukey in r and r["ran_as_carrier"]]
                # Softirq's share of the CPU: rxe's work on 6.1 (its tasklets) with the NIC's.
                sv = [r["cpu_s"]["softirq"] / (r["cpu_s"]["client"] + r["cpu_s"]["server"])
                      for r in sel if r["ran_as_carrier"] and r["cpu_s"]["client"] +
                      r["cpu_s"]["server"] > 0]
                m = med(vals)
                ks.setdefault(c, {})["%s_%s_%s" % (row, size or 64, key)] = {
                    "median": m, "min": min(vals) if vals else None,
                    "max": max(vals) if vals else None, "n": len(vals), "of": len(sel),
                    "cpu_median": med(cv), "cpu_unit": cpukey,
                    "softirq_share": None if not sv else round(med(sv), 3)}
                cells.append("-" if m is None else "%.0f (%.0f..%.0f)%s" % (
                    m, min(vals), max(vals), "" if len(vals) == len(sel) else " !"))
                cpus.append("-" if not cv else "%.1f" % med(cv))
                soft.append("-" if not sv else "%.0f %%" % (100 * med(sv)))
                if row in ("pingpong", "stream") and key in ("p50_us", "mbit_s"):
                    plot.append((k, row, size, c, m))
            print("%-26s %s" % (label, "".join("%-24s" % x for x in cells)))
            if cpukey:
                print("%-26s %s" % ("  " + units[cpukey], "".join("%-24s" % x for x in cpus)))
                print("%-26s %s" % ("    of it softirq", "".join("%-24s" % x for x in soft)))
        where(k, recs, ks)
        for c, why in sorted(not_run.get(k, {}).items()):
            print("%s not run: %s" % (c, why))
        for (c, row), why in sorted(cannot.get(k, {}).items()):
            print("%s %s not run: %s" % (c, row, why))
    bad = [r for r in recs if not r["ran_as_carrier"]]
    for r in bad:
        print("NOT AS ITS CARRIER: %s round %d %s %s: %s" % (r["kernel"], r["round"],
              r["carrier"], r["row"], r.get("why")))
    with open(summary_path, "w") as f:
        json.dump(summary, f, indent=1)
    # One line per kernel (and stream size), a column per carrier that ran: gnuplot histograms.
    ran = [c for c in CARRIERS if any(r["carrier"] == c for r in recs)]
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
