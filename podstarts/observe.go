package podstarts

import (
	"context"
	"time"

	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/observations"
)

// candidate is a pod the kubelet has gone as far as the runtime for, and
// that it does not report started.
type candidate struct {
	pod     podState
	sandbox bool // the kubelet reports its sandbox not ready
	// containers are those on their first start whose log directory the
	// kubelet has made.
	containers []string
}

// Observe is the `podStarts` input now, and false until a first sync,
// or while the stream is down. It asks the runtime (ctx bounds the two
// lists) only while a pod waits: a quiet node costs nothing.
func (t *Tracker) Observe(ctx context.Context) (observations.PodStarts, bool) {
	pods, ok := t.snapshot()
	if !ok {
		return observations.PodStarts{}, false
	}
	cands := t.candidates(pods)
	var view *runtimeView
	if len(cands) > 0 && t.runtime != nil {
		v, err := listRuntime(ctx, t.runtime, t.tasks)
		if err != nil {
			klog.V(2).InfoS("Cannot tell which step waiting pods are at; the kubelet's report alone counts", "err", err)
		}
		view = v
	}
	return t.judge(cands, view), true
}

func (t *Tracker) snapshot() ([]podState, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.synced {
		return nil, false
	}
	pods := make([]podState, 0, len(t.pods))
	for _, p := range t.pods {
		pods = append(pods, p)
	}
	return pods, true
}

// candidates are the pods that may wait on the runtime: their log
// directory says the kubelet has asked for their sandbox.
func (t *Tracker) candidates(pods []podState) []candidate {
	return candidatesOf(pods, t.asked)
}

func candidatesOf(pods []podState, asked func(namespace, name, uid, container string) bool) []candidate {
	var out []candidate
	for _, p := range pods {
		if !p.active || !asked(p.namespace, p.name, p.uid, "") {
			continue
		}
		c := candidate{pod: p, sandbox: p.notReadyToStart()}
		for _, cs := range p.containers {
			if cs.firstStart && asked(p.namespace, p.name, p.uid, cs.name) {
				c.containers = append(c.containers, cs.name)
			}
		}
		if c.sandbox || len(c.containers) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// judge times the candidates' waits: a sandbox the runtime does not have
// ready (or, without the runtime's word, that the kubelet reports not
// ready), and a container in a ready sandbox that the runtime has not
// started. Without the runtime's word, a container already waiting keeps
// its wait and step.
func (t *Tracker) judge(cands []candidate, view *runtimeView) observations.PodStarts {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	waits := map[string]wait{}
	var sandboxes, containers oldest
	for _, c := range cands {
		ready := view.ready(c.pod.uid)
		switch {
		case c.sandbox && !ready:
			step := view.sandboxStep(c.pod)
			sandboxes.add(c.pod.key, c.pod.runtimeClass, step, t.keep(waits, c.pod.uid, step, now))
		case ready:
			if _, was := t.waiting[c.pod.uid]; was {
				t.lastStart = now
			}
		}
		for _, name := range c.containers {
			key := c.pod.uid + "/" + name
			step, known := view.containerStep(c.pod.uid, name)
			if w, was := t.waiting[key]; was && !known {
				step = w.step
			}
			if step == "" {
				if _, was := t.waiting[key]; was && known {
					t.lastContainerStart = now
				}
				continue
			}
			containers.add(c.pod.key+"/"+name, c.pod.runtimeClass, step, t.keep(waits, key, step, now))
		}
	}
	t.waiting = waits
	return observations.PodStarts{
		Waiting: sandboxes.n, OldestWaitingSeconds: sandboxes.seconds(now), OldestPod: sandboxes.key, OldestRuntimeClass: sandboxes.class,
		OldestSandboxStep:          sandboxes.step,
		SinceSandboxStartedSeconds: now.Sub(t.lastStart).Seconds(),
		ContainersWaiting:          containers.n, OldestContainerWaitingSeconds: containers.seconds(now), OldestContainer: containers.key,
		OldestContainerStep: containers.step, OldestContainerRuntimeClass: containers.class,
		SinceContainerStartedSeconds: now.Sub(t.lastContainerStart).Seconds(),
	}
}

// keep carries a wait on into waits (a new one from now; a step changed
// keeps its time) and says since when it waits.
func (t *Tracker) keep(waits map[string]wait, key, step string, now time.Time) time.Time {
	w, ok := t.waiting[key]
	if !ok {
		w.since = now
	}
	w.step = step
	waits[key] = w
	return w.since
}

// oldest finds the longest wait among some; ties go to the first key.
type oldest struct {
	n                int
	since            time.Time
	key, class, step string
}

func (o *oldest) add(key, class, step string, since time.Time) {
	o.n++
	if o.n == 1 || since.Before(o.since) || since.Equal(o.since) && key < o.key {
		o.since, o.key, o.class, o.step = since, key, class, step
	}
}

func (o *oldest) seconds(now time.Time) float64 {
	if o.n == 0 {
		return 0
	}
	return now.Sub(o.since).Seconds()
}

// Quiet tells whether the kubelet's pods are known, none waits on the
// runtime, and no sandbox has started for period: the write path's probe
// may run without getting in a real pod's way, and has something to see.
func (t *Tracker) Quiet(period time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.synced && len(t.waiting) == 0 && t.clock.Since(t.lastStart) >= period
}
