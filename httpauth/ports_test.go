package httpauth

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPlainPortLimits serves the plain port on loopback and checks that
// the timeouts and the connection cap are in place and an oversized
// header is refused.
func TestPlainPortLimits(t *testing.T) {
	p, err := OpenPorts("127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Start(nil)
	t.Cleanup(func() {
		if err := p.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	srv := p.plain
	if srv.ReadTimeout == 0 || srv.WriteTimeout == 0 || srv.IdleTimeout == 0 || srv.ReadHeaderTimeout == 0 || srv.MaxHeaderBytes != plainHeaderBytes {
		t.Errorf("limits not set: %+v", srv)
	}
	if got := fmt.Sprintf("%T", p.listener); !strings.Contains(got, "limitListener") {
		t.Errorf("listener not capped: %s", got)
	}
	if addrs := p.Addrs(); len(addrs) != 1 {
		t.Errorf("addresses without a secure port: %v", addrs)
	}
	conn, err := net.Dial("tcp", p.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	big := strings.Repeat("a", 4*plainHeaderBytes)
	fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", big)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a %d KiB header: HTTP %d, want 431", len(big)>>10, resp.StatusCode)
	}
}

// TestOpenPortsClosesThePlainPortWhenTheSecureOneFails: a secure port
// that cannot listen leaves nothing open.
func TestOpenPortsClosesThePlainPortWhenTheSecureOneFails(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	attrs, err := ParseResource("", "")
	if err != nil {
		t.Fatal(err)
	}
	secure, err := NewSecureServer(ServerOptions{Address: taken.Addr().String(), Reviewer: newFakeReviewer(), Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := plain.Addr().String()
	_ = plain.Close()
	if _, err := OpenPorts(addr, http.NotFoundHandler(), secure, http.NotFoundHandler()); err == nil ||
		!strings.Contains(err.Error(), "--secure-listen-address "+taken.Addr().String()) {
		t.Fatalf("the secure port's address taken: %v", err)
	}
	again, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the plain port was left open: %v", err)
	}
	_ = again.Close()
}
