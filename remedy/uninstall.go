package remedy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/internal/fencing"
)

// OwnedConditionTypes are the Node conditions hangwatch's agent writes,
// which `hangwatch-remedy uninstall` takes off.
var OwnedConditionTypes = []string{"RuntimeHung", "PLEGUnhealthy", "KernelDeadlock", "KubeletUnresponsive", "PodStartStuck"}

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

// LeftOn finds what hangwatch left on n: the conditions of types that
// hangwatch wrote (its field manager, DefaultWriter, owns their content:
// node-problem-detector's KernelDeadlock stays), remedy's taints for them
// (hangwatch.io/<type>=hangwatch-remedy:NoSchedule), the out-of-service
// taint it adds after a fence, and the fence's annotations. Nothing anyone
// else wrote is touched: another value or effect of a taint key, another
// component's out-of-service, a label.
func LeftOn(n *corev1.Node, types []string) (Leftovers, error) {
	var l Leftovers
	conds := []corev1.NodeCondition{}
	for _, c := range n.Status.Conditions {
		if slices.Contains(types, string(c.Type)) && slices.Contains(writersOf(n, string(c.Type)), DefaultWriter) {
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

// CleanOptions are what CleanNodes takes off and how it waits.
type CleanOptions struct {
	Client kubernetes.Interface
	// Types are the condition types whose conditions and remedy taints go
	// (OwnedConditionTypes and the policy's).
	Types []string
	// DryRun lists what would go and changes nothing.
	DryRun bool
	// Clock times the passes; Poll is the time between them.
	Clock clock.WithTicker
	Poll  time.Duration
	// Cleaned, when set, is told each Node's leftovers as they go (or
	// would go).
	Cleaned func(node string, what []string)
}

// CleanNodes takes what hangwatch left off every Node (LeftOn): its
// conditions first, in the Node's status, then remedy's taints, the
// out-of-service taint and the fence's annotations, each a JSON patch on
// the Node just read. It passes again until two passes in a row find
// nothing (a hangwatch pod still stopping may write once more), or ctx
// ends; it returns how many Nodes it changed and the last pass's error.
func CleanNodes(ctx context.Context, o CleanOptions) (int, error) {
	t := o.Clock.NewTicker(o.Poll)
	defer t.Stop()
	cleaned := map[string]bool{}
	for quiet := 0; ; {
		found, err := cleanPass(ctx, o, cleaned)
		if err == nil && (found == 0 || o.DryRun) {
			quiet++
		} else {
			quiet = 0
		}
		if quiet == 2 || o.DryRun {
			return len(cleaned), err
		}
		select {
		case <-ctx.Done():
			return len(cleaned), errors.Join(err, ctx.Err())
		case <-t.C():
		}
	}
}

// cleanPass cleans each Node once and returns how many had leftovers.
func cleanPass(ctx context.Context, o CleanOptions, cleaned map[string]bool) (int, error) {
	nodes, err := o.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("list the Nodes: %w", err)
	}
	var errs []error
	found := 0
	for i := range nodes.Items {
		n := &nodes.Items[i]
		l, err := LeftOn(n, o.Types)
		if err != nil || l.Empty() {
			errs = append(errs, err)
			continue
		}
		found++
		if !o.DryRun {
			if err := cleanNode(ctx, o, n, l); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		cleaned[n.Name] = true
		if o.Cleaned != nil {
			o.Cleaned(n.Name, l.What)
		}
	}
	return found, errors.Join(errs...)
}

// cleanNode removes l from n: the conditions first, then, on the Node
// that patch returned, the taints and annotations.
func cleanNode(ctx context.Context, o CleanOptions, n *corev1.Node, l Leftovers) error {
	nodes := o.Client.CoreV1().Nodes()
	name := n.Name
	if l.Status != nil {
		var err error
		if n, err = nodes.Patch(ctx, name, types.JSONPatchType, l.Status, metav1PatchOptions, "status"); err != nil {
			return fmt.Errorf("take hangwatch's conditions off node %s: %w", name, err)
		}
		if l, err = LeftOn(n, o.Types); err != nil {
			return err
		}
	}
	if l.Node != nil {
		if _, err := nodes.Patch(ctx, name, types.JSONPatchType, l.Node, metav1PatchOptions); err != nil {
			return fmt.Errorf("take hangwatch's taints and annotations off node %s: %w", name, err)
		}
	}
	return nil
}
