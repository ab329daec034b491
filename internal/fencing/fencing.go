// Package fencing is what hangwatch-remedy and the node agent say to each
// other on the Node when the recovery ladder's fourth rung fences it: the
// request (remedy's), the attestation (the node's), and the out-of-service
// taint that follows. Each is a plain annotation, so that the admission
// policies can compare them in CEL: the out-of-service taint is admitted
// only while the attestation answers the request on the Node's current
// boot.
package fencing

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The Node's label and annotations of the fence.
const (
	// OptInLabel set to OptInValue on a Node lets hangwatch-remedy fence it.
	OptInLabel = "hangwatch.io/fence"
	OptInValue = "enabled"

	// The request, written by hangwatch-remedy.
	RequestAnnotation         = "hangwatch.io/fence-request"
	RequestBootIDAnnotation   = "hangwatch.io/fence-request-boot-id"
	RequestDeadlineAnnotation = "hangwatch.io/fence-request-deadline"
	RequestValidForAnnotation = "hangwatch.io/fence-request-valid-for"

	// The attestation, written by the node.
	AttestedAnnotation       = "hangwatch.io/fenced"
	AttestedBootIDAnnotation = "hangwatch.io/fenced-boot-id"
	AttestedPodsAnnotation   = "hangwatch.io/fenced-pods"
	AttestedAtAnnotation     = "hangwatch.io/fenced-at"
	OutcomeAnnotation        = "hangwatch.io/fence-outcome"

	// OutcomeFenced: every chosen pod's processes are gone, its volumes
	// unmounted, and the pod deleted. Anything else is
	// OutcomeImpossible + ": " + why.
	OutcomeFenced     = "Fenced"
	OutcomeImpossible = "Impossible"

	// OutOfServiceTaint is KEP-2268's taint, and OutOfServiceValue marks the one
	// hangwatch-remedy adds after an attestation.
	OutOfServiceTaint = "node.kubernetes.io/out-of-service"
	OutOfServiceValue = "hangwatch-fenced"
)

// RequestAnnotations and AttestationAnnotations are every annotation of each.
var (
	RequestAnnotations     = []string{RequestAnnotation, RequestBootIDAnnotation, RequestDeadlineAnnotation, RequestValidForAnnotation}
	AttestationAnnotations = []string{AttestedAnnotation, AttestedBootIDAnnotation, AttestedPodsAnnotation, AttestedAtAnnotation, OutcomeAnnotation}
)

// MaxPods bounds the UIDs an attestation lists.
const MaxPods = 500

var (
	idRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	uidRE = regexp.MustCompile(`^[a-f0-9-]{1,64}$`)
)

// Request is hangwatch-remedy's ask that a node fence itself.
type Request struct {
	ID     string
	BootID string // the Node's status.nodeInfo.bootID when asked
	// Deadline is on remedy's clock, for people and for remedy; the node
	// times ValidFor from its own first sight of the request.
	Deadline time.Time
	ValidFor time.Duration
}

// Annotations are the request as the Node carries it.
func (r Request) Annotations() map[string]string {
	return map[string]string{RequestAnnotation: r.ID, RequestBootIDAnnotation: r.BootID,
		RequestDeadlineAnnotation: r.Deadline.UTC().Format(time.RFC3339), RequestValidForAnnotation: r.ValidFor.String()}
}

// RequestOf reads the request on n: ok false when there is none; an error
// names the annotation and value that is malformed.
func RequestOf(n *corev1.Node) (Request, bool, error) {
	return ParseRequest(n.Annotations)
}

// ParseRequest reads a request from annotations.
func ParseRequest(a map[string]string) (Request, bool, error) {
	id, ok := a[RequestAnnotation]
	if !ok {
		return Request{}, false, nil
	}
	r := Request{ID: id, BootID: a[RequestBootIDAnnotation]}
	if err := checkID(RequestAnnotation, id); err != nil {
		return r, true, err
	}
	if err := checkBootID(RequestBootIDAnnotation, r.BootID); err != nil {
		return r, true, err
	}
	var err error
	if r.Deadline, err = time.Parse(time.RFC3339, a[RequestDeadlineAnnotation]); err != nil {
		return r, true, fmt.Errorf("annotation %s %.64q: want an RFC 3339 time", RequestDeadlineAnnotation, a[RequestDeadlineAnnotation])
	}
	if r.ValidFor, err = time.ParseDuration(a[RequestValidForAnnotation]); err != nil || r.ValidFor <= 0 || r.ValidFor > 10*time.Minute {
		return r, true, fmt.Errorf("annotation %s %.64q: want a duration from 1s to 10m", RequestValidForAnnotation, a[RequestValidForAnnotation])
	}
	return r, true, nil
}

// Attestation is the node's answer to a request: what it did.
type Attestation struct {
	RequestID string
	BootID    string
	Pods      []string // the UIDs of the pods fenced
	At        time.Time
	// Outcome is OutcomeFenced, or OutcomeImpossible with Why.
	Outcome string
	Why     string
}

// Fenced tells whether the attestation says the fence was done.
func (a Attestation) Fenced() bool { return a.Outcome == OutcomeFenced }

// Annotations are the attestation as the Node carries it.
func (a Attestation) Annotations() map[string]string {
	outcome := a.Outcome
	if outcome == OutcomeImpossible && a.Why != "" {
		outcome += ": " + a.Why
	}
	return map[string]string{AttestedAnnotation: a.RequestID, AttestedBootIDAnnotation: a.BootID,
		AttestedPodsAnnotation: strings.Join(a.Pods, ","), AttestedAtAnnotation: a.At.UTC().Format(time.RFC3339), OutcomeAnnotation: outcome}
}

// AttestationOf reads the attestation on n.
func AttestationOf(n *corev1.Node) (Attestation, bool, error) {
	return ParseAttestation(n.Annotations)
}

// ParseAttestation reads an attestation from annotations.
func ParseAttestation(a map[string]string) (Attestation, bool, error) {
	id, ok := a[AttestedAnnotation]
	if !ok {
		return Attestation{}, false, nil
	}
	at := Attestation{RequestID: id, BootID: a[AttestedBootIDAnnotation]}
	if err := checkID(AttestedAnnotation, id); err != nil {
		return at, true, err
	}
	if err := checkBootID(AttestedBootIDAnnotation, at.BootID); err != nil {
		return at, true, err
	}
	if pods := a[AttestedPodsAnnotation]; pods != "" {
		at.Pods = strings.Split(pods, ",")
	}
	if len(at.Pods) > MaxPods {
		return at, true, fmt.Errorf("annotation %s: %d pods, at most %d", AttestedPodsAnnotation, len(at.Pods), MaxPods)
	}
	for _, uid := range at.Pods {
		if !uidRE.MatchString(uid) {
			return at, true, fmt.Errorf("annotation %s: %.64q is not a pod UID", AttestedPodsAnnotation, uid)
		}
	}
	var err error
	if at.At, err = time.Parse(time.RFC3339, a[AttestedAtAnnotation]); err != nil {
		return at, true, fmt.Errorf("annotation %s %.64q: want an RFC 3339 time", AttestedAtAnnotation, a[AttestedAtAnnotation])
	}
	outcome := a[OutcomeAnnotation]
	switch {
	case outcome == OutcomeFenced:
		at.Outcome = OutcomeFenced
	case outcome == OutcomeImpossible || strings.HasPrefix(outcome, OutcomeImpossible+": "):
		at.Outcome, at.Why = OutcomeImpossible, strings.TrimPrefix(strings.TrimPrefix(outcome, OutcomeImpossible), ": ")
	default:
		return at, true, fmt.Errorf("annotation %s %.64q: want %s or %s: <why>", OutcomeAnnotation, outcome, OutcomeFenced, OutcomeImpossible)
	}
	return at, true, nil
}

// Answers tells whether a, on n as it is now, answers r: the same request,
// made and answered on the boot the Node reports now.
func (a Attestation) Answers(r Request, n *corev1.Node) bool {
	boot := n.Status.NodeInfo.BootID
	return a.RequestID == r.ID && a.BootID == r.BootID && boot != "" && a.BootID == boot
}

// HasOutOfService tells whether n has the out-of-service taint with
// hangwatch's value (ours) or with any other (someone else's).
func HasOutOfService(n *corev1.Node) (ours, others bool) {
	for _, t := range n.Spec.Taints {
		if t.Key != OutOfServiceTaint {
			continue
		}
		if t.Value == OutOfServiceValue && t.Effect == corev1.TaintEffectNoExecute {
			ours = true
		} else {
			others = true
		}
	}
	return ours, others
}

// OutOfService is the taint hangwatch-remedy adds.
func OutOfService() corev1.Taint {
	return corev1.Taint{Key: OutOfServiceTaint, Value: OutOfServiceValue, Effect: corev1.TaintEffectNoExecute}
}

func checkID(name, v string) error {
	if !idRE.MatchString(v) {
		return fmt.Errorf("annotation %s %.64q: want 1 to 63 lower-case letters, digits and dashes", name, v)
	}
	return nil
}

func checkBootID(name, v string) error {
	if v == "" || len(v) > 64 || strings.ContainsAny(v, " ,\n") {
		return fmt.Errorf("annotation %s %.64q: want the node's boot ID", name, v)
	}
	return nil
}
