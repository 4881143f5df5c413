#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Run CPython's own TCP stream tests (test.test_socket from Debian's libpython3.11-testsuite,
unchanged) against ADDR instead of localhost, and write one line per test to OUT:
"<outcome> <test id>" with outcome ok, fail, error or skip.

    run_cpython_tcp.py ADDR OUT

Loopback has no RDMA device, so the tests are aimed at the host's RDMA address: this runner only
changes where test_socket's helpers bind (socket_helper.HOST and bind_port's default), nothing in
the tests.  Run it plainly for the TCP oracle and under rdmasock-run for rdmasock (pysock_test.sh).
"""
import sys
import unittest

from test.support import socket_helper

ADDR, OUT = sys.argv[1], sys.argv[2]
socket_helper.HOST = ADDR
socket_helper.HOSTv4 = ADDR
socket_helper.bind_port.__defaults__ = (ADDR,)

from test import test_socket  # noqa: E402  (after the helpers are aimed)

test_socket.HOST = ADDR

# The TCP stream classes (IPv4): plain sockets, nonblocking, file objects, create_connection,
# sendmsg/recvmsg, timeouts, buffers, context managers, sendfile.
CLASSES = [
    "BasicTCPTest", "BasicTCPTest2", "TCPCloserTest", "NonBlockingTCPTests",
    "FileObjectClassTestCase", "UnbufferedFileObjectClassTestCase",
    "LineBufferedFileObjectClassTestCase", "SmallBufferedFileObjectClassTestCase",
    "UnicodeReadFileObjectClassTestCase", "UnicodeWriteFileObjectClassTestCase",
    "UnicodeReadWriteFileObjectClassTestCase",
    "NetworkConnectionNoServer", "NetworkConnectionAttributesTest",
    "NetworkConnectionBehaviourTest",
    "SendmsgTCPTest", "RecvmsgTCPTest", "RecvmsgIntoTCPTest",
    "TCPTimeoutTest", "BufferIOTest", "ContextManagersTest",
    "SendfileUsingSendTest", "SendfileUsingSendfileTest",
]


class Recorder(unittest.TextTestResult):
    """Keeps each test's outcome by id."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.outcome = {}

    def addSuccess(self, test):
        super().addSuccess(test)
        self.outcome[test.id()] = "ok"

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.outcome[test.id()] = "fail"

    def addError(self, test, err):
        super().addError(test, err)
        self.outcome[test.id()] = "error"

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.outcome[test.id()] = "skip"

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self.outcome[test.id()] = "ok"

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self.outcome[test.id()] = "fail"


def main():
    loader = unittest.TestLoader()
    suite = unittest.TestSuite()
    for name in CLASSES:
        suite.addTests(loader.loadTestsFromTestCase(getattr(test_socket, name)))
    runner = unittest.TextTestRunner(stream=sys.stderr, verbosity=1, resultclass=Recorder)
    result = runner.run(suite)
    with open(OUT, "w", encoding="ascii") as f:
        for tid in sorted(result.outcome):
            f.write(f"{result.outcome[tid]} {tid}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
