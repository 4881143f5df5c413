// SPDX-License-Identifier: GPL-2.0
//
// A Go TCP echo pair for the kernel-path test (selftests/kpath_test.sh).  Go makes its socket
// system calls itself, so LD_PRELOAD never sees them: only the cgroup switch can make these
// sockets rdmasock sockets.
//
//	goecho serve ADDR:PORT N      accept N connections, echo each back until its EOF
//	goecho send ADDR:PORT BYTES   send BYTES pseudo-random bytes, read them back, compare
//
// Both print the SO_DOMAIN and SO_PROTOCOL of their sockets, as a program inspecting them would,
// rdmasock's RDMASOCK_MODE (-1 for a socket that is not rdmasock's, 1 RDMA, 2 TCP) and SO_TYPE
// (net.FileConn, TLS libraries and sd_is_socket() check it: 1, SOCK_STREAM).
package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"strconv"
	"syscall"
)

// SOL_RDMASOCK and RDMASOCK_MODE (uapi/linux/rdmasock.h).
const (
	solRdmasock  = 287
	rdmasockMode = 1
)

func describe(c syscall.Conn) string {
	raw, err := c.SyscallConn()
	if err != nil {
		return "?"
	}
	var dom, proto, mode, typ int
	raw.Control(func(fd uintptr) {
		var err error
		dom, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_DOMAIN)
		proto, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_PROTOCOL)
		typ, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TYPE)
		mode, err = syscall.GetsockoptInt(int(fd), solRdmasock, rdmasockMode)
		if err != nil {
			mode = -1
		}
	})
	return fmt.Sprintf("domain %d protocol %d mode %d type %d", dom, proto, mode, typ)
}

func fail(f string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "goecho: "+f+"\n", a...)
	os.Exit(1)
}

func serve(addr string, n int) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fail("listen %s: %v", addr, err)
	}
	fmt.Printf("listening %s\n", describe(l.(*net.TCPListener)))
	done := make(chan error)
	for i := 0; i < n; i++ {
		c, err := l.Accept()
		if err != nil {
			fail("accept: %v", err)
		}
		fmt.Printf("accepted %s\n", describe(c.(*net.TCPConn)))
		go func(c net.Conn) {
			_, err := io.Copy(c, c)
			c.(*net.TCPConn).CloseWrite()
			c.Close()
			done <- err
		}(c)
	}
	for i := 0; i < n; i++ {
		if err := <-done; err != nil {
			fail("echo: %v", err)
		}
	}
	fmt.Println("served")
}

func send(addr string, size int) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		fail("dial %s: %v", addr, err)
	}
	fmt.Printf("connected %s\n", describe(c.(*net.TCPConn)))
	out := make([]byte, size)
	rand.New(rand.NewSource(int64(size))).Read(out)
	errc := make(chan error)
	go func() {
		_, err := c.Write(out)
		c.(*net.TCPConn).CloseWrite()
		errc <- err
	}()
	in, err := io.ReadAll(c)
	if err != nil {
		fail("read: %v", err)
	}
	if err := <-errc; err != nil {
		fail("write: %v", err)
	}
	if !bytes.Equal(in, out) {
		fail("echoed %d bytes, sent %d: not the same", len(in), len(out))
	}
	fmt.Printf("echoed %d bytes\n", len(in))
}

func main() {
	if len(os.Args) != 4 {
		fail("usage: goecho serve ADDR:PORT N | send ADDR:PORT BYTES")
	}
	n, err := strconv.Atoi(os.Args[3])
	if err != nil {
		fail("%s: not a number", os.Args[3])
	}
	switch os.Args[1] {
	case "serve":
		serve(os.Args[2], n)
	case "send":
		send(os.Args[2], n)
	default:
		fail("unknown mode %s", os.Args[1])
	}
}
