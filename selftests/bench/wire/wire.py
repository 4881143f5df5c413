#!/usr/bin/env python3
"""make bench-wire, inside the two guests (selftests/vm/run --two-vm): every carrier in each round,
rounds interleaved (the carriers' order rotates), unchanged sockperf and iperf3 over each.

The server guest runs a sockperf and an iperf3 server per carrier and a control port that answers
"snap" with its CPU times and counters; the client runs the rows, snapping both guests around each,
and writes one JSON line per measurement to $RDMASOCK_OUT/wire.jsonl.  Each measurement is checked
to have run as its carrier: rxe's packet counters moved for the RDMA carriers (and stayed still for
TCP), and rdmasock's connections were RDMA connections with no fallback.

usage (in both guests): wire.py ROUNDS SECONDS
"""
import json
import os
import socket
import subprocess
import sys
import time

TOP = os.environ["RDMASOCK_TOP"]
BIN = os.path.join(TOP, "build", "userlib")
COMPAT = os.path.join(TOP, "build", "bench-wire", "rs-compat.so")
RSPRELOAD = "/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so"
HWC = "/sys/class/infiniband/rxe0/ports/1/hw_counters"
CARRIERS = ["tcp", "rsockets", "rdmasock"]
CTL_PORT = 11399
STREAMS = [65536, 4096]
CLK_TCK = os.sysconf("SC_CLK_TCK")


def prefix(carrier):
    if carrier == "rsockets":
        return ["env", "LD_PRELOAD=%s:%s" % (COMPAT, RSPRELOAD)]
    if carrier == "rdmasock":
        return [os.path.join(BIN, "rdmasock-run"), "-q", "--"]
    return []


def sockperf_port(carrier):
    return 11300 + CARRIERS.index(carrier)


def iperf_port(carrier):
    return 5300 + CARRIERS.index(carrier)


def snap():
    """CPU seconds by kind (all CPUs), rxe's packets, rdmasock's connection counters."""
    with open("/proc/stat") as f:
        cpu = f.readline().split()[1:8]
    names = ["user", "nice", "system", "idle", "iowait", "irq", "softirq"]
    s = {"cpu": {n: int(v) / CLK_TCK for n, v in zip(names, cpu)}, "t": time.time()}
    pkts = 0
    for c in ("sent_pkts", "rcvd_pkts"):
        try:
            with open(os.path.join(HWC, c)) as f:
                pkts += int(f.read())
        except OSError:
            pass
    s["rxe_pkts"] = pkts
    out = subprocess.run([os.path.join(BIN, "rdmasock-stat"), "-s", "-j"],
                         capture_output=True, text=True)
    try:
        st = json.loads(out.stdout)
        s["rdma_conns"] = st["connections_rdma"]["netns"]
        s["fallbacks"] = sum(v["netns"] for k, v in st.items()
                             if k.startswith("fallback_") and k != "fallback_none")
    except (ValueError, KeyError):
        s["rdma_conns"] = s["fallbacks"] = None
    return s


def delta(a, b):
    d = {"cpu": {k: round(b["cpu"][k] - a["cpu"][k], 3) for k in a["cpu"]},
         "rxe_pkts": b["rxe_pkts"] - a["rxe_pkts"]}
    for k in ("rdma_conns", "fallbacks"):
        d[k] = None if a[k] is None or b[k] is None else b[k] - a[k]
    return d


def busy(d):
    """CPU seconds spent on the work: user, system, irq and softirq (rxe's work is kernel time)."""
    c = d["cpu"]
    return c["user"] + c["nice"] + c["system"] + c["irq"] + c["softirq"]


def server(addr):
    procs = []
    for c in CARRIERS:
        procs.append(subprocess.Popen(prefix(c) + ["sockperf", "server", "--tcp", "-i", addr,
                                                   "-p", str(sockperf_port(c))],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        procs.append(subprocess.Popen(prefix(c) + ["iperf3", "-s", "-p", str(iperf_port(c))],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    lsn = socket.create_server((addr, CTL_PORT))
    lsn.settimeout(1800)
    conn, _ = lsn.accept()
    f = conn.makefile("rw")
    for line in f:
        if line.strip() == "snap":
            f.write(json.dumps(snap()) + "\n")
            f.flush()
        else:
            break
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait()
    return 0


def wait_for(peer, port, secs=300):
    end = time.time() + secs
    while time.time() < end:
        try:
            return socket.create_connection((peer, port), 2)
        except OSError:
            time.sleep(0.3)
    raise SystemExit("wire.py: %s:%d never came up" % (peer, port))


def pingpong(carrier, peer, secs):
    out = subprocess.run(prefix(carrier) + ["sockperf", "ping-pong", "--tcp", "-i", peer,
                                            "-p", str(sockperf_port(carrier)), "-t", str(secs),
                                            "-m", "64"],
                         capture_output=True, text=True, timeout=secs + 120)
    r = {}
    for line in out.stdout.splitlines() + out.stderr.splitlines():
        if "percentile 50.000 =" in line:
            r["p50_us"] = float(line.split("=")[-1])
        elif "percentile 99.000 =" in line:
            r["p99_us"] = float(line.split("=")[-1])
        elif "ReceivedMessages=" in line:
            r["round_trips"] = int(line.split("ReceivedMessages=")[1].split()[0].strip(";"))
    if "p50_us" not in r or not r.get("round_trips"):
        r["error"] = (out.stdout + out.stderr).strip().splitlines()[-3:]
    return r, r.get("round_trips", 0)


def stream(carrier, peer, secs, size):
    out = subprocess.run(prefix(carrier) + ["iperf3", "-c", peer, "-p", str(iperf_port(carrier)),
                                            "-t", str(secs), "-l", str(size), "-J"],
                         capture_output=True, text=True, timeout=secs + 120)
    try:
        end = json.loads(out.stdout)["end"]["sum_received"]
        return {"mbit_s": round(end["bits_per_second"] / 1e6, 2), "bytes": end["bytes"]}, \
            end["bytes"]
    except (ValueError, KeyError, TypeError):
        return {"error": (out.stdout + out.stderr).strip().splitlines()[-3:]}, 0


def ran_as(carrier, row, units, d):
    """Whether the measurement ran as its carrier, and if not why."""
    # A lower bound on rxe packets: one per round trip each way, one per 4 KiB of a stream.
    want = units if row == "pingpong" else units // 4096
    if carrier == "tcp":
        ok = d["rxe_pkts"] < max(100, want // 100)
        return ok, None if ok else "rxe moved %d packets under TCP" % d["rxe_pkts"]
    if not units:
        return False, "no result"
    if d["rxe_pkts"] < want:
        return False, "rxe moved %d packets, want >= %d" % (d["rxe_pkts"], want)
    if carrier == "rdmasock" and (not d["rdma_conns"] or d["fallbacks"]):
        return False, "rdmasock: %s RDMA connections, %s fallbacks" % (d["rdma_conns"],
                                                                       d["fallbacks"])
    return True, None


def record(carrier, row, size, res, units, a, b):
    """One measurement's JSON record from its result and both guests' snaps around it."""
    dc, ds = delta(a[0], b[0]), delta(a[1], b[1])
    ok, why = ran_as(carrier, row, units, dc)
    rec = {"kernel": os.uname().release, "carrier": carrier, "row": row, "size": size, **res,
           "ran_as_carrier": ok, "client": dc, "server": ds,
           "cpu_s": {"client": round(busy(dc), 3), "server": round(busy(ds), 3),
                     "softirq": round(dc["cpu"]["softirq"] + ds["cpu"]["softirq"], 3)}}
    if why:
        rec["why"] = why
    cpu = busy(dc) + busy(ds)
    if units and row == "pingpong":
        rec["cpu_us_per_round_trip"] = round(cpu * 1e6 / units, 1)
    elif units:
        rec["cpu_ms_per_mb"] = round(cpu * 1e3 / (units / 1e6), 3)
    return rec


def client(peer, rounds, secs, out):
    f = wait_for(peer, CTL_PORT).makefile("rw")

    def both():
        f.write("snap\n")
        f.flush()
        return snap(), json.loads(f.readline())

    def measure(carrier, row, size):
        a = both()
        if row == "pingpong":
            res, units = pingpong(carrier, peer, secs)
        else:
            res, units = stream(carrier, peer, secs, size)
        return res, units, a, both()

    # (rsockets' servers take no TCP connection: their first measurement is retried instead.)
    for c in ("tcp", "rdmasock"):
        wait_for(peer, sockperf_port(c)).close()
    started = set()
    rows = [("pingpong", None)] + [("stream", s) for s in STREAMS]
    bad = 0
    with open(out, "w") as jf:
        for rnd in range(rounds):
            order = CARRIERS[rnd % len(CARRIERS):] + CARRIERS[:rnd % len(CARRIERS)]
            for carrier, (row, size) in ((c, r) for c in order for r in rows):
                for _ in range(1 if carrier in started else 30):
                    res, units, a, b = measure(carrier, row, size)
                    if units:
                        started.add(carrier)
                        break
                    time.sleep(1)	# its server is still coming up
                rec = {"round": rnd + 1, **record(carrier, row, size, res, units, a, b)}
                bad += "why" in rec
                jf.write(json.dumps(rec) + "\n")
                jf.flush()
                shown = {k: v for k, v in rec.items()
                         if k in ("p50_us", "p99_us", "mbit_s", "error", "why",
                                  "cpu_us_per_round_trip", "cpu_ms_per_mb")}
                print("wire: round %d %-8s %-8s %s" % (rnd + 1, carrier,
                      row + ("" if size is None else " %d" % size), json.dumps(shown)),
                      flush=True)
    f.write("quit\n")
    f.flush()
    return 1 if bad else 0


def main():
    rounds, secs = int(sys.argv[1]), int(sys.argv[2])
    if os.environ.get("RDMASOCK_VM_ROLE") == "server":
        return server(os.environ["RDMASOCK_ADDR"])
    return client(os.environ["RDMASOCK_PEER_ADDR"], rounds, secs,
                  os.path.join(os.environ["RDMASOCK_OUT"], "wire.jsonl"))


if __name__ == "__main__":
    sys.exit(main())
