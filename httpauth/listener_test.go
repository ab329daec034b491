package httpauth

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// dialFrom connects to addr from the loopback address local (Linux
// answers on all of 127.0.0.0/8), as a distinct source.
func dialFrom(t *testing.T, local, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Skipf("dial %s from %s (another loopback address as another source): %v", addr, local, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// closedAtOnce tells whether the server closed c without a word within
// 5 s: EOF or a reset, where a connection it keeps times out.
func closedAtOnce(t *testing.T, c net.Conn) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.Read(make([]byte, 1))
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return false
	case err == nil:
		t.Fatalf("%v: the server wrote", c.LocalAddr())
	}
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

func TestConnectionsLimitedBySource(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ll := newLimitListener(ln, 2, 3)
	t.Cleanup(func() { _ = ll.Close() })
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := ll.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	addr := ln.Addr().String()
	want := func(local string) net.Conn {
		t.Helper()
		dialFrom(t, local, addr)
		select {
		case c := <-accepted:
			return c
		case <-time.After(5 * time.Second):
			t.Fatalf("a connection from %s within the limits was not accepted", local)
			return nil
		}
	}
	first := want("127.0.0.1")
	want("127.0.0.1")
	if !closedAtOnce(t, dialFrom(t, "127.0.0.1", addr)) {
		t.Error("a third connection from 127.0.0.1 (2 a source) was kept")
	}
	want("127.0.0.2")
	if !closedAtOnce(t, dialFrom(t, "127.0.0.3", addr)) {
		t.Error("a fourth connection in all (3 at most) was kept")
	}
	_ = first.Close()
	want("127.0.0.1")
	if len(accepted) != 0 {
		t.Errorf("%d connections past the limits accepted", len(accepted))
	}
}
