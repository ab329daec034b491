package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/hangwatch/hangwatch/test/harness"
)

// What docs/install.md's NodeHealthCheck names, and what the test gives it.
const (
	// nhcNamespace is the remediation template's namespace in the docs, and
	// the controller's own (DEPLOYMENT_NAMESPACE), as the medik8s operators
	// install together there.
	nhcNamespace = "openshift-workload-availability"
	// nhcServiceAccount is the controller's identity: the shipped RBAC's
	// ServiceAccount after its kustomization's namePrefix.
	nhcServiceAccount = "node-healthcheck-controller-manager"
	snrTemplateName   = "self-node-remediation-automatic-strategy-template"
	// nhcDuration is RuntimeHung's duration in the docs' NodeHealthCheck.
	nhcDuration = 120 * time.Second
	// shortSpell is how long the second node's RuntimeHung stays True:
	// half the duration.
	shortSpell = 60 * time.Second
	// spareNodes are healthy Nodes beside the two frozen ones, so that
	// minHealthy (51% of the 7 Nodes the selector matches: 4) holds while
	// both are sick.
	spareNodes = 5
	// nhcWebhookPort is where the controller serves its validating webhook:
	// 9443 on every address, fixed in its main.go.
	nhcWebhookPort = 9443
)

var (
	nhcGVR         = schema.GroupVersionResource{Group: "remediation.medik8s.io", Version: "v1alpha1", Resource: "nodehealthchecks"}
	snrGVR         = schema.GroupVersionResource{Group: "self-node-remediation.medik8s.io", Version: "v1alpha1", Resource: "selfnoderemediations"}
	snrTemplateGVR = schema.GroupVersionResource{Group: "self-node-remediation.medik8s.io", Version: "v1alpha1", Resource: "selfnoderemediationtemplates"}
	crdGVR         = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// TestNodeHealthCheckRemediatesOnRuntimeHung runs medik8s' NodeHealthCheck
// controller (node-healthcheck-operator, which ensure_nhc builds from its
// Go module) with its shipped RBAC and validating webhook against an API
// server of the test's own, and applies docs/install.md's NodeHealthCheck
// as the docs print it, byte for byte. Self Node Remediation's part is
// played by recording CRDs: NodeHealthCheck's remediation is a
// SelfNodeRemediation object that nothing acts on. Two Nodes have a real
// `hangwatch run` on a containerd of their own, which the test freezes at
// once: A stays frozen until NodeHealthCheck asks for A's remediation,
// which must not come before RuntimeHung has been True for 120 s, and is
// then thawed: hangwatch clears RuntimeHung and NodeHealthCheck deletes
// the remediation. B is thawed after 60 s of RuntimeHung and gets none.
func TestNodeHealthCheckRemediatesOnRuntimeHung(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	harness.RequireRealParts(t)
	nhc, err := harness.NHCBuild()
	if err != nil {
		t.Fatal(err)
	}
	docsNHC, docsNHCName := nodeHealthCheckFromDocs(t)

	// The control plane starts while both containerds do.
	var cp *harness.ControlPlane
	var cpErr error
	cpStarted := make(chan struct{})
	go func() {
		defer close(cpStarted)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cp, cpErr = harness.StartControlPlane(ctx)
	}()
	t.Cleanup(func() {
		<-cpStarted
		if cp != nil {
			cp.Stop()
		}
	})
	cA, cB := harness.StartContainerdT(t, 1, 1), harness.StartContainerdT(t, 1, 1)
	<-cpStarted
	if cpErr != nil {
		t.Fatalf("start control plane: %v", cpErr)
	}

	// ClusterRole aggregation, which the controller's RBAC relies on (its
	// aggregated role gathers the remediators' rules), is
	// kube-controller-manager's: it runs that controller alone (no node
	// lifecycle controller: no kubelet renews these Nodes' Leases).
	var kcm *harness.ControllerManager
	var kcmErr error
	kcmStarted := make(chan struct{})
	go func() {
		defer close(kcmStarted)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		kcm, kcmErr = harness.StartControllers(ctx, cp, "clusterrole-aggregation-controller")
	}()
	t.Cleanup(func() {
		<-kcmStarted
		if kcm != nil {
			kcm.Stop()
		}
	})

	ctx := context.Background()
	dyn := adminDynamic(t, cp)
	installRemediationCRDs(t, dyn, nhc)
	if _, err := cp.Admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nhcNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	installNHCRBAC(t, cp, nhc)
	template := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "self-node-remediation.medik8s.io/v1alpha1", "kind": "SelfNodeRemediationTemplate",
		"metadata": map[string]any{"name": snrTemplateName, "namespace": nhcNamespace},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"remediationStrategy": "Automatic"}}},
	}}
	if _, err := dyn.Resource(snrTemplateGVR).Namespace(nhcNamespace).Create(ctx, template, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nodeA, nodeB := harness.UniqueNode("hw-nhc-a"), harness.UniqueNode("hw-nhc-b")
	kcA, kcB := harness.CreateNode(t, cp, nodeA), harness.CreateNode(t, cp, nodeB)
	for i := range spareNodes {
		harness.CreateNode(t, cp, fmt.Sprintf("%s-spare%d", nodeA, i))
	}
	<-kcmStarted
	if kcmErr != nil {
		t.Fatalf("start kube-controller-manager: %v", kcmErr)
	}

	ctrl := startNHC(t, cp, nhc)
	harness.Eventually(t, 30*time.Second, "the aggregated ClusterRole to hold the remediators' rules", func() bool {
		r, err := cp.Admin.RbacV1().ClusterRoles().Get(ctx, "node-healthcheck-operator-aggregation", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, rule := range r.Rules {
			if strings.Contains(strings.Join(rule.Resources, ","), "selfnoderemediations") {
				return true
			}
		}
		return false
	}, harness.UnlessExited(ctrl))
	registerNHCWebhook(t, cp, nhc)

	// hangwatch on A and B at its shipped timings; no kubelet there, so no
	// KubeletUnresponsive.
	dA := harness.StartDaemon(t, cA.Endpoint, harness.NodeArgs(kcA, nodeA, "--config", harness.NoLeaseConfig(t))...)
	dB := harness.StartDaemon(t, cB.Endpoint, harness.NodeArgs(kcB, nodeB, "--config", harness.NoLeaseConfig(t))...)
	harness.WaitNode(t, cp, dA, 60*time.Second, nodeA, "RuntimeHung", harness.CondStatus(corev1.ConditionFalse))
	harness.WaitNode(t, cp, dB, 60*time.Second, nodeB, "RuntimeHung", harness.CondStatus(corev1.ConditionFalse))

	remediations := recordRemediations(t, dyn)
	applyAsYAML(t, cp, docsNHC, docsNHCName)
	harness.Eventually(t, 60*time.Second, "the NodeHealthCheck enabled, all 7 Nodes observed healthy", func() bool {
		u, err := dyn.Resource(nhcGVR).Get(ctx, docsNHCName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedNodes")
		healthy, _, _ := unstructured.NestedInt64(u.Object, "status", "healthyNodes")
		return nhcEnabled(u) && observed == 2+spareNodes && healthy == 2+spareNodes
	}, harness.UnlessExited(ctrl))

	var bTransition time.Time
	t.Run("spells", func(t *testing.T) {
		t.Run("A frozen until remediated, then thawed", func(t *testing.T) {
			t.Parallel()
			before := nodeTaints(t, cp, nodeA) // the API server's not-ready taint from the Node's creation: no node lifecycle controller lifts it
			thaw := harness.Freeze(t, cA)
			frozeAt := time.Now()
			c, seenTrue, err := harness.PollNode(t, cp, 30*time.Second, nodeA, "RuntimeHung", harness.CondStatus(corev1.ConditionTrue), harness.UnlessExited(dA))
			if err != nil {
				t.Fatal(err)
			}
			transition := c.LastTransitionTime.Time
			t.Logf("A: RuntimeHung True (%s) %v after the freeze; transition %s", c.Reason, seenTrue.Sub(frozeAt).Round(time.Millisecond), transition.Format(time.RFC3339))
			added := remediations.wait(t, nhcDuration+60*time.Second, watch.Added, nodeA, ctrl, dA)
			tookAPI := added.created.Sub(transition)
			t.Logf("A: SelfNodeRemediation %s/%s created %v after RuntimeHung's transition (API times: %s -> %s, whole seconds); seen %v after RuntimeHung was seen True",
				nhcNamespace, nodeA, tookAPI, transition.Format(time.RFC3339), added.created.Format(time.RFC3339), added.seen.Sub(seenTrue).Round(time.Millisecond))
			harness.Measure(t, "nhc_remediation_created_after_runtimehung_transition", tookAPI)
			if tookAPI < nhcDuration {
				t.Errorf("the remediation came %v after RuntimeHung turned True, before the NodeHealthCheck's %v", tookAPI, nhcDuration)
			}
			checkRemediation(t, added.obj, nodeA, docsNHCName)
			if during := nodeTaints(t, cp, nodeA); during != before {
				t.Errorf("Node %s's taints changed while NodeHealthCheck remediates it: %s, before the freeze %s", nodeA, during, before)
			}

			thaw()
			thawedAt := time.Now()
			c, seenFalse, err := harness.PollNode(t, cp, 60*time.Second, nodeA, "RuntimeHung", harness.CondStatus(corev1.ConditionFalse), harness.UnlessExited(dA))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("A: RuntimeHung False %v after the thaw", seenFalse.Sub(thawedAt).Round(time.Millisecond))
			deleted := remediations.wait(t, 60*time.Second, watch.Deleted, nodeA, ctrl, dA)
			t.Logf("A: SelfNodeRemediation deleted %v after the thaw, %v after RuntimeHung was seen False (API: False at %s)",
				deleted.seen.Sub(thawedAt).Round(time.Millisecond), deleted.seen.Sub(seenFalse).Round(time.Millisecond), c.LastTransitionTime.Format(time.RFC3339))
			harness.Measure(t, "nhc_remediation_deleted_after_thaw", deleted.seen.Sub(thawedAt))
			if after := nodeTaints(t, cp, nodeA); after != before {
				t.Errorf("Node %s's taints changed after NodeHealthCheck's remediation: %s, before the freeze %s", nodeA, after, before)
			}
		})
		t.Run("B thawed after a shorter spell", func(t *testing.T) {
			t.Parallel()
			thaw := harness.Freeze(t, cB)
			c, _, err := harness.PollNode(t, cp, 30*time.Second, nodeB, "RuntimeHung", harness.CondStatus(corev1.ConditionTrue), harness.UnlessExited(dB))
			if err != nil {
				t.Fatal(err)
			}
			bTransition = c.LastTransitionTime.Time
			harness.Window(t, shortSpell, "B's short spell", harness.UnlessExited(dB), harness.UnlessExited(ctrl))
			thaw()
			c = harness.WaitNode(t, cp, dB, 60*time.Second, nodeB, "RuntimeHung", harness.CondStatus(corev1.ConditionFalse))
			t.Logf("B: RuntimeHung True from %s to %s (%v)", bTransition.Format(time.RFC3339), c.LastTransitionTime.Format(time.RFC3339), c.LastTransitionTime.Sub(bTransition))
		})
	})
	if t.Failed() {
		return
	}
	// B's spell would have been remediated by now had it counted: A's
	// remediation came and went after more than the duration.
	if left := time.Until(bTransition.Add(nhcDuration + 5*time.Second)); left > 0 {
		harness.Window(t, left, "the duration to pass since B's RuntimeHung turned True", harness.UnlessExited(ctrl))
	}
	for _, e := range remediations.all() {
		if e.name == nodeB {
			t.Errorf("B, True for %v only, got a remediation: %s %s at %s", shortSpell, e.typ, e.name, e.seen.Format(time.RFC3339Nano))
		}
	}
	if !ctrl.Running() {
		t.Errorf("the NodeHealthCheck controller exited: %v", ctrl.ExitErr)
	}
}

// nodeTaints prints the Node's taints.
func nodeTaints(t *testing.T, cp *harness.ControlPlane, node string) string {
	t.Helper()
	n, err := cp.Admin.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(n.Spec.Taints)
}

// nodeHealthCheckFromDocs returns the first yaml block of docs/install.md's
// section "Remediation: medik8s NodeHealthCheck", as the docs print it, and
// the name it gives.
func nodeHealthCheckFromDocs(t *testing.T) ([]byte, string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(harness.ModuleRoot(), "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := bytes.Cut(doc, []byte("\n## Remediation: medik8s NodeHealthCheck\n"))
	if !ok {
		t.Fatal(`docs/install.md has no section "Remediation: medik8s NodeHealthCheck"`)
	}
	if next := bytes.Index(section, []byte("\n## ")); next >= 0 {
		section = section[:next]
	}
	_, block, ok := bytes.Cut(section, []byte("\n```yaml\n"))
	if !ok {
		t.Fatal("docs/install.md's NodeHealthCheck section has no yaml block")
	}
	block, _, ok = bytes.Cut(block, []byte("\n```"))
	if !ok {
		t.Fatal("docs/install.md's NodeHealthCheck yaml block does not end")
	}
	block = append(block, '\n')
	var head struct {
		APIVersion string                `json:"apiVersion"`
		Kind       string                `json:"kind"`
		Metadata   struct{ Name string } `json:"metadata"`
	}
	if err := yaml.Unmarshal(block, &head); err != nil {
		t.Fatalf("docs/install.md's NodeHealthCheck: %v", err)
	}
	if head.APIVersion != nhcGVR.GroupVersion().String() || head.Kind != "NodeHealthCheck" || head.Metadata.Name == "" {
		t.Fatalf("docs/install.md's yaml block is a %s %s named %q, want a NodeHealthCheck of %s", head.APIVersion, head.Kind, head.Metadata.Name, nhcGVR.GroupVersion())
	}
	return block, head.Metadata.Name
}

// applyAsYAML sends body, unchanged, as a server-side apply of the
// NodeHealthCheck name (application/apply-patch+yaml), as the admin.
func applyAsYAML(t *testing.T, cp *harness.ControlPlane, body []byte, name string) {
	t.Helper()
	err := cp.Admin.Discovery().RESTClient().Patch(types.ApplyYAMLPatchType).
		AbsPath("/apis", nhcGVR.Group, nhcGVR.Version, nhcGVR.Resource, name).
		Param("fieldManager", "docs-install-md").Body(body).Do(context.Background()).Error()
	if err != nil {
		t.Fatalf("apply docs/install.md's NodeHealthCheck: %v", err)
	}
}

func adminDynamic(t *testing.T, cp *harness.ControlPlane) dynamic.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

// installRemediationCRDs installs the module's NodeHealthCheck CRD and
// recording definitions of Self Node Remediation's two kinds (any
// content kept), and waits until all three are established.
func installRemediationCRDs(t *testing.T, dyn dynamic.Interface, nhc harness.NHC) {
	t.Helper()
	ctx := context.Background()
	raw, err := os.ReadFile(filepath.Join(nhc.CRDDir, "remediation.medik8s.io_nodehealthchecks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crds := []*unstructured.Unstructured{{}}
	if err := yaml.Unmarshal(raw, &crds[0].Object); err != nil {
		t.Fatalf("the NodeHealthCheck CRD: %v", err)
	}
	for _, kind := range []string{"SelfNodeRemediation", "SelfNodeRemediationTemplate"} {
		plural := strings.ToLower(kind) + "s"
		crds = append(crds, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": plural + "." + snrGVR.Group},
			"spec": map[string]any{
				"group": snrGVR.Group, "scope": "Namespaced",
				"names": map[string]any{"kind": kind, "listKind": kind + "List", "plural": plural, "singular": strings.ToLower(kind)},
				"versions": []any{map[string]any{
					"name": snrGVR.Version, "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
				}},
			},
		}})
	}
	for _, crd := range crds {
		if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create CRD %s: %v", crd.GetName(), err)
		}
	}
	for _, crd := range crds {
		harness.Eventually(t, 30*time.Second, "CRD "+crd.GetName()+" established", func() bool {
			u, err := dyn.Resource(crdGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
			if err != nil {
				return false
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
					return true
				}
			}
			return false
		})
	}
}

// installNHCRBAC applies the controller's shipped RBAC (config/rbac) as its
// kustomization does (config/default: namePrefix node-healthcheck-, the
// deployment's namespace, manager-role labelled for aggregation), bound to
// its ServiceAccount, and the ClusterRole a remediator ships for it: Self
// Node Remediation's kinds, labelled for NodeHealthCheck's aggregated role.
func installNHCRBAC(t *testing.T, cp *harness.ControlPlane, nhc harness.NHC) {
	t.Helper()
	ctx := context.Background()
	const prefix, aggregate = "node-healthcheck-", "rbac.ext-remediation/aggregate-to-ext-remediation"
	subject := func(ss []rbacv1.Subject) {
		for i := range ss {
			if ss[i].Kind == rbacv1.ServiceAccountKind {
				ss[i].Name, ss[i].Namespace = prefix+ss[i].Name, nhcNamespace
			}
		}
	}
	read := func(file string, into any) {
		raw, err := os.ReadFile(filepath.Join(nhc.RBACDir, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, into); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	var err error
	for _, file := range []string{"role.yaml", "metrics_auth_role.yaml"} {
		var r rbacv1.ClusterRole
		read(file, &r)
		if r.Name == "manager-role" { // config/default/manager_role_patch.yaml
			r.Labels = map[string]string{aggregate: "true"}
		}
		r.Name = prefix + r.Name
		if _, err = cp.Admin.RbacV1().ClusterRoles().Create(ctx, &r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, file := range []string{"role_binding.yaml", "metrics_auth_role_binding.yaml"} {
		var b rbacv1.ClusterRoleBinding
		read(file, &b)
		b.Name, b.RoleRef.Name = prefix+b.Name, prefix+b.RoleRef.Name
		subject(b.Subjects)
		if _, err = cp.Admin.RbacV1().ClusterRoleBindings().Create(ctx, &b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var r rbacv1.Role
	read("leader_election_role.yaml", &r)
	r.Name, r.Namespace = prefix+r.Name, nhcNamespace
	if _, err = cp.Admin.RbacV1().Roles(nhcNamespace).Create(ctx, &r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var b rbacv1.RoleBinding
	read("leader_election_role_binding.yaml", &b)
	b.Name, b.Namespace, b.RoleRef.Name = prefix+b.Name, nhcNamespace, prefix+b.RoleRef.Name
	subject(b.Subjects)
	if _, err = cp.Admin.RbacV1().RoleBindings(nhcNamespace).Create(ctx, &b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	remediator := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "self-node-remediation-ext-remediation", Labels: map[string]string{aggregate: "true"}},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{snrGVR.Group}, Resources: []string{snrGVR.Resource, snrTemplateGVR.Resource},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}},
	}
	if _, err = cp.Admin.RbacV1().ClusterRoles().Create(ctx, remediator, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// startNHC runs the controller as its ServiceAccount (a client certificate
// of that user name and its groups, which RBAC's ServiceAccount subjects
// match), outside a cluster: no leader election (controller-runtime finds
// no namespace for its Lease outside a pod), metrics and probes on free
// loopback ports, its webhook on :9443 with a certificate of the test's
// CA in $TMPDIR/k8s-webhook-server/serving-certs (controller-runtime's
// default), DEPLOYMENT_NAMESPACE set. It waits for /readyz and the
// webhook's TLS handshake.
func startNHC(t *testing.T, cp *harness.ControlPlane, nhc harness.NHC) *harness.Proc {
	t.Helper()
	if ln, err := net.Listen("tcp", ":"+strconv.Itoa(nhcWebhookPort)); err != nil {
		t.Fatalf("the controller serves its webhook on :%d, which is taken: %v", nhcWebhookPort, err)
	} else {
		_ = ln.Close()
	}
	kc, err := cp.Kubeconfig("nhc", "system:serviceaccount:"+nhcNamespace+":"+nhcServiceAccount,
		"system:serviceaccounts", "system:serviceaccounts:"+nhcNamespace)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	certDir := filepath.Join(tmp, "k8s-webhook-server", "serving-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cert, key, err := cp.PKI.Serving("nhc-webhook")
	if err != nil {
		t.Fatal(err)
	}
	for from, to := range map[string]string{cert: "tls.crt", key: "tls.key"} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(certDir, to), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	probe := harness.FreeAddr(t)
	p := harness.StartProc(t, "node-healthcheck-operator", harness.ProcOptions{
		Grace: 10 * time.Second, DieWithTest: true,
		Env: []string{"KUBECONFIG=" + kc, "DEPLOYMENT_NAMESPACE=" + nhcNamespace, "TMPDIR=" + tmp, "HOME=" + tmp},
	}, nhc.Bin, "--leader-elect=false", "--metrics-bind-address="+harness.FreeAddr(t), "--health-probe-bind-address="+probe)
	harness.Eventually(t, 60*time.Second, "the NodeHealthCheck controller's /readyz", func() bool {
		code, _, err := harness.Get("http://" + probe + "/readyz")
		return err == nil && code == http.StatusOK
	}, harness.UnlessExited(p))
	pool := caPool(t, cp)
	harness.Eventually(t, 30*time.Second, "the NodeHealthCheck webhook's TLS handshake", func() bool {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(nhcWebhookPort)),
			&tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
		if err != nil {
			return false
		}
		_ = conn.Close()
		return true
	}, harness.UnlessExited(p))
	return p
}

func caPool(t *testing.T, cp *harness.ControlPlane) *x509.CertPool {
	t.Helper()
	ca, err := os.ReadFile(cp.PKI.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("the test CA does not parse")
	}
	return pool
}

// registerNHCWebhook registers the module's ValidatingWebhookConfiguration
// (config/webhook/manifests.yaml), its Service replaced by the
// controller's loopback address, so NodeHealthCheck's own validation
// judges the docs' NodeHealthCheck.
func registerNHCWebhook(t *testing.T, cp *harness.ControlPlane, nhc harness.NHC) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(nhc.WebhookDir, "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("the webhook configuration: %v", err)
	}
	ca, err := os.ReadFile(cp.PKI.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Webhooks) == 0 {
		t.Fatal("the module's webhook configuration has no webhook")
	}
	cfg.Name = "node-healthcheck-" + cfg.Name
	for i := range cfg.Webhooks {
		svc := cfg.Webhooks[i].ClientConfig.Service
		if svc == nil || svc.Path == nil {
			t.Fatalf("webhook %s names no Service path", cfg.Webhooks[i].Name)
		}
		url := fmt.Sprintf("https://127.0.0.1:%d%s", nhcWebhookPort, *svc.Path)
		cfg.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}
	}
	if _, err := cp.Admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(), &cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func nhcEnabled(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Disabled" {
			return m["status"] == "False"
		}
	}
	return false
}

// checkRemediation checks what NodeHealthCheck asked for: a
// SelfNodeRemediation named after the node, in the template's namespace,
// owned by the NodeHealthCheck, with the template's spec.
func checkRemediation(t *testing.T, cr *unstructured.Unstructured, node, nhcName string) {
	t.Helper()
	if cr.GetNamespace() != nhcNamespace {
		t.Errorf("the remediation is in %q, want the template's namespace %q", cr.GetNamespace(), nhcNamespace)
	}
	if got := cr.GetAnnotations()["remediation.medik8s.io/node-name"]; got != node {
		t.Errorf("the remediation's node-name annotation is %q, want %q", got, node)
	}
	owned := false
	for _, o := range cr.GetOwnerReferences() {
		owned = owned || (o.Kind == "NodeHealthCheck" && o.Name == nhcName)
	}
	if !owned {
		t.Errorf("the remediation is not owned by NodeHealthCheck %s: %v", nhcName, cr.GetOwnerReferences())
	}
	if s, _, _ := unstructured.NestedString(cr.Object, "spec", "remediationStrategy"); s != "Automatic" {
		t.Errorf("the remediation's spec %v is not the template's", cr.Object["spec"])
	}
}

// remediationEvent is one change of a SelfNodeRemediation, as the watch saw it.
type remediationEvent struct {
	typ     watch.EventType
	name    string
	seen    time.Time // on the test's clock
	created time.Time // the object's creationTimestamp (whole seconds)
	obj     *unstructured.Unstructured
}

// remediationLog records every SelfNodeRemediation change in nhcNamespace.
type remediationLog struct {
	mu     sync.Mutex
	events []remediationEvent
}

// recordRemediations watches SelfNodeRemediations until t ends.
func recordRemediations(t *testing.T, dyn dynamic.Interface) *remediationLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	res := dyn.Resource(snrGVR).Namespace(nhcNamespace)
	list, err := res.List(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if len(list.Items) > 0 {
		cancel()
		t.Fatalf("%d SelfNodeRemediations before the NodeHealthCheck", len(list.Items))
	}
	l := &remediationLog{}
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	rv := list.GetResourceVersion()
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("watch SelfNodeRemediations: %v", err)
				}
				return
			}
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					if ctx.Err() != nil {
						break // the test ended the watch
					}
					t.Errorf("watch SelfNodeRemediations: %v", apierrors.FromObject(ev.Object))
					w.Stop()
					return
				}
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				rv = u.GetResourceVersion()
				if ev.Type == watch.Bookmark {
					continue
				}
				l.mu.Lock()
				l.events = append(l.events, remediationEvent{typ: ev.Type, name: u.GetName(), seen: time.Now(), created: u.GetCreationTimestamp().Time, obj: u})
				l.mu.Unlock()
			}
			w.Stop() // the server ended it: watch on from the last version seen
		}
	}()
	return l
}

func (l *remediationLog) all() []remediationEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]remediationEvent(nil), l.events...)
}

// wait waits for the first event of typ for name.
func (l *remediationLog) wait(t *testing.T, limit time.Duration, typ watch.EventType, name string, procs ...harness.Watched) remediationEvent {
	t.Helper()
	var found remediationEvent
	opts := []harness.WaitOption{}
	for _, p := range procs {
		opts = append(opts, harness.UnlessExited(p))
	}
	harness.Eventually(t, limit, fmt.Sprintf("SelfNodeRemediation %s %s", name, typ), func() bool {
		for _, e := range l.all() {
			if e.typ == typ && e.name == name {
				found = e
				return true
			}
		}
		return false
	}, opts...)
	return found
}
