package hangwatch

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/hangwatch/hangwatch/test/harness"
)

// RemedyIdentity applies the remedy overlay's ServiceAccount, RBAC and
// admission policy, and returns a kubeconfig that authenticates as that
// ServiceAccount, so the test runs with the permissions the manifests give.
func RemedyIdentity(t *testing.T, cp *harness.ControlPlane) string {
	t.Helper()
	if cp != SharedControlPlane(t) { // a control plane of the test's own
		return ApplyRemedyIdentity(t, cp)
	}
	remedyKubeconfig.once.Do(func() { remedyKubeconfig.path = ApplyRemedyIdentity(t, cp) })
	if remedyKubeconfig.path == "" {
		t.Fatal("the remedy identity could not be set up (an earlier test says why)")
	}
	return remedyKubeconfig.path
}

func ApplyRemedyIdentity(t *testing.T, cp *harness.ControlPlane) string {
	t.Helper()
	dir := filepath.Join(harness.ModuleRoot(), "manifests", "overlays", "remedy")
	for _, f := range []string{"serviceaccount.yaml", "rbac.yaml", "admission-policy.yaml"} {
		cp.Kubectl(t, "apply", "-f", filepath.Join(dir, f))
	}
	kc, err := cp.Kubeconfig("hangwatch-remedy", "system:serviceaccount:kube-system:hangwatch-remedy",
		"system:serviceaccounts", "system:serviceaccounts:kube-system")
	if err != nil {
		t.Fatal(err)
	}
	WaitPolicyEnforced(t, cp, harness.ClientFor(t, kc))
	return kc
}

// WaitPolicyEnforced waits until the API server enforces the admission
// policy just applied: a label change by the remedy identity on a probe
// Node is denied.
func WaitPolicyEnforced(t *testing.T, cp *harness.ControlPlane, cs kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	probe := UniqueNode("remedy-policy-probe")
	if _, err := cp.Admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: probe}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cp.Admin.CoreV1().Nodes().Delete(ctx, probe, metav1.DeleteOptions{}) }()
	var last error
	try := 0
	took := harness.Eventually(t, time.Minute, "the remedy admission policy to be enforced", func() bool {
		try++ // a new value each time: a patch that changes nothing is allowed
		_, last = cs.CoreV1().Nodes().Patch(ctx, probe, types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"labels":{"probe":"%d"}}}`, try), metav1.PatchOptions{})
		return last != nil && strings.Contains(last.Error(), "hangwatch-remedy may")
	}, harness.Every(100*time.Millisecond), harness.Explaining(func() string { return fmt.Sprintf("last: %v", last) }))
	t.Logf("the remedy admission policy was enforced %v after it was applied", took.Round(100*time.Millisecond))
}

func EnsureDefaultServiceAccount(t *testing.T, cp *harness.ControlPlane, ns string) {
	t.Helper()
	_, err := cp.Admin.CoreV1().ServiceAccounts(ns).Create(context.Background(),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// ApplyScraperIdentity applies the PodMonitor's identity as shipped and
// returns a token of its ServiceAccount (the Secret the manifest also
// makes is filled by the controller manager's token controller, which
// this API server has not; a bound token is the same identity).
func ApplyScraperIdentity(t *testing.T, cp *harness.ControlPlane) string {
	t.Helper()
	cp.Kubectl(t, "apply", "-f", filepath.Join(harness.ModuleRoot(), "manifests", "prometheus", "scraper.yaml"))
	cp.WaitAuthorized(t, harness.ServiceAccountUser("kube-system", "hangwatch-scraper"), harness.NonResourceGet("/metrics"))
	return cp.Token(t, "kube-system", "hangwatch-scraper", nil)
}
