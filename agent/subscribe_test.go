package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/metrics"
	testclock "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/internal/clocktest"
	"github.com/hangwatch/hangwatch/nodestatus"
)

// TestEveryConsumerHearsAChangeAsASubscriber: one observation that
// raises RuntimeHung reaches the Node's status, its Event, /conditions and
// repair's view, each a subscriber of the engine; none of them reads the
// engine or is called by the agent.
func TestEveryConsumerHearsAChangeAsASubscriber(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}})
	api := clientsetAPI{client}
	engine, err := conditions.NewEngine(conditions.DefaultSpecs(), clk, conditions.EngineOptions{Available: []string{conditions.InputCRI}})
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{o: Options{Clock: clk}, engine: engine, api: &apiReporting{node: "node-a", client: api, heartbeat: 5 * time.Minute,
		events: nodestatus.NewEvents(api, "node-a", nil, time.Second, clk)}}
	defer a.api.shutdown()
	a.subscribe()
	a.repairConds = &repairConditions{} // as newRepairLink does
	engine.Subscribe(a.repairConds)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.api.report(ctx)
	onNode := func(condType string) corev1.NodeCondition {
		n, err := client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range n.Status.Conditions {
			if string(c.Type) == condType {
				return c
			}
		}
		return corev1.NodeCondition{}
	}
	clocktest.Await(t, "RuntimeHung Unknown on the Node", func() bool { return onNode(conditions.TypeRuntimeHung).Status == corev1.ConditionUnknown })

	a.observe(cri.Cycle{Calls: []cri.CallResult{{Method: "ListPodSandbox", Class: cri.ClassTimeout}}}.Observation(2 * time.Second))

	if v := a.repairConds.get(); len(v) != 1 || !v[0].True || v[0].Reason != "ListPodSandboxHung" {
		t.Errorf("repair's conditions %+v, want RuntimeHung True at once", v)
	}
	if got := conditionsServed(t, a); got.Status != conditions.StatusTrue || got.Reason != "ListPodSandboxHung" {
		t.Errorf("/conditions serves %+v, want RuntimeHung True at once", got)
	}
	clocktest.StepUntil(t, clk, 1, 100*time.Millisecond, time.Minute, "RuntimeHung True on the Node", func() bool {
		return onNode(conditions.TypeRuntimeHung).Status == corev1.ConditionTrue
	})
	clocktest.Await(t, "the transition's Event", func() bool {
		evs, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		return err == nil && len(evs.Items) == 1 && evs.Items[0].Reason == "ListPodSandboxHung" && evs.Items[0].Type == corev1.EventTypeWarning
	})
}

// conditionsServed is RuntimeHung as /conditions serves it.
func conditionsServed(t *testing.T, a *Agent) conditions.Condition {
	t.Helper()
	e := endpoints{reg: metrics.NewKubeRegistry(), conds: a.view, events: newKernelEventLog(1), health: newLiveness(a.o.Clock, time.Minute)}
	w := httptest.NewRecorder()
	e.plainMux("").ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/conditions", nil))
	var body struct{ Conditions []conditions.Condition }
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || len(body.Conditions) != 1 {
		t.Fatalf("/conditions: %v %s", err, w.Body.String())
	}
	return body.Conditions[0]
}
