package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/harness/nhc"
)

// What docs/remediation.md's NodeHealthCheck names, and what the test gives it.
const (
	snrTemplateName = "self-node-remediation-automatic-strategy-template"
	// nhcDuration is RuntimeHung's duration in the docs' NodeHealthCheck.
	nhcDuration = 120 * time.Second
	// shortSpell is how long the second node's RuntimeHung stays True:
	// half the duration.
	shortSpell = 60 * time.Second
	// spareNodes are healthy Nodes beside the two frozen ones, so that
	// minHealthy (51% of the 7 Nodes the selector matches: 4) holds while
	// both are sick.
	spareNodes = 5
)

// TestNodeHealthCheckRemediatesOnRuntimeHung runs medik8s' NodeHealthCheck
// controller (node-healthcheck-operator, which ensure_nhc builds from its
// Go module) with its shipped RBAC and validating webhook against an API
// server of the test's own (harness.StartCluster), and applies
// docs/remediation.md's NodeHealthCheck as the docs print it, byte for byte.
// Self Node Remediation's part is played by recording CRDs:
// NodeHealthCheck's remediation is a SelfNodeRemediation object that
// nothing acts on. Two Nodes have a real `hangwatch run` on a containerd
// of their own, which the test freezes at once: A stays frozen until
// NodeHealthCheck asks for A's remediation, which must not come before
// RuntimeHung has been True for 120 s, and is then thawed: hangwatch
// clears RuntimeHung and NodeHealthCheck deletes the remediation. B is
// thawed after 60 s of RuntimeHung and gets none.
func TestNodeHealthCheckRemediatesOnRuntimeHung(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	harness.RequireRealParts(t)
	docsNHC, docsNHCName := nodeHealthCheckFromDocs(t)
	x := startNHCTest(t)
	x.docsNHCName = docsNHCName
	x.remediations = x.cluster.RecordRemediations(t)
	applyAsYAML(t, x.cluster.CP, docsNHC, docsNHCName)
	x.waitAllHealthy(t)

	var bTransition time.Time
	t.Run("spells", func(t *testing.T) {
		t.Run("A frozen until remediated, then thawed", func(t *testing.T) {
			t.Parallel()
			x.spellA(t)
		})
		t.Run("B thawed after a shorter spell", func(t *testing.T) {
			t.Parallel()
			bTransition = x.spellB(t)
		})
	})
	if t.Failed() {
		return
	}
	x.checkNoRemediationOfB(t, bTransition)
}

// nhcNode is one of the two Nodes the test freezes: its containerd and
// its hangwatch.
type nhcNode struct {
	name       string
	kubeconfig string
	c          *containerd.Containerd
	d          *hangwatch.Daemon
}

// nhcTest is the cluster the spells act on.
type nhcTest struct {
	cluster      *nhc.Cluster
	a, b         nhcNode
	docsNHCName  string
	remediations *nhc.RemediationLog
}

// startNHCTest starts the NodeHealthCheck cluster with the docs'
// remediation template, Nodes A and B and the spares, and hangwatch on A
// and B, and waits until both report RuntimeHung False.
func startNHCTest(t *testing.T) *nhcTest {
	t.Helper()
	x := &nhcTest{}
	x.cluster = nhc.StartCluster(t, nhc.ClusterOptions{
		// The control plane starts while both containerds do.
		Meanwhile: func() { x.a.c, x.b.c = containerd.StartT(t, 1, 1), containerd.StartT(t, 1, 1) },
		Populate:  func(c *nhc.Cluster) { x.populate(t, c) },
	})
	// hangwatch on A and B at its shipped timings; no kubelet there, so no
	// KubeletUnresponsive.
	for _, n := range []*nhcNode{&x.a, &x.b} {
		n.d = hangwatch.StartDaemon(t, n.c.Endpoint, hangwatch.NodeArgs(n.kubeconfig, n.name, "--config", hangwatch.NoLeaseConfig(t))...)
	}
	for _, n := range []*nhcNode{&x.a, &x.b} {
		hangwatch.WaitNode(t, x.cluster.CP, n.d, 60*time.Second, n.name, "RuntimeHung", hangwatch.CondStatus(corev1.ConditionFalse))
	}
	return x
}

// populate creates the remediation template the docs' NodeHealthCheck
// names, and the Nodes: A, B and the spares.
func (x *nhcTest) populate(t *testing.T, c *nhc.Cluster) {
	t.Helper()
	template := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "self-node-remediation.medik8s.io/v1alpha1", "kind": "SelfNodeRemediationTemplate",
		"metadata": map[string]any{"name": snrTemplateName, "namespace": nhc.Namespace},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"remediationStrategy": "Automatic"}}},
	}}
	if _, err := c.Dynamic.Resource(nhc.SelfNodeRemediationTemplateGVR).Namespace(nhc.Namespace).Create(context.Background(), template, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	x.a.name, x.b.name = hangwatch.UniqueNode("hw-nhc-a"), hangwatch.UniqueNode("hw-nhc-b")
	x.a.kubeconfig, x.b.kubeconfig = hangwatch.CreateNode(t, c.CP, x.a.name), hangwatch.CreateNode(t, c.CP, x.b.name)
	for i := range spareNodes {
		hangwatch.CreateNode(t, c.CP, fmt.Sprintf("%s-spare%d", x.a.name, i))
	}
}

// waitAllHealthy waits until the docs' NodeHealthCheck is enabled and has
// observed all 7 Nodes healthy.
func (x *nhcTest) waitAllHealthy(t *testing.T) {
	t.Helper()
	harness.Eventually(t, 60*time.Second, "the NodeHealthCheck enabled, all 7 Nodes observed healthy", func() bool {
		u, err := x.cluster.Dynamic.Resource(nhc.NodeHealthCheckGVR).Get(context.Background(), x.docsNHCName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedNodes")
		healthy, _, _ := unstructured.NestedInt64(u.Object, "status", "healthyNodes")
		return nhcEnabled(u) && observed == 2+spareNodes && healthy == 2+spareNodes
	}, harness.UnlessExited(x.cluster.Controller))
}

// spellA freezes A until NodeHealthCheck asks for its remediation, then
// thaws it; A's taints stay as they were throughout.
func (x *nhcTest) spellA(t *testing.T) {
	before := nodeTaints(t, x.cluster.CP, x.a.name) // the API server's not-ready taint from the Node's creation: no node lifecycle controller lifts it
	thaw := harness.Freeze(t, x.a.c)
	x.remediateA(t, time.Now(), before)
	thaw()
	x.thawedA(t, time.Now(), before)
}

// remediateA waits for A's RuntimeHung to turn True after the freeze at
// frozeAt, then for its remediation, which must not come before
// RuntimeHung has been True for the NodeHealthCheck's duration.
func (x *nhcTest) remediateA(t *testing.T, frozeAt time.Time, taintsBefore string) {
	cp, nodeA := x.cluster.CP, x.a.name
	c, seenTrue, err := hangwatch.PollNode(t, cp, 30*time.Second, nodeA, "RuntimeHung", hangwatch.CondStatus(corev1.ConditionTrue), harness.UnlessExited(x.a.d))
	if err != nil {
		t.Fatal(err)
	}
	transition := c.LastTransitionTime.Time
	t.Logf("A: RuntimeHung True (%s) %v after the freeze; transition %s", c.Reason, seenTrue.Sub(frozeAt).Round(time.Millisecond), transition.Format(time.RFC3339))
	added := x.remediations.Wait(t, nhcDuration+60*time.Second, watch.Added, nodeA, x.cluster.Controller, x.a.d)
	tookAPI := added.Created.Sub(transition)
	t.Logf("A: SelfNodeRemediation %s/%s created %v after RuntimeHung's transition (API times: %s -> %s, whole seconds); seen %v after RuntimeHung was seen True",
		nhc.Namespace, nodeA, tookAPI, transition.Format(time.RFC3339), added.Created.Format(time.RFC3339), added.Seen.Sub(seenTrue).Round(time.Millisecond))
	harness.Measure(t, "nhc_remediation_created_after_runtimehung_transition", tookAPI)
	if tookAPI < nhcDuration {
		t.Errorf("the remediation came %v after RuntimeHung turned True, before the NodeHealthCheck's %v", tookAPI, nhcDuration)
	}
	checkRemediation(t, added.Obj, nodeA, x.docsNHCName)
	if during := nodeTaints(t, cp, nodeA); during != taintsBefore {
		t.Errorf("Node %s's taints changed while NodeHealthCheck remediates it: %s, before the freeze %s", nodeA, during, taintsBefore)
	}
}

// thawedA waits, after A's thaw at thawedAt, for RuntimeHung False and the
// remediation's deletion.
func (x *nhcTest) thawedA(t *testing.T, thawedAt time.Time, taintsBefore string) {
	cp, nodeA := x.cluster.CP, x.a.name
	c, seenFalse, err := hangwatch.PollNode(t, cp, 60*time.Second, nodeA, "RuntimeHung", hangwatch.CondStatus(corev1.ConditionFalse), harness.UnlessExited(x.a.d))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("A: RuntimeHung False %v after the thaw", seenFalse.Sub(thawedAt).Round(time.Millisecond))
	deleted := x.remediations.Wait(t, 60*time.Second, watch.Deleted, nodeA, x.cluster.Controller, x.a.d)
	t.Logf("A: SelfNodeRemediation deleted %v after the thaw, %v after RuntimeHung was seen False (API: False at %s)",
		deleted.Seen.Sub(thawedAt).Round(time.Millisecond), deleted.Seen.Sub(seenFalse).Round(time.Millisecond), c.LastTransitionTime.Format(time.RFC3339))
	harness.Measure(t, "nhc_remediation_deleted_after_thaw", deleted.Seen.Sub(thawedAt))
	if after := nodeTaints(t, cp, nodeA); after != taintsBefore {
		t.Errorf("Node %s's taints changed after NodeHealthCheck's remediation: %s, before the freeze %s", nodeA, after, taintsBefore)
	}
}

// spellB freezes B, thaws it after shortSpell of RuntimeHung and returns
// when RuntimeHung turned True.
func (x *nhcTest) spellB(t *testing.T) time.Time {
	cp, nodeB, dB := x.cluster.CP, x.b.name, x.b.d
	thaw := harness.Freeze(t, x.b.c)
	c, _, err := hangwatch.PollNode(t, cp, 30*time.Second, nodeB, "RuntimeHung", hangwatch.CondStatus(corev1.ConditionTrue), harness.UnlessExited(dB))
	if err != nil {
		t.Fatal(err)
	}
	bTransition := c.LastTransitionTime.Time
	harness.Window(t, shortSpell, "B's short spell", harness.UnlessExited(dB), harness.UnlessExited(x.cluster.Controller))
	thaw()
	c = hangwatch.WaitNode(t, cp, dB, 60*time.Second, nodeB, "RuntimeHung", hangwatch.CondStatus(corev1.ConditionFalse))
	t.Logf("B: RuntimeHung True from %s to %s (%v)", bTransition.Format(time.RFC3339), c.LastTransitionTime.Format(time.RFC3339), c.LastTransitionTime.Sub(bTransition))
	return bTransition
}

// checkNoRemediationOfB checks that B's spell, whose RuntimeHung turned
// True at bTransition, got no remediation, and that the controller runs.
func (x *nhcTest) checkNoRemediationOfB(t *testing.T, bTransition time.Time) {
	ctrl := x.cluster.Controller
	// B's spell would have been remediated by now had it counted: A's
	// remediation came and went after more than the duration.
	if left := time.Until(bTransition.Add(nhcDuration + 5*time.Second)); left > 0 {
		harness.Window(t, left, "the duration to pass since B's RuntimeHung turned True", harness.UnlessExited(ctrl))
	}
	for _, e := range x.remediations.All() {
		if e.Name == x.b.name {
			t.Errorf("B, True for %v only, got a remediation: %s %s at %s", shortSpell, e.Type, e.Name, e.Seen.Format(time.RFC3339Nano))
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

// nodeHealthCheckFromDocs returns the first yaml block of docs/remediation.md's
// section "Remediation: medik8s NodeHealthCheck", as the docs print it, and
// the name it gives.
func nodeHealthCheckFromDocs(t *testing.T) ([]byte, string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(harness.ModuleRoot(), "docs", "remediation.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := bytes.Cut(doc, []byte("\n## Remediation: medik8s NodeHealthCheck\n"))
	if !ok {
		t.Fatal(`docs/remediation.md has no section "Remediation: medik8s NodeHealthCheck"`)
	}
	if next := bytes.Index(section, []byte("\n## ")); next >= 0 {
		section = section[:next]
	}
	_, block, ok := bytes.Cut(section, []byte("\n```yaml\n"))
	if !ok {
		t.Fatal("docs/remediation.md's NodeHealthCheck section has no yaml block")
	}
	block, _, ok = bytes.Cut(block, []byte("\n```"))
	if !ok {
		t.Fatal("docs/remediation.md's NodeHealthCheck yaml block does not end")
	}
	block = append(block, '\n')
	var head struct {
		APIVersion string                `json:"apiVersion"`
		Kind       string                `json:"kind"`
		Metadata   struct{ Name string } `json:"metadata"`
	}
	if err := yaml.Unmarshal(block, &head); err != nil {
		t.Fatalf("docs/remediation.md's NodeHealthCheck: %v", err)
	}
	if head.APIVersion != nhc.NodeHealthCheckGVR.GroupVersion().String() || head.Kind != "NodeHealthCheck" || head.Metadata.Name == "" {
		t.Fatalf("docs/remediation.md's yaml block is a %s %s named %q, want a NodeHealthCheck of %s", head.APIVersion, head.Kind, head.Metadata.Name, nhc.NodeHealthCheckGVR.GroupVersion())
	}
	return block, head.Metadata.Name
}

// applyAsYAML sends body, unchanged, as a server-side apply of the
// NodeHealthCheck name (application/apply-patch+yaml), as the admin.
func applyAsYAML(t *testing.T, cp *harness.ControlPlane, body []byte, name string) {
	t.Helper()
	err := cp.Admin.Discovery().RESTClient().Patch(types.ApplyYAMLPatchType).
		AbsPath("/apis", nhc.NodeHealthCheckGVR.Group, nhc.NodeHealthCheckGVR.Version, nhc.NodeHealthCheckGVR.Resource, name).
		Param("fieldManager", "docs-install-md").Body(body).Do(context.Background()).Error()
	if err != nil {
		t.Fatalf("apply docs/remediation.md's NodeHealthCheck: %v", err)
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
	if cr.GetNamespace() != nhc.Namespace {
		t.Errorf("the remediation is in %q, want the template's namespace %q", cr.GetNamespace(), nhc.Namespace)
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
