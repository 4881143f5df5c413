#!/usr/bin/env python3
"""Turn bench.jsonl into the table `make bench` prints: figures and ratios from one VM run.

report.py RUN.jsonl [EARLIER.jsonl]: with an earlier run, also the spread of every ratio between the
two runs (ratios are what `make bench` promises to reproduce, within about 10 %).
"""
import json
import sys


def load(path):
    return [json.loads(line) for line in open(path) if line.strip()]


def values(rows, test, carrier, key, size=None):
    return [r[key] for r in rows if r["test"] == test and r["carrier"] == carrier and
            (size is None or r.get("size") == size) and r.get(key) is not None]


def getter(rows):
    """A figure is the median of its rounds."""
    def get(test, carrier, key, size=None):
        v = sorted(values(rows, test, carrier, key, size))
        return v[len(v) // 2] if v else None
    return get


def round_spreads(rows):
    """Within one run: (max - min) / median of each figure measured in several rounds."""
    out = {}
    for r in rows:
        for key in ("p50_us", "MBps", "msgs_per_s", "conn_per_s"):
            if key not in r or (r["test"] == "stream" and (key == "MBps") == (r.get("size") == 64)):
                continue
            name = (r["test"], r["carrier"], r.get("size"), key)
            if name in out:
                continue
            v = sorted(values(rows, *name[:2], key, r.get("size")))
            if len(v) > 1 and v[len(v) // 2]:
                out[name] = (v[-1] - v[0]) / v[len(v) // 2]
    return out


def fmt(v):
    return "-" if v is None else f"{v:,.1f}"


def ratio(a, b):
    return None if a is None or not b else a / b


def rfmt(v):
    return "-" if v is None else f"{v:.2f}"


def ratios(get):
    """The ratios the targets are stated in, name -> (value, target text)."""
    pp = {c: get("pingpong", c, "p50_us") for c in ("tcp", "rdmasock", "rdmasock-busy", "ib_write_lat")}
    r = {
        "ping-pong p50 rdmasock/tcp": (ratio(pp["rdmasock"], pp["tcp"]), "<= 1"),
        "ping-pong p50 busy-poll/ib_write_lat": (ratio(pp["rdmasock-busy"], pp["ib_write_lat"]), "<= 1.25"),
        "ping-pong p50 busy-poll/tcp": (ratio(pp["rdmasock-busy"], pp["tcp"]), ""),
        # What a socket layer adds at the least: 4 socket calls' round trip on a UNIX socket
        # pair that spins, with no transport at all, against raw verbs' whole round trip.
        "ping-pong p50 unix-spin/ib_write_lat": (ratio(get("pingpong", "unix-spin", "p50_us"),
                                                        pp["ib_write_lat"]), ""),
    }
    for size in (65536, 4096):
        rs = get("stream", "rdmasock", "MBps", size)
        r[f"stream {size} rdmasock/ib_write_bw"] = (ratio(rs, get("stream", "ib_write_bw", "MBps", size)),
                                                  ">= 0.9" if size == 65536 else "")
        r[f"stream {size} rdmasock/tcp"] = (ratio(rs, get("stream", "tcp", "MBps", size)), "")
    r["stream 65536 growing/fixed rings"] = (ratio(get("stream", "rdmasock", "MBps", 65536),
                                                   get("stream", "rdmasock-nogrow", "MBps", 65536)), "")
    r["idle registered KiB per connection end"] = (get("conns", "rdmasock", "registered_kb_per_conn"),
                                                   "<= 64")
    for size in (65536, 4096, 64):
        key = "msgs_per_s" if size == 64 else "MBps"
        r[f"stream {size} autocork on/off"] = (ratio(get("stream", "rdmasock", key, size),
                                                    get("stream", "rdmasock-noautocork", key, size)), "")
    r["ping-pong p50 autocork on/off"] = (ratio(pp["rdmasock"], get("pingpong", "rdmasock-noautocork", "p50_us")), "")
    r["stream 64 msgs/s rdmasock/tcp"] = (ratio(get("stream", "rdmasock", "msgs_per_s", 64),
                                                get("stream", "tcp", "msgs_per_s", 64)), ">= 1")
    r["stream 64 msgs/s rdmasock/ib_write_bw"] = (ratio(get("stream", "rdmasock", "msgs_per_s", 64),
                                                        get("stream", "ib_write_bw", "msgs_per_s", 64)), "")
    r["set-up rate rdmasock/tcp"] = (ratio(get("connrate", "rdmasock", "conn_per_s"),
                                           get("connrate", "tcp", "conn_per_s")), ">= 0.5")
    r["time to first byte rdmasock/tcp"] = (ratio(get("connrate", "rdmasock", "ttfb_us"),
                                                  get("connrate", "tcp", "ttfb_us")), "<= 2")
    r["set-up rate fresh (park_ms 0)/tcp"] = (ratio(get("connrate", "rdmasock-fresh", "conn_per_s"),
                                                    get("connrate", "tcp", "conn_per_s")), "")
    r["time to first byte fresh/tcp"] = (ratio(get("connrate", "rdmasock-fresh", "ttfb_us"),
                                               get("connrate", "tcp", "ttfb_us")), "")
    r["kernel KiB per idle end beyond the rings"] = (
        None if get("conns", "rdmasock", "kernel_kb_per_conn") is None else
        get("conns", "rdmasock", "kernel_kb_per_conn") - get("conns", "rdmasock", "registered_kb_per_conn"),
        "<= 64")
    r["rdmasock 10k connections carrying data"] = (get("conns", "rdmasock-10k", "carried_data"),
                                                       "10000")
    r["sockperf round trip rdmasock/tcp"] = (ratio(get("sockperf", "rdmasock", "avg_us"),
                                                   get("sockperf", "tcp", "avg_us")), "")
    r["iperf3 rdmasock/tcp"] = (ratio(get("iperf3", "rdmasock", "MBps"), get("iperf3", "tcp", "MBps")), "")
    return r


def report(rows):
    get = getter(rows)
    print("== 64 B ping-pong round trip (us)")
    print(f"{'carrier':<20}{'avg':>10}{'p50':>10}{'p99':>10}")
    for c in ("tcp", "rdmasock", "rdmasock-busy", "rdmasock-noautocork", "ib_write_lat", "unix-spin"):
        print(f"{c:<20}{fmt(get('pingpong', c, 'avg_us')):>10}{fmt(get('pingpong', c, 'p50_us')):>10}"
              f"{fmt(get('pingpong', c, 'p99_us')):>10}")
    print()
    print("== stream throughput (MB/s; msgs/s for 64 B)")
    print(f"{'size':<8}{'tcp':>12}{'rdmasock':>12}{'no autocork':>13}{'ib_write_bw':>13}{'rs/tcp':>9}"
          f"{'rs/raw':>9}")
    for size in (65536, 4096, 64):
        key = "msgs_per_s" if size == 64 else "MBps"
        t, r, n, w = (get("stream", c, key, size)
                      for c in ("tcp", "rdmasock", "rdmasock-noautocork", "ib_write_bw"))
        print(f"{size:<8}{fmt(t):>12}{fmt(r):>12}{fmt(n):>13}{fmt(w):>13}{rfmt(ratio(r, t)):>9}"
              f"{rfmt(ratio(r, w)):>9}")
    print(f"65536 B with rings of the SO_RCVBUF size from the start (grow_rings=0): "
          f"{fmt(get('stream', 'rdmasock-nogrow', 'MBps', 65536))} MB/s")
    print(f"in-kernel reference: NVMe over RDMA sequential reads {fmt(get('stream', 'nvme-rdma', 'MBps'))} MB/s")
    print()
    print("== connections")
    for c in ("tcp", "rdmasock", "rdmasock-fresh"):
        print(f"{c:<16} set-up {fmt(get('connrate', c, 'conn_per_s'))}/s, "
              f"time to first byte {fmt(get('connrate', c, 'ttfb_us'))} us")
    # #47's rows: against a host never contacted before (fresh: park_ms 0) and one with parked
    # QPs (reused); targets: rate >= 0.9x TCP's, first byte <= 1.1x, time to RDMA (reused) no
    # more than TCP's own first byte.
    tcp_rate, tcp_fb = get("connrate", "tcp", "conn_per_s"), get("connrate", "tcp", "ttfb_us")
    for name, c in (("fresh", "rdmasock-fresh"), ("reused", "rdmasock")):
        print(f"set-up {name} rdmasock/tcp: rate {rfmt(ratio(get('connrate', c, 'conn_per_s'), tcp_rate))}, "
              f"first byte {rfmt(ratio(get('connrate', c, 'ttfb_us'), tcp_fb))}")
    for name, c in (("fresh", "rdmasock-fresh"), ("reused", "rdmasock")):
        n = [r for r in rows if r["test"] == "connrate" and r["carrier"] == c]
        print(f"time to RDMA {name}: {fmt(get('connrate', c, 'to_rdma_us'))} us (tcp first byte "
              f"{fmt(tcp_fb)} us); on RDMA: {sum(r.get('rdma_conns', 0) for r in n)} of "
              f"{sum(r['count'] for r in n)} connections")
    for c in ("tcp", "rdmasock", "rdmasock-nogrow", "tcp-10k", "rdmasock-10k"):
        print(f"{c:<16} {get('conns', c, 'count')} open at once: {get('conns', c, 'carried_data')} carried "
              f"data; per connection end: kernel memory {fmt(get('conns', c, 'kernel_kb_per_conn'))} "
              f"KiB, registered {fmt(get('conns', c, 'registered_kb_per_conn'))} KiB; opened "
              f"{fmt(get('conns', c, 'open_per_s'))}/s")
    print()
    print("== unchanged programs")
    for c in ("tcp", "rdmasock"):
        print(f"{c:<16} sockperf 64 B round trip {fmt(get('sockperf', c, 'avg_us'))} us, "
              f"iperf3 {fmt(get('iperf3', c, 'MBps'))} MB/s")
    print()


rows = load(sys.argv[1])
report(rows)
spreads = round_spreads(rows)
if spreads:
    print("== spread between the rounds of this run, (max - min) / median")
    for (test, carrier, size, key), v in sorted(spreads.items(), key=lambda kv: -kv[1]):
        print(f"{test:<10}{carrier:<22}{str(size or ''):<9}{key:<12}{v * 100:>5.0f} %")
    print()
now = ratios(getter(rows))
before = ratios(getter(load(sys.argv[2]))) if len(sys.argv) > 2 else None
print("== ratios" + (" (this run, the earlier run, spread)" if before else ""))
for name, (v, target) in now.items():
    line = f"{name:<42}{rfmt(v):>8}"
    if before:
        b = before[name][0]
        spread = "-" if v is None or b is None else f"{abs(v - b) / max(v, b) * 100:.0f} %"
        line += f"{rfmt(b):>8}{spread:>7}"
    print(line + (f"   target {target}" if target else ""))
