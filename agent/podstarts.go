package agent

import (
	"os"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/podstarts"
)

// podStartsWatch watches the write path through the kubelet's Pods API;
// nil, and PodStartStuck not owned, when it is off or the kubelet serves
// no Pods API (a kubelet before 1.37, or with the PodsAPI gate off): the
// condition is not reported there, at no cost.
func (a *Agent) podStartsWatch() (*podstarts.Watch, error) {
	ps := a.cfg.PodStarts
	if ps.PodsAPISocket == "" {
		return nil, nil
	}
	if _, err := os.Stat(ps.PodsAPISocket); err != nil {
		klog.InfoS("No kubelet Pods API: PodStartStuck is not reported", "socket", ps.PodsAPISocket, "err", err)
		return nil, nil
	}
	api, err := podstarts.NewPodsAPI(ps.PodsAPISocket)
	if err != nil {
		return nil, err
	}
	a.podsAPI = api
	logs := ps.PodLogsDir
	asked := func(namespace, name, uid, container string) bool {
		_, err := os.Stat(filepath.Join(podstarts.LogDirectory(logs, namespace, name, uid), container))
		return err == nil
	}
	klog.InfoS("Watching pod starts", "podsAPI", ps.PodsAPISocket, "podLogsDir", logs, "probe", ps.Probe.Enabled)
	w := &podstarts.Watch{Source: api, Tracker: podstarts.NewTracker(a.o.Clock, asked, a.conn.Runtime).WithTasks(podstarts.ContainerdTaskDir(ps.ContainerdStateDir)),
		Period: ps.Period.Duration, Timeout: a.o.Endpoint.Timeout,
		Retry: time.Second, MaxRetry: 30 * time.Second, Clock: a.o.Clock, Metrics: podstarts.NewMetrics(a.o.Registry)}
	if ps.Probe.Enabled {
		w.Probe = &podstarts.Probe{Runtime: a.conn.Runtime, Images: a.conn.Image, SandboxImage: ps.Probe.SandboxImage, Clock: a.o.Clock,
			Period: ps.Probe.Period.Duration, Quiet: w.Tracker.Quiet, Timeout: a.o.Endpoint.Timeout, Metrics: w.Metrics,
			PodNetwork: ps.Probe.PodNetwork}
	}
	return w, nil
}
