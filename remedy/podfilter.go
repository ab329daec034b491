package remedy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// LeftPod is a pod of an evicting node that the policy leaves where it is,
// and why.
type LeftPod struct {
	Pod string `json:"pod"` // namespace/name
	Why string `json:"why"`
}

// NodePods sorts the pods of one node into those to evict and those left
// alone by the policy; pods that never move (terminating or finished ones,
// static pods, a DaemonSet's, those tolerating the taint) are in neither.
type NodePods struct {
	Evict []*corev1.Pod
	Left  []LeftPod
}

// SortNodePods lists the node's pods (a field selector on spec.nodeName,
// served from the API server's watch cache) and sorts them by the policy.
func SortNodePods(ctx context.Context, client kubernetes.Interface, e EvictionPolicy, node string, taint corev1.Taint) (NodePods, error) {
	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{ResourceVersion: "0",
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		return NodePods{}, fmt.Errorf("list the pods of node %s: %w", node, err)
	}
	var out NodePods
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Spec.NodeName != node || !Evictable(pod, taint) || !uses(pod, e.onlyUsing) {
			continue
		}
		if why := leaveAlone(ctx, client, e, pod); why != "" {
			out.Left = append(out.Left, LeftPod{Pod: pod.Namespace + "/" + pod.Name, Why: why})
			continue
		}
		out.Evict = append(out.Evict, pod)
	}
	return out, nil
}

// leaveAlone says why the policy keeps pod on a hung node ("": evict it).
// An eviction is a graceful deletion that a hung runtime or kubelet cannot
// finish: a StatefulSet's pod is then recreated under its name only once
// the old one is gone, a ReadWriteOnce volume stays attached to the node,
// and a pod with no controller is never recreated at all.
func leaveAlone(ctx context.Context, client kubernetes.Interface, e EvictionPolicy, pod *corev1.Pod) string {
	if len(e.onlyUsing) > 0 && !requests(pod, e.onlyUsing) {
		return "it holds devices through resource claims, and which it holds is not told: the eviction is only for pods using " + joinNames(e.onlyUsing)
	}
	kind := controllerKind(pod)
	if !slices.Contains(e.Kinds, kind) {
		switch kind {
		case OwnerlessKind:
			return "no controller: it would not be recreated"
		case "StatefulSet":
			return "StatefulSet pod: recreated under its name only after the node confirms the old one is gone"
		}
		return kind + " pod: its kind is not in the policy's eviction.kinds"
	}
	if e.ReadWriteOnceVolumes {
		return ""
	}
	if claims := readWriteOnceClaims(ctx, client, pod); len(claims) > 0 {
		return "ReadWriteOnce volume claim " + strings.Join(claims, ", ") + ": a replacement would wait on Multi-Attach"
	}
	return ""
}

// controllerKind is the kind of pod's controller, or OwnerlessKind.
func controllerKind(pod *corev1.Pod) string {
	if ref := metav1.GetControllerOf(pod); ref != nil {
		return ref.Kind
	}
	return OwnerlessKind
}

// readWriteOnceClaims names pod's claims that are (or, unreadable, may
// be) ReadWriteOnce or ReadWriteOncePod.
func readWriteOnceClaims(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod) []string {
	var out []string
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			pvc, err := client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, v.PersistentVolumeClaim.ClaimName, metav1.GetOptions{})
			if err != nil {
				out = append(out, v.PersistentVolumeClaim.ClaimName+" (unreadable: "+err.Error()+")")
			} else if readWriteOnce(pvc.Spec.AccessModes) {
				out = append(out, v.PersistentVolumeClaim.ClaimName)
			}
		case v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil:
			if readWriteOnce(v.Ephemeral.VolumeClaimTemplate.Spec.AccessModes) {
				out = append(out, pod.Name+"-"+v.Name)
			}
		}
	}
	return out
}

func readWriteOnce(modes []corev1.PersistentVolumeAccessMode) bool {
	return slices.Contains(modes, corev1.ReadWriteOnce) || slices.Contains(modes, corev1.ReadWriteOncePod)
}

// Evictable: the pod runs there and could leave. A terminating or
// finished pod, a mirror (static) pod, a DaemonSet's pod and a pod that
// tolerates the taint stay, whatever the policy.
func Evictable(pod *corev1.Pod, taint corev1.Taint) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return false
	}
	if controllerKind(pod) == "DaemonSet" {
		return false
	}
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].ToleratesTaint(klog.Background(), &taint, false) {
			return false
		}
	}
	return true
}

// uses: pod may use one of the resources: a container requests one, or
// the pod has resource claims (DRA), which do not say; true for no
// resources (every pod).
func uses(pod *corev1.Pod, resources []corev1.ResourceName) bool {
	return len(resources) == 0 || requests(pod, resources) || len(pod.Spec.ResourceClaims) > 0
}

// requests: a container of pod (init containers too) requests or limits
// one of the resources.
func requests(pod *corev1.Pod, resources []corev1.ResourceName) bool {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, r := range resources {
				if _, ok := c.Resources.Requests[r]; ok {
					return true
				}
				if _, ok := c.Resources.Limits[r]; ok {
					return true
				}
			}
		}
	}
	return false
}

func joinNames(rs []corev1.ResourceName) string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return strings.Join(out, ", ")
}
