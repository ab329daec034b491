package main

import (
	"sync"

	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/kernellog"
)

// eventLog keeps the most recent events for /events; older ones are dropped.
type eventLog struct {
	mu     sync.Mutex
	max    int
	events []kernellog.Event
}

func newEventLog(max int) *eventLog { return &eventLog{max: max} }

func (l *eventLog) add(e kernellog.Event) {
	klog.InfoS("Kernel event", "reason", e.Reason, "rule", e.Rule, "count", e.Count, "message", e.Message)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.events) == l.max {
		copy(l.events, l.events[1:])
		l.events = l.events[:l.max-1]
	}
	l.events = append(l.events, e)
}

func (l *eventLog) snapshot() []kernellog.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]kernellog.Event{}, l.events...)
}
