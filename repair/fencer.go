package repair

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
)

// Defaults of the fence.
const (
	DefaultFenceKillTimeout = 20 * time.Second
	DefaultKubeletRootDir   = "/var/lib/kubelet"
	DefaultCgroupRoot       = "/sys/fs/cgroup"
	// fenceMinSilence: the runtime must have given no answer at all for
	// this long when the fence acts, whatever the condition says.
	fenceMinSilence = 10 * time.Second
	// ReasonFenceDryRun is the Event of a fence the node's dry run did not make.
	ReasonFenceDryRun = "FenceDryRun"
	// fenceOrderEvery paces the fence's reads of the Node's request.
	fenceOrderEvery = 2 * time.Second
)

// FenceSettings turn the fence on; the zero value fences nothing.
type FenceSettings struct {
	Enabled bool
	DryRun  bool
	// KillTimeout bounds the wait for each pod's cgroup to empty.
	KillTimeout    time.Duration
	KubeletRootDir string
	CgroupRoot     string
}

// FenceLink is the agent's side of the fence: it reads the request and the
// node's pods, and deletes and attests what the fence reports.
type FenceLink interface {
	FenceOrder(ctx context.Context) (FenceOrder, error)
	FenceReport(ctx context.Context, r FenceReport) error
}

// Host is what the fence does to the node: find, check and kill pod
// cgroups, unmount pod volumes and look for them in every mount namespace.
type Host interface {
	PodCgroups(uids []string) (map[string][]string, error)
	// Check refuses, doing nothing, a cgroup with a task in D state.
	Check(dir string) error
	Kill(ctx context.Context, dir string) ([]int, error)
	// ReleaseCSI has the CSI node plugins unpublish (and unstage) the
	// pod's CSI volumes; it returns the staging paths unstaged.
	ReleaseCSI(ctx context.Context, uid string) ([]string, error)
	UnmountPod(uid string) ([]string, error)
	HeldElsewhere(uid string) ([]string, error)
	HeldUnder(paths []string) ([]string, error)
}

// FencerOptions wire a Fencer.
type FencerOptions struct {
	Settings FenceSettings
	Clock    clock.PassiveClock
	Verdicts func() []Verdict
	// Silence is the runtime's, on the agent's clock.
	Silence Silence
	// GivenUp tells whether repair has done what it can for the runtime.
	GivenUp func() (bool, string)
	Link    FenceLink
	Notify  Notifier
	// BootID reads this boot's ID; nil: /proc/sys/kernel/random/boot_id.
	BootID func() (string, error)
	// Host acts on the node; nil: HostFor(Settings) at each fence.
	Host Host
}

// Fencer carries out the Node's fence requests, each once.
type Fencer struct {
	o        FencerOptions
	mu       sync.Mutex
	settings FenceSettings
	askedAt  time.Time
	answered map[string]bool
	pending  *FenceReport // made, not yet taken by the agent
	broken   bool
}

// NewFencer returns a Fencer; nothing happens until Step.
func NewFencer(o FencerOptions) *Fencer {
	if o.BootID == nil {
		o.BootID = readBootID
	}
	return &Fencer{o: o, settings: o.Settings, answered: map[string]bool{}}
}

// Update applies reloaded settings.
func (f *Fencer) Update(s FenceSettings) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.settings = s
}

// Step asks for a request while the runtime has hung as a whole and repair
// has given up on it, and carries a new one out.
func (f *Fencer) Step(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending != nil {
		f.report(ctx)
		return
	}
	vs := f.o.Verdicts()
	if !f.settings.Enabled || !f.hung(vs) || f.o.Clock.Since(f.askedAt) < fenceOrderEvery {
		return
	}
	if up, _ := f.o.GivenUp(); !up {
		return
	}
	f.askedAt = f.o.Clock.Now()
	order, err := f.o.Link.FenceOrder(ctx)
	if err != nil {
		if !f.broken {
			klog.ErrorS(err, "The fence cannot read the Node's request")
		}
		f.broken = true
		return
	}
	f.broken = false
	if order.Request == nil {
		clear(f.answered) // request ids are never used again
		return
	}
	if f.answered[order.Request.ID] {
		return
	}
	f.answered[order.Request.ID] = true
	rep, acted := f.fence(ctx, order, vs)
	if acted {
		f.pending = &rep
		f.report(ctx)
	}
}

// hung: RuntimeHung is True for a call of the whole runtime, and the
// runtime has given no answer at all for fenceMinSilence.
func (f *Fencer) hung(vs []Verdict) bool {
	v, sick := unwell(TargetRuntime, vs)
	_, silent := f.o.Silence()
	return sick && wholeRuntimeReason(v.Reason) && silent >= fenceMinSilence
}

func wholeRuntimeReason(reason string) bool {
	return reason == "RuntimeNotResponding" || slices.ContainsFunc(WholeRuntimeCalls, func(m string) bool { return reason == m+"Hung" })
}

// report hands the pending report to the agent, again each step until it
// takes it.
func (f *Fencer) report(ctx context.Context) {
	if err := f.o.Link.FenceReport(ctx, *f.pending); err != nil {
		klog.ErrorS(err, "The agent did not take the fence's report; it is sent again", "request", f.pending.RequestID)
		return
	}
	klog.InfoS("Fence reported", "request", f.pending.RequestID, "fenced", f.pending.Fenced, "why", f.pending.Why, "pods", len(f.pending.Pods))
	f.pending = nil
}

// fence checks the request on this node and carries it out: the report,
// and whether there is one to send (a dry run sends none).
func (f *Fencer) fence(ctx context.Context, order FenceOrder, vs []Verdict) (FenceReport, bool) {
	req := order.Request
	boot, err := f.o.BootID()
	rep := FenceReport{RequestID: req.ID, BootID: boot}
	impossible := func(why string) (FenceReport, bool) {
		rep.Why = why
		klog.InfoS("Fence impossible", "request", req.ID, "why", why)
		return rep, true
	}
	switch {
	case err != nil:
		return impossible("this boot's ID cannot be read: " + err.Error())
	case req.BootID != boot || order.NodeBootID != boot:
		return impossible(fmt.Sprintf("the request is for boot %s and the Node reports boot %s; this is boot %s", req.BootID, order.NodeBootID, boot))
	case req.SeenFor > req.ValidFor:
		return impossible(fmt.Sprintf("the request was first seen %v ago, past its %v", req.SeenFor.Round(time.Second), req.ValidFor))
	case deadlocked(vs):
		return impossible("KernelDeadlock is True: a process blocked in the kernel cannot be killed")
	}
	host := f.o.Host
	if host == nil {
		if host, err = HostFor(f.settings); err != nil {
			return impossible("no cgroup control: " + err.Error())
		}
	}
	pods, groups, why := choosePods(host, order.Pods)
	if why != "" {
		return impossible(why)
	}
	if f.settings.DryRun {
		f.o.Notify.Normal(ReasonFenceDryRun, fmt.Sprintf("hangwatch dry run: would stop %d pods (%s) for fence %s", len(pods), podNames(pods), req.ID))
		return rep, false
	}
	if why := f.stop(ctx, host, pods, groups); why != "" {
		return impossible(why)
	}
	rep.Fenced, rep.Pods = true, pods
	return rep, true
}

// choosePods picks the pods to fence and finds their cgroups, checking
// every one before anything is killed.
func choosePods(host Host, all []FencePod) ([]FencePod, map[string][]string, string) {
	var pods []FencePod
	var uids []string
	for _, p := range all {
		if p.Static || p.Owner == "DaemonSet" || p.StaysOutOfService {
			continue // the node's own plumbing stays
		}
		pods, uids = append(pods, p), append(uids, p.UID)
	}
	groups, err := host.PodCgroups(uids)
	if err != nil {
		return nil, nil, "no cgroup control: " + err.Error()
	}
	for _, p := range pods {
		if len(groups[p.UID]) == 0 && p.Running {
			return nil, nil, fmt.Sprintf("pod %s/%s runs but its cgroup is not found (repair.cgroupRoot?)", p.Namespace, p.Name)
		}
		for _, dir := range groups[p.UID] {
			if err := host.Check(dir); err != nil {
				return nil, nil, fmt.Sprintf("pod %s/%s: %v", p.Namespace, p.Name, err)
			}
		}
	}
	return pods, groups, ""
}

// stop kills each pod's cgroups, unmounts its volumes and checks that no
// mount namespace holds them; "" when all is done, else why not.
func (f *Fencer) stop(ctx context.Context, host Host, pods []FencePod, groups map[string][]string) string {
	for _, p := range pods {
		for _, dir := range groups[p.UID] {
			kctx, cancel := context.WithTimeout(ctx, f.settings.KillTimeout)
			killed, err := host.Kill(kctx, dir)
			cancel()
			if err != nil {
				return fmt.Sprintf("pod %s/%s: %v", p.Namespace, p.Name, err)
			}
			klog.InfoS("Fence stopped a pod's processes", "pod", klog.KRef(p.Namespace, p.Name), "cgroup", dir, "pids", killed)
		}
	}
	for _, p := range pods {
		if why := release(ctx, host, p); why != "" {
			return fmt.Sprintf("pod %s/%s: %s", p.Namespace, p.Name, why)
		}
	}
	return ""
}

// release has the CSI node plugins unpublish and unstage the pod's
// volumes, unmounts what is left, and checks that no mount namespace
// holds any of them; "" when done, else why not.
func release(ctx context.Context, host Host, p FencePod) string {
	unstaged, err := host.ReleaseCSI(ctx, p.UID)
	if err != nil {
		return err.Error()
	}
	unmounted, err := host.UnmountPod(p.UID)
	if err != nil {
		return err.Error()
	}
	held, err := host.HeldElsewhere(p.UID)
	if err == nil {
		var more []string
		more, err = host.HeldUnder(unstaged)
		held = append(held, more...)
	}
	if err != nil || len(held) > 0 {
		return fmt.Sprintf("its volumes are still mounted (%s) %v", strings.Join(held, "; "), err)
	}
	klog.InfoS("Fence released a pod's volumes", "pod", klog.KRef(p.Namespace, p.Name), "unstaged", unstaged, "unmounted", unmounted)
	return ""
}

func podNames(pods []FencePod) string {
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
