package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServerLimits serves on a loopback port and checks that the timeouts
// and the connection cap are in place and an oversized header is refused.
func TestServerLimits(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, limited := newServer(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }))
	go func() { _ = srv.Serve(limited) }()
	t.Cleanup(func() { _ = srv.Close() })
	if srv.ReadTimeout == 0 || srv.WriteTimeout == 0 || srv.IdleTimeout == 0 || srv.ReadHeaderTimeout == 0 || srv.MaxHeaderBytes != maxHeaderBytes {
		t.Errorf("limits not set: %+v", srv)
	}
	if limited.Addr() != ln.Addr() || fmt.Sprintf("%T", limited) == fmt.Sprintf("%T", ln) {
		t.Errorf("listener not capped: %T", limited)
	}
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	big := strings.Repeat("a", 4*maxHeaderBytes)
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
