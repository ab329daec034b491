package integration

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/criproxy"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/harness/kubelet"
)

// TestDiagOnEachContainerd2: diag on a healthy containerd 2.x is Healthy
// (exit 0) although 2.2+ reports ContainerdHasNoDeprecationWarnings=false
// on this cgroup v1 machine: only RuntimeReady and NetworkReady count. On
// 2.4, which implements the CRI list streams, diag times StreamPodSandboxes
// and StreamContainers to their end and to their first message; on 2.3 it
// finds them Unimplemented and leaves them out.
func TestDiagOnEachContainerd2(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd)
	up, err := containerd.UpgradeBinaries()
	if err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c24, err := containerd.StartFrom(ctx, up)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c24.Stop)
	if _, err := c24.CreatePods(ctx, 3, 2); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c         *containerd.Containerd
		streaming string
	}{{hangwatch.SharedContainerd(t), "unimplemented"}, {c24, "implemented"}} {
		r, code, _ := runDiag(t, tc.c.Endpoint, "--samples", "3")
		t.Logf("containerd %s: %s (exit %d), list streams %s, conditions %+v", r.Runtime.Version, r.Verdict, code, r.ListStreaming, r.RuntimeConditions)
		if r.Verdict != "Healthy" || code != 0 {
			t.Errorf("containerd %s: diag %s (exit %d) %q, want Healthy (exit 0)", r.Runtime.Version, r.Verdict, code, r.Reasons)
		}
		if r.ListStreaming != tc.streaming {
			t.Errorf("containerd %s: listStreaming %q, want %q", r.Runtime.Version, r.ListStreaming, tc.streaming)
		}
		streams := 0
		for _, call := range r.Calls {
			if call.Method != "StreamPodSandboxes" && call.Method != "StreamContainers" {
				continue
			}
			streams++
			if call.Count != 3 || call.FirstMessageP50Seconds == nil || *call.FirstMessageP50Seconds > call.P50Seconds || call.MaxResponseBytes == 0 {
				t.Errorf("containerd %s: %s %+v, want 3 calls timed to the first message and the end", r.Runtime.Version, call.Method, call)
			}
		}
		if want := map[string]int{"implemented": 2, "unimplemented": 0}[tc.streaming]; streams != want {
			t.Errorf("containerd %s: %d stream rows, want %d", r.Runtime.Version, streams, want)
		}
	}
}

// TestKubeletListsWithStreamsWhenGated checks the premise of the list
// stream probes against the real parts: kubelet v1.37 with its
// CRIListStreaming gate on, on containerd 2.4, lists pods with
// StreamPodSandboxes and not ListPodSandbox (the fault proxy holds both
// and counts which one the kubelet sent).
func TestKubeletListsWithStreamsWhenGated(t *testing.T) {
	harness.Parallel(t)
	up, err := containerd.UpgradeBinaries()
	if err != nil {
		t.Skip(err)
	}
	cp := hangwatch.SharedControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, err := containerd.StartFrom(ctx, up)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	proxy, err := criproxy.Start(filepath.Join(c.Dir, "kubelet-cri-proxy.sock"), c.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Stop)
	k, err := kubelet.StartWithGates(ctx, cp, c, proxy.Endpoint, hangwatch.UniqueNode("streams"), "CRIListStreaming=true")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	unary := proxy.Inject(criproxy.Fault{Method: "ListPodSandbox"})
	stream := proxy.Inject(criproxy.Fault{Method: "StreamPodSandboxes"})
	harness.Eventually(t, time.Minute, "the kubelet's relist to list pods", func() bool {
		return proxy.Held("StreamPodSandboxes")+proxy.Held("ListPodSandbox") > 0
	})
	streams, lists := proxy.Held("StreamPodSandboxes"), proxy.Held("ListPodSandbox")
	unary()
	stream()
	t.Logf("kubelet %s with CRIListStreaming on containerd %s: %d StreamPodSandboxes, %d ListPodSandbox", harness.KubeVersion, up.Version, streams, lists)
	if streams == 0 || lists != 0 {
		t.Errorf("the kubelet sent %d StreamPodSandboxes and %d ListPodSandbox; want the stream only", streams, lists)
	}
}
