package remedy

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

var metav1PatchOptions = metav1.PatchOptions{FieldManager: "hangwatch-remedy"}

// blockedRetry is how long a pod whose eviction a PodDisruptionBudget
// refused (429) waits before it is asked again, as kubectl drain waits.
const blockedRetry = 5 * time.Second

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
	// running holds the nodes with a pass out; episode the nodes evicted
	// since their condition last stopped asking for it.
	running, episode map[string]bool
	notBefore        map[string]time.Time // pod (namespace/name) to its next try after a 429
	wg               sync.WaitGroup
}

func newEvictor(client kubernetes.Interface, clk clock.PassiveClock, m *Metrics, rec record.EventRecorder) *evictor {
	return &evictor{client: client, clk: clk, m: m, rec: rec,
		running: map[string]bool{}, episode: map[string]bool{}, notBefore: map[string]time.Time{}}
}

// started: the node's eviction began in this episode (the rate limit took
// its token then).
func (e *evictor) started(node string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.episode[node]
}

// retain ends the episodes of nodes no longer to be evicted.
func (e *evictor) retain(evicting map[string]bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for n := range e.episode {
		if !evicting[n] {
			delete(e.episode, n)
		}
	}
}

// start runs one eviction pass over the node unless one is out.
func (e *evictor) start(ctx context.Context, n *corev1.Node, a Action, concurrency int) {
	e.mu.Lock()
	if e.running[n.Name] {
		e.mu.Unlock()
		return
	}
	if !e.episode[n.Name] {
		klog.InfoS("Evicting the node's pods", "node", n.Name, "why", a.Why)
		e.rec.Eventf(n, corev1.EventTypeWarning, "RemedyEvicting", "evicting pods that do not tolerate %s: %s", a.Taint.Key, a.Why)
		e.m.actions.WithLabelValues(string(ActionEvict), a.Condition, "done").Inc()
	}
	e.running[n.Name], e.episode[n.Name] = true, true
	e.mu.Unlock()
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.pass(ctx, n, a.Taint, concurrency)
		e.mu.Lock()
		delete(e.running, n.Name)
		e.mu.Unlock()
	}()
}

func (e *evictor) wait() { e.wg.Wait() }

// pass evicts every pod of the node that should go, concurrency at once.
func (e *evictor) pass(ctx context.Context, n *corev1.Node, taint corev1.Taint, concurrency int) {
	pods, err := e.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", n.Name).String()})
	if err != nil {
		klog.ErrorS(err, "Listing the node's pods failed; tried again next pass", "node", n.Name)
		return
	}
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Spec.NodeName != n.Name || !e.due(pod) || !Evictable(pod, taint) {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			e.evictOne(ctx, n, pod)
		}()
	}
	wg.Wait()
}

// due: the pod is not waiting out a 429.
func (e *evictor) due(pod *corev1.Pod) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.clk.Now().Before(e.notBefore[pod.Namespace+"/"+pod.Name])
}

func (e *evictor) evictOne(ctx context.Context, n *corev1.Node, pod *corev1.Pod) {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}
	err := e.client.CoreV1().Pods(pod.Namespace).EvictV1(ctx, ev)
	key := pod.Namespace + "/" + pod.Name
	switch {
	case err == nil:
		e.m.evictions.WithLabelValues("evicted").Inc()
		klog.InfoS("Evicted pod", "node", n.Name, "pod", key)
		e.rec.Eventf(n, corev1.EventTypeNormal, "RemedyEvicted", "evicted pod %s", key)
	case apierrors.IsNotFound(err):
	case apierrors.IsTooManyRequests(err):
		e.m.evictions.WithLabelValues("blocked").Inc()
		e.mu.Lock()
		e.notBefore[key] = e.clk.Now().Add(blockedRetry)
		e.mu.Unlock()
		klog.V(2).InfoS("Eviction refused by a PodDisruptionBudget; asking again later", "pod", key, "retryIn", blockedRetry)
	default:
		e.m.evictions.WithLabelValues("error").Inc()
		klog.ErrorS(err, "Eviction failed; tried again next pass", "pod", key)
	}
}

// Evictable: the pod runs there and should leave. A terminating or
// finished pod, a mirror (static) pod, a DaemonSet's pod and a pod that
// tolerates the taint stay.
func Evictable(pod *corev1.Pod, taint corev1.Taint) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return false
	}
	for _, o := range pod.OwnerReferences {
		if o.Kind == "DaemonSet" && o.Controller != nil && *o.Controller {
			return false
		}
	}
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].ToleratesTaint(&taint) {
			return false
		}
	}
	return true
}
