package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/harness/kubelet"
)

// TestEventedPLEGGenerations runs the kubelet with its EventedPLEG gate on,
// against containerd 2.x, and asks diag for the PLEG: hangwatch must learn
// the gate and the kubelet's version from its metrics, and trust
// kubelet_pleg_last_seen_seconds from 1.37 on (the Evented PLEG only asks
// for relists; the 1 s generic relist keeps running and sets the gauge),
// not before (1.26-1.36 set it to "now"). hack/e2e.sh's matrix runs the
// same gate on 1.36 and 1.37 through the hang scenarios. With
// HANGWATCH_CAPTURE=1 it writes the kubelet's metrics to
// kubeletmetrics/testdata/kubelet-<minor>-evented-on.prom.
func TestEventedPLEGGenerations(t *testing.T) {
	harness.Parallel(t)
	cp := hangwatch.SharedControlPlane(t)
	c := containerd.StartT(t, 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	k, err := kubelet.StartWithGates(ctx, cp, c, c.Endpoint, hangwatch.UniqueNode("evented"), "EventedPLEG=true")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	var r diagJSON
	harness.Eventually(t, time.Minute, "diag to see the Evented PLEG from the kubelet's metrics", func() bool {
		r, _, _ = runDiag(t, c.Endpoint, "--kubelet-metrics-url", k.ReadOnlyMetricsURL())
		return r.PLEG.EventedPLEG && r.PLEG.KubeletVersion != ""
	})
	lastSeen := r.PLEG.signal("lastSeen")
	t.Logf("kubelet %s, Evented PLEG on: PLEG %s (%s); lastSeen %s: %s", r.PLEG.KubeletVersion, r.PLEG.Verdict, r.PLEG.Reason, lastSeen.State, lastSeen.Detail)
	kubelet, err := harness.KubeletVersion()
	if err != nil {
		t.Fatal(err)
	}
	if r.PLEG.KubeletVersion != kubelet {
		t.Errorf("kubelet version %q from the metrics, want %s", r.PLEG.KubeletVersion, kubelet)
	}
	want := "ok"
	if !strings.HasPrefix(kubelet, "v1.37") && !strings.HasPrefix(kubelet, "v1.38") {
		want = "untrusted"
	}
	if lastSeen.State != want || r.PLEG.Verdict != "Healthy" {
		t.Errorf("kubelet %s with the Evented PLEG: lastSeen %s (%s), PLEG %s; want %s and Healthy", r.PLEG.KubeletVersion, lastSeen.State, lastSeen.Detail, r.PLEG.Verdict, want)
	}
	if os.Getenv("HANGWATCH_CAPTURE") == "1" {
		minor := strings.Join(strings.Split(strings.TrimPrefix(kubelet, "v"), ".")[:2], ".")
		_, body := harness.MustGet(t, k.ReadOnlyMetricsURL())
		path := filepath.Join(harness.ModuleRoot(), "kubeletmetrics", "testdata", "kubelet-"+minor+"-evented-on.prom")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
