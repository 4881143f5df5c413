#!/usr/bin/env python3
"""make bench-wire, inside the two guests (selftests/vm/run --two-vm): every carrier in each round,
rounds interleaved (the carriers' order rotates), unchanged sockperf and iperf3 over each.

The server guest runs a sockperf, an iperf3, a set-up (setup-rate.c) and a redis server per carrier
and a control port that answers "snap" with its CPU times and counters (and "busy on|off": busy
polling for the busy ping-pong row; "only CARRIER TOOL": that carrier's server of that tool runs,
the others are stopped); the client runs the rows, snapping both guests around each (CPU by kind and by task),
and writes one JSON line per measurement to $RDMASOCK_OUT/wire.jsonl.  Each measurement is checked
to have run as its carrier: rxe's packet counters moved for the RDMA carriers (and stayed still for
TCP), and rdmasock's connections were RDMA connections with no fallback.

usage (in both guests): wire.py ROUNDS SECONDS [ROWS]
(ROWS: a comma-separated subset of pingpong,pingpong_busy,stream,setup,redis; all by default)
"""
import importlib.machinery
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import smc

TOP = os.environ["RDMASOCK_TOP"]
BIN = os.path.join(TOP, "build", "userlib")
COMPAT = os.path.join(TOP, "build", "bench-wire", "rs-compat.so")
SETUP = os.path.join(TOP, "build", "bench-wire", "setup-rate")
SMC_PRELOAD = os.path.join(TOP, "build", "bench-wire", "smc-preload.so")
SMC_EID = "RDMASOCK-BENCH-WIRE"
RSPRELOAD = "/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so"
HWC = "/sys/class/infiniband/rxe0/ports/1/hw_counters"
ALL = ["tcp", "rsockets", "smc-r", "rdmasock"]	# (their ports: the index in this list)
CARRIERS = list(ALL)				# those that run on this kernel: smc_setup()
CTL_PORT = 11399
STREAMS = [65536, 4096]
BUSY_US = "50"          # busy polling for the busy row: TCP's busy_read/busy_poll, rdmasock's
REDIS_CLIENTS = 4
# Rows a carrier cannot run, with the reason (reported, not measured).
CANNOT = {("rsockets", "redis"): "redis's event loop is epoll, which librspreload does not take "
                                 "over (it exports poll and select only): redis hangs"}
CLK_TCK = os.sysconf("SC_CLK_TCK")
TOP_N = 4               # the busiest tasks of each guest kept per measurement
SERVED = {}             # the server guest's server processes: pid -> (carrier, tool)


def load_rdmasock_stat():
    """rdmasock-stat's own parser of /proc/net/rdmasock_stat (not a process per snap)."""
    path = os.path.join(BIN, "rdmasock-stat")
    loader = importlib.machinery.SourceFileLoader("rdmasock_stat", path)
    spec = importlib.util.spec_from_loader("rdmasock_stat", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


RSTAT = load_rdmasock_stat()


def prefix(carrier):
    if carrier == "rsockets":
        return ["env", "LD_PRELOAD=%s:%s" % (COMPAT, RSPRELOAD)]
    if carrier == "smc-r":
        return ["env", "LD_PRELOAD=%s" % SMC_PRELOAD]
    if carrier == "rdmasock":
        return [os.path.join(BIN, "rdmasock-run"), "-q", "--"]
    return []


def sockperf_port(carrier):
    return 11300 + ALL.index(carrier)


def iperf_port(carrier):
    return 5300 + ALL.index(carrier)


def setup_port(carrier):
    return 11500 + ALL.index(carrier)


def redis_port(carrier):
    return 6300 + ALL.index(carrier)


def smc_setup():
    """SMC-R where it can run: None, or why not (then it is left out of CARRIERS)."""
    why = None
    if os.uname().release.startswith("6.1."):
        why = ("not runnable on stock 6.1 rxe: SMC-R v2 needs a pnet entry there (6.1's rxe has "
               "no get_netdev) and a workaround for two rxe bugs (a stale cur_qp_state; CQ arming "
               "with both notify bits never fires); without it SMC-R times out and its cleanup "
               "hangs in smc_wr_drain_cq")
    else:
        try:
            subprocess.run(["modprobe", "smc"], check=True, capture_output=True)
            smc.ueid_add(SMC_EID)	# rxe has RoCE v2 GIDs only: v2, which needs a UEID
            smc.stats()
        except (OSError, subprocess.CalledProcessError) as e:
            why = "SMC-R could not be set up: %s" % e
    if why:
        CARRIERS.remove("smc-r")
    return why


def set_busy(on):
    """Busy polling on or off in this guest: TCP's sysctls and rdmasock's parameter (rsockets
    polls for a while before it sleeps anyway, its own default)."""
    val = BUSY_US if on else "0"
    for path in ("/proc/sys/net/core/busy_read", "/proc/sys/net/core/busy_poll",
                 "/sys/module/rdmasock/parameters/busy_poll_us"):
        with open(path, "w") as f:
            f.write(val)


def snap(start):
    """CPU seconds by kind (all CPUs), rxe's packets, rdmasock's connection counters.  The scan of
    every task (its own CPU time) goes outside the measurement: before /proc/stat is read at its
    @start, after it at its end."""
    s = {"tasks": tasks()} if start else {}
    with open("/proc/stat") as f:
        cpu = f.readline().split()[1:8]
    names = ["user", "nice", "system", "idle", "iowait", "irq", "softirq"]
    s.update({"cpu": {n: int(v) / CLK_TCK for n, v in zip(names, cpu)}, "t": time.time()})
    pkts = 0
    for c in ("sent_pkts", "rcvd_pkts"):
        try:
            with open(os.path.join(HWC, c)) as f:
                pkts += int(f.read())
        except OSError:
            pass
    s["rxe_pkts"] = pkts
    try:
        s["smc"] = smc.stats() if "smc-r" in CARRIERS else None
    except OSError:
        s["smc"] = None
    try:
        st = RSTAT.read_stats()
        s["rdma_conns"] = st["connections_rdma"]["netns"]
        s["fallbacks"] = sum(v["netns"] for k, v in st.items()
                             if k.startswith("fallback_") and k != "fallback_none")
    except (OSError, ValueError, KeyError):
        s["rdma_conns"] = s["fallbacks"] = None
    if not start:
        s["tasks"] = tasks()
    return s


def task_name(comm):
    """A task's name without its instance: kworker/u4:2-rxe_wq -> kworker-rxe_wq (the suffix is
    the workqueue the worker last ran), ksoftirqd/1 -> ksoftirqd."""
    return re.sub(r"/[^-+]*", "", comm).replace("+", "-")


def tasks():
    """CPU seconds of every task: its own, and its reaped children's (this script's tools)."""
    t = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                line = f.read()
        except OSError:
            continue
        comm = line[line.index("(") + 1:line.rindex(")")]
        f = line[line.rindex(")") + 2:].split()
        name = task_name(comm) + ("[%s]" % SERVED[int(pid)][0] if int(pid) in SERVED else "")
        t[pid] = (name, sum(int(v) for v in f[11:13]) / CLK_TCK,
                  sum(int(v) for v in f[13:15]) / CLK_TCK)
    return t


def busiest(a, b):
    """The tasks that took most CPU between two snaps, summed by name (tasks that came and went
    in between are in their parent's children's time; a kworker is named by the workqueue it ran
    last)."""
    by = {}
    for pid, (name, own, kids) in b.items():
        # (A kworker's name may change.)  The client's tools are this script's reaped children.
        for n, i, v in ((name, 1, own), ("children of " + name, 2, kids)):
            d = v - (a[pid][i] if pid in a else 0)
            if d > 0:
                by[n] = by.get(n, 0) + d
    return [[n, round(c, 2)] for n, c in sorted(by.items(), key=lambda x: -x[1])[:TOP_N]]


def delta(a, b):
    d = {"cpu": {k: round(b["cpu"][k] - a["cpu"][k], 3) for k in a["cpu"]},
         "rxe_pkts": b["rxe_pkts"] - a["rxe_pkts"], "busiest": busiest(a["tasks"], b["tasks"])}
    for k in ("rdma_conns", "fallbacks"):
        d[k] = None if a[k] is None or b[k] is None else b[k] - a[k]
    d["smc"] = None if not a.get("smc") or not b.get("smc") else \
        {k: b["smc"][k] - a["smc"][k] for k in a["smc"]}
    return d


def busy(d):
    """CPU seconds spent on the work: user, system, irq and softirq (rxe's work is kernel time)."""
    c = d["cpu"]
    return c["user"] + c["nice"] + c["system"] + c["irq"] + c["softirq"]


def only(procs, carrier, tool):
    """Only @carrier's server of @tool runs (the others stopped: rsockets' idle servers poll, and
    would be charged to every measurement, its own carrier's others too); "all": every one."""
    for p in procs:
        run = carrier == "all" or SERVED[p.pid] == (carrier, tool)
        # (The whole group: a wrapper that forked its server rather than exec'd it too.)
        os.killpg(p.pid, signal.SIGCONT if run else signal.SIGSTOP)


def server(addr):
    procs = []

    def start(c, cmd):
        procs.append(subprocess.Popen(prefix(c) + cmd, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, start_new_session=True))
        SERVED[procs[-1].pid] = (c, os.path.basename(cmd[0]))	# (the wrappers exec it)

    for c in CARRIERS:
        start(c, ["sockperf", "server", "--tcp", "-i", addr, "-p", str(sockperf_port(c))])
        start(c, ["iperf3", "-s", "-p", str(iperf_port(c))])
        start(c, [SETUP, "server", addr, str(setup_port(c))])
        if (c, "redis") in CANNOT:
            continue
        start(c, ["redis-server", "--port", str(redis_port(c)), "--bind", addr, "--save", "",
                  "--appendonly", "no", "--protected-mode", "no"])
    lsn = socket.create_server((addr, CTL_PORT))
    lsn.settimeout(1800)
    conn, _ = lsn.accept()
    f = conn.makefile("rw")
    for line in f:
        cmd = line.split()
        if len(cmd) == 2 and cmd[0] == "snap":
            reply = json.dumps(snap(cmd[1] == "start"))
        elif len(cmd) == 2 and cmd[0] == "busy":
            set_busy(cmd[1] == "on")
            reply = "ok"
        elif len(cmd) == 3 and cmd[0] == "only":
            only(procs, cmd[1], cmd[2])
            reply = "ok"
        else:
            break
        f.write(reply + "\n")
        f.flush()
    only(procs, "all", None)
    for p in procs:
        os.killpg(p.pid, signal.SIGTERM)
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


def failed(out):
    """A tool's result that has no figures: the last lines it printed."""
    return {"error": (out.stdout + out.stderr).strip().splitlines()[-3:]}


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
        r.update(failed(out))
    return r, r.get("round_trips", 0)


def setup(carrier, peer, secs):
    out = subprocess.run(prefix(carrier) + [SETUP, "client", peer, str(setup_port(carrier)),
                                            str(secs)],
                         capture_output=True, text=True, timeout=secs + 120)
    try:
        r = json.loads(out.stdout)
        return r, r["conns"]
    except (ValueError, KeyError):
        return failed(out), 0


def redis(carrier, peer, secs, test):
    n = 500 * secs
    out = subprocess.run(prefix(carrier) + ["redis-benchmark", "-h", peer,
                                            "-p", str(redis_port(carrier)),
                                            "-c", str(REDIS_CLIENTS), "-n", str(n), "-t", test,
                                            "--csv"],
                         capture_output=True, text=True, timeout=secs * 10 + 60)
    for line in out.stdout.splitlines():
        cols = [c.strip('"') for c in line.split(",")]
        if cols[0].lower() == test and len(cols) >= 7:
            try:
                return {"rps": float(cols[1]), "p50_ms": float(cols[4]),
                        "p99_ms": float(cols[6]), "requests": n}, n
            except ValueError:
                break
    return failed(out), 0


def stream(carrier, peer, secs, size):
    out = subprocess.run(prefix(carrier) + ["iperf3", "-c", peer, "-p", str(iperf_port(carrier)),
                                            "-t", str(secs), "-l", str(size), "-J"],
                         capture_output=True, text=True, timeout=secs + 120)
    try:
        end = json.loads(out.stdout)["end"]["sum_received"]
        return {"mbit_s": round(end["bits_per_second"] / 1e6, 2), "bytes": end["bytes"]}, \
            end["bytes"]
    except (ValueError, KeyError, TypeError):
        return failed(out), 0


def ran_as(carrier, row, units, d):
    """Whether the measurement ran as its carrier, and if not why."""
    # A lower bound on rxe packets: one per round trip or request, one per 4 KiB of a stream,
    # two per connection (its CM exchange alone is more).
    want = {"stream": units // 4096, "setup": 2 * units}.get(row, units)
    if carrier == "tcp":
        ok = d["rxe_pkts"] < max(100, want // 100)
        return ok, None if ok else "rxe moved %d packets under TCP" % d["rxe_pkts"]
    if not units:
        return False, "no result"
    if d["rxe_pkts"] < want:
        return False, "rxe moved %d packets, want >= %d" % (d["rxe_pkts"], want)
    if carrier == "smc-r":
        m = d["smc"]
        conns = units if row == "setup" else 1
        if not m or m["clnt_v2_succ"] < conns or m["clnt_hs_err"] or \
                (row != "setup" and not m["tx_bytes"] + m["rx_bytes"]):
            return False, "SMC's statistics: %s (want >= %d SMC-R v2 connections)" % (m, conns)
    if carrier == "rdmasock" and (not d["rdma_conns"] or d["fallbacks"] or
                                  (row == "setup" and d["rdma_conns"] < units)):
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
    per = {"pingpong": "cpu_us_per_round_trip", "pingpong_busy": "cpu_us_per_round_trip",
           "setup": "cpu_us_per_connection", "redis": "cpu_us_per_request"}
    if units and row in per:
        rec[per[row]] = round(cpu * 1e6 / units, 1)
    elif units:
        rec["cpu_ms_per_mb"] = round(cpu * 1e3 / (units / 1e6), 3)
    return rec


# The server each row measures (wire.py's servers, by the name of their program).
TOOL = {"pingpong": "sockperf", "pingpong_busy": "sockperf", "stream": "iperf3",
        "setup": "setup-rate", "redis": "redis-server"}
ROWS = [("pingpong", None), ("pingpong_busy", None)] + [("stream", s) for s in STREAMS] + \
    [("setup", None), ("redis", "set"), ("redis", "get")]


def client(peer, rounds, secs, out, smc_why, rows_only):
    f = wait_for(peer, CTL_PORT).makefile("rw")

    def ask(cmd):
        """One command to the server guest's control port; its one-line reply."""
        f.write(cmd + "\n")
        f.flush()
        return f.readline()

    def both(start):
        """Both guests' snaps; the server's taken nearer the measurement (after ours at its
        start, before ours at its end)."""
        if start:
            mine = snap(True)
            return mine, json.loads(ask("snap start"))
        theirs = json.loads(ask("snap end"))
        return snap(False), theirs

    def busy_both(on):
        set_busy(on)
        ask("busy %s" % ("on" if on else "off"))

    def measure(carrier, row, size):
        time.sleep(0.5)	# the last measurement's servers close their connections first
        ask("only %s %s" % (carrier, TOOL[row]))	# every other server stopped meanwhile
        if row == "pingpong_busy":
            busy_both(True)
        a = both(True)
        if row in ("pingpong", "pingpong_busy"):
            res, units = pingpong(carrier, peer, secs)
        elif row == "setup":
            res, units = setup(carrier, peer, secs)
        elif row == "redis":
            res, units = redis(carrier, peer, secs, size)
        else:
            res, units = stream(carrier, peer, secs, size)
        b = both(False)
        if row == "pingpong_busy":
            busy_both(False)
        return res, units, a, b

    # (rsockets' servers take no TCP connection: their first measurement is retried instead.)
    for c in ("tcp", "rdmasock"):
        if c in CARRIERS:
            wait_for(peer, sockperf_port(c)).close()
    started = set()
    rows = [r for r in ROWS if not rows_only or r[0] in rows_only]
    bad = 0
    with open(out, "w") as jf:
        if smc_why:
            jf.write(json.dumps({"kernel": os.uname().release, "carrier": "smc-r",
                                 "not_run": smc_why}) + "\n")
            print("wire: smc-r %s" % smc_why, flush=True)
        for (c, row), why in CANNOT.items():
            if c in CARRIERS:
                jf.write(json.dumps({"kernel": os.uname().release, "carrier": c, "row": row,
                                     "not_run": why}) + "\n")
        for rnd in range(rounds):
            order = CARRIERS[rnd % len(CARRIERS):] + CARRIERS[:rnd % len(CARRIERS)]
            for carrier, (row, size) in ((c, r) for c in order for r in rows
                                         if (c, r[0]) not in CANNOT):
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
                         if k in ("p50_us", "p99_us", "mbit_s", "per_s", "rps", "error", "why",
                                  "cpu_us_per_round_trip", "cpu_ms_per_mb",
                                  "cpu_us_per_connection", "cpu_us_per_request")}
                print("wire: round %d %-8s %-8s %s" % (rnd + 1, carrier,
                      row + ("" if size is None else " %s" % size), json.dumps(shown)),
                      flush=True)
    f.write("quit\n")
    f.flush()
    return 1 if bad else 0


def main():
    rounds, secs = int(sys.argv[1]), int(sys.argv[2])
    rows_only = sys.argv[3].split(",") if len(sys.argv) > 3 and sys.argv[3] != "all" else []
    if any(r not in {row for row, _ in ROWS} for r in rows_only):
        raise SystemExit("wire.py: rows are a subset of %s" % ",".join(dict(ROWS)))
    smc_why = smc_setup()
    if os.environ.get("RDMASOCK_NO_MODULE") == "1":	# (the runner's --no-module: the peers alone)
        CARRIERS.remove("rdmasock")
    if os.environ.get("RDMASOCK_VM_ROLE") == "server":
        return server(os.environ["RDMASOCK_ADDR"])
    return client(os.environ["RDMASOCK_PEER_ADDR"], rounds, secs,
                  os.path.join(os.environ["RDMASOCK_OUT"], "wire.jsonl"), smc_why, rows_only)


if __name__ == "__main__":
    sys.exit(main())
