package fence

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/nodelink"
)

// fenceRun is one fence being carried out: the request, the host and what
// has been done so far, for the report.
type fenceRun struct {
	f     *Fencer
	req   *nodelink.FenceRequestNote
	host  Host
	rep   nodelink.FenceReport
	vs    []nodelink.Condition
	order nodelink.FenceOrder
}

// fence checks the request on this node and carries it out: the report,
// and whether there is one to send (a dry run sends none).
func (f *Fencer) fence(ctx context.Context, order nodelink.FenceOrder, vs []nodelink.Condition) (nodelink.FenceReport, bool) {
	boot, err := f.o.BootID()
	run := &fenceRun{f: f, req: order.Request, rep: nodelink.FenceReport{RequestID: order.Request.ID, BootID: boot}, vs: vs, order: order}
	if err != nil {
		return run.impossible("this boot's ID cannot be read: " + err.Error())
	}
	if why := run.refusal(ctx, boot); why != "" {
		return run.impossible(why)
	}
	if run.host = f.o.Host; run.host == nil {
		if run.host, err = HostFor(f.settings); err != nil {
			return run.impossible("no cgroup control: " + err.Error())
		}
	}
	pods, groups, why := choosePods(run.host, order.Pods)
	if why != "" {
		return run.impossible(why)
	}
	if f.settings.DryRun {
		f.o.Notify.Normal(nodelink.ReasonFenceDryRun, fmt.Sprintf("hangwatch dry run: would stop %d pods (%s) for fence %s", len(pods), podNames(pods), run.req.ID))
		return run.rep, false
	}
	if why := run.lastLook(ctx); why != "" {
		return run.impossible(why)
	}
	if why := run.stop(ctx, pods, groups); why != "" {
		return run.impossible(why)
	}
	run.rep.Fenced = true
	return run.rep, true
}

func (r *fenceRun) impossible(why string) (nodelink.FenceReport, bool) {
	r.rep.Fenced, r.rep.Why = false, nodelink.ShortWhy(why) // the whole of it in the log
	klog.InfoS("Fence impossible", "request", r.req.ID, "why", why, "podsKilledAndDeleted", len(r.rep.Pods))
	return r.rep, true
}

// refusal is what, of the request and the node, the repair process checks
// for itself before anything is done; "" when nothing refuses.
func (r *fenceRun) refusal(_ context.Context, boot string) string {
	req, now := r.req, r.f.o.Clock.Now()
	seenFor := max(req.SeenFor, now.Sub(r.f.firstSeen[req.ID]))
	switch {
	case req.BootID != boot || r.order.NodeBootID != boot:
		return fmt.Sprintf("the request is for boot %s and the Node reports boot %s; this is boot %s", req.BootID, r.order.NodeBootID, boot)
	case !req.OptedIn:
		return "the Node does not carry the fence's opt-in label"
	case seenFor > req.ValidFor:
		return fmt.Sprintf("the request was first seen %v ago, past its %v", seenFor.Round(time.Second), req.ValidFor)
	case !req.Deadline.IsZero() && now.After(req.Deadline.Add(fenceSkewAllowance)):
		return fmt.Sprintf("the request's deadline %s has passed on this node's clock (allowing %v of skew)", req.Deadline.UTC().Format(time.RFC3339), fenceSkewAllowance)
	case nodelink.KernelDeadlocked(r.vs):
		return "KernelDeadlock is True: a process blocked in the kernel cannot be killed"
	}
	return ""
}

// lastLook is what is checked right before the kill: no administrator at
// work, and the runtime itself gives no answer on its socket.
func (r *fenceRun) lastLook(ctx context.Context) string {
	if m := r.f.o.Maintenance; m != nil {
		mctx, cancel := context.WithTimeout(ctx, fenceStepTimeout)
		cond, err := m(mctx)
		cancel()
		switch {
		case err != nil:
			return "the Node's maintenance conditions cannot be read right before the kill: " + err.Error()
		case cond != "":
			return "an administrator is at work on the node (" + cond + " is True)"
		}
	}
	if answered := r.probe(ctx); answered != "" {
		return "the runtime answers on its socket (" + answered + "): its pods' lifecycle is not stuck"
	}
	return ""
}

// probe is the repair process's own look at the runtime: "" when it gives
// no answer.
func (r *fenceRun) probe(ctx context.Context) string {
	if r.f.o.Probe == nil {
		return ""
	}
	return r.f.o.Probe(ctx)
}

// choosePods picks the pods to fence and finds their cgroups, checking
// every one before anything is killed. The node's own plumbing stays: a
// static pod (the repair process tells it by its UID, the kubelet's hash
// of its file, whatever the agent says) and a pod that tolerates the
// out-of-service taint for good. A DaemonSet's pod that does not is
// fenced like any other: the taint would force-delete it while it ran.
func choosePods(host Host, all []nodelink.FencePod) ([]nodelink.FencePod, map[string][]string, string) {
	var pods []nodelink.FencePod
	var uids []string
	for _, p := range all {
		if p.Static || staticUID(p.UID) || p.StaysOutOfService {
			continue
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

// staticUID tells a static pod by its UID: the kubelet gives a pod read
// from a file (or a URL) the hex MD5 of its content, node and source
// (pkg/kubelet/config/common.go, applyDefaults), 32 hex digits with no
// dash, where the API server gives every pod it creates a UUID with
// dashes.
func staticUID(uid string) bool {
	if len(uid) != 32 {
		return false
	}
	for _, c := range uid {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}
