package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangwatch/hangwatch/test/harness"
)

// TestSecurePort runs hangwatch with --secure-listen-address as the node
// identity against the real API server, and asks its secure port as a
// stranger, as a ServiceAccount without rights, as the PodMonitor's
// ServiceAccount (manifests/prometheus/scraper.yaml, applied as shipped)
// and as a user who may read /events.
func TestSecurePort(t *testing.T) {
	c, cp := sharedContainerd(t), controlPlane(t)
	node := uniqueNode("hw-secure")
	kc := createNode(t, cp, node)
	secure := harness.FreeAddr(t)
	d := startDaemon(t, c.Endpoint, nodeArgs(kc, node, "--config", noLeaseConfig(t), "--secure-listen-address", secure,
		"--kernel-rules", userFacilityRules(t))...) // the OOM line below is written to /dev/kmsg
	base := "https://" + secure
	scraper := scraperToken(t, cp)
	nobody := serviceAccountToken(t, cp, "hw-secure-nobody", nil)
	reader := serviceAccountToken(t, cp, "hw-secure-reader", []string{"/metrics", "/events", "/conditions"})

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

// scraperToken applies the PodMonitor's identity as shipped and returns a
// token of its ServiceAccount (the Secret the manifest also makes is filled
// by the controller manager's token controller, which this API server has
// not; a bound token is the same identity).
func scraperToken(t *testing.T, cp *harness.ControlPlane) string {
	t.Helper()
	kubectl(t, cp, "apply", "-f", filepath.Join(harness.ModuleRoot(), "manifests", "prometheus", "scraper.yaml"))
	waitAuthorized(t, cp, serviceAccountUser("kube-system", "hangwatch-scraper"), nonResourceGet("/metrics"))
	return tokenFor(t, cp, "kube-system", "hangwatch-scraper")
}

// serviceAccountToken makes a ServiceAccount in default that may get
// paths (none: no rights) and returns a token of it.
func serviceAccountToken(t *testing.T, cp *harness.ControlPlane, name string, paths []string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cp.Admin.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(paths) > 0 {
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules: []rbacv1.PolicyRule{{NonResourceURLs: paths, Verbs: []string{"get"}}}}
		if _, err := cp.Admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: "default"}}}
		if _, err := cp.Admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			waitAuthorized(t, cp, serviceAccountUser("default", name), nonResourceGet(p))
		}
	}
	return tokenFor(t, cp, "default", name)
}

func tokenFor(t *testing.T, cp *harness.ControlPlane, ns, sa string) string {
	t.Helper()
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(3600))}}
	tok, err := cp.Admin.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), sa, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Status.Token
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
