package repair

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// The link between the agent and the repair process: HTTP over a Unix
// socket the agent listens on (repair.agentSocket) and the repair process
// dials. The repair process, which may kill host processes, listens on
// nothing; the agent, which serves the cluster, holds no host privilege.
// Through the link the repair process reads the agent's view and hands
// back what needs the API server: Events, the maintenance read, the
// fleet's slots, and its metrics.
const (
	// LinkViewPath: POST a Tally, answered with the View.
	LinkViewPath = "/v1/view"
	// LinkMaintenancePath: POST, answered with a MaintenanceAnswer.
	LinkMaintenancePath = "/v1/maintenance"
	// LinkFleetPath: POST a FleetAsk, answered with a FleetAnswer.
	LinkFleetPath = "/v1/fleet"
	// LinkEventPath: POST an EventNote.
	LinkEventPath = "/v1/event"
	// LinkMaxBody bounds every request and answer on the link: a fence
	// order names up to 250 pods (the kubelet's --max-pods ceiling), each
	// up to about 400 bytes.
	LinkMaxBody = 256 << 10
)

// View is the agent's view as repair reads it: the node's conditions and
// each target's silence, timed on the agent's clock.
type View struct {
	Verdicts []Verdict              `json:"verdicts"`
	Silences map[Target]SilenceNote `json:"silences"`
	// Lifecycle is how long every call of LifecycleCalls has gone without
	// any answer: the fence's silence.
	Lifecycle time.Duration `json:"lifecycleSilence,omitempty"`
}

// SilenceNote is one target's silence: to what, and for how long.
type SilenceNote struct {
	What string        `json:"what"`
	For  time.Duration `json:"for"`
}

// Tally is what the repair process has counted, for the agent's /metrics.
type Tally struct {
	Repairs map[Target]map[string]float64 `json:"repairs"`
	Left    map[Target]float64            `json:"budgetRemaining"`
	GivenUp map[Target]float64            `json:"givenUp,omitempty"`
}

// MaintenanceAnswer names the Node's maintenance condition that is True.
type MaintenanceAnswer struct {
	Condition string `json:"condition"`
}

// FleetAsk asks the fleet's bound for a slot.
type FleetAsk struct {
	Target      Target        `json:"target"`
	MaxRestarts int           `json:"maxRestarts"`
	Window      time.Duration `json:"window"`
	Namespace   string        `json:"namespace"`
}

// FleetAnswer is the bound's answer.
type FleetAnswer struct {
	OK  bool   `json:"ok"`
	Why string `json:"why"`
}

// EventNote is an Event on the Node, as repair tells it.
type EventNote struct {
	Warning bool   `json:"warning"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Settings of the fleet ask.
func (a FleetAsk) Settings() FleetSettings {
	return FleetSettings{MaxRestarts: a.MaxRestarts, Window: a.Window, Namespace: a.Namespace}
}

// DecodeLink reads one JSON value of the link from r into v: at most
// LinkMaxBody bytes, no unknown field, nothing after it.
func DecodeLink(r io.Reader, v any) error {
	dec := json.NewDecoder(io.LimitReader(r, LinkMaxBody+1))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode %T: %w", v, err)
	}
	if dec.More() {
		return fmt.Errorf("decode %T: more than one value", v)
	}
	return nil
}

// Check says what in a note the agent will not put on its Node: only
// repair's own reasons, and a short message.
func (n EventNote) Check() error {
	if !knownEventReason(n.Reason) {
		return fmt.Errorf("event reason %.64q: not one of repair's reasons", n.Reason)
	}
	if len(n.Message) > 1024 {
		return fmt.Errorf("event message: %d bytes, at most 1024", len(n.Message))
	}
	return nil
}

func knownEventReason(reason string) bool {
	if reason == ReasonFenceDryRun {
		return true
	}
	for _, t := range []Target{TargetRuntime, TargetKubelet} {
		for _, o := range Outcomes {
			if eventReason(t, o) == reason {
				return true
			}
		}
	}
	return false
}

// Check says what in a tally the agent will not export: an unknown target
// or outcome, or a value that is negative or not a number.
func (t Tally) Check() error {
	for target, outcomes := range t.Repairs {
		if !knownTarget(target) {
			return fmt.Errorf("tally: unknown target %q", target)
		}
		for o, v := range outcomes {
			if !knownOutcome(o) || !(v >= 0) {
				return fmt.Errorf("tally: target %s outcome %q value %v: want a known outcome and a count", target, o, v)
			}
		}
	}
	for target, v := range t.Left {
		if !knownTarget(target) || !(v >= -1e6 && v <= 1e6) {
			return fmt.Errorf("tally: budget of target %q is %v", target, v)
		}
	}
	for target, v := range t.GivenUp {
		if !knownTarget(target) || (v != 0 && v != 1) {
			return fmt.Errorf("tally: given up of target %q is %v: want 0 or 1", target, v)
		}
	}
	return nil
}

// Check says what in an ask the agent will not take to the API server.
func (a FleetAsk) Check() error {
	switch {
	case !knownTarget(a.Target):
		return fmt.Errorf("fleet ask: unknown target %q", a.Target)
	case a.MaxRestarts < 1 || a.MaxRestarts > 100:
		return fmt.Errorf("fleet ask: maxRestarts %d: must be from 1 to 100", a.MaxRestarts)
	case a.Window < time.Minute:
		return fmt.Errorf("fleet ask: window %v: must be at least 1m", a.Window)
	case a.Namespace == "" || len(a.Namespace) > 63:
		return fmt.Errorf("fleet ask: namespace %q: must be a namespace's name", a.Namespace)
	}
	return nil
}

func knownTarget(t Target) bool { return t == TargetRuntime || t == TargetKubelet }

func knownOutcome(o string) bool {
	for _, k := range Outcomes {
		if k == o {
			return true
		}
	}
	return false
}
