package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hangwatch/hangwatch/internal/fencing"
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
	pid0, _ := in.SD.MainPID(ctx, ContainerdUnit)
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
	if pid, err := in.SD.MainPID(call, ContainerdUnit); err == nil {
		out["restart"] = pid != pid0
	}
	p, err := in.CP.Admin.CoreV1().Pods("default").Get(call, "web-0", metav1.GetOptions{})
	out["web0_deleted"] = (err == nil && p.UID != web0) || (err != nil && strings.Contains(err.Error(), "not found"))
	out["given_up"] = in.logSays("Repair has given up")
	return out
}

// logSays tells whether the repair process's log (the repair pod's
// container log on A, or the binaries' log) holds text.
func (in *Installs) logSays(text string) bool {
	logs, _ := filepath.Glob(filepath.Join(in.K.Dir, "logs", "kube-system_hangwatch-repair-*", "repair", "*.log"))
	if in.daemon != nil {
		logs = append(logs, in.daemon.Log.Name())
	}
	for _, l := range logs {
		if raw, err := os.ReadFile(l); err == nil && strings.Contains(string(raw), text) {
			return true
		}
	}
	return false
}
