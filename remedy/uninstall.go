package remedy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/hangwatch/hangwatch/internal/fencing"
)

// OwnedConditionTypes are the Node conditions hangwatch's agent writes
// and an uninstall takes off (the remedy admission policy's owned types).
var OwnedConditionTypes = []string{"RuntimeHung", "PLEGUnhealthy", "KernelDeadlock", "KubeletUnresponsive"}

// Leftovers is what hangwatch left on one Node that an uninstall takes
// off: each as a JSON patch that holds only on the Node just read (its
// resourceVersion), nil when there is nothing of its kind.
type Leftovers struct {
	// Status removes hangwatch's conditions (the nodes/status subresource).
	Status []byte
	// Node removes hangwatch-remedy's taints, its out-of-service taint
	// and the fence's request and attestation annotations.
	Node []byte
	// What names each thing removed, for the log and a dry run.
	What []string
}

// Empty tells whether there is nothing of hangwatch's on the Node.
func (l Leftovers) Empty() bool { return len(l.What) == 0 }

// LeftOn finds what hangwatch left on n: the conditions of types (the
// owned ones), remedy's taints for them (hangwatch.io/<type>=hangwatch-remedy:NoSchedule),
// the out-of-service taint it adds after a fence, and the fence's
// annotations. Nothing anyone else wrote is touched: another value or
// effect of a taint key, another component's out-of-service, a label.
func LeftOn(n *corev1.Node, types []string) (Leftovers, error) {
	var l Leftovers
	conds := []corev1.NodeCondition{}
	for _, c := range n.Status.Conditions {
		if slices.Contains(types, string(c.Type)) {
			l.What = append(l.What, fmt.Sprintf("condition %s=%s", c.Type, c.Status))
			continue
		}
		conds = append(conds, c)
	}
	var err error
	if len(conds) != len(n.Status.Conditions) {
		if l.Status, err = replacePatch(n, "/status/conditions", conds, nil); err != nil {
			return l, err
		}
	}
	taints := []corev1.Taint{}
	for _, t := range n.Spec.Taints {
		if ownedTaint(t, types) {
			l.What = append(l.What, fmt.Sprintf("taint %s=%s:%s", t.Key, t.Value, t.Effect))
			continue
		}
		taints = append(taints, t)
	}
	var drop []string
	for _, k := range append(slices.Clone(fencing.RequestAnnotations), fencing.AttestationAnnotations...) {
		if _, ok := n.Annotations[k]; ok {
			drop = append(drop, k)
			l.What = append(l.What, "annotation "+k)
		}
	}
	if len(taints) != len(n.Spec.Taints) || len(drop) > 0 {
		l.Node, err = replacePatch(n, "/spec/taints", taints, drop)
	}
	return l, err
}

// ownedTaint tells whether t is one hangwatch-remedy adds.
func ownedTaint(t corev1.Taint, types []string) bool {
	oos := fencing.OutOfService()
	if t.Key == oos.Key {
		return t.Value == oos.Value && t.Effect == oos.Effect
	}
	for _, typ := range types {
		if t.Key == TaintKey(typ) && t.Value == TaintValue && t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

// replacePatch sets path to value and removes the annotations drop, if n
// is still the Node just read.
func replacePatch(n *corev1.Node, path string, value any, drop []string) ([]byte, error) {
	ops := []map[string]any{{"op": "add", "path": path, "value": value}}
	if n.ResourceVersion != "" { // always, but on a fake Clientset
		ops = append([]map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": n.ResourceVersion}}, ops...)
	}
	for _, k := range drop {
		ops = append(ops, map[string]any{"op": "remove", "path": "/metadata/annotations/" + strings.ReplaceAll(k, "/", "~1")})
	}
	return json.Marshal(ops)
}
