package integration

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// TestSecurePort runs hangwatch with --secure-listen-address as the node
// identity against the real API server, and asks its secure port as a
// stranger, as a ServiceAccount without rights, as the PodMonitor's
// ServiceAccount (manifests/prometheus/scraper.yaml, applied as shipped)
// and as a user who may read /events.
func TestSecurePort(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd, harness.LaneKmsg)
	c, cp := hangwatch.SharedContainerd(t), hangwatch.SharedControlPlane(t)
	node := hangwatch.UniqueNode("hw-secure")
	kc := hangwatch.CreateNode(t, cp, node)
	secure := harness.FreeAddr(t)
	d := hangwatch.StartDaemon(t, c.Endpoint, hangwatch.NodeArgs(kc, node, "--config", hangwatch.NoLeaseConfig(t), "--secure-listen-address", secure,
		"--kernel-rules", hangwatch.UserFacilityRules(t))...) // the OOM line below is written to /dev/kmsg
	base := "https://" + secure
	scraper := hangwatch.ApplyScraperIdentity(t, cp)
	nobody := cp.ServiceAccountToken(t, "hw-secure-nobody")
	reader := cp.ServiceAccountToken(t, "hw-secure-reader", rbacv1.PolicyRule{NonResourceURLs: []string{"/metrics", "/events", "/conditions"}, Verbs: []string{"get"}})

	for _, c := range []struct {
		who, token, path string
		code             int
	}{
		{"no token", "", "/metrics", http.StatusUnauthorized},
		{"a forged token", "not-a-token", "/metrics", http.StatusUnauthorized},
		{"a ServiceAccount without rights", nobody, "/metrics", http.StatusForbidden},
		{"the PodMonitor's ServiceAccount", scraper, "/events", http.StatusForbidden},
		{"the PodMonitor's ServiceAccount", scraper, "/metrics", http.StatusOK},
	} {
		code, body := harness.MustGet(t, base+c.path, harness.Token(c.token), harness.Client(harness.SecureClient))
		t.Logf("GET %s as %s: %d %s", c.path, c.who, code, harness.FirstLine(body))
		if code != c.code {
			t.Errorf("GET %s as %s: %d, want %d: %s", c.path, c.who, code, c.code, body)
		}
		if c.code == http.StatusOK && !strings.Contains(body, "hangwatch_node_condition") {
			t.Errorf("GET %s as %s: no hangwatch metrics in the answer", c.path, c.who)
		}
	}
	if _, err := d.Get("/metrics"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("the plain port served /metrics while the secure port is on: %v", err)
	}

	line := fmt.Sprintf("Memory cgroup out of memory: Killed process %d (hw-secure) total-vm:262144kB, anon-rss:256512kB, file-rss:1024kB, shmem-rss:0kB, UID:0 pgtables:560kB oom_score_adj:999", 4000+time.Now().Nanosecond()%1000)
	writeKmsg(t, line)
	harness.Eventually(t, 10*time.Second, "the kernel line on the secure /events", func() bool {
		code, body := harness.MustGet(t, base+"/events", harness.Token(reader), harness.Client(harness.SecureClient))
		return code == http.StatusOK && strings.Contains(body, line)
	}, harness.UnlessExited(d))
	_, text := harness.MustGet(t, base+"/metrics", harness.Token(scraper), harness.Client(harness.SecureClient))
	counts := harness.SeriesOf(text, "hangwatch_secure_requests_total")
	t.Logf("hangwatch_secure_requests_total: %v", counts)
	for _, r := range []string{"allowed", "unauthenticated", "forbidden"} {
		if counts[`hangwatch_secure_requests_total{result="`+r+`"}`] < 1 {
			t.Errorf("no %s request counted", r)
		}
	}
}

//nolint:gosec // hangwatch's self-signed certificate, as the shipped PodMonitor
