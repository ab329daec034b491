package alerting

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"sigs.k8s.io/yaml"
)

// AlertmanagerBinary finds Alertmanager built by the setup command from
// the Go module pinned in hack/alertmanager.
func AlertmanagerBinary() (string, error) {
	return harness.CachedTool("alertmanager", "HANGWATCH_ALERTMANAGER", "hack/alertmanager")
}

// AlertRoute is the timing of an Alertmanager route: how long a new
// group waits for more alerts before its first notification, and how
// often a group that changed (an alert resolved) is notified again.
type AlertRoute struct {
	GroupWait, GroupInterval time.Duration
}

// Alertmanager is a real Alertmanager a test started, on a loopback port,
// without clustering.
type Alertmanager struct {
	*harness.Proc
	Addr string
}

// StartAlertmanager starts Alertmanager routing every alert, one group
// per alert name and node, to the webhook receiver r (resolved
// notifications too), and waits until it is ready.
func StartAlertmanager(t *testing.T, route AlertRoute, r *AlertReceiver) *Alertmanager {
	t.Helper()
	bin, err := AlertmanagerBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := map[string]any{
		"route": map[string]any{"receiver": "test", "group_by": []string{"alertname", "node"},
			"group_wait": route.GroupWait.String(), "group_interval": route.GroupInterval.String(), "repeat_interval": "4h"},
		"receivers": []any{map[string]any{"name": "test",
			"webhook_configs": []any{map[string]any{"url": r.URL, "send_resolved": true}}}},
	}
	raw, err := yaml.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "alertmanager.yaml")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	addr := harness.FreeAddr(t)
	am := &Alertmanager{Addr: addr, Proc: harness.StartProc(t, "alertmanager", harness.ProcOptions{Grace: 10 * time.Second}, bin,
		"--config.file="+path, "--storage.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr,
		"--cluster.listen-address=")} // no peers: it would listen on every address
	harness.Eventually(t, time.Minute, "Alertmanager ready", func() bool {
		code, _, err := harness.Get("http://" + addr + "/-/ready")
		return err == nil && code == http.StatusOK
	}, harness.UnlessExited(am))
	return am
}

// Notification is one alert as a webhook notification carried it, and
// when the receiver had it.
type Notification struct {
	Status      string            `json:"status"` // firing or resolved
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	Received    time.Time         `json:"-"`
}

// AlertReceiver is a webhook receiver on loopback that keeps every alert
// Alertmanager notifies it of.
type AlertReceiver struct {
	URL string
	mu  sync.Mutex
	got []Notification
}

// StartAlertReceiver serves the webhook until the test ends.
func StartAlertReceiver(t *testing.T) *AlertReceiver {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &AlertReceiver{URL: "http://" + l.Addr().String() + "/alerts"}
	srv := &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

func (r *AlertReceiver) serve(w http.ResponseWriter, req *http.Request) {
	received := time.Now()
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	var msg struct {
		Alerts []Notification `json:"alerts"`
	}
	if err == nil {
		err = json.Unmarshal(body, &msg)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range msg.Alerts {
		a.Received = received
		r.got = append(r.got, a)
	}
}

// First is when the receiver first had alert name for node with status,
// at or after since; ok false while it has not.
func (r *AlertReceiver) First(name, node, status string, since time.Time) (at time.Time, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.got {
		if a.Labels["alertname"] == name && a.Labels["node"] == node && a.Status == status && !a.Received.Before(since) {
			return a.Received, true
		}
	}
	return time.Time{}, false
}

// All is every alert received so far.
func (r *AlertReceiver) All() []Notification {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Notification(nil), r.got...)
}
