package pleg

import (
	"context"
	"sort"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/cri"
)

// execute runs one relist to the end and publishes its result.
func (r *Relister) execute(run *relistRun) {
	res := &run.result
	defer func() {
		res.Start, res.Duration = run.start, run.clk.Since(run.start)
		run.mu.Lock()
		res.Calls = run.calls
		run.mu.Unlock()
		close(run.done)
	}()
	res.Class = cri.ClassOK
	pods, podBytes, err := r.listSandboxes(run, nil)
	var ctrs []*runtimeapi.Container
	ctrBytes := 0
	if err == nil {
		ctrs, ctrBytes, err = r.listContainers(run, &runtimeapi.ContainerFilter{})
	}
	if err != nil {
		res.fail(run.method, err)
		return // the kubelet's relist ends here, without a new relistTime
	}
	res.ListBytes = max(podBytes, ctrBytes)
	res.Pods, res.Containers = len(pods), len(ctrs)
	changed := r.changedPods(pods, ctrs)
	res.ChangedPods = len(changed)
	for _, key := range changed {
		if err := r.inspectPod(run, key); err != nil {
			res.FailedPods++
			if res.Class == cri.ClassOK {
				res.fail(run.method, err)
			}
		}
	}
}

func (res *RelistResult) fail(method string, err error) {
	res.Method, res.Class, res.Err = method, cri.ClassifyError(err), err.Error()
}

// podKey is the pod UID label, or the sandbox ID for objects without it.
func podKey(labels map[string]string, sandboxID string) string {
	if uid := labels[podUIDLabel]; uid != "" {
		return podUIDLabel + "=" + uid
	}
	return "sandbox=" + sandboxID
}

// changedPods compares the full lists with the previous relist's, as the
// kubelet's PLEG does, and returns the pods to inspect (all of them on the
// first relist), plus those whose inspection failed last time.
func (r *Relister) changedPods(pods []*runtimeapi.PodSandbox, ctrs []*runtimeapi.Container) []string {
	states := map[string][]string{}
	for _, p := range pods {
		k := podKey(p.Labels, p.Id)
		states[k] = append(states[k], "s:"+p.Id+":"+p.State.String())
	}
	for _, c := range ctrs {
		k := podKey(c.Labels, c.PodSandboxId)
		states[k] = append(states[k], "c:"+c.Id+":"+c.State.String())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := make(map[string]string, len(states))
	var changed []string
	for k, s := range states {
		sort.Strings(s)
		cur[k] = strings.Join(s, ",")
		if r.prev == nil || r.prev[k] != cur[k] || r.reinspect[k] {
			changed = append(changed, k)
		}
	}
	r.prev, r.reinspect = cur, map[string]bool{}
	sort.Strings(changed)
	return changed
}

// inspectPod reads one pod's status the way the kubelet's GetPodStatus does.
func (r *Relister) inspectPod(run *relistRun, key string) error {
	sf, cf := podFilters(key)
	pods, _, err := r.listSandboxes(run, sf)
	for i := 0; err == nil && i < len(pods); i++ {
		id := pods[i].Id
		err = r.call(run, cri.MethodPodSandboxStatus, func(ctx context.Context) error {
			_, err := r.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
			return err
		})
	}
	var ctrs []*runtimeapi.Container
	if err == nil {
		ctrs, _, err = r.listContainers(run, cf)
	}
	for i := 0; err == nil && i < len(ctrs); i++ {
		id := ctrs[i].Id
		err = r.call(run, cri.MethodContainerStatus, func(ctx context.Context) error {
			_, err := r.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
			return err
		})
	}
	if err != nil {
		r.mu.Lock()
		r.reinspect[key] = true
		r.mu.Unlock()
	}
	return err
}

// podFilters are the per-pod list filters for a pod key.
func podFilters(key string) (*runtimeapi.PodSandboxFilter, *runtimeapi.ContainerFilter) {
	if uid, ok := strings.CutPrefix(key, podUIDLabel+"="); ok {
		sel := map[string]string{podUIDLabel: uid}
		return &runtimeapi.PodSandboxFilter{LabelSelector: sel}, &runtimeapi.ContainerFilter{LabelSelector: sel}
	}
	id := strings.TrimPrefix(key, "sandbox=")
	return &runtimeapi.PodSandboxFilter{Id: id}, &runtimeapi.ContainerFilter{PodSandboxId: id}
}
