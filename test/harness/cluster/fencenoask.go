package cluster

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hangwatch/hangwatch/internal/fencing"
	"github.com/hangwatch/hangwatch/test/criproxy"
	"github.com/hangwatch/hangwatch/test/harness"
)

// FenceNeverAsksANodeWhosePodsAreFine runs the fence on two real nodes
// (StartFenceCluster with ProxyA, remedy's policy changed by policy), node
// A's hangwatch reading its containerd through a proxy that holds chosen
// calls; the kubelet dials containerd directly and stays Ready:
//   - ImageFsInfo alone held for imageFsFor (an image disk that stalls):
//     RuntimeHung True, and no fence request;
//   - then every call answered 2.5 s late for lateFor: RuntimeHung True,
//     the relist not stalled, and no fence request.
//
// web-0 keeps its UID on A throughout.
func FenceNeverAsksANodeWhosePodsAreFine(t *testing.T, policy func(map[string]any), imageFsFor, lateFor time.Duration) {
	fc := StartFenceCluster(t, FenceOptions{ProxyA: true, Policy: policy})
	StatefulSet(t, fc.CP, "web", fc.A)
	web := fc.RunningOn(t, 2*time.Minute, "web-0", fc.A)
	harness.Eventually(t, time.Minute, "RuntimeHung False on A", fc.ConditionIs(t, fc.A, "RuntimeHung", corev1.ConditionFalse))

	release := fc.ProxyA.Inject(criproxy.Fault{Method: "ImageFsInfo"})
	harness.Eventually(t, time.Minute, "RuntimeHung True on A for ImageFsInfo", func() bool { return fc.runtimeHungReason(t) == "ImageFsInfoHung" })
	fc.noRequest(t, imageFsFor, "ImageFsInfo held", web)
	release()
	harness.Eventually(t, time.Minute, "RuntimeHung False on A again", fc.ConditionIs(t, fc.A, "RuntimeHung", corev1.ConditionFalse))

	var releases []func()
	for _, m := range []string{"Version", "Status", "ListPodSandbox", "ListContainers", "ImageFsInfo", "PodSandboxStatus", "ContainerStatus"} {
		releases = append(releases, fc.ProxyA.Inject(criproxy.Fault{Method: m, Delay: 2500 * time.Millisecond}))
	}
	harness.Eventually(t, time.Minute, "RuntimeHung True on A for late answers", fc.ConditionIs(t, fc.A, "RuntimeHung", corev1.ConditionTrue))
	fc.noRequest(t, lateFor, "every call 2.5 s late", web)
	for _, r := range releases {
		r()
	}
}

// noRequest holds for d that A carries no fence request, no attestation
// and no fence Event, that its kubelet stays Ready and web-0 is the same
// pod.
func (fc *FenceCluster) noRequest(t *testing.T, d time.Duration, what string, web *corev1.Pod) {
	t.Helper()
	harness.Throughout(t, d, "no fence request on A while "+what, func() bool {
		n := fc.NodeObject(t, fc.A)
		_, attested := n.Annotations[fencing.AttestedAnnotation]
		return n.Annotations[fencing.RequestAnnotation] == "" && !attested
	})
	if p, ev := fc.Pod(t, "web-0"), fc.FenceEvents(t, fc.A); p == nil || p.UID != web.UID || ev != "" {
		t.Fatalf("%s: web-0 %s (was %s), fence Events on A %q", what, DescribePod(p), web.UID, ev)
	}
	if !fc.ConditionIs(t, fc.A, string(corev1.NodeReady), corev1.ConditionTrue)() {
		t.Fatalf("%s: A's kubelet is not Ready", what)
	}
}

func (fc *FenceCluster) runtimeHungReason(t *testing.T) string {
	t.Helper()
	for _, c := range fc.NodeObject(t, fc.A).Status.Conditions {
		if c.Type == "RuntimeHung" && c.Status == corev1.ConditionTrue {
			return c.Reason
		}
	}
	return ""
}
