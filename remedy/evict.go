package remedy

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

var metav1PatchOptions = metav1.PatchOptions{FieldManager: "hangwatch-remedy"}

// blockedRetry is how long a pod whose eviction a PodDisruptionBudget
// refused (429) waits before it is asked again, as kubectl drain waits.
const blockedRetry = 5 * time.Second

// Eviction passes over one node back off: the first at once, then after
// firstPassGap, doubling up to maxPassGap while the node's episode lasts.
const (
	firstPassGap = 2 * time.Second
	maxPassGap   = 30 * time.Second
)

// evictor evicts a node's pods through the Eviction API, a few at a time,
// one pass per node at once. A pass lists the node's pods afresh, so a
// pod already evicted (terminating) is not evicted twice, by this replica
// or by the next leader.
type evictor struct {
	client kubernetes.Interface
	clk    clock.PassiveClock
	m      *Metrics
	rec    record.EventRecorder
	mu     sync.Mutex
	// nodes holds each node evicted since its condition last started
	// asking for it (its episode).
	nodes map[string]*episode
	wg    sync.WaitGroup
}

// episode is one node's eviction, from its first pass to the end of the
// condition that asked for it.
type episode struct {
	running   bool
	next      time.Time // the next pass is not due before
	gap       time.Duration
	left      string               // the left-alone pods last reported
	notBefore map[string]time.Time // pod (namespace/name) to its next try after a 429
}

func newEvictor(client kubernetes.Interface, clk clock.PassiveClock, m *Metrics, rec record.EventRecorder) *evictor {
	return &evictor{client: client, clk: clk, m: m, rec: rec, nodes: map[string]*episode{}}
}

// started: the node's eviction began in this episode (the budget took its
// action then).
func (e *evictor) started(node string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.nodes[node] != nil
}

// due: no pass over node is out and the back-off since the last is over.
func (e *evictor) due(node string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	ep := e.nodes[node]
	return ep == nil || (!ep.running && !e.clk.Now().Before(ep.next))
}

// retain ends the episodes of nodes no longer to be evicted, and with them
// their retry state.
func (e *evictor) retain(evicting map[string]bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for n, ep := range e.nodes {
		if !evicting[n] && !ep.running {
			delete(e.nodes, n)
		}
	}
}

// start runs one eviction pass over the node unless one is out or the
// back-off holds it.
func (e *evictor) start(ctx context.Context, n *corev1.Node, a Action, ev EvictionPolicy, concurrency int) {
	e.mu.Lock()
	ep := e.nodes[n.Name]
	if ep != nil && (ep.running || e.clk.Now().Before(ep.next)) {
		e.mu.Unlock()
		return
	}
	if ep == nil {
		klog.InfoS("Evicting the node's pods", "node", n.Name, "why", a.Why)
		e.rec.Eventf(n, corev1.EventTypeWarning, "RemedyEvicting", "evicting pods that do not tolerate %s: %s", a.Taint.Key, a.Why)
		e.m.actions.WithLabelValues(string(ActionEvict), a.Condition, "done").Inc()
		ep = &episode{notBefore: map[string]time.Time{}}
		e.nodes[n.Name] = ep
	}
	ep.running = true
	e.mu.Unlock()
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.pass(ctx, n, a.Taint, ev, concurrency, ep)
		e.mu.Lock()
		ep.running = false
		ep.gap = min(max(2*ep.gap, firstPassGap), maxPassGap)
		ep.next = e.clk.Now().Add(ep.gap)
		e.mu.Unlock()
	}()
}

func (e *evictor) wait() { e.wg.Wait() }

// pass evicts every pod of the node that should go, concurrency at once,
// and reports the pods the policy leaves when they change.
func (e *evictor) pass(ctx context.Context, n *corev1.Node, taint corev1.Taint, ev EvictionPolicy, concurrency int, ep *episode) {
	pods, err := SortNodePods(ctx, e.client, ev, n.Name, taint)
	if err != nil {
		klog.ErrorS(err, "Eviction pass failed; tried again later", "node", n.Name)
		return
	}
	e.reportLeft(n, pods.Left, ep)
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for _, pod := range pods.Evict {
		if !e.podDue(ep, pod) {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			e.evictOne(ctx, n, pod, ep)
		}()
	}
	wg.Wait()
}

// reportLeft records a Warning Event on the node naming the pods the
// policy leaves there, each time that list changes.
func (e *evictor) reportLeft(n *corev1.Node, left []LeftPod, ep *episode) {
	parts := make([]string, 0, len(left))
	for _, l := range left {
		parts = append(parts, l.Pod+" ("+l.Why+")")
	}
	text := strings.Join(parts, "; ")
	e.mu.Lock()
	changed := text != ep.left
	ep.left = text
	e.mu.Unlock()
	if !changed || text == "" {
		return
	}
	for _, l := range left {
		klog.InfoS("Pod left on the evicting node", "node", n.Name, "pod", l.Pod, "why", l.Why)
	}
	e.rec.Eventf(n, corev1.EventTypeWarning, "RemedyLeftAlone", "left %d pods on the node (the runtime's recovery or fencing moves them): %s", len(left), text)
}

// podDue: the pod is not waiting out a 429.
func (e *evictor) podDue(ep *episode, pod *corev1.Pod) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	key := pod.Namespace + "/" + pod.Name
	if e.clk.Now().Before(ep.notBefore[key]) {
		return false
	}
	delete(ep.notBefore, key)
	return true
}

func (e *evictor) evictOne(ctx context.Context, n *corev1.Node, pod *corev1.Pod, ep *episode) {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}}}
	if pod.UID == "" { // a fake Clientset's pod
		ev.DeleteOptions = nil
	}
	err := e.client.CoreV1().Pods(pod.Namespace).EvictV1(ctx, ev)
	key := pod.Namespace + "/" + pod.Name
	switch {
	case err == nil:
		e.m.evictions.WithLabelValues("evicted").Inc()
		klog.InfoS("Evicted pod", "node", n.Name, "pod", key)
		e.rec.Eventf(n, corev1.EventTypeNormal, "RemedyEvicted", "evicted pod %s", key)
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
	case apierrors.IsTooManyRequests(err):
		e.m.evictions.WithLabelValues("blocked").Inc()
		e.mu.Lock()
		ep.notBefore[key] = e.clk.Now().Add(blockedRetry)
		e.mu.Unlock()
		klog.V(2).InfoS("Eviction refused by a PodDisruptionBudget; asking again later", "pod", key, "retryIn", blockedRetry)
	default:
		e.m.evictions.WithLabelValues("error").Inc()
		klog.ErrorS(fmt.Errorf("evict %s: %w", key, err), "Eviction failed; tried again next pass", "node", n.Name)
	}
}
