package manifests

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/hangwatch/hangwatch/remedy"
)

// TestRemedyAdmissionOwnsExactlyItsTaintKeys: the remedy admission
// policy's map ties each of hangwatch's taint keys (remedy.TaintKey) to
// its condition type, covers every condition the shipped remedy policy
// names, and holds no positive-polarity or kubelet-owned type.
func TestRemedyAdmissionOwnsExactlyItsTaintKeys(t *testing.T) {
	raw := string(mustRead(t, "overlays/remedy/admission-policy.yaml"))
	owned := map[string]string{}
	for _, m := range regexp.MustCompile(`'(hangwatch\.io/[a-z-]+)': '([A-Za-z]+)'`).FindAllStringSubmatch(raw, -1) {
		owned[m[1]] = m[2]
	}
	if len(owned) == 0 {
		t.Fatal("no owned map in the remedy admission policy")
	}
	for key, condType := range owned {
		if remedy.TaintKey(condType) != key {
			t.Errorf("the policy ties %s to %s, whose taint key is %s", key, condType, remedy.TaintKey(condType))
		}
		if err := remedy.CheckConditionType(condType); err != nil {
			t.Errorf("the policy owns %s: %v", key, err)
		}
	}
	var cfg struct {
		Conditions []struct {
			Type string `json:"type"`
		} `json:"conditions"`
	}
	mustUnmarshal(t, mustRead(t, "overlays/remedy/config.yaml"), &cfg)
	for _, c := range cfg.Conditions {
		if _, ok := owned[remedy.TaintKey(c.Type)]; !ok {
			t.Errorf("the shipped remedy policy names %s, whose taint %s the admission policy does not own", c.Type, remedy.TaintKey(c.Type))
		}
	}
	if strings.Contains(raw, "startsWith('hangwatch.io/')") {
		t.Error("the policy admits any hangwatch.io/ key")
	}
}

// TestHelmChartConditionWritersMatchesTheBase: the chart's condition-writers
// policy is the base's, with the release's ServiceAccount.
func TestHelmChartConditionWritersMatchesTheBase(t *testing.T) {
	objs := renderHelmChart(t, "hw")
	policy := strings.ReplaceAll(string(mustRead(t, "base/condition-writers.yaml")),
		"system:serviceaccount:kube-system:hangwatch", "system:serviceaccount:kube-system:hw")
	var want map[string]any
	mustUnmarshal(t, []byte(strings.Split(policy, "\n---\n")[0]), &want)
	got := dig(objs["ValidatingAdmissionPolicy/hw-condition-writers"], "spec")
	if got == nil || !reflect.DeepEqual(got, want["spec"]) {
		t.Errorf("the chart's condition-writers policy differs from the base's:\nchart: %v\nkustomize: %v", got, want["spec"])
	}
	if _, ok := objs["ValidatingAdmissionPolicyBinding/hw-condition-writers"]; !ok {
		t.Error("the chart binds no condition-writers policy")
	}
}

// TestFlowSchemaHoldsAFleetWideBurst: every agent is one user, so one flow;
// it may hold handSize x queueLengthLimit requests waiting, which must take
// a 5,000-node fleet's status patch and Event at once (docs/remediation.md).
func TestFlowSchemaHoldsAFleetWideBurst(t *testing.T) {
	var plc map[string]any
	mustUnmarshal(t, []byte(strings.Split(string(mustRead(t, "overlays/daemonset/flowcontrol.yaml")), "\n---\n")[0]), &plc)
	q := dig(plc, "spec", "limited", "limitResponse", "queuing").(map[string]any)
	hand, length, queues := q["handSize"].(float64), q["queueLengthLimit"].(float64), q["queues"].(float64)
	if hand*length < 2*5000 {
		t.Errorf("one flow may hold %v x %v = %v requests waiting, want at least 10,000", hand, length, hand*length)
	}
	if hand > queues {
		t.Errorf("handSize %v > queues %v", hand, queues)
	}
	if got := dig(plc, "spec", "limited", "borrowingLimitPercent"); got == nil {
		t.Error("the priority level may not borrow")
	}
}
