package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/internal/fencing"
	"github.com/hangwatch/hangwatch/nodelink"
)

// fenceReadEvery paces the agent's reads of its Node for the fence, which
// the repair process asks for only while the runtime has hung as a whole.
const fenceReadEvery = 2 * time.Second

// FenceClient is what the fence asks of the API server, as the node: its
// Node and pods, a pod's deletion and the attestation. *apiclient.Client
// is one.
type FenceClient interface {
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
	PatchNode(ctx context.Context, name string, pt types.PatchType, body []byte) (*corev1.Node, error)
	PodsOnNode(ctx context.Context, node string) ([]corev1.Pod, error)
	DeletePodNow(ctx context.Context, namespace, name, uid string) error
}

// fenceDesk is the agent's side of the fence: it reads the request, and
// deletes and attests what the repair process reports.
type fenceDesk struct {
	api    FenceClient
	node   string
	clock  clock.PassiveClock
	notify nodelink.Notifier

	mu        sync.Mutex
	readAt    time.Time
	last      nodelink.FenceOrder
	firstSeen map[string]time.Time // by request ID: the current one only
	// handed are the pods the last order with a request handed out, by
	// UID, and deleted those deleted since for that request: the repair
	// process may have only those deleted, and attest only those.
	handed  map[string]nodelink.FencePod
	handFor string
	deleted map[string]bool
}

// order reads the Node's request (at most every fenceReadEvery) and, with
// one, the node's pods.
func (d *fenceDesk) order(ctx context.Context) (nodelink.FenceOrder, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.clock.Now()
	if !d.readAt.IsZero() && now.Sub(d.readAt) < fenceReadEvery {
		return d.last, nil
	}
	n, err := d.api.GetNode(ctx, d.node)
	if err != nil {
		return nodelink.FenceOrder{}, fmt.Errorf("read Node %s: %w", d.node, err)
	}
	o := nodelink.FenceOrder{NodeBootID: n.Status.NodeInfo.BootID}
	req, ok, err := fencing.RequestOf(n)
	if err != nil {
		klog.InfoS("The Node's fence request is malformed; not carried out", "node", d.node, "err", err)
	}
	if ok && err == nil {
		first, seen := d.firstSeen[req.ID]
		if !seen {
			first, d.firstSeen = now, map[string]time.Time{req.ID: now}
		}
		o.Request = &nodelink.FenceRequestNote{ID: req.ID, BootID: req.BootID, ValidFor: req.ValidFor, SeenFor: now.Sub(first),
			Deadline: req.Deadline, OptedIn: n.Labels[fencing.OptInLabel] == fencing.OptInValue}
		pods, err := d.api.PodsOnNode(ctx, d.node)
		if err != nil {
			return nodelink.FenceOrder{}, fmt.Errorf("list the pods of node %s: %w", d.node, err)
		}
		o.Pods = fencePods(pods)
		d.hand(req.ID, o.Pods)
	}
	d.last, d.readAt = o, now
	return o, nil
}

// fencePods describes pods for the fence's choice.
func fencePods(pods []corev1.Pod) []nodelink.FencePod {
	out := make([]nodelink.FencePod, 0, len(pods))
	for _, p := range pods {
		fp := nodelink.FencePod{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)}
		_, fp.Static = p.Annotations[corev1.MirrorPodAnnotationKey]
		for _, ref := range p.OwnerReferences {
			if ref.Controller != nil && *ref.Controller {
				fp.Owner = ref.Kind
			}
		}
		oos := fencing.OutOfService()
		for _, t := range p.Spec.Tolerations {
			// a toleration with tolerationSeconds keeps the pod only that
			// long: the taint evicts it all the same
			fp.StaysOutOfService = fp.StaysOutOfService || (t.ToleratesTaint(klog.Background(), &oos, false) && t.TolerationSeconds == nil)
		}
		for _, c := range p.Status.ContainerStatuses {
			fp.Running = fp.Running || c.State.Running != nil
		}
		out = append(out, fp)
	}
	return out
}

// hand remembers the pods an order handed out for request id; d.mu is
// held.
func (d *fenceDesk) hand(id string, pods []nodelink.FencePod) {
	if d.handFor != id {
		d.handFor, d.deleted = id, map[string]bool{}
	}
	d.handed = make(map[string]nodelink.FencePod, len(pods))
	for _, p := range pods {
		d.handed[p.UID] = p
	}
}

// handedOut says why pods are not all pods an order handed out for
// request id, "" when they are; d.mu is held.
func (d *fenceDesk) handedOut(id string, pods []nodelink.FencePod) string {
	if id != d.handFor {
		return fmt.Sprintf("fence %s is not the request the agent handed out (%q)", id, d.handFor)
	}
	for _, p := range pods {
		if h, ok := d.handed[p.UID]; !ok || h.Namespace != p.Namespace || h.Name != p.Name {
			return fmt.Sprintf("pod %s/%s (%s) was not handed out for fence %s", p.Namespace, p.Name, p.UID, id)
		}
	}
	return ""
}

// delete deletes the pods the fence killed (grace 0, only the pod of that
// UID): "" when every one is gone from the API. It deletes only pods the
// last order handed out for the same request.
func (d *fenceDesk) delete(ctx context.Context, del nodelink.FenceDeletion) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if why := d.handedOut(del.RequestID, del.Pods); why != "" {
		return why
	}
	for _, p := range del.Pods {
		err := d.api.DeletePodNow(ctx, p.Namespace, p.Name, p.UID)
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Sprintf("deleting pod %s/%s: %v", p.Namespace, p.Name, err)
		}
		d.deleted[p.UID] = true
		klog.InfoS("Fence deleted a killed pod", "pod", klog.KRef(p.Namespace, p.Name), "uid", p.UID, "request", del.RequestID)
	}
	return ""
}

// report attests on the Node what the fence did. It takes a report only
// for the request on the Node now, naming only pods it deleted for it.
func (d *fenceDesk) report(ctx context.Context, rep nodelink.FenceReport) error {
	if err := d.reportable(ctx, rep); err != nil {
		return err
	}
	att := rep.Attestation(d.clock.Now())
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": att.Annotations()}})
	if err != nil {
		return err
	}
	if _, err := d.api.PatchNode(ctx, d.node, types.MergePatchType, body); err != nil {
		return fmt.Errorf("attest fence %s on Node %s: %w", rep.RequestID, d.node, err)
	}
	if rep.Fenced {
		d.notify.Warning("FenceAttested", fmt.Sprintf("hangwatch stopped, deleted and unmounted %d pods for fence %s on boot %s: %s",
			len(rep.Pods), rep.RequestID, rep.BootID, podList(rep.Pods)))
	} else {
		d.notify.Warning("FenceImpossible", fmt.Sprintf("hangwatch: fence %s impossible: %s", rep.RequestID, rep.Why))
	}
	klog.InfoS("Fence attested", "request", rep.RequestID, "fenced", rep.Fenced, "why", rep.Why, "pods", len(rep.Pods))
	return nil
}

// reportable refuses a report for another request than the Node's, or
// naming a pod the agent did not delete for it.
func (d *fenceDesk) reportable(ctx context.Context, rep nodelink.FenceReport) error {
	n, err := d.api.GetNode(ctx, d.node)
	if err != nil {
		return fmt.Errorf("read Node %s: %w", d.node, err)
	}
	if req, ok, err := fencing.RequestOf(n); !ok || err != nil || req.ID != rep.RequestID {
		return fmt.Errorf("fence report for %s: the Node's request is %q", rep.RequestID, n.Annotations[fencing.RequestAnnotation])
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if why := d.handedOut(rep.RequestID, rep.Pods); why != "" {
		return errors.New("fence report: " + why)
	}
	for _, p := range rep.Pods {
		if !d.deleted[p.UID] {
			return fmt.Errorf("fence report: pod %s/%s (%s) was not deleted through the agent", p.Namespace, p.Name, p.UID)
		}
	}
	return nil
}

func podList(pods []nodelink.FencePod) string {
	out := ""
	for i, p := range pods {
		if i > 0 {
			out += ", "
		}
		out += p.Namespace + "/" + p.Name + " (" + p.UID + ")"
	}
	return out
}

func (l *repairLink) serveFenceOrder(w http.ResponseWriter, r *http.Request) {
	var none struct{}
	if !decodeChecked(w, r, &none, func() error { return nil }) {
		return
	}
	if l.fence == nil {
		http.Error(w, "no API server: no fence request can be read", http.StatusServiceUnavailable)
		return
	}
	o, err := l.fence.order(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	writeJSON(w, o)
}

func (l *repairLink) serveFenceDelete(w http.ResponseWriter, r *http.Request) {
	var del nodelink.FenceDeletion
	if !decodeChecked(w, r, &del, func() error { return del.Check() }) {
		return
	}
	if l.fence == nil {
		http.Error(w, "no API server: no pod can be deleted", http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, nodelink.FenceDeleted{Failed: l.fence.delete(r.Context(), del)})
}

func (l *repairLink) serveFenceReport(w http.ResponseWriter, r *http.Request) {
	var rep nodelink.FenceReport
	if !decodeChecked(w, r, &rep, func() error { return rep.Check() }) {
		return
	}
	if l.fence == nil {
		http.Error(w, "no API server: the fence cannot be attested", http.StatusServiceUnavailable)
		return
	}
	if err := l.fence.report(r.Context(), rep); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	writeJSON(w, struct{}{})
}
