package leases

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// DefaultHealthzURL is the kubelet's local health endpoint
// (healthzBindAddress 127.0.0.1, healthzPort 10248): no credentials.
const DefaultHealthzURL = "http://127.0.0.1:10248/healthz"

// HealthzTimeout bounds one probe: the kubelet answers its /healthz from
// its HTTP server's goroutines, in well under a millisecond, unless the
// process is frozen.
const HealthzTimeout = 2 * time.Second

// Probe results, the `result` label of hangwatch_kubelet_healthz_probes_total.
const (
	HealthzOK        = "ok"        // it answered 200
	HealthzUnhealthy = "unhealthy" // it answered, with another status (a failed check such as syncloop)
	HealthzNoAnswer  = "timeout"   // no answer in time: the kubelet does not answer
	HealthzRefused   = "refused"   // nothing listens: no kubelet, or healthzPort 0
	HealthzError     = "error"     // anything else
)

// Healthz probes the kubelet's local /healthz. Only a probe that gets no
// answer in time says the kubelet has stopped answering: a refused
// connection is a kubelet that is not running (systemd's to start) or one
// whose health port is off, and a 500 is a kubelet that answers (unhealthy).
type Healthz struct {
	URL    string
	client *http.Client
}

// NewHealthz checks the URL: http or https on this node.
func NewHealthz(raw string) (*Healthz, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("kubelet.healthzURL %q: want http://HOST:PORT/healthz", raw)
	}
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true, ResponseHeaderTimeout: HealthzTimeout}
	return &Healthz{URL: raw, client: &http.Client{Transport: tr, Timeout: HealthzTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}, nil
}

// Probe asks once, within ctx's deadline and HealthzTimeout.
func (h *Healthz) Probe(ctx context.Context) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL, nil)
	if err != nil {
		return HealthzError
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return classifyProbe(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return HealthzUnhealthy
	}
	return HealthzOK
}

// answering says whether a probe's result is a kubelet that answered.
func answering(result string) bool { return result == HealthzOK || result == HealthzUnhealthy }

func classifyProbe(err error) string {
	var ne net.Error
	var op *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return HealthzNoAnswer
	case errors.As(err, &op) && op.Op == "dial":
		return HealthzRefused
	}
	return HealthzError
}
