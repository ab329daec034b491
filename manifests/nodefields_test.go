package manifests

import (
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hangwatch/hangwatch/repair"
)

// nodeSpecFields are the JSON names of every field of a Node's spec.
func nodeSpecFields(t *testing.T) []string {
	t.Helper()
	var out []string
	typ := reflect.TypeOf(corev1.NodeSpec{})
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			t.Fatalf("NodeSpec.%s has no JSON name", typ.Field(i).Name)
		}
		out = append(out, name)
	}
	return out
}

// TestAgentPolicyFreezesEveryNodeSpecField: the agent's policy names every
// field of NodeSpec (and the owner references and finalizers) among what
// a write of the Node itself may not change, so that a field added to
// NodeSpec by a Kubernetes bump is not left open; the remedy policy names
// every one but the taints it writes.
func TestAgentPolicyFreezesEveryNodeSpecField(t *testing.T) {
	agent := string(mustRead(t, "overlays/daemonset/admission-policy.yaml"))
	remedyPolicy := string(mustRead(t, "overlays/remedy/admission-policy.yaml"))
	for _, f := range append(nodeSpecFields(t), "ownerReferences", "finalizers") {
		path := "spec." + f
		if f == "ownerReferences" || f == "finalizers" {
			path = "metadata." + f
		}
		if !strings.Contains(agent, "'"+path+" '") {
			t.Errorf("the agent's policy does not name %s among the Node's frozen fields", path)
		}
		if f != "taints" && !strings.Contains(remedyPolicy, "'"+path+" '") {
			t.Errorf("the remedy policy does not name %s among the fields it may not change", path)
		}
	}
}

// TestRepairSlotsPolicyFitsWhatRepairWrites: the slots policy admits the
// holders repair.LeaseSlots writes (<node>/<target> for each target) and a
// duration range that holds the shipped repair.fleetWindow, in the
// overlay and in the chart alike.
func TestRepairSlotsPolicyFitsWhatRepairWrites(t *testing.T) {
	raw := string(mustRead(t, "overlays/repair/rbac-fleet.yaml"))
	for _, target := range []repair.Target{repair.TargetRuntime, repair.TargetKubelet} {
		if !strings.Contains(raw, "variables.nodeName + '/"+target+"'") {
			t.Errorf("the slots policy's holders lack <node>/%s", target)
		}
	}
	m := regexp.MustCompile(`leaseDurationSeconds >= (\d+) && object\.spec\.leaseDurationSeconds <= (\d+)`).FindStringSubmatch(raw)
	if m == nil {
		t.Fatal("no leaseDurationSeconds bound in the slots policy")
	}
	lo, _ := strconv.Atoi(m[1])
	hi, _ := strconv.Atoi(m[2])
	if time.Duration(lo)*time.Second != time.Minute || time.Duration(hi)*time.Second != time.Hour {
		t.Errorf("the slots policy bounds leaseDurationSeconds to %d..%d, want 60..3600 (repair.fleetWindow's least, and the hour of maxRestartsPerHour)", lo, hi)
	}
	var cfg struct {
		Repair struct {
			FleetWindow string `json:"fleetWindow"`
		} `json:"repair"`
	}
	mustUnmarshal(t, mustRead(t, "overlays/repair/config.yaml"), &cfg)
	var values struct {
		Repair struct {
			FleetWindow string `json:"fleetWindow"`
		} `json:"repair"`
	}
	mustUnmarshal(t, mustRead(t, "helm/hangwatch/values.yaml"), &values)
	for what, s := range map[string]string{"overlays/repair/config.yaml": cfg.Repair.FleetWindow, "the chart's values.yaml": values.Repair.FleetWindow} {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%s repair.fleetWindow %q: %v", what, s, err)
		}
		if secs := int(d / time.Second); secs < lo || secs > hi {
			t.Errorf("%s repair.fleetWindow %v is outside the slots policy's %d..%d s", what, d, lo, hi)
		}
	}
}

// TestHelmChartRepairSlotsPolicyMatchesTheOverlay: the chart's slots
// policy is rbac-fleet.yaml's, with the release's ServiceAccount.
func TestHelmChartRepairSlotsPolicyMatchesTheOverlay(t *testing.T) {
	objs := renderHelmChart(t, "hw", "--set", "repair.enabled=true")
	raw := strings.ReplaceAll(string(mustRead(t, "overlays/repair/rbac-fleet.yaml")),
		`"system:serviceaccount:kube-system:hangwatch"`, `"system:serviceaccount:kube-system:hw"`)
	var want map[string]any
	for _, doc := range strings.Split(raw, "\n---\n") {
		var o map[string]any
		mustUnmarshal(t, []byte(doc), &o)
		if o["kind"] == "ValidatingAdmissionPolicy" {
			want = o
		}
	}
	if want == nil {
		t.Fatal("rbac-fleet.yaml has no ValidatingAdmissionPolicy")
	}
	got := dig(objs["ValidatingAdmissionPolicy/hw-repair-slots-only"], "spec")
	if got == nil || !reflect.DeepEqual(got, want["spec"]) {
		t.Errorf("the chart's repair slots policy differs from the overlay's:\nchart: %v\nkustomize: %v", got, want["spec"])
	}
}
