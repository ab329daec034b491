package harness

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// portsBelowEphemeral is how many ports below the kernel's ephemeral
// range FreePort picks from.
const portsBelowEphemeral = 12000

// FreePort returns a TCP port that was free on every address a moment
// ago, for a server a test starts (which binds it a little later). It is
// picked below the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range): a port the kernel hands out
// for "port 0" is one it also gives the next outgoing connection as its
// source port, and with Prometheus, kubelets and API servers connecting
// all the time one was taken before its server could bind it.
func FreePort() (int, error) {
	lo, hi := pickRange()
	if lo >= hi {
		return kernelPort()
	}
	for range 200 {
		p := lo + rand.IntN(hi-lo)
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		_ = ln.Close()
		return p, nil
	}
	return 0, fmt.Errorf("no free port in %d-%d after 200 tries", lo, hi-1)
}

// pickRange is the ports FreePort picks from, [lo, hi): the
// portsBelowEphemeral below the ephemeral range, above 1024; empty when
// the range cannot be read or leaves no room.
func pickRange() (lo, hi int) {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(raw))
	if len(f) != 2 {
		return 0, 0
	}
	first, err := strconv.Atoi(f[0])
	if err != nil {
		return 0, 0
	}
	return max(1025, first-portsBelowEphemeral), first
}

// kernelPort asks the kernel for a free loopback port, where FreePort
// has no range of its own.
func kernelPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = ln.Close() }()
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("a TCP listener without a TCP address")
	}
	return addr.Port, nil
}

// FreePorts returns n distinct free loopback ports.
func FreePorts(n int) ([]int, error) {
	var ports []int
	seen := map[int]bool{}
	for len(ports) < n {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		if !seen[p] {
			seen[p] = true
			ports = append(ports, p)
		}
	}
	return ports, nil
}

// FreeAddr returns a free loopback address, 127.0.0.1:PORT, for a server
// the test starts; it fails t when there is none.
func FreeAddr(t testing.TB) string {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
