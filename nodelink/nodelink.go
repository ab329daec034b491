// Package nodelink is the link between the agent and the repair process
// on one node: HTTP over a Unix socket the agent listens on and the repair
// process dials, and the JSON values each sends. The repair process, which
// may kill host processes, listens on nothing; the agent, which serves the
// cluster, holds no host privilege. Both ends import these types; what
// each end will act on (the checks that need repair's reasons and
// outcomes) is the repair package's.
package nodelink

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/hangwatch/hangwatch/internal/fencing"
)

// Targets are what repair restarts, as the link names them.
const (
	TargetRuntime = "runtime"
	TargetKubelet = "kubelet"
)

// Condition is one of the node's conditions as the agent holds it, as the
// repair process reads it.
type Condition struct {
	Type   string `json:"type"`
	True   bool   `json:"true"`
	Reason string `json:"reason"`
}

// The link between the agent and the repair process: HTTP over a Unix
// socket the agent listens on (repair.agentSocket) and the repair process
// dials. The repair process, which may kill host processes, listens on
// nothing; the agent, which serves the cluster, holds no host privilege.
// Through the link the repair process reads the agent's view and hands
// back what needs the API server: Events, the maintenance read, the
// fleet's slots, and its metrics.
const (
	// ViewPath: POST a Tally, answered with the View.
	ViewPath = "/v1/view"
	// MaintenancePath: POST, answered with a MaintenanceAnswer.
	MaintenancePath = "/v1/maintenance"
	// FleetPath: POST a FleetAsk, answered with a FleetAnswer.
	FleetPath = "/v1/fleet"
	// EventPath: POST an EventNote.
	EventPath = "/v1/event"
	// MaxBody bounds every request and answer on the link: a fence
	// order names up to 250 pods (the kubelet's --max-pods ceiling), each
	// up to about 400 bytes.
	MaxBody = 256 << 10
)

// View is the agent's view as repair reads it: the node's conditions and
// each target's silence, timed on the agent's clock.
type View struct {
	Conditions []Condition            `json:"conditions"`
	Silences   map[string]SilenceNote `json:"silences"`
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
	Repairs map[string]map[string]float64 `json:"repairs"`
	Left    map[string]float64            `json:"budgetRemaining"`
	GivenUp map[string]float64            `json:"givenUp,omitempty"`
}

// MaintenanceAnswer names the Node's maintenance condition that is True.
type MaintenanceAnswer struct {
	Condition string `json:"condition"`
}

// FleetAsk asks the fleet's bound for a slot.
type FleetAsk struct {
	Target      string        `json:"target"`
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

// Decode reads one JSON value of the link from r into v: at most
// MaxBody bytes, no unknown field, nothing after it.
func Decode(r io.Reader, v any) error {
	dec := json.NewDecoder(io.LimitReader(r, MaxBody+1))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode %T: %w", v, err)
	}
	if dec.More() {
		return fmt.Errorf("decode %T: more than one value", v)
	}
	return nil
}

// The fence's two requests on the link.
const (
	// FenceOrderPath: POST, answered with a FenceOrder.
	FenceOrderPath = "/v1/fence/order"
	// FenceDeletePath: POST a FenceDeletion; the agent deletes each
	// pod (grace 0, only the pod of that UID) and answers with a
	// FenceDeleted. The fence deletes every pod it killed before it
	// releases any volume, whatever comes after, so that no killed pod can
	// run again on this node on a volume the fence unmounted.
	FenceDeletePath = "/v1/fence/delete"
	// FenceReportPath: POST a FenceReport; the agent attests, and
	// answers with nothing.
	FenceReportPath = "/v1/fence/report"
)

// FenceReportTimeout bounds the deletion, in which the agent deletes every
// killed pod at its API client's pace, and the report.
const FenceReportTimeout = 2 * time.Minute

// FenceOrder is the agent's read of the Node's fence request.
type FenceOrder struct {
	// Request is the request on the Node; nil: none.
	Request *FenceRequestNote `json:"request,omitempty"`
	// NodeBootID is the Node's status.nodeInfo.bootID.
	NodeBootID string `json:"nodeBootID"`
	// Pods are the pods bound to the node, with a request only.
	Pods []FencePod `json:"pods,omitempty"`
}

// FenceRequestNote is a request as the agent read it, with how long ago
// the agent first saw it, on its own clock.
type FenceRequestNote struct {
	ID       string        `json:"id"`
	BootID   string        `json:"bootID"`
	ValidFor time.Duration `json:"validFor"`
	SeenFor  time.Duration `json:"seenFor"`
	// Deadline is the request's, on remedy's clock: the repair process
	// holds it to its own clock with fenceSkewAllowance.
	Deadline time.Time `json:"deadline"`
	// OptedIn: the Node carries the fence's opt-in label now.
	OptedIn bool `json:"optedIn"`
}

// FenceDeletion asks the agent to delete the pods the fence killed.
type FenceDeletion struct {
	RequestID string     `json:"requestID"`
	Pods      []FencePod `json:"pods"`
}

// FenceDeleted is the agent's answer: "" when every pod is gone from the
// API (deleted now, or already), else the first failure.
type FenceDeleted struct {
	Failed string `json:"failed,omitempty"`
}

// Check says what in a deletion the agent will not act on.
func (d FenceDeletion) Check() error {
	return FenceReport{RequestID: d.RequestID, BootID: "-", Pods: d.Pods}.Check()
}

// FencePod is one pod bound to the node, as the fence chooses from.
type FencePod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// Static: a mirror pod (the kubelet runs it from a file).
	Static bool `json:"static,omitempty"`
	// Owner is the kind of its controller ("" for none).
	Owner string `json:"owner,omitempty"`
	// StaysOutOfService: it tolerates the out-of-service taint for good
	// (no tolerationSeconds), so the taint never evicts it.
	StaysOutOfService bool `json:"staysOutOfService,omitempty"`
	// Running: the API says a container of it runs (so its cgroup must be
	// found).
	Running bool `json:"running,omitempty"`
}

// FenceReport is what the fence did, for the agent to delete and attest.
type FenceReport struct {
	RequestID string `json:"requestID"`
	BootID    string `json:"bootID"`
	Fenced    bool   `json:"fenced"`
	Why       string `json:"why,omitempty"`
	// Pods are the pods the fence killed and had deleted, also when it
	// then found the fence impossible.
	Pods []FencePod `json:"pods,omitempty"`
}

// MaxFenceWhy bounds a report's why, as the agent takes it and the Node's
// annotation carries it.
const MaxFenceWhy = 512

// ShortWhy is why cut to MaxFenceWhy bytes, on a character's boundary,
// ending in "…" when cut.
func ShortWhy(why string) string {
	if len(why) <= MaxFenceWhy {
		return why
	}
	cut := MaxFenceWhy - len("…")
	for cut > 0 && !utf8.RuneStart(why[cut]) {
		cut--
	}
	return why[:cut] + "…"
}

// Check says what in a report the agent will not act on.
func (r FenceReport) Check() error {
	a := fencing.Attestation{RequestID: r.RequestID, BootID: r.BootID, At: time.Unix(0, 0), Outcome: fencing.OutcomeFenced}
	for _, p := range r.Pods {
		a.Pods = append(a.Pods, p.UID)
		if p.Namespace == "" || p.Name == "" || len(p.Namespace) > 63 || len(p.Name) > 253 {
			return fmt.Errorf("fence report: pod %.64q/%.64q: want a namespace and a name", p.Namespace, p.Name)
		}
	}
	if len(r.Why) > MaxFenceWhy {
		return fmt.Errorf("fence report: why: %d bytes, at most %d", len(r.Why), MaxFenceWhy)
	}
	if _, _, err := fencing.ParseAttestation(a.Annotations()); err != nil {
		return fmt.Errorf("fence report: %w", err)
	}
	return nil
}

// Attestation is the report as the Node carries it, made at at.
func (r FenceReport) Attestation(at time.Time) fencing.Attestation {
	a := fencing.Attestation{RequestID: r.RequestID, BootID: r.BootID, At: at, Outcome: fencing.OutcomeFenced}
	if !r.Fenced {
		a.Outcome, a.Why = fencing.OutcomeImpossible, r.Why
	}
	for _, p := range r.Pods {
		a.Pods = append(a.Pods, p.UID)
	}
	return a
}
