#!/usr/bin/env python3
"""Turn bench.jsonl into the table `make bench` prints: figures and ratios from one VM run."""
import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]


def get(test, carrier, key, size=None):
    for r in rows:
        if r["test"] == test and r["carrier"] == carrier and (size is None or r.get("size") == size):
            return r.get(key)
    return None


def fmt(v, unit=""):
    return "-" if v is None else f"{v:,.1f}{unit}"


def ratio(a, b):
    return "-" if a is None or not b else f"{a / b:.2f}"


print("== 64 B ping-pong round trip (us)")
print(f"{'carrier':<14}{'avg':>10}{'p50':>10}{'p99':>10}")
for c in ("tcp", "rdmasock", "rdmasock-busy", "ib_write_lat"):
    print(f"{c:<14}{fmt(get('pingpong', c, 'avg_us')):>10}{fmt(get('pingpong', c, 'p50_us')):>10}"
          f"{fmt(get('pingpong', c, 'p99_us')):>10}")
rs, busy, tcp, raw = (get("pingpong", c, "p50_us")
                      for c in ("rdmasock", "rdmasock-busy", "tcp", "ib_write_lat"))
print(f"ratios (p50): blocking rdmasock/tcp {ratio(rs, tcp)} (target <= 1), "
      f"busy-poll rdmasock/ib_write_lat {ratio(busy, raw)} (target <= 1.25)")
print()
print("== stream throughput (MB/s; msgs/s for 64 B)")
print(f"{'size':<8}{'tcp':>12}{'rdmasock':>12}{'ib_write_bw':>13}{'rs/tcp':>9}{'rs/raw':>9}")
for size in (65536, 4096, 64):
    key = "msgs_per_s" if size == 64 else "MBps"
    t, r, w = (get("stream", c, key, size) for c in ("tcp", "rdmasock", "ib_write_bw"))
    print(f"{size:<8}{fmt(t):>12}{fmt(r):>12}{fmt(w):>13}{ratio(r, t):>9}{ratio(r, w):>9}")
nv = get("stream", "nvme-rdma", "MBps")
print(f"in-kernel reference: NVMe over RDMA sequential reads {fmt(nv)} MB/s")
print()
print("== connections")
for c in ("tcp", "rdmasock"):
    print(f"{c:<10} set-up {fmt(get('connrate', c, 'conn_per_s'))}/s, time to first byte "
          f"{fmt(get('connrate', c, 'ttfb_us'))} us; 1000 open: "
          f"{get('conns', c, 'carried_data')} carried data, kernel "
          f"{fmt(get('conns', c, 'kernel_kb_per_conn'))} KiB/conn, registered "
          f"{fmt(get('conns', c, 'registered_kb_per_conn'))} KiB/conn")
print()
print("== unchanged programs")
for c in ("tcp", "rdmasock"):
    print(f"{c:<10} sockperf 64 B round trip {fmt(get('sockperf', c, 'avg_us'))} us, "
          f"iperf3 {fmt(get('iperf3', c, 'MBps'))} MB/s")
