package agent

import (
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

// TestKernelLinesOnlyOnTheSecurePort checks what each port's mux serves:
// the plain one withholds kernel lines, and serves only /healthz when the
// secure port is on.
func TestKernelLinesOnlyOnTheSecurePort(t *testing.T) {
	clk := testclock.NewFakeClock(time.Unix(1e9, 0))
	events := newKernelEventLog(10)
	events.add(kernellog.Event{Rule: "oom-kill", Reason: "OOMKilling", Message: "Killed process 4242 (secret)", Count: 1})
	events.add(kernellog.Event{Rule: "runtime-task-blocked", Reason: "ContainerRuntimeTaskBlocked", Condition: "KernelDeadlock",
		Message: "INFO: task containerd:4343 blocked for more than 120 seconds.", Count: 1})
	e := endpoints{reg: metrics.NewKubeRegistry(), conds: &conditions.Latest{}, events: events, health: newLiveness(clk, time.Minute)}
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

// TestAConditionIsAHealthCheck: /healthz/<type>, on both ports, answers
// 200 while the condition is False and 503 while it is True or Unknown,
// 404 for a type hangwatch does not own: node-readiness-controller's
// reporter reads the code.
func TestAConditionIsAHealthCheck(t *testing.T) {
	clk := testclock.NewFakeClock(time.Unix(1e9, 0))
	latest := &conditions.Latest{}
	latest.Judged(conditions.Judgement{Conditions: []conditions.Condition{
		{Type: "GPUUnavailable", Status: conditions.StatusTrue, Reason: "GPUFallenOffBus", Message: "Xid 79 on the GPU at PCI 0000:3b:00"},
		{Type: "KernelDeadlock", Status: conditions.StatusFalse, Reason: "KernelHasNoDeadlock", Message: "kernel has no deadlock"},
		{Type: "RuntimeHung", Status: conditions.StatusUnknown, Reason: "RuntimeNotProbedYet", Message: "not yet"},
	}})
	e := endpoints{reg: metrics.NewKubeRegistry(), conds: latest, events: newKernelEventLog(1), health: newLiveness(clk, time.Minute)}
	for _, mux := range map[string]http.Handler{"plain": e.plainMux(""), "plain beside the secure port": e.plainMux("0.0.0.0:9765"), "secure": e.secureMux()} {
		for path, want := range map[string]struct {
			code int
			body string
		}{
			"/healthz/GPUUnavailable": {http.StatusServiceUnavailable, "GPUUnavailable=True GPUFallenOffBus: Xid 79 on the GPU at PCI 0000:3b:00\n"},
			"/healthz/KernelDeadlock": {http.StatusOK, "KernelDeadlock=False KernelHasNoDeadlock: kernel has no deadlock\n"},
			"/healthz/RuntimeHung":    {http.StatusServiceUnavailable, "RuntimeHung=Unknown RuntimeNotProbedYet: not yet\n"},
			"/healthz/Ready":          {http.StatusNotFound, `hangwatch owns no condition "Ready" (it owns [GPUUnavailable KernelDeadlock RuntimeHung])` + "\n"},
		} {
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
			if w.Code != want.code || w.Body.String() != want.body {
				t.Errorf("%s: %d %q; want %d %q", path, w.Code, w.Body.String(), want.code, want.body)
			}
		}
	}
}
