package agent

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/metrics"
	testclock "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/kernellog"
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

// TestKernelLinesOnlyOnTheSecurePort checks what each port's mux serves:
// the plain one withholds kernel lines, and serves only /healthz when the
// secure port is on.
func TestKernelLinesOnlyOnTheSecurePort(t *testing.T) {
	clk := testclock.NewFakeClock(time.Unix(1e9, 0))
	events := newKernelEventLog(10)
	events.add(kernellog.Event{Rule: "oom-kill", Reason: "OOMKilling", Message: "Killed process 4242 (secret)", Count: 1})
	events.add(kernellog.Event{Rule: "runtime-task-blocked", Reason: "ContainerRuntimeTaskBlocked", Condition: "KernelDeadlock",
		Message: "INFO: task containerd:4343 blocked for more than 120 seconds.", Count: 1})
	e := endpoints{reg: metrics.NewKubeRegistry(), conds: conditions.NewSet(metrics.NewKubeRegistry(), clk.Now(), nil), events: events, health: newLiveness(clk, time.Minute)}
	get := func(h http.Handler, path string) (int, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w.Code, w.Body.String()
	}
	if code, body := get(e.plainMux(""), "/events"); code != http.StatusOK || strings.Contains(body, "4242") || strings.Contains(body, "4343") ||
		!strings.Contains(body, "OOMKilling") || !strings.Contains(body, `"condition": "KernelDeadlock"`) {
		t.Errorf("plain /events: %d %s; want the events without their lines", code, body)
	}
	if code, body := get(e.secureMux(), "/events"); code != http.StatusOK || !strings.Contains(body, "Killed process 4242") ||
		!strings.Contains(body, "task containerd:4343 blocked") {
		t.Errorf("secure /events: %d %s; want the lines", code, body)
	}
	withSecure := e.plainMux("0.0.0.0:9765")
	for path, want := range map[string]int{"/healthz": http.StatusOK, "/metrics": http.StatusNotFound, "/events": http.StatusNotFound, "/conditions": http.StatusNotFound} {
		if code, body := get(withSecure, path); code != want {
			t.Errorf("plain %s with the secure port on: %d %s, want %d", path, code, body, want)
		}
	}
}
