package conditions_test

import (
	"fmt"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/internal/watchdog"
	"github.com/hangwatch/hangwatch/observations"
)

// FuzzSpecs: no condition rule, as a config file gives it, panics the
// compiler or the engine, or takes long to evaluate (the CEL cost limit);
// a message never passes MaxMessageBytes.
func FuzzSpecs(f *testing.F) {
	f.Add(`- type: X
  raiseAfter: 2
  problems:
  - when: cri.containers > 1 && size(cri.hungCalls) > 0
    reason: R
    messageExpression: '"hung: " + cri.hungCalls.join(", ")'
  healthy: {reason: Ok}`)
	f.Add(`- type: KubeletUnresponsive
  problems:
  - when: lease.renewAgeSeconds >= 0.5 * lease.graceSeconds
    reasonExpression: '"Lease" + string(lease.missedRenewals)'
  healthy: {reason: NodeLeaseRenewed}`)
	f.Add(`- {type: Ready, disabled: true}`)
	obs := []observations.Input{
		observations.CRI{Containers: 3, HungCalls: []string{"Version", "ListPodSandbox"}},
		observations.Lease{RenewAgeSeconds: 30, GraceSeconds: 50, MissedRenewals: 2, Found: true},
		observations.Kernel{"KernelDeadlock": {Active: true, Reason: "R", Message: "m", Matches: 1}},
		observations.PLEG{Verdict: "Healthy", Reason: "RelistHealthy", Message: "ok"},
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var specs []conditions.Spec
		if err := yaml.Unmarshal([]byte(doc), &specs); err != nil || conditions.CompileSpecs(specs, conditions.DefaultParams(), nil) != nil {
			return
		}
		defer watchdog.Start(5*time.Second, func() string { return fmt.Sprintf("evaluating the rules %q", doc) })()
		e, err := conditions.NewEngine(specs, testclock.NewFakeClock(time.Unix(0, 0)),
			conditions.EngineOptions{Available: conditions.Inputs, Params: conditions.DefaultParams()})
		if err != nil {
			return
		}
		for _, o := range obs {
			e.Observe(o)
		}
		for _, c := range e.Set().Snapshot() {
			if len(c.Message) > conditions.MaxMessageBytes {
				t.Fatalf("%s: message of %d bytes", c.Type, len(c.Message))
			}
		}
	})
}
