package cluster

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// RolledImage is the tag the rollout test rolls hangwatch to: the same
// image under another name, as a new release would be.
const RolledImage = "hangwatch.local/hangwatch:v0.1.0-rolled"

// Tag gives the shipped image the name ref in both nodes' containerds.
func (in *Installs) Tag(t *testing.T, ref string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []*containerd.Containerd{in.C, in.CB} {
		if err := c.TagImage(ctx, ShippedImage, ref); err != nil {
			t.Fatal(err)
		}
	}
}

// Roll rolls both DaemonSets to image as an operator does: `kubectl set
// image`, or `helm upgrade --reuse-values` with the chart's image.tag.
func (in *Installs) Roll(t *testing.T, image string) {
	t.Helper()
	if in.How == "helm" {
		in.helm(t, "upgrade", HelmRelease, filepath.Join(harness.ModuleRoot(), "manifests", "helm", "hangwatch"), "--namespace", "kube-system",
			"--reuse-values", "--set", "image.tag="+image[len("hangwatch.local/hangwatch:"):], "--post-renderer", in.postRenderer(t))
		return
	}
	in.CP.Kubectl(t, "-n", "kube-system", "set", "image", "daemonset/hangwatch", "hangwatch="+image)
	in.CP.Kubectl(t, "-n", "kube-system", "set", "image", "daemonset/hangwatch-repair", "repair="+image)
}

// WaitRolled waits until the agent's and the repair process's pods on A
// run image.
func (in *Installs) WaitRolled(t *testing.T, limit time.Duration, image string) {
	t.Helper()
	harness.Eventually(t, limit, "hangwatch's DaemonSets rolled to "+image, func() bool {
		for _, name := range []string{"hangwatch", "hangwatch-repair"} {
			pods := in.Pods(t, name)
			if len(pods) != 1 || !PodRunning(pods[0]) || pods[0].Spec.Containers[0].Image != image {
				return false
			}
		}
		return true
	}, harness.Explaining(func() string { return in.CP.KubectlLog("get", "pods", "-n", "kube-system", "-o", "wide") }))
}

// AgentMetric is one series of A's agent's /metrics; -1 when absent.
func (in *Installs) AgentMetric(series string) float64 {
	text := in.agentMetrics()
	if text == "" {
		return -1
	}
	return harness.MetricValue(text, series)
}

// CondSeen is a status of a condition as seen, and when.
type CondSeen struct {
	Status corev1.ConditionStatus
	Reason string
	// Transition is the condition's lastTransitionTime (the writer's).
	Transition time.Time
	At         time.Time
}

// ConditionWatch records every change of one of A's conditions (its
// status, reason or transition time).
type ConditionWatch struct {
	mu     sync.Mutex
	seen   []CondSeen
	cancel context.CancelFunc
	done   chan struct{}
}

// WatchCondition starts recording A's condType every 100 ms.
func (in *Installs) WatchCondition(t *testing.T, condType string) *ConditionWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &ConditionWatch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if c := hangwatch.NodeCondition(ctx, in.CP, in.A, condType); c != nil {
				w.add(CondSeen{Status: c.Status, Reason: c.Reason, Transition: c.LastTransitionTime.Time, At: time.Now()})
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *ConditionWatch) add(s CondSeen) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.seen); n == 0 || w.seen[n-1].Status != s.Status || w.seen[n-1].Reason != s.Reason || !w.seen[n-1].Transition.Equal(s.Transition) {
		w.seen = append(w.seen, s)
	}
}

// Stop ends the watch and returns every change seen.
func (w *ConditionWatch) Stop() []CondSeen {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}
