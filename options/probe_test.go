package options

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/cri"
)

// TestSettingsReachTheirPackages: each setting lands in the option its
// package reads, and an unset timeout is crictl's, not given.
func TestSettingsReachTheirPackages(t *testing.T) {
	c := config.Default()
	if e := Endpoint(c.Runtime); e.TimeoutSet || e.Timeout != cri.DefaultTimeout {
		t.Errorf("unset timeout: %+v, want crictl's default, not set", e)
	}
	c.Runtime.Endpoint, c.Runtime.Timeout = "unix:///x.sock", &metav1.Duration{Duration: 5 * time.Second}
	if e := Endpoint(c.Runtime); !e.TimeoutSet || e.Timeout != 5*time.Second || e.Flag != "unix:///x.sock" {
		t.Errorf("endpoint options %+v", e)
	}
	p := Prober(c.Runtime, cri.Endpoint{Timeout: 3 * time.Second})
	if p.Timeout != 3*time.Second || p.CallLifetime != 3*time.Second || p.SlowThreshold != c.Runtime.SlowThreshold.Duration {
		t.Errorf("prober config %+v: want the endpoint's timeout", p)
	}
	c.Kubelet.MetricsURL, c.Kubelet.TLSServerName = "https://127.0.0.1:10250/metrics", "node-a"
	if k := Kubelet(c.Kubelet); k.URL != c.Kubelet.MetricsURL || k.ServerName != "node-a" || k.Timeout != c.Kubelet.MetricsTimeout.Duration {
		t.Errorf("scraper options %+v", k)
	}
	c.PLEG.SlowRelist = metav1.Duration{Duration: 7 * time.Second}
	if g := PLEG(c.PLEG); g.SlowRelist != 7*time.Second || g.StaleAfter != c.PLEG.StaleAfter.Duration {
		t.Errorf("PLEG config %+v", g)
	}
	c.Repair.FleetMaxRestarts, c.Repair.Fence = 3, true
	if r, f := Repair(c.Repair), Fence(c.Repair); r.Fleet.MaxRestarts != 3 || r.StateFile != c.Repair.StateFile || !f.Enabled {
		t.Errorf("repair settings %+v, fence %+v", r, f)
	}
}
