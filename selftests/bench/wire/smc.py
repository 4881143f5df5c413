#!/usr/bin/env python3
"""SMC-R for make bench-wire, over generic netlink (smc-tools is not in Debian): the user-defined
EID SMC-R v2 needs on both hosts (rxe has RoCE v2 GIDs only), and SMC's own statistics, which say
whether connections ran as SMC-R (a connection SMC could not set up falls back to TCP silently).

usage: smc.py ueid-add EID | smc.py stats
"""
import json
import os
import socket
import struct
import sys

GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
NLM_F_REQUEST, NLM_F_ACK, NLM_F_DUMP = 1, 4, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLA_F_MASK = 0x3fff			# without NLA_F_NESTED / NLA_F_NET_BYTEORDER

SMC_FAMILY = "SMC_GEN_NETLINK"
SMC_NETLINK_GET_STATS = 7
SMC_NETLINK_ADD_UEID = 10
SMC_NLA_EID_TABLE_ENTRY = 1
SMC_MAX_EID_LEN = 32
SMC_GEN_STATS = 7
SMC_NLA_STATS_SMCR_TECH = 2
SMC_NLA_STATS_CLNT_HS_ERR_CNT = 3
SMC_NLA_STATS_SRV_HS_ERR_CNT = 4
# SMC_NLA_STATS_SMCR_TECH's u64 counters we read
TECH = {8: "clnt_v2_succ", 10: "srv_v2_succ", 16: "rx_bytes", 17: "tx_bytes"}


def attr(kind, data):
    a = struct.pack("HH", 4 + len(data), kind) + data
    return a + b"\0" * (-len(a) % 4)


def attrs(buf):
    """(type, payload) of each attribute in @buf."""
    out, off = [], 0
    while off + 4 <= len(buf):
        ln, kind = struct.unpack_from("HH", buf, off)
        if ln < 4:
            break
        out.append((kind & NLA_F_MASK, buf[off + 4:off + ln]))
        off += (ln + 3) & ~3
    return out


class Genl:
    def __init__(self):
        self.s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 16)	# NETLINK_GENERIC
        self.s.bind((0, 0))
        self.seq = 0

    def request(self, family, cmd, payload=b"", flags=NLM_F_ACK, version=1):
        """The messages' genl payloads; raises OSError on a netlink error."""
        self.seq += 1
        body = struct.pack("BBH", cmd, version, 0) + payload
        self.s.send(struct.pack("IHHII", 16 + len(body), family, NLM_F_REQUEST | flags,
                                self.seq, 0) + body)
        msgs = []
        while True:
            data = self.s.recv(65536)
            off = 0
            while off + 16 <= len(data):
                ln, kind, _, seq, _ = struct.unpack_from("IHHII", data, off)
                if kind == NLMSG_ERROR:
                    err = struct.unpack_from("i", data, off + 16)[0]
                    if err:
                        raise OSError(-err, os.strerror(-err))
                    return msgs
                if kind == NLMSG_DONE:
                    return msgs
                msgs.append(data[off + 20:off + ln])
                off += (ln + 3) & ~3
            if not flags & NLM_F_DUMP and msgs:
                return msgs

    def family(self, name):
        msgs = self.request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY,
                            attr(CTRL_ATTR_FAMILY_NAME, name.encode() + b"\0"), flags=0)
        for kind, val in attrs(msgs[0]):
            if kind == CTRL_ATTR_FAMILY_ID:
                return struct.unpack("H", val[:2])[0]
        raise OSError("no generic netlink family %s" % name)


def ueid_add(eid):
    """Add @eid (upper case, padded with blanks to 32, as smc-tools does); EEXIST is fine."""
    g = Genl()
    val = eid.upper().ljust(SMC_MAX_EID_LEN).encode() + b"\0"
    try:
        g.request(g.family(SMC_FAMILY), SMC_NETLINK_ADD_UEID, attr(SMC_NLA_EID_TABLE_ENTRY, val))
    except OSError as e:
        if e.errno != 17:
            raise


def stats():
    """SMC-R's counters of this host: v2 connections set up, bytes, handshake errors."""
    g = Genl()
    r = {v: 0 for v in TECH.values()}
    r.update(clnt_hs_err=0, srv_hs_err=0)
    for msg in g.request(g.family(SMC_FAMILY), SMC_NETLINK_GET_STATS, flags=NLM_F_DUMP):
        for kind, nest in attrs(msg):
            if kind != SMC_GEN_STATS:
                continue
            for k, v in attrs(nest):
                if k == SMC_NLA_STATS_SMCR_TECH:
                    for tk, tv in attrs(v):
                        if tk in TECH and len(tv) == 8:
                            r[TECH[tk]] = struct.unpack("Q", tv)[0]
                elif k in (SMC_NLA_STATS_CLNT_HS_ERR_CNT, SMC_NLA_STATS_SRV_HS_ERR_CNT) and \
                        len(v) == 8:
                    r["clnt_hs_err" if k == SMC_NLA_STATS_CLNT_HS_ERR_CNT else "srv_hs_err"] = \
                        struct.unpack("Q", v)[0]
    return r


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "ueid-add":
        ueid_add(sys.argv[2])
        return 0
    if len(sys.argv) == 2 and sys.argv[1] == "stats":
        print(json.dumps(stats()))
        return 0
    print(__doc__.strip().splitlines()[-1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
