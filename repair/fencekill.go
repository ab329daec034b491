package repair

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/klog/v2"
)

// stop kills each pod's cgroups, has every pod it killed deleted, then
// releases their volumes; "" when all is done, else why not. The order is
// the fence's promise: a pod it killed is deleted in the API before any of
// its volumes is released, whatever fails after the kill, so that the
// kubelet, when the runtime answers again, tears it down instead of
// starting its containers on a directory the fence unmounted. A pod it
// could not kill is neither deleted nor released: its volumes stay
// mounted where its processes may still use them.
func (r *fenceRun) stop(ctx context.Context, pods []FencePod, groups map[string][]string) string {
	killed, why := r.kill(ctx, pods, groups)
	thaw := r.probe(ctx)
	if len(killed) > 0 {
		if failed := r.delete(ctx, killed); failed != "" {
			return join(why, "the killed pods could not all be deleted, so no volume is released: "+failed)
		}
		r.rep.Pods = killed
	}
	switch {
	case why != "":
		return why + "; the pods killed before were deleted and their volumes left mounted"
	case thaw != "":
		return "the runtime answered after the kill (" + thaw + "): the killed pods were deleted, their volumes left to the kubelet"
	}
	for _, p := range pods {
		if why := r.release(ctx, p); why != "" {
			return fmt.Sprintf("pod %s/%s: %s", p.Namespace, p.Name, why)
		}
	}
	return ""
}

// kill empties each pod's cgroups, each within KillTimeout; it stops at
// the first pod it cannot kill and returns the pods killed whole.
func (r *fenceRun) kill(ctx context.Context, pods []FencePod, groups map[string][]string) ([]FencePod, string) {
	var killed []FencePod
	for _, p := range pods {
		for _, dir := range groups[p.UID] {
			kctx, cancel := context.WithTimeout(ctx, r.f.settings.KillTimeout)
			pids, err := r.host.Kill(kctx, dir)
			cancel()
			if err != nil {
				return killed, fmt.Sprintf("pod %s/%s: %v", p.Namespace, p.Name, err)
			}
			klog.InfoS("Fence stopped a pod's processes", "pod", klog.KRef(p.Namespace, p.Name), "cgroup", dir, "pids", pids)
		}
		killed = append(killed, p)
	}
	return killed, ""
}

// delete has the agent delete the killed pods; "" when every one is gone
// from the API.
func (r *fenceRun) delete(ctx context.Context, killed []FencePod) string {
	dctx, cancel := context.WithTimeout(ctx, fenceReportTimeout)
	defer cancel()
	ans, err := r.f.o.Link.FenceDelete(dctx, FenceDeletion{RequestID: r.req.ID, Pods: killed})
	switch {
	case err != nil:
		return err.Error()
	case ans.Failed != "":
		return ans.Failed
	}
	klog.InfoS("Fence had the killed pods deleted", "request", r.req.ID, "pods", podNames(killed))
	return ""
}

// release has the CSI node plugins unpublish and unstage the pod's
// volumes, unmounts what is left, and checks that no mount namespace
// holds any of them; "" when done, else why not.
func (r *fenceRun) release(ctx context.Context, p FencePod) string {
	rctx, cancel := context.WithTimeout(ctx, r.f.settings.KillTimeout)
	defer cancel()
	unstaged, err := r.host.ReleaseCSI(rctx, p.UID)
	if err != nil {
		return err.Error()
	}
	unmounted, err := r.host.UnmountPod(p.UID)
	if err != nil {
		return err.Error()
	}
	held, err := r.host.HeldElsewhere(p.UID)
	if err == nil {
		var more []string
		more, err = r.host.HeldUnder(unstaged)
		held = append(held, more...)
	}
	if err != nil || len(held) > 0 {
		return fmt.Sprintf("its volumes are still mounted (%s) %v", strings.Join(held, "; "), err)
	}
	klog.InfoS("Fence released a pod's volumes", "pod", klog.KRef(p.Namespace, p.Name), "unstaged", unstaged, "unmounted", unmounted)
	return ""
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
