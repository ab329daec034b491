package cri

import (
	"net"
	"path/filepath"
	"testing"
)

func listenUnix(t *testing.T, path string) net.Listener {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestSocketWatchSeesARecreatedSocket: a restart unlinks the socket and binds
// a new one at the same path; the watch says so once, and a missing socket
// is not a replacement until it comes back.
func TestSocketWatchSeesARecreatedSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rt.sock")
	l := listenUnix(t, path)
	w := newSocketWatch(path)
	if w.replaced() {
		t.Fatal("same socket reported replaced")
	}
	_ = l.Close() // unlinks the path
	if w.replaced() {
		t.Fatal("missing socket reported replaced")
	}
	l = listenUnix(t, path)
	defer func() { _ = l.Close() }()
	if !w.replaced() {
		t.Fatal("recreated socket not reported")
	}
	if w.replaced() {
		t.Fatal("replacement reported twice")
	}
}

func TestRedialIfReplacedOnTCPIsANoOp(t *testing.T) {
	c, err := Dial("tcp://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if c.RedialIfReplaced() {
		t.Fatal("tcp endpoint reported a replaced socket")
	}
}
