package agent

import (
	"sync"

	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/kernellog"
)

// kernelEventLog keeps the most recent kernel events (the kernel rules' matches,
// and the match that raised a condition) for /events; older ones are
// dropped. Their kernel lines are logged here and served only on the
// authenticated port. Events on the Node are nodestatus.Events, whose
// messages name the rule, never the line.
type kernelEventLog struct {
	mu     sync.Mutex
	max    int
	events []kernellog.Event
}

func newKernelEventLog(max int) *kernelEventLog { return &kernelEventLog{max: max} }

func (l *kernelEventLog) add(e kernellog.Event) {
	klog.InfoS("Kernel event", "reason", e.Reason, "rule", e.Rule, "condition", e.Condition, "count", e.Count, "message", e.Message)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.events) == l.max {
		copy(l.events, l.events[1:])
		l.events = l.events[:l.max-1]
	}
	l.events = append(l.events, e)
}

func (l *kernelEventLog) snapshot() []kernellog.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]kernellog.Event{}, l.events...)
}
