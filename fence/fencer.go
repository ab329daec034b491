package fence

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/nodelink"
)

// Defaults of the fence.
const (
	DefaultKillTimeout    = 20 * time.Second
	DefaultKubeletRootDir = "/var/lib/kubelet"
	DefaultCgroupRoot     = "/sys/fs/cgroup"
	// fenceMinSilence: every call the pod lifecycle needs must have given
	// no answer at all for this long when the fence acts, whatever the
	// condition says.
	fenceMinSilence = 10 * time.Second
	// fenceOrderEvery paces the fence's reads of the Node's request.
	fenceOrderEvery = 2 * time.Second
	// fenceSkewAllowance: a request past its deadline by more than this on
	// the node's clock is refused (the deadline is remedy's; the clocks of
	// two machines may differ by this much).
	fenceSkewAllowance = 30 * time.Second
	// fenceStepTimeout bounds each of the fence's own exchanges with the
	// agent (the maintenance read) before the kill.
	fenceStepTimeout = 5 * time.Second
	// fenceReportGiveUp: a report the agent has not taken in this long
	// (it restarted and no longer knows the request, or the request is
	// gone) is dropped, so that the next request is heard.
	fenceReportGiveUp = 2 * time.Minute
)

// FenceSettings turn the fence on; the zero value fences nothing.
type Settings struct {
	Enabled bool
	DryRun  bool
	// KillTimeout bounds the wait for each pod's cgroup to empty, and
	// each volume's release.
	KillTimeout    time.Duration
	KubeletRootDir string
	CgroupRoot     string
}

// FenceLink is the agent's side of the fence: it reads the request and the
// node's pods, deletes the pods the fence killed, and attests its report.
type Link interface {
	FenceOrder(ctx context.Context) (nodelink.FenceOrder, error)
	FenceDelete(ctx context.Context, d nodelink.FenceDeletion) (nodelink.FenceDeleted, error)
	FenceReport(ctx context.Context, r nodelink.FenceReport) error
}

// Host is what the fence does to the node: find, check and kill pod
// cgroups, unmount pod volumes and look for them in every mount namespace.
type Host interface {
	PodCgroups(uids []string) (map[string][]string, error)
	// Check refuses, doing nothing, a cgroup with a task in D state.
	Check(dir string) error
	Kill(ctx context.Context, dir string) ([]int, error)
	// RecordPodVolumes records, before the kill, every mount of the pod's
	// volumes: the devices and network sources the release must free.
	RecordPodVolumes(uid string) (VolumeRecord, error)
	// ReleaseCSI has the CSI node plugins unpublish (and unstage) the
	// pod's CSI volumes, each call within its deadline; it returns the
	// staging paths unstaged.
	ReleaseCSI(ctx context.Context, uid string) ([]string, error)
	// UnmountPod unmounts what is left of the pod's volumes, each within
	// ctx.
	UnmountPod(ctx context.Context, uid string) ([]string, error)
	// HeldAnywhere lists every mount, in any mount namespace of the node,
	// of a device or source rec recorded, wherever it is mounted.
	HeldAnywhere(ctx context.Context, rec VolumeRecord) ([]string, error)
}

// FencerOptions wire a Fencer.
type FencerOptions struct {
	Settings   Settings
	Clock      clock.PassiveClock
	Conditions func() []nodelink.Condition
	// Silence is how long every call of LifecycleCalls has gone without
	// an answer, on the agent's clock.
	Silence nodelink.Silence
	// Probe asks the runtime itself whether it answers, before the kill
	// and after it; nil: it is taken as silent (tests only).
	Probe RuntimeProbe
	// Maintenance reads the Node's maintenance condition right before the
	// kill; nil: none.
	Maintenance func(ctx context.Context) (string, error)
	// GivenUp tells whether repair has done what it can for the runtime.
	GivenUp func() (bool, string)
	// Restarted tells whether repair restarted the runtime in this spell:
	// then a socket nothing listens on again (RuntimeUnreachable) is a
	// hang no restart cured. nil: never.
	Restarted func() bool
	Link      Link
	Notify    nodelink.Notifier
	// BootID reads this boot's ID; nil: /proc/sys/kernel/random/boot_id.
	BootID func() (string, error)
	// Host acts on the node; nil: HostFor(Settings) at each fence.
	Host Host
}

// Fencer carries out the Node's fence requests, each once.
type Fencer struct {
	o        FencerOptions
	mu       sync.Mutex
	settings Settings
	askedAt  time.Time
	answered map[string]bool
	// firstSeen is when this process first saw each request, on its own
	// clock: the agent's count starts again when the agent restarts.
	firstSeen map[string]time.Time
	pending   *nodelink.FenceReport // made, not yet taken by the agent
	pendingAt time.Time
	broken    bool
}

// NewFencer returns a Fencer; nothing happens until Step.
func NewFencer(o FencerOptions) *Fencer {
	if o.BootID == nil {
		o.BootID = readBootID
	}
	return &Fencer{o: o, settings: o.Settings, answered: map[string]bool{}, firstSeen: map[string]time.Time{}}
}

// Update applies reloaded settings.
func (f *Fencer) Update(s Settings) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.settings = s
}

// Step asks for a request while the runtime's pod lifecycle is silent and
// repair has given up on it, and carries a new one out.
func (f *Fencer) Step(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending != nil {
		f.report(ctx)
		return
	}
	vs := f.o.Conditions()
	if !f.settings.Enabled || !f.hung(vs) || f.o.Clock.Since(f.askedAt) < fenceOrderEvery {
		return
	}
	if up, _ := f.o.GivenUp(); !up {
		return
	}
	f.askedAt = f.o.Clock.Now()
	order, ok := f.readOrder(ctx)
	if !ok || f.answered[order.Request.ID] {
		return
	}
	f.answered[order.Request.ID] = true
	rep, acted := f.fence(ctx, order, vs)
	if acted {
		f.pending, f.pendingAt = &rep, f.o.Clock.Now()
		f.report(ctx)
	}
}

// readOrder reads the request; ok false when there is none to consider.
func (f *Fencer) readOrder(ctx context.Context) (nodelink.FenceOrder, bool) {
	order, err := f.o.Link.FenceOrder(ctx)
	if err != nil {
		if !f.broken {
			klog.ErrorS(err, "The fence cannot read the Node's request")
		}
		f.broken = true
		return order, false
	}
	f.broken = false
	if order.Request == nil {
		clear(f.answered) // request ids are never used again
		clear(f.firstSeen)
		return order, false
	}
	if _, ok := f.firstSeen[order.Request.ID]; !ok {
		f.firstSeen = map[string]time.Time{order.Request.ID: f.o.Clock.Now()}
	}
	return order, true
}

// hung: RuntimeHung is True for a call of the whole runtime, and every
// call the pod lifecycle needs has given no answer at all for
// fenceMinSilence (the reason names the first call of a cycle past its
// timeout, which in a freeze may be any of them: the silence is what
// tells ImageFsInfo held alone, or a slow list, from a stuck lifecycle).
func (f *Fencer) hung(vs []nodelink.Condition) bool {
	if v, sick := nodelink.RuntimeHung(vs); sick {
		_, silent := f.o.Silence()
		return wholeRuntimeReason(v.Reason) && silent >= fenceMinSilence
	}
	// nothing listens (each call refused at once, an answer to the agent's
	// silence): only a runtime repair restarted in this spell that did not
	// come back, never one an operator stopped
	return nodelink.RuntimeUnreachable(vs) && f.o.Restarted != nil && f.o.Restarted()
}

func wholeRuntimeReason(reason string) bool {
	return reason == "RuntimeNotResponding" || slices.ContainsFunc(nodelink.WholeRuntimeCalls, func(m string) bool { return reason == m+"Hung" })
}

// report hands the pending report to the agent, again each step until it
// takes it.
func (f *Fencer) report(ctx context.Context) {
	if err := f.o.Link.FenceReport(ctx, *f.pending); err != nil {
		if f.o.Clock.Since(f.pendingAt) >= fenceReportGiveUp {
			klog.ErrorS(err, "The agent did not take the fence's report in time; it is dropped (the request times out unanswered)", "request", f.pending.RequestID)
			f.pending = nil
			return
		}
		klog.ErrorS(err, "The agent did not take the fence's report; it is sent again", "request", f.pending.RequestID)
		return
	}
	klog.InfoS("Fence reported", "request", f.pending.RequestID, "fenced", f.pending.Fenced, "why", f.pending.Why, "pods", len(f.pending.Pods))
	f.pending = nil
}

func podNames(pods []nodelink.FencePod) string {
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Namespace + "/" + p.Name
	}
	return strings.Join(names, ", ")
}

func readBootID() (string, error) {
	raw, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("read boot ID: %w", err)
	}
	return strings.TrimSpace(string(raw)), nil
}
