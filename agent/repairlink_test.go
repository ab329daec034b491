package agent

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/nodelink"
	"github.com/hangwatch/hangwatch/repair"
)

// linkedAgent is an in-process agent serving the repair link, and the
// repair process's end of it.
func linkedAgent(t *testing.T) (*inProcess, *repair.AgentLink, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "link") // a socket's path fits sun_path whatever the test's name
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	cfg := config.Default()
	cfg.Server.ListenAddress = "127.0.0.1:0"
	cfg.Repair.AgentSocket = filepath.Join(dir, "run", "repair.sock")
	p := startInProcess(t, cfg)
	return p, repair.NewAgentLink(cfg.Repair.AgentSocket), cfg.Repair.AgentSocket
}

// TestTheRepairProcessReadsTheAgentsViewOverItsSocket: the view carries
// the conditions and the runtime's silence; the tally comes back as the
// agent's metrics; maintenance is read from the Node; Events go on it.
func TestTheRepairProcessReadsTheAgentsViewOverItsSocket(t *testing.T) {
	p, link, socket := linkedAgent(t)
	if fi, err := os.Stat(socket); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %s: %v, %v; want mode 0600", socket, fi, err)
	}
	ctx := context.Background()
	tally := repair.NewMetrics().Tally()
	tally.Repairs[repair.TargetRuntime][repair.OutcomeRestarted] = 2
	tally.Left = map[repair.Target]float64{repair.TargetRuntime: 1}
	p.stepUntil(t, "RuntimeHung=False", func() bool { return p.onNode(t, "RuntimeHung") == corev1.ConditionFalse })
	p.runtime.frozen.Store(true)
	p.stepUntil(t, "RuntimeHung True in the view, the runtime silent", func() bool {
		link.Refresh(ctx, tally)
		what, d := link.Silence(repair.TargetRuntime)()
		return hasTrue(link.Conditions(), "RuntimeHung") && what != "" && d > 0
	})
	text := metricsText(t, p)
	for _, want := range []string{`hangwatch_repairs_total{outcome="restarted",target="runtime"} 2`,
		`hangwatch_repairs_total{outcome="refused",target="kubelet"} 0`, `hangwatch_repair_budget_remaining{target="runtime"} 1`, "hangwatch_repair_linked 1"} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	checkMaintenanceThroughTheLink(t, p, link)
	if _, _, err := link.Acquire(ctx, repair.TargetRuntime, repair.FleetSettings{MaxRestarts: 5, Window: 10 * time.Minute, Namespace: "kube-system"}); err == nil ||
		!strings.Contains(err.Error(), "cannot be consulted") {
		t.Errorf("fleet ask with no Lease store: %v, want that the bound cannot be consulted", err)
	}
	link.Warning("RepairRefused", "hangwatch: a test's refusal")
	p.stepUntil(t, "repair's Event on the Node", func() bool {
		events, err := p.api.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events.Items {
			if e.Reason == "RepairRefused" && e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == "node-a" {
				return true
			}
		}
		return false
	})
}

func checkMaintenanceThroughTheLink(t *testing.T, p *inProcess, link *repair.AgentLink) {
	t.Helper()
	ctx := context.Background()
	if cond, err := link.Maintenance(ctx); err != nil || cond != "" {
		t.Errorf("maintenance of a Node at rest: %q, %v; want none", cond, err)
	}
	n, err := p.api.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "DrainInProgress", Status: corev1.ConditionTrue})
	if _, err := p.api.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if cond, err := link.Maintenance(ctx); err != nil || cond != "DrainInProgress" {
		t.Errorf("maintenance while draining: %q, %v; want DrainInProgress", cond, err)
	}
}

// TestTheLinkRefusesWhatItWillNotPass: unknown fields, Events that are
// not repair's, tallies of unknown outcomes, asks out of bounds.
func TestTheLinkRefusesWhatItWillNotPass(t *testing.T) {
	_, _, socket := linkedAgent(t)
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}}
	for _, c := range []struct{ path, body, want string }{
		{nodelink.EventPath, `{"reason":"NodeNotReady","message":"x"}`, "not one of repair's reasons"},
		{nodelink.EventPath, `{"reason":"RepairRefused","message":"x","node":"node-b"}`, "unknown field"},
		{nodelink.ViewPath, `{"repairs":{"runtime":{"rebooted":1}}}`, `outcome "rebooted"`},
		{nodelink.ViewPath, `{"repairs":{"runtime":{"restarted":-1}}}`, "want a known outcome and a count"},
		{nodelink.FleetPath, `{"target":"runtime","maxRestarts":1000,"window":600000000000,"namespace":"kube-system"}`, "maxRestarts 1000"},
		{nodelink.ViewPath, `{}{}`, "more than one value"},
		{nodelink.ViewPath, `{"repairs":{"` + strings.Repeat("a", nodelink.MaxBody) + `":{}}}`, "decode"},
	} {
		resp, err := client.Post("http://agent"+c.path, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(msg), c.want) {
			t.Errorf("POST %s %.60s: %s %q, want 400 with %q", c.path, c.body, resp.Status, msg, c.want)
		}
	}
}

func hasTrue(vs []nodelink.Condition, condType string) bool {
	for _, v := range vs {
		if v.Type == condType && v.True {
			return true
		}
	}
	return false
}
