package repair

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/hangwatch/hangwatch/internal/fencing"
)

// The fence's two requests on the link.
const (
	// LinkFenceOrderPath: POST, answered with a FenceOrder.
	LinkFenceOrderPath = "/v1/fence/order"
	// LinkFenceDeletePath: POST a FenceDeletion; the agent deletes each
	// pod (grace 0, only the pod of that UID) and answers with a
	// FenceDeleted. The fence deletes every pod it killed before it
	// releases any volume, whatever comes after, so that no killed pod can
	// run again on this node on a volume the fence unmounted.
	LinkFenceDeletePath = "/v1/fence/delete"
	// LinkFenceReportPath: POST a FenceReport; the agent attests, and
	// answers with nothing.
	LinkFenceReportPath = "/v1/fence/report"
)

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

// maxFenceWhy bounds a report's why, as the agent takes it and the Node's
// annotation carries it.
const maxFenceWhy = 512

// shortWhy is why cut to maxFenceWhy bytes, on a character's boundary,
// ending in "…" when cut.
func shortWhy(why string) string {
	if len(why) <= maxFenceWhy {
		return why
	}
	cut := maxFenceWhy - len("…")
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
	if len(r.Why) > maxFenceWhy {
		return fmt.Errorf("fence report: why: %d bytes, at most %d", len(r.Why), maxFenceWhy)
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
