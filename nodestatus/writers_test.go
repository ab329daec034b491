package nodestatus

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	testclock "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/conditions"
)

// managedFields as a real API server records them (nodes/status patches).
func managedFields() []metav1.ManagedFieldsEntry {
	entry := func(manager, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}, Subresource: "status"}
	}
	return []metav1.ManagedFieldsEntry{
		entry("kubelet", `{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:lastHeartbeatTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"KernelDeadlock\"}":{".":{}}}}}`),
		entry(FieldManager, `{"f:status":{"f:conditions":{"k:{\"type\":\"KernelDeadlock\"}":{".":{},"f:lastHeartbeatTime":{},"f:type":{}},"k:{\"type\":\"RuntimeHung\"}":{".":{},"f:status":{},"f:type":{}},"k:{\"type\":\"FrequentContainerdRestart\"}":{".":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{}}}}}`),
		entry("node-problem-detector", `{"f:status":{"f:conditions":{"k:{\"type\":\"KernelDeadlock\"}":{"f:message":{},"f:reason":{},"f:status":{}}}}}`),
		entry("broken", `{"f:status":{"f:conditions":{"k:{not json}":{"f:status":{}}}}}`),
	}
}

func TestReadWritersNamesTheOtherWritersOfEachType(t *testing.T) {
	w := ReadWriters(managedFields())
	if got := w.Others["KernelDeadlock"]; !slices.Equal(got, []string{"node-problem-detector"}) {
		t.Errorf("KernelDeadlock's other writers: %v; the kubelet holding only the entry is not one", got)
	}
	if got := w.Others["Ready"]; !slices.Equal(got, []string{"kubelet"}) {
		t.Errorf("Ready's writers: %v", got)
	}
	if !w.Ours["RuntimeHung"] || !w.Ours["FrequentContainerdRestart"] || len(w.Others["RuntimeHung"]) != 0 {
		t.Errorf("ours %v, others %v", w.Ours, w.Others)
	}
	// Ready is never stale (the kubelet's), nor KernelDeadlock (written by
	// another); an owned type is not.
	if got := w.stale([]string{"RuntimeHung"}); !slices.Equal(got, []string{"FrequentContainerdRestart"}) {
		t.Errorf("stale %v, want [FrequentContainerdRestart]", got)
	}
}

func sharingFixture(t *testing.T, overwrite []string) (*Reporter, *fakeJudge, *fake.Clientset, *[]string) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", ManagedFields: managedFields()},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: "KernelDeadlock", Status: corev1.ConditionTrue, Reason: "DockerHung", Message: "npd's"},
			{Type: "FrequentContainerdRestart", Status: corev1.ConditionTrue, Reason: "Old"}}}}
	client := fake.NewClientset(node)
	clk := testclock.NewFakeClock(t0)
	judge := newFakeJudge(clk, map[string]conditions.Thresholds{conditions.TypeRuntimeHung: {}, conditions.TypeKernelDeadlock: {}})
	var shared []string
	r := NewReporter(clientsetNodes{client}, judge, ReporterConfig{Node: "node-a", Heartbeat: 5 * time.Minute, RequestTimeout: time.Second,
		RetryMin: time.Second, RetryMax: time.Second, Overwrite: overwrite,
		OnShared: func(c string, m []string, o bool) {
			shared = append(shared, c+" "+strings.Join(m, ",")+" "+map[bool]string{true: "overwrite", false: "leave"}[o])
		}}, clk, nil)
	judge.subscribe(r)
	return r, judge, client, &shared
}

func TestASharedConditionIsLeftToItsOtherWriter(t *testing.T) {
	r, judge, client, shared := sharingFixture(t, nil)
	ctx := context.Background()
	if err := r.restore(ctx); err != nil {
		t.Fatal(err)
	}
	if s := judge.set.Snapshot(); s[0].Type != conditions.TypeKernelDeadlock || s[0].Status != conditions.StatusUnknown {
		t.Errorf("npd's KernelDeadlock was carried on as hangwatch's: %+v", s[0])
	}
	judge.update(conditions.TypeKernelDeadlock, t0, conditions.Evaluation{Reason: "KernelHasNoDeadlock", Message: "fine"})
	judge.update(conditions.TypeRuntimeHung, t0, conditions.Evaluation{Reason: "RuntimeResponsive", Message: "fine"})
	r.flush(ctx)
	var patches []string
	for _, a := range client.Actions() {
		if a.GetVerb() == "patch" {
			patches = append(patches, string(a.(interface{ GetPatch() []byte }).GetPatch()))
		}
	}
	if len(patches) != 2 || !strings.Contains(patches[0], `"$patch":"delete","type":"FrequentContainerdRestart"`) {
		t.Fatalf("patches %q: want the stale type removed first", patches)
	}
	if strings.Contains(patches[1], "KernelDeadlock") || !strings.Contains(patches[1], "RuntimeHung") {
		t.Errorf("the status patch %s must leave KernelDeadlock to node-problem-detector", patches[1])
	}
	r.flush(ctx)
	if want := []string{"KernelDeadlock node-problem-detector leave"}; !slices.Equal(*shared, want) {
		t.Errorf("reported %q, want %q once", *shared, want)
	}
}

func TestASharedConditionIsOverwrittenWhenConfigured(t *testing.T) {
	r, judge, client, shared := sharingFixture(t, []string{conditions.TypeKernelDeadlock})
	ctx := context.Background()
	if err := r.restore(ctx); err != nil {
		t.Fatal(err)
	}
	judge.update(conditions.TypeKernelDeadlock, t0, conditions.Evaluation{Reason: "KernelHasNoDeadlock", Message: "fine"})
	r.flush(ctx)
	last := client.Actions()[len(client.Actions())-1]
	if p := string(last.(interface{ GetPatch() []byte }).GetPatch()); !strings.Contains(p, "KernelDeadlock") {
		t.Errorf("overwriteSharedConditions names KernelDeadlock, yet the patch %s leaves it", p)
	}
	if want := []string{"KernelDeadlock node-problem-detector overwrite"}; !slices.Equal(*shared, want) {
		t.Errorf("reported %q, want %q", *shared, want)
	}
}
