package conditions

import "sync"

// Latest is a Subscriber that keeps only the latest state of the
// conditions, for a consumer that reads it at its own pace (the Node's
// status writer, the HTTP view, repair's view). It never blocks the
// engine: Wake coalesces the news of any number of changes into one
// receive. The zero Latest holds no condition yet and is ready to use.
type Latest struct {
	mu    sync.Mutex
	conds []Condition
	once  sync.Once
	wake  chan struct{}
}

// Judged keeps j's conditions and, when any condition changed or the
// set itself did (a reload, a restore), wakes the reader.
func (l *Latest) Judged(j Judgement) {
	l.mu.Lock()
	l.conds = j.Conditions
	l.mu.Unlock()
	if len(j.Changes) > 0 || j.Cause == CauseReloaded || j.Cause == CauseRestored {
		select {
		case l.channel() <- struct{}{}:
		default:
		}
	}
}

// Conditions returns the latest conditions, sorted by type (empty, not
// nil, when there are none).
func (l *Latest) Conditions() []Condition {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append(make([]Condition, 0, len(l.conds)), l.conds...)
}

// Types returns the latest condition types, sorted.
func (l *Latest) Types() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.conds))
	for _, c := range l.conds {
		out = append(out, c.Type)
	}
	return out
}

// Wake receives after any condition changed since the last receive;
// several changes may come as one receive.
func (l *Latest) Wake() <-chan struct{} { return l.channel() }

func (l *Latest) channel() chan struct{} {
	l.once.Do(func() { l.wake = make(chan struct{}, 1) })
	return l.wake
}
