package podstarts

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// Tracker keeps the pods the kubelet reports and times, on hangwatch's
// own clock, how long each has waited for its sandbox, and each
// container for its first create or start, and since when none has
// started. It is safe for concurrent use: the stream applies events while
// Run observes.
type Tracker struct {
	clock clock.PassiveClock
	// asked tells whether the kubelet has asked the runtime for the pod's
	// sandbox (container ""), or for the named container: its log
	// directory exists.
	asked func(namespace, name, uid, container string) bool
	// runtime, when set, is asked which step a waiting pod is at; nil:
	// the sandbox from the kubelet's report alone, no container step.
	runtime Runtime
	// tasks, when set, tells a pod's network setup from its sandbox
	// container (containerd's task directory).
	tasks TaskDir

	mu   sync.Mutex
	pods map[string]podState // by UID, as of the last complete sync
	// next collects a new stream's first listing until it is complete.
	next    map[string]podState
	synced  bool
	waiting map[string]wait // by UID (a sandbox) or UID/container
	// lastStart is when a sandbox last became ready, lastContainerStart
	// when a container last started, or the first sync.
	lastStart, lastContainerStart time.Time
}

// wait is one sandbox or container waiting, since when first seen.
type wait struct {
	since time.Time
	step  string // StepSandbox or StepNetwork, a container's StepCreate or StepStart
}

// NewTracker returns a tracker that asks asked whether the kubelet has
// gone as far as a pod's sandbox or container, and rt (nil: none) which
// step they wait on.
func NewTracker(clk clock.PassiveClock, asked func(namespace, name, uid, container string) bool, rt Runtime) *Tracker {
	return &Tracker{clock: clk, asked: asked, runtime: rt, pods: map[string]podState{}, waiting: map[string]wait{}}
}

// WithTasks has the tracker read containerd's task directory d to tell a
// pod waiting for its network from one waiting for its sandbox container.
func (t *Tracker) WithTasks(d TaskDir) *Tracker {
	t.tasks = d
	return t
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
		t.lastStart, t.lastContainerStart = t.clock.Now(), t.clock.Now()
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
// start containers to ready, and a container start when one goes
// running. t.mu is held.
func (t *Tracker) noteStart(before, after podState) {
	if before.notReadyToStart() && after.readyToStart != nil && *after.readyToStart {
		t.lastStart = t.clock.Now()
	}
	for _, c := range after.containers {
		if before.uid != "" && c.running && !before.running(c.name) {
			t.lastContainerStart = t.clock.Now()
		}
	}
}
