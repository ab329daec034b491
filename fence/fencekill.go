package fence

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/nodelink"
)

// stop records each pod's volume mounts, kills each pod's cgroups, has
// every pod it killed deleted, then releases their volumes; "" when all is
// done, else why not. The order is the fence's promise: a pod it killed is
// deleted in the API before any of its volumes is released, whatever
// fails after the kill, so that the kubelet, when the runtime answers
// again, tears it down instead of starting its containers on a directory
// the fence unmounted. A pod it could not kill is neither deleted nor
// released: its volumes stay mounted where its processes may still use
// them. A volume is released when no mount namespace of the node still
// mounts the device or source it had before the kill, wherever it is
// mounted: never because a path looks empty.
func (r *fenceRun) stop(ctx context.Context, pods []nodelink.FencePod, groups map[string][]string) string {
	records := make([]VolumeRecord, 0, len(pods))
	for _, p := range pods {
		rec, err := r.host.RecordPodVolumes(p.UID)
		if err != nil {
			return fmt.Sprintf("pod %s/%s: its volume mounts cannot be recorded: %v", p.Namespace, p.Name, err)
		}
		records = append(records, rec)
	}
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
	return r.heldAnywhere(ctx, pods, records)
}

// heldAnywhere checks, once every pod is released (a volume two of them
// share is still the other's before), that no mount namespace of the node
// mounts what the pods' volumes had; "" when none does.
func (r *fenceRun) heldAnywhere(ctx context.Context, pods []nodelink.FencePod, records []VolumeRecord) string {
	for i, rec := range records {
		hctx, cancel := context.WithTimeout(ctx, r.f.settings.KillTimeout)
		held, err := r.host.HeldAnywhere(hctx, rec)
		cancel()
		p := pods[i]
		if err != nil {
			return fmt.Sprintf("pod %s/%s: whether its volumes are still mounted cannot be told: %v", p.Namespace, p.Name, err)
		}
		if len(held) > 0 {
			return fmt.Sprintf("pod %s/%s: its volumes are still mounted: %s", p.Namespace, p.Name, strings.Join(held, "; "))
		}
	}
	klog.InfoS("Fence found no mount of the pods' volumes left on the node", "request", r.req.ID, "pods", len(pods))
	return ""
}

// kill empties each pod's cgroups, each within KillTimeout; it stops at
// the first pod it cannot kill and returns the pods killed whole.
func (r *fenceRun) kill(ctx context.Context, pods []nodelink.FencePod, groups map[string][]string) ([]nodelink.FencePod, string) {
	var killed []nodelink.FencePod
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
func (r *fenceRun) delete(ctx context.Context, killed []nodelink.FencePod) string {
	dctx, cancel := context.WithTimeout(ctx, nodelink.FenceReportTimeout)
	defer cancel()
	ans, err := r.f.o.Link.FenceDelete(dctx, nodelink.FenceDeletion{RequestID: r.req.ID, Pods: killed})
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
// volumes and unmounts what is left, within KillTimeout; "" when done,
// else why not.
func (r *fenceRun) release(ctx context.Context, p nodelink.FencePod) string {
	rctx, cancel := context.WithTimeout(ctx, r.f.settings.KillTimeout)
	defer cancel()
	unstaged, err := r.host.ReleaseCSI(rctx, p.UID)
	if err != nil {
		return err.Error()
	}
	unmounted, err := r.host.UnmountPod(rctx, p.UID)
	if err != nil {
		return err.Error()
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
