package harness

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePortIsBelowTheEphemeralRange: the ports the harness's servers
// bind are never ones the kernel hands out as outgoing connections'
// source ports, and each was free.
func TestFreePortIsBelowTheEphemeralRange(t *testing.T) {
	lo, hi := pickRange()
	if lo >= hi {
		t.Skip("no ephemeral range to read")
	}
	seen := map[int]bool{}
	for range 50 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if p < lo || p >= hi {
			t.Fatalf("port %d outside %d-%d", p, lo, hi-1)
		}
		seen[p] = true
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		_ = ln.Close()
	}
	if len(seen) < 40 {
		t.Errorf("50 picks gave %d ports: not spread", len(seen))
	}
}
