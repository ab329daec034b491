package podstarts

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/observations"
)

// Tracker keeps the pods the kubelet reports and times, on hangwatch's
// own clock, how long each has waited for its sandbox and since when no
// sandbox has started. It is safe for concurrent use: the stream applies
// events while Run observes.
type Tracker struct {
	clock clock.PassiveClock
	// asked tells whether the kubelet has asked the runtime for the pod's
	// sandbox (its log directory exists).
	asked func(namespace, name, uid string) bool

	mu   sync.Mutex
	pods map[string]podState // by UID, as of the last complete sync
	// next collects a new stream's first listing until it is complete.
	next    map[string]podState
	synced  bool
	waiting map[string]time.Time // by UID: first seen waiting for its sandbox
	// lastStart is when a sandbox last became ready, or the first sync.
	lastStart time.Time
}

// NewTracker returns a tracker that asks asked whether the kubelet has
// gone as far as the pod's sandbox.
func NewTracker(clk clock.PassiveClock, asked func(namespace, name, uid string) bool) *Tracker {
	return &Tracker{clock: clk, asked: asked, pods: map[string]podState{}, waiting: map[string]time.Time{}}
}

// Resync starts a new stream's listing: until Synced, Observe says
// nothing new, and the pods listed replace the ones known.
func (t *Tracker) Resync() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next, t.synced = map[string]podState{}, false
}

// Lost says the stream broke: nothing is judged until the next sync.
func (t *Tracker) Lost() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next, t.synced = nil, false
}

// Synced ends a listing: the pods it listed are the node's.
func (t *Tracker) Synced() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.next == nil {
		return
	}
	for uid, p := range t.next {
		t.noteStart(t.pods[uid], p)
	}
	t.pods, t.next, t.synced = t.next, nil, true
	if t.lastStart.IsZero() {
		t.lastStart = t.clock.Now()
	}
}

// Update records a pod added or changed.
func (t *Tracker) Update(p *corev1.Pod) {
	s := stateOf(p)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.next != nil {
		t.next[s.uid] = s
		return
	}
	t.noteStart(t.pods[s.uid], s)
	t.pods[s.uid] = s
}

// Delete forgets a pod.
func (t *Tracker) Delete(uid string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.next != nil {
		delete(t.next, uid)
		return
	}
	delete(t.pods, uid)
}

// noteStart records a sandbox start when a pod goes from not ready to
// start containers to ready. t.mu is held.
func (t *Tracker) noteStart(before, after podState) {
	if before.notReadyToStart() && after.readyToStart != nil && *after.readyToStart {
		t.lastStart = t.clock.Now()
	}
}

// Observe is the `podStarts` input now, and false until a first sync,
// or while the stream is down.
func (t *Tracker) Observe() (observations.PodStarts, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.synced {
		return observations.PodStarts{}, false
	}
	now := t.clock.Now()
	obs := observations.PodStarts{SinceSandboxStartedSeconds: now.Sub(t.lastStart).Seconds()}
	var oldest time.Time
	for uid, p := range t.pods {
		if !p.notReadyToStart() || !t.asked(p.namespace, p.name, p.uid) {
			delete(t.waiting, uid)
			continue
		}
		since, ok := t.waiting[uid]
		if !ok {
			since, t.waiting[uid] = now, now
		}
		obs.Waiting++
		if oldest.IsZero() || since.Before(oldest) || since.Equal(oldest) && p.key < obs.OldestPod {
			oldest, obs.OldestPod, obs.OldestRuntimeClass = since, p.key, p.runtimeClass
		}
	}
	for uid := range t.waiting {
		if _, ok := t.pods[uid]; !ok {
			delete(t.waiting, uid)
		}
	}
	if obs.Waiting > 0 {
		obs.OldestWaitingSeconds = now.Sub(oldest).Seconds()
	}
	return obs, true
}
