package cluster

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hangwatch/hangwatch/internal/fencing"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
)

// Rung is a step of the recovery ladder and when it was first seen after
// the freeze.
type Rung struct {
	Name  string
	After time.Duration
}

// LadderRungs names the ladder's rungs in order: the condition on the
// Node, remedy's taint, the restart (A's containerd's main process
// replaced), repair giving up (its log), the fence's request, the node's
// attestation, remedy's out-of-service taint, and A's web-0 deleted.
var LadderRungs = []string{"runtime_hung", "taint", "restart", "given_up", "fence_requested", "attested", "out_of_service", "web0_deleted"}

// LadderWatch watches A's rungs from the freeze until Stop.
type LadderWatch struct {
	mu     sync.Mutex
	seen   map[string]time.Duration
	cancel context.CancelFunc
	done   chan struct{}
}

// WatchLadder starts watching the ladder of A, frozen at frozen, whose
// web-0 had UID web0.
func (in *Installs) WatchLadder(t interface{ Helper() }, frozen time.Time, web0 types.UID) *LadderWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &LadderWatch{seen: map[string]time.Duration{}, cancel: cancel, done: make(chan struct{})}
	pid0, _ := in.SD.MainPID(ctx, containerd.Unit)
	go func() {
		defer close(w.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			for name, ok := range in.rungsNow(ctx, pid0, web0) {
				if ok {
					w.mark(name, time.Since(frozen))
				}
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

func (w *LadderWatch) mark(name string, after time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.seen[name]; !ok {
		w.seen[name] = after
	}
}

// Stop stops the watch.
func (w *LadderWatch) Stop() { w.cancel(); <-w.done }

// Seen is every rung seen, in the ladder's order.
func (w *LadderWatch) Seen() []Rung {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Rung
	for _, name := range LadderRungs {
		if d, ok := w.seen[name]; ok {
			out = append(out, Rung{name, d})
		}
	}
	return out
}

// After is when rung was first seen after the freeze; an hour when not.
func (w *LadderWatch) After(rung string) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if d, ok := w.seen[rung]; ok {
		return d
	}
	return time.Hour
}

// Missing are the rungs not seen.
func (w *LadderWatch) Missing() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, name := range LadderRungs {
		if _, ok := w.seen[name]; !ok {
			out = append(out, name)
		}
	}
	return out
}

// rungsNow reads which rungs hold now.
func (in *Installs) rungsNow(ctx context.Context, pid0 int, web0 types.UID) map[string]bool {
	call, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out := map[string]bool{}
	if n, err := in.CP.Admin.CoreV1().Nodes().Get(call, in.A, metav1.GetOptions{}); err == nil {
		for _, c := range n.Status.Conditions {
			out["runtime_hung"] = out["runtime_hung"] || (c.Type == "RuntimeHung" && c.Status == corev1.ConditionTrue)
		}
		for _, tn := range n.Spec.Taints {
			out["taint"] = out["taint"] || tn.Key == "hangwatch.io/runtime-hung"
		}
		_, out["fence_requested"], _ = fencing.RequestOf(n)
		_, out["attested"], _ = fencing.AttestationOf(n)
		out["out_of_service"], _ = fencing.HasOutOfService(n)
	}
	if pid, err := in.SD.MainPID(call, containerd.Unit); err == nil {
		out["restart"] = pid != pid0
	}
	p, err := in.CP.Admin.CoreV1().Pods("default").Get(call, "web-0", metav1.GetOptions{})
	out["web0_deleted"] = (err == nil && p.UID != web0) || (err != nil && strings.Contains(err.Error(), "not found"))
	out["given_up"] = harness.MetricValue(in.agentMetrics(), `hangwatch_repair_given_up{target="runtime"}`) == 1
	return out
}

// agentMetrics is A's agent's /metrics: on the shipped secure port as the
// PodMonitor's ServiceAccount, or the binaries' plain port; "" when it
// does not answer.
func (in *Installs) agentMetrics() string {
	if in.daemon != nil {
		text, _ := in.daemon.Metrics()
		return text
	}
	_, body, err := harness.Get("https://127.0.0.1:9765/metrics", harness.Token(in.scrapeToken), harness.Client(harness.SecureClient))
	if err != nil {
		return ""
	}
	return body
}

// WaitMovedToB waits until the default namespace's web-0 runs on B and
// returns it; on a timeout it fails with the rungs seen and A's state.
func (in *Installs) WaitMovedToB(t *testing.T, limit time.Duration, w *LadderWatch) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	_, err := harness.Poll(context.Background(), limit, "web-0 Running on "+in.B, func() bool {
		got, err := in.CP.Admin.CoreV1().Pods("default").Get(context.Background(), "web-0", metav1.GetOptions{})
		p = got
		return err == nil && got.Spec.NodeName == in.B && PodRunning(*got)
	})
	if err != nil {
		explain := in.Explain(t)
		// the pods' logs of the hang: a containerd that starts again takes
		// up the containers' output where the wedged one left it
		in.UnwedgeRuntime(t)
		_, _ = harness.Poll(context.Background(), 15*time.Second, "the repair pod's log of the hang", func() bool {
			return strings.Contains(in.PodLogs(t), "Repair has given up")
		})
		t.Fatalf("%v\nrungs seen %v, missing %v\n%s\n%s", err, w.Seen(), w.Missing(), explain, in.PodLogs(t))
	}
	return p
}

// Explain is A's Node (taints, annotations, conditions), the Events, the
// agent's repair and fence metrics, and remedy's log, for a failure.
func (in *Installs) Explain(t *testing.T) string {
	var b strings.Builder
	b.WriteString(in.CP.KubectlLog("get", "node", in.A, "-o", "jsonpath={.spec.taints}{\"\\n\"}{.metadata.annotations}{\"\\n\"}{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{\"\\n\"}{end}"))
	b.WriteString(in.CP.KubectlLog("get", "events", "-A", "--sort-by=.lastTimestamp"))
	b.WriteString(in.CP.KubectlLog("get", "pods", "-A", "-o", "wide"))
	for _, line := range strings.Split(in.agentMetrics(), "\n") {
		if strings.HasPrefix(line, "hangwatch_repair") || strings.HasPrefix(line, "hangwatch_fence") {
			b.WriteString(line + "\n")
		}
	}
	if in.daemon != nil {
		b.WriteString(harness.FileTail("hangwatch", in.daemon.Log.Name(), 40))
	}
	logs, _ := filepath.Glob(filepath.Join(in.KB.Dir, "logs", "kube-system_hangwatch-remedy*", "*", "*.log"))
	for _, l := range logs {
		b.WriteString(harness.FileTail(l, l, 40))
	}
	return b.String()
}
