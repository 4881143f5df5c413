#!/usr/bin/env python3
"""Where a connection's set-up goes, from trace-setup.sh's ftrace output.

rs_bench connrate opens its connections one after another: the client connect()s, read()s the
server's first byte, close()s.  Each client connect() opens a window that lasts until the next; in
each window every traced function (and system call) is taken at its first call, by who called it
(client, server, or the kernel thread's name), as an offset from connect().  Printed: the median of
those offsets over the windows, sorted, with how many windows had it, and the gap to the row before.
"""
import re
import statistics
import sys

LINE = re.compile(r'^\s*(?P<comm>.+?)-(?P<pid>\d+)\s+\[\d+\]\s+\S+\s+(?P<ts>\d+\.\d+):\s+(?P<rest>.*)$')


def main(path):
    events = []
    for line in open(path, errors='replace'):
        m = LINE.match(line)
        if m:
            events.append((float(m['ts']) * 1e6, m['comm'], int(m['pid']), m['rest']))
    starts = [i for i, e in enumerate(events) if e[3].startswith('sys_enter: NR 42 ')]
    if len(starts) < 2:
        print('fewer than two connect() calls traced')
        return 1
    client = events[starts[0]][2]
    server = {e[2] for e in events if e[1].startswith('rs_bench') and e[2] != client}
    offsets = {}
    spans = {'connect() returns': [], 'first byte read': [], 'window': []}
    for n, (a, b) in enumerate(zip(starts, starts[1:])):
        t0 = events[a][0]
        seen = set()
        got_connect = got_read = False
        for ts, comm, pid, rest in events[a:b]:
            if pid == client and not got_connect and rest.startswith('sys_exit: NR 42 '):
                spans['connect() returns'].append(ts - t0)
                got_connect = True
                continue
            if pid == client and got_connect and not got_read and rest.startswith('sys_exit: NR 0 '):
                spans['first byte read'].append(ts - t0)
                got_read = True
                continue
            if rest.startswith('sys_exit') or rest.startswith('sched_switch'):
                continue
            if rest.startswith('sys_enter: NR '):
                name = {'42': 'connect()', '43': 'accept()', '288': 'accept4()', '0': 'read()',
                        '3': 'close()'}.get(rest.split()[2], rest.split()[2])
            else:
                name = rest.split()[0]
            who = 'client' if pid == client else 'server' if pid in server else \
                re.sub(r'[:/].*', '', comm)
            key = (name, who)
            if key not in seen:
                seen.add(key)
                offsets.setdefault(key, []).append(ts - t0)
        spans['window'].append(events[b][0] - t0)
    windows = len(starts) - 1
    print(f'# {windows} connections; offsets from the client\'s connect() entry, medians (us)')
    for k, v in spans.items():
        if v:
            print(f'# {k:22s} {statistics.median(v):10.0f}  (mean {statistics.mean(v):.0f})')
    rows = sorted(((statistics.median(v), len(v), k) for k, v in offsets.items()),
                  key=lambda r: r[0])
    print(f'{"offset":>10} {"gap":>8} {"in":>4}  who        function')
    prev = 0.0
    for med, cnt, (name, who) in rows:
        if cnt * 2 < windows:
            continue
        print(f'{med:10.0f} {med - prev:8.0f} {cnt:4d}  {who:10s} {name}')
        prev = med
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1]))
