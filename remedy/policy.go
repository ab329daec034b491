package remedy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/hangwatch/hangwatch/internal/fencing"
	"github.com/hangwatch/hangwatch/internal/fielderr"
	"github.com/hangwatch/hangwatch/internal/managedfields"
)

// The policy file's identity.
const (
	APIVersion = "hangwatch.io/v1alpha1"
	Kind       = "RemedyConfiguration"
)

// Policy is what hangwatch-remedy does, and the guards around it.
type Policy struct {
	// DryRun logs, records an Event and counts each action instead of
	// taking it.
	DryRun bool `json:"dryRun"`
	// Paused takes no action at all, not even removing a taint.
	Paused bool `json:"paused"`
	// MaxUnhealthy is a count (3) or a share ("20%", rounded up) of the
	// matching nodes: while more are unhealthy, no new taint or eviction is
	// made.
	MaxUnhealthy intstr.IntOrString `json:"maxUnhealthy"`
	// MaxActionsPerMinute bounds new taints and node evictions across the
	// fleet (a token bucket of that size, refilled over a minute).
	MaxActionsPerMinute int `json:"maxActionsPerMinute"`
	// HeartbeatPeriod is hangwatch's --status-heartbeat-period: a
	// condition whose lastHeartbeatTime is older than twice this is stale
	// (its node may have lost hangwatch, or the API server), and never
	// acted on.
	HeartbeatPeriod metav1.Duration `json:"heartbeatPeriod"`
	// EvictionConcurrency is how many of one node's pods are evicted at once.
	EvictionConcurrency int `json:"evictionConcurrency"`
	// NodeSelector, a label selector, limits the nodes acted on; empty:
	// every node.
	NodeSelector string `json:"nodeSelector,omitempty"`
	// Conditions say what to do for each condition type.
	Conditions []ConditionPolicy `json:"conditions"`
	// Eviction says which of an evicting node's pods leave it.
	Eviction EvictionPolicy `json:"eviction"`
	// Fence is the fourth rung (fence.go); off by default.
	Fence FencePolicy `json:"fence"`
}

// EvictionPolicy says which pods are evicted from a node whose runtime or
// kubelet may not finish their graceful deletion: by default only those a
// controller recreates under a new name elsewhere at once.
type EvictionPolicy struct {
	// Kinds are the kinds of controller whose pods are evicted: ReplicaSet
	// (the default), Job, StatefulSet, any other controller kind, and None
	// for pods with no controller. A DaemonSet's pods are never evicted.
	Kinds []string `json:"kinds"`
	// ReadWriteOnceVolumes also evicts pods that mount a ReadWriteOnce or
	// ReadWriteOncePod claim (their replacement waits on Multi-Attach until
	// the old pod is gone).
	ReadWriteOnceVolumes bool `json:"readWriteOnceVolumes"`
	// onlyUsing is the condition's EvictPodsUsing (EvictionFor).
	onlyUsing []corev1.ResourceName
}

// EvictionFor is the eviction policy of an eviction for condType: the
// policy's, narrowed to the pods using the condition's evictPodsUsing.
func (p *Policy) EvictionFor(condType string) EvictionPolicy {
	e := p.Eviction
	for _, c := range p.Conditions {
		if c.Type == condType {
			e.onlyUsing = c.EvictPodsUsing
		}
	}
	return e
}

// OwnerlessKind names pods with no controller in EvictionPolicy.Kinds.
const OwnerlessKind = "None"

// ConditionPolicy is what to do about one condition type.
type ConditionPolicy struct {
	Type string `json:"type"`
	// TaintAfter: True this long adds the NoSchedule taint; nil: no taint.
	TaintAfter *metav1.Duration `json:"taintAfter,omitempty"`
	// EvictAfter: True this long evicts the node's pods; nil: no eviction.
	EvictAfter *metav1.Duration `json:"evictAfter,omitempty"`
	// ClearAfter: False this long removes the taint (doubled for each
	// recent flap of the node's condition, up to an hour).
	ClearAfter metav1.Duration `json:"clearAfter"`
	// Writers are the field managers (in the Node's managedFields) whose
	// writes of the condition are acted on; default [hangwatch]. "*": any.
	Writers []string `json:"writers,omitempty"`
	// EvictPodsUsing narrows an eviction for this condition to the pods a
	// container of which requests one of these extended resources (a GPU
	// fault: nvidia.com/gpu); the node's other pods keep running. A pod
	// that holds devices through resource claims (DRA) cannot be told
	// apart: it stays, named in the RemedyLeftAlone Event. Empty: every
	// pod eviction.kinds lets go.
	EvictPodsUsing []corev1.ResourceName `json:"evictPodsUsing,omitempty"`
}

// DefaultWriter is hangwatch's field manager on the Node's status.
const DefaultWriter = "hangwatch"

func (c ConditionPolicy) writers() []string {
	if len(c.Writers) == 0 {
		return []string{DefaultWriter}
	}
	return c.Writers
}

// trusts: a writer the policy trusts owns the content of n's condition.
func (c ConditionPolicy) trusts(n *corev1.Node) bool {
	want := c.writers()
	if slices.Contains(want, "*") {
		return true
	}
	for _, w := range writersOf(n, c.Type) {
		if slices.Contains(want, w) {
			return true
		}
	}
	return false
}

// writersOf are the field managers that wrote n's condition condType.
func writersOf(n *corev1.Node, condType string) []string {
	ws := managedfields.ContentWriters(n.ManagedFields, condType)
	if len(ws) == 0 {
		return []string{"an unknown writer"}
	}
	return ws
}

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

// DefaultPolicy is the policy without a file: taint at once on a hung
// runtime and evict after 45 s (RuntimeHung rises about 4 s after a
// freeze, so the pods are replaced within a minute of it); taint after a minute of an unhealthy
// PLEG; taint at once on a kernel deadlock; taint at once a node that
// starts no pod, evicting nothing (its running pods are fine), and untaint
// 15 s after it starts pods again; on a GPU fault (the kernel rules' GPU
// pack), taint at once, and for a GPU that is gone evict at once the pods
// that use one (the others keep running), never more; leave
// KubeletUnresponsive to the node lifecycle controller, which acts on the
// same Lease.
func DefaultPolicy() *Policy {
	clear := metav1.Duration{Duration: time.Minute}
	return &Policy{
		MaxUnhealthy: intstr.FromString("20%"), MaxActionsPerMinute: 10, EvictionConcurrency: 2,
		HeartbeatPeriod: metav1.Duration{Duration: 5 * time.Minute},
		Conditions: []ConditionPolicy{
			{Type: "RuntimeHung", TaintAfter: dur(0), EvictAfter: dur(45 * time.Second), ClearAfter: clear},
			{Type: "PLEGUnhealthy", TaintAfter: dur(time.Minute), ClearAfter: clear},
			{Type: "KernelDeadlock", TaintAfter: dur(0), ClearAfter: clear},
			{Type: "PodStartStuck", TaintAfter: dur(0), ClearAfter: metav1.Duration{Duration: 15 * time.Second}},
			{Type: "GPUUnavailable", TaintAfter: dur(0), EvictAfter: dur(0), ClearAfter: clear, EvictPodsUsing: []corev1.ResourceName{GPUResource}},
			{Type: "GPUDegraded", TaintAfter: dur(0), ClearAfter: clear},
		},
		Eviction: EvictionPolicy{Kinds: []string{"ReplicaSet"}},
		Fence:    DefaultFencePolicy(),
	}
}

// GPUResource is NVIDIA's device plugin's resource: a pod using a GPU
// requests it.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// TaintPrefix is the key prefix of every taint hangwatch-remedy adds, and
// TaintValue marks it as the controller's: a taint of the same key with
// another value (added by a person) is never touched.
const (
	TaintPrefix = "hangwatch.io/"
	TaintValue  = "hangwatch-remedy"
	// OptOutAnnotation set to "disabled" on a Node keeps hangwatch-remedy
	// from tainting it or evicting its pods.
	OptOutAnnotation = "hangwatch.io/remedy"
	// OutOfServiceTaint is added, with fencing.OutOfServiceValue, only to
	// a node that attested its fence (fence.go); any other is someone
	// else's, and never touched.
	OutOfServiceTaint = fencing.OutOfServiceTaint
)

var (
	camel   = regexp.MustCompile(`([a-z0-9])([A-Z])`)
	acronym = regexp.MustCompile(`([A-Z]+)([A-Z][a-z])`)
)

// TaintKey is the taint of a condition type: RuntimeHung gives
// hangwatch.io/runtime-hung, PLEGUnhealthy hangwatch.io/pleg-unhealthy.
func TaintKey(condType string) string {
	s := acronym.ReplaceAllString(condType, "$1-$2")
	return TaintPrefix + strings.ToLower(camel.ReplaceAllString(s, "$1-$2"))
}

var typeRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9]{0,62}$`)

// notProblems are the Node condition types the kubelet (and the cloud
// route controller) own, Ready among them, which is True on every healthy
// node: remedy acts only on a problem-polarity type hangwatch writes.
var notProblems = []string{"Ready", "MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"}

// CheckConditionType refuses a type remedy must never act on.
func CheckConditionType(condType string) error {
	if slices.Contains(notProblems, condType) {
		return fmt.Errorf("is the kubelet's (or, for Ready, True on every healthy node): remedy acts only on hangwatch's problem-polarity conditions")
	}
	return nil
}

// Validate returns every problem of p, each with its field path.
func Validate(p *Policy) []error {
	var errs fielderr.List
	bad := func(path string, value any, problem string) { errs.Check(true, path, value, problem) }
	if _, err := p.unhealthyLimit(100); err != nil {
		bad("maxUnhealthy", p.MaxUnhealthy.String(), err.Error())
	}
	if p.MaxActionsPerMinute < 1 || p.MaxActionsPerMinute > RecordCapacity {
		bad("maxActionsPerMinute", p.MaxActionsPerMinute, fmt.Sprintf("must be from 1 to %d (the actions the budget's record keeps)", RecordCapacity))
	}
	if p.HeartbeatPeriod.Duration < 10*time.Second {
		bad("heartbeatPeriod", p.HeartbeatPeriod.Duration, "must be at least 10s")
	}
	if p.EvictionConcurrency < 1 || p.EvictionConcurrency > 50 {
		bad("evictionConcurrency", p.EvictionConcurrency, "must be from 1 to 50")
	}
	if _, err := p.selector(); err != nil {
		bad("nodeSelector", p.NodeSelector, err.Error())
	}
	seen := map[string]bool{}
	for i, c := range p.Conditions {
		at := fmt.Sprintf("conditions[%d]", i)
		if !typeRE.MatchString(c.Type) {
			bad(at+".type", c.Type, "must be a CamelCase condition type")
		} else if err := CheckConditionType(c.Type); err != nil {
			bad(at+".type", c.Type, err.Error())
		}
		if seen[c.Type] {
			bad(at+".type", c.Type, "is listed twice")
		}
		seen[c.Type] = true
		for name, d := range map[string]*metav1.Duration{"taintAfter": c.TaintAfter, "evictAfter": c.EvictAfter, "clearAfter": &c.ClearAfter} {
			if d != nil && (d.Duration < 0 || d.Duration > 24*time.Hour) {
				bad(at+"."+name, d.Duration, "must be from 0 to 24h")
			}
		}
		for j, w := range c.Writers {
			if strings.TrimSpace(w) == "" {
				bad(fmt.Sprintf("%s.writers[%d]", at, j), fmt.Sprintf("%q", w), "must name a field manager, or * for any")
			}
		}
		for j, r := range c.EvictPodsUsing {
			if !extendedResource.MatchString(string(r)) {
				bad(fmt.Sprintf("%s.evictPodsUsing[%d]", at, j), fmt.Sprintf("%q", r), "must be an extended resource name such as nvidia.com/gpu")
			}
		}
		if len(c.EvictPodsUsing) > 0 && c.EvictAfter == nil {
			bad(at+".evictPodsUsing", c.EvictPodsUsing, "needs evictAfter: it narrows an eviction")
		}
		if c.EvictAfter != nil && c.TaintAfter == nil {
			bad(at+".evictAfter", c.EvictAfter.Duration, "needs taintAfter: pods evicted from an untainted node may land on it again")
		}
		if c.EvictAfter != nil && c.TaintAfter != nil && c.EvictAfter.Duration < c.TaintAfter.Duration {
			bad(at+".evictAfter", c.EvictAfter.Duration, "must not be shorter than taintAfter")
		}
	}
	validateEviction(p.Eviction, bad)
	validateFence(p.Fence, p.Conditions, bad)
	return errs
}

// extendedResource is a domain-qualified resource name (a device
// plugin's, such as nvidia.com/gpu or amd.com/gpu).
var extendedResource = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)

var kindRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9]{0,62}$`)

func validateEviction(e EvictionPolicy, bad func(path string, value any, problem string)) {
	for i, k := range e.Kinds {
		at, value := fmt.Sprintf("eviction.kinds[%d]", i), fmt.Sprintf("%q", k)
		switch {
		case k == "DaemonSet":
			bad(at, value, "a DaemonSet's pods are never evicted (the DaemonSet puts them back on the same node)")
		case !kindRE.MatchString(k):
			bad(at, value, "must be a controller kind such as ReplicaSet, Job or StatefulSet, or "+OwnerlessKind+" for pods with no controller")
		}
	}
}

// unhealthyLimit is how many of total nodes may be unhealthy before the
// guard holds new actions back. A share rounds up, so a non-zero share of
// a small cluster still lets one node be acted on (20% of 2 nodes is 1).
func (p *Policy) unhealthyLimit(total int) (int, error) {
	if p.MaxUnhealthy.Type == intstr.Int {
		if p.MaxUnhealthy.IntVal < 0 {
			return 0, fmt.Errorf("must not be negative")
		}
		return int(p.MaxUnhealthy.IntVal), nil
	}
	s := p.MaxUnhealthy.StrVal
	if !strings.HasSuffix(s, "%") {
		return 0, fmt.Errorf("want a count or a percentage such as 20%%")
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&p.MaxUnhealthy, total, true)
	if err != nil || n < 0 || strings.HasPrefix(s, "-") || n > total {
		return 0, fmt.Errorf("want a count or a percentage from 0%% to 100%%")
	}
	return n, nil
}

// selector parses NodeSelector.
func (p *Policy) selector() (labels.Selector, error) {
	return labels.Parse(p.NodeSelector)
}
