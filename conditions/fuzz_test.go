package conditions_test

import (
	"fmt"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/internal/watchdog"
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
	obs := map[string]map[string]any{
		"cri":    {"containers": 3, "hungCalls": []string{"Version", "ListPodSandbox"}, "unreachable": false},
		"lease":  {"renewAgeSeconds": 30.0, "graceSeconds": 50.0, "missedRenewals": 2, "found": true},
		"kernel": {"KernelDeadlock": map[string]any{"active": true, "reason": "R", "message": "m", "matches": 1}},
		"pleg":   {"verdict": "Healthy", "reason": "RelistHealthy", "message": "ok"},
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var specs []conditions.Spec
		if err := yaml.Unmarshal([]byte(doc), &specs); err != nil || conditions.CompileSpecs(specs) != nil {
			return
		}
		defer watchdog.Start(5*time.Second, func() string { return fmt.Sprintf("evaluating the rules %q", doc) })()
		e, err := conditions.NewEngine(specs, testclock.NewFakeClock(time.Unix(0, 0)), conditions.EngineOptions{Available: conditions.Inputs})
		if err != nil {
			return
		}
		for in, o := range obs {
			e.Observe(in, o)
		}
		for _, c := range e.Set().Snapshot() {
			if len(c.Message) > conditions.MaxMessageBytes {
				t.Fatalf("%s: message of %d bytes", c.Type, len(c.Message))
			}
		}
	})
}
