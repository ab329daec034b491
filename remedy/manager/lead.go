package manager

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/remedy"
)

// act waits for the Nodes to be read, then runs the controller while this
// replica leads (always, without an election) until ctx ends.
func (m *Manager) act(ctx context.Context, addrs []string) error {
	if !cache.WaitForCacheSync(ctx.Done(), m.nodes.HasSynced) {
		return nil // stopped before the nodes were read
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: m.o.Client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	e := m.o.Election
	c := remedy.NewController(remedy.Options{Client: m.o.Client, Policy: m.policy.get, Metrics: m.metrics, Clock: m.o.Clock,
		Budget:   remedy.NewBudget(m.o.Client.CoordinationV1(), types.NamespacedName{Namespace: e.Namespace, Name: e.Name + "-actions"}, e.Identity),
		Nodes:    nodeLister{m.lister},
		Recorder: broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "hangwatch-remedy"}),
		Resync:   m.o.Resync, Watched: true, OtherFencers: otherFencers(m.o.Client)})
	changed := func(obj any) {
		if name, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.Changed(name) // a Node's key is its name
		}
	}
	reg, err := m.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: changed, DeleteFunc: changed,
		UpdateFunc: func(_, obj any) { changed(obj) }})
	if err != nil {
		return fmt.Errorf("watch the Nodes' changes: %w", err)
	}
	defer func() { _ = m.nodes.RemoveEventHandler(reg) }()
	klog.InfoS("hangwatch-remedy running", "listen", addrs, "leaderElect", e.Enabled, "dryRun", m.policy.get().DryRun)
	if !e.Enabled {
		m.metrics.SetLeader(true)
		c.Run(ctx)
		return nil
	}
	return m.elect(ctx, c)
}

// elect acts while this replica leads; a replica that loses the lead
// stops with an error, and its Deployment starts it again as a follower.
// The controller runs on a goroutine of elect's own (client-go's would be
// left running), so elect returns only once the controller has stopped.
func (m *Manager) elect(ctx context.Context, c *remedy.Controller) error {
	e := m.o.Election
	leading := make(chan context.Context, 1)
	over, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case leadCtx := <-leading:
			m.lead(leadCtx, c)
		case <-over:
		}
	}()
	lost := false
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Name: e.Name, Namespace: e.Namespace}, Client: m.o.ElectionClient.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: e.Identity}},
		LeaseDuration: e.LeaseDuration, RenewDeadline: e.RenewDeadline, RetryPeriod: e.RetryPeriod,
		ReleaseOnCancel: true, Name: e.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) { leading <- leadCtx },
			OnStoppedLeading: func() { lost = ctx.Err() == nil },
			OnNewLeader:      func(leader string) { klog.InfoS("Leader", "identity", leader) },
		},
	})
	close(over)
	<-stopped
	m.metrics.SetLeader(false)
	if lost {
		return fmt.Errorf("lost the lead on %s/%s", e.Namespace, e.Name)
	}
	return nil
}

// lead runs the controller until the lead, leadCtx, ends.
func (m *Manager) lead(leadCtx context.Context, c *remedy.Controller) {
	if leadCtx.Err() != nil {
		return // the lead ended before the controller started
	}
	e := m.o.Election
	klog.InfoS("Leading: acting on the policy", "identity", e.Identity, "lease", e.Namespace+"/"+e.Name)
	m.metrics.SetLeader(true)
	c.Run(leadCtx)
}
