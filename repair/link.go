package repair

import (
	"fmt"
	"time"

	"github.com/hangwatch/hangwatch/nodelink"
)

// FleetSettingsOf are the settings of a fleet ask.
func FleetSettingsOf(a nodelink.FleetAsk) FleetSettings {
	return FleetSettings{MaxRestarts: a.MaxRestarts, Window: a.Window, Namespace: a.Namespace}
}

// CheckEventNote says what in a note the agent will not put on its Node:
// only repair's own reasons, and a short message.
func CheckEventNote(n nodelink.EventNote) error {
	if !knownEventReason(n.Reason) {
		return fmt.Errorf("event reason %.64q: not one of repair's reasons", n.Reason)
	}
	if len(n.Message) > 1024 {
		return fmt.Errorf("event message: %d bytes, at most 1024", len(n.Message))
	}
	return nil
}

func knownEventReason(reason string) bool {
	if reason == nodelink.ReasonFenceDryRun {
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

// CheckTally says what in a tally the agent will not export: an unknown
// target or outcome, or a value that is negative or not a number.
func CheckTally(t nodelink.Tally) error {
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

// CheckFleetAsk says what in an ask the agent will not take to the API
// server.
func CheckFleetAsk(a nodelink.FleetAsk) error {
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

func knownTarget(t string) bool { return t == nodelink.TargetRuntime || t == nodelink.TargetKubelet }

func knownOutcome(o string) bool {
	for _, k := range Outcomes {
		if k == o {
			return true
		}
	}
	return false
}
