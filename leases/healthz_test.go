package leases

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestHealthzOnlyNoAnswerIsSilence: an answer of any status is a kubelet
// that answers, a refused connection is not a frozen one, and only a
// request left unanswered past the deadline is.
func TestHealthzOnlyNoAnswerIsSilence(t *testing.T) {
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer hung.Close()
	defer close(release)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "[-]syncloop failed", http.StatusInternalServerError)
	}))
	defer failing.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedURL := "http://" + closed.Addr().String() + "/healthz"
	_ = closed.Close()
	for _, c := range []struct{ url, want string }{
		{failing.URL + "/healthz", HealthzUnhealthy},
		{refusedURL, HealthzRefused},
		{hung.URL + "/healthz", HealthzNoAnswer},
	} {
		h, err := NewHealthz(c.url)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		if got := h.Probe(ctx); got != c.want {
			t.Errorf("probe of %s = %s, want %s", c.url, got, c.want)
		}
		cancel()
	}
}

func TestNewHealthzNamesTheField(t *testing.T) {
	for _, bad := range []string{"127.0.0.1:10248", "unix:///run/kubelet.sock", "http://", "::"} {
		if _, err := NewHealthz(bad); err == nil {
			t.Errorf("NewHealthz(%q) took it", bad)
		} else if want := "kubelet.healthzURL"; err.Error()[:len(want)] != want {
			t.Errorf("NewHealthz(%q): %v; want it to name %s", bad, err, want)
		}
	}
}
