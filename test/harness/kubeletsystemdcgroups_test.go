package harness

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKubeletUnderSystemdWithPodCgroups runs a kubelet under the test's
// systemd with pod cgroups (the cgroupfs driver), runs a static pod on it,
// checks that the pod's cgroup is under the kubelet's cgroup root with the
// pod's processes in it, and that the kubelet's Stop removes that root.
func TestKubeletUnderSystemdWithPodCgroups(t *testing.T) {
	RequireSystemd(t)
	cp := StartControlPlaneT(t)
	c, sd := StartContainerdUnderSystemdT(t, 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const node = "hw-systemd-podcgroups"
	k, err := StartKubeletUnderSystemdWith(ctx, cp, c, node, UnitKubeletOptions{PodCgroups: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	if k.CgroupRoot == "" {
		t.Fatal("no cgroup root")
	}
	checkKubeletAsOnANode(t, k, c, sd, k.PID())

	uid := runStaticPod(ctx, t, cp, k, "hw-podcg")
	var dir string
	var pids []int
	Eventually(t, time.Minute, "the pod's freezer cgroup with its processes", func() bool {
		dir, pids = PodCgroup(k, "freezer", uid), CgroupPids(k, uid)
		return dir != "" && len(pids) > 0
	}, Every(200*time.Millisecond))
	want := filepath.Join(k.cgroupFS(), "freezer", k.CgroupRoot, "kubepods", "besteffort", "pod"+uid)
	if dir != want {
		t.Errorf("pod cgroup %s, want %s", dir, want)
	}
	t.Logf("pod %s: cgroup %s, processes %v", uid, dir, pids)

	k.Stop()
	left, err := filepath.Glob(filepath.Join(k.cgroupFS(), "*", k.CgroupRoot))
	if err != nil || len(left) > 0 {
		t.Errorf("the kubelet's cgroup root left after Stop: %v %v", left, err)
	}
}

// runStaticPod runs the static pod name on k and returns its UID (the
// mirror pod's config hash, which names its cgroup) once it runs.
func runStaticPod(ctx context.Context, t *testing.T, cp *ControlPlane, k *Kubelet, name string) string {
	t.Helper()
	if err := k.StaticPod(name); err != nil {
		t.Fatal(err)
	}
	mirror := name + "-" + k.Node
	var p *corev1.Pod
	last := "no mirror pod"
	Eventually(t, 2*time.Minute, "static pod "+mirror+" running", func() bool {
		got, err := cp.Admin.CoreV1().Pods("default").Get(ctx, mirror, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false
		}
		p, last = got, string(got.Status.Phase)
		return got.Status.Phase == corev1.PodRunning
	}, Every(200*time.Millisecond), Explaining(func() string { return last + "\n" + k.logTail() }))
	uid := p.Annotations["kubernetes.io/config.hash"]
	if uid == "" || strings.ContainsAny(uid, "/.") {
		t.Fatalf("mirror pod %s: config hash %q", mirror, uid)
	}
	return uid
}
