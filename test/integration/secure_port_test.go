package integration

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/hangwatch/hangwatch/test/harness"
)

// TestSecurePort runs hangwatch with --secure-listen-address as the node
// identity against the real API server, and asks its secure port as a
// stranger, as a ServiceAccount without rights, as the PodMonitor's
// ServiceAccount (manifests/prometheus/scraper.yaml, applied as shipped)
// and as a user who may read /events.
func TestSecurePort(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd, harness.LaneKmsg)
	c, cp := sharedContainerd(t), controlPlane(t)
	node := uniqueNode("hw-secure")
	kc := createNode(t, cp, node)
	secure := harness.FreeAddr(t)
	d := startDaemon(t, c.Endpoint, nodeArgs(kc, node, "--config", noLeaseConfig(t), "--secure-listen-address", secure,
		"--kernel-rules", userFacilityRules(t))...) // the OOM line below is written to /dev/kmsg
	base := "https://" + secure
	scraper := applyScraperIdentity(t, cp)
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
		code, body := secureGet(t, base+c.path, c.token)
		t.Logf("GET %s as %s: %d %s", c.path, c.who, code, firstLine(body))
		if code != c.code {
			t.Errorf("GET %s as %s: %d, want %d: %s", c.path, c.who, code, c.code, body)
		}
		if c.code == http.StatusOK && !strings.Contains(body, "hangwatch_node_condition") {
			t.Errorf("GET %s as %s: no hangwatch metrics in the answer", c.path, c.who)
		}
	}
	if _, err := d.get("/metrics"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("the plain port served /metrics while the secure port is on: %v", err)
	}

	line := fmt.Sprintf("Memory cgroup out of memory: Killed process %d (hw-secure) total-vm:262144kB, anon-rss:256512kB, file-rss:1024kB, shmem-rss:0kB, UID:0 pgtables:560kB oom_score_adj:999", 4000+time.Now().Nanosecond()%1000)
	writeKmsg(t, line)
	harness.Eventually(t, 10*time.Second, "the kernel line on the secure /events", func() bool {
		code, body := secureGet(t, base+"/events", reader)
		return code == http.StatusOK && strings.Contains(body, line)
	}, harness.UnlessExited(d))
	_, text := secureGet(t, base+"/metrics", scraper)
	counts := seriesOf(text, "hangwatch_secure_requests_total")
	t.Logf("hangwatch_secure_requests_total: %v", counts)
	for _, r := range []string{"allowed", "unauthenticated", "forbidden"} {
		if counts[`hangwatch_secure_requests_total{result="`+r+`"}`] < 1 {
			t.Errorf("no %s request counted", r)
		}
	}
}

// applyScraperIdentity applies the PodMonitor's identity as shipped and
// returns a token of its ServiceAccount (the Secret the manifest also
// makes is filled by the controller manager's token controller, which
// this API server has not; a bound token is the same identity).
func applyScraperIdentity(t *testing.T, cp *harness.ControlPlane) string {
	t.Helper()
	cp.Kubectl(t, "apply", "-f", filepath.Join(harness.ModuleRoot(), "manifests", "prometheus", "scraper.yaml"))
	cp.WaitAuthorized(t, harness.ServiceAccountUser("kube-system", "hangwatch-scraper"), harness.NonResourceGet("/metrics"))
	return cp.Token(t, "kube-system", "hangwatch-scraper", nil)
}

// secureClient keeps its connections, as Prometheus does: hangwatch holds
// at most 32 at once, and a new client per request would leave each one
// open until the server's idle timeout.
var secureClient = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // hangwatch's self-signed certificate, as the shipped PodMonitor

// secureGet asks hangwatch's secure port, whose certificate is
// self-signed, as the PodMonitor does (insecureSkipVerify).
func secureGet(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil) //nolint:noctx // bounded by the client's timeout
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := secureClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
