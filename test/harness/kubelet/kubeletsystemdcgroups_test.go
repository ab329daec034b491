package kubelet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/systemd"
)

// TestKubeletUnderSystemdWithPodCgroups runs a kubelet under the test's
// systemd with pod cgroups (the cgroupfs driver), runs a static pod on it,
// checks that the pod's cgroup is under the kubelet's cgroup root with the
// pod's processes in it, and that the kubelet's Stop removes that root.
func TestKubeletUnderSystemdWithPodCgroups(t *testing.T) {
	systemd.Require(t)
	cp := harness.StartControlPlaneT(t)
	c, sd := containerd.StartUnderSystemdT(t, 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const node = "hw-systemd-podcgroups"
	k, err := StartUnderSystemdWith(ctx, cp, c, node, UnitOptions{PodCgroups: true})
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
	harness.Eventually(t, time.Minute, "the pod's freezer cgroup with its processes", func() bool {
		dir, pids = PodCgroup(k, "freezer", uid), CgroupPids(k, uid)
		return dir != "" && len(pids) > 0
	}, harness.Every(200*time.Millisecond))
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
func runStaticPod(ctx context.Context, t *testing.T, cp *harness.ControlPlane, k *Kubelet, name string) string {
	t.Helper()
	if err := k.StaticPod(name); err != nil {
		t.Fatal(err)
	}
	mirror := name + "-" + k.Node
	var p *corev1.Pod
	last := "no mirror pod"
	harness.Eventually(t, 2*time.Minute, "static pod "+mirror+" running", func() bool {
		got, err := cp.Admin.CoreV1().Pods("default").Get(ctx, mirror, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false
		}
		p, last = got, string(got.Status.Phase)
		return got.Status.Phase == corev1.PodRunning
	}, harness.Every(200*time.Millisecond), harness.Explaining(func() string { return last + "\n" + k.logTail() }))
	uid := p.Annotations["kubernetes.io/config.hash"]
	if uid == "" || strings.ContainsAny(uid, "/.") {
		t.Fatalf("mirror pod %s: config hash %q", mirror, uid)
	}
	return uid
}

// TestKubeletWithTheSystemdCgroupDriver runs a kubelet with cgroupDriver
// systemd and pod cgroups, and containerd with runc's systemd driver,
// under a systemd with cgroups of its own, runs a static pod and checks
// that its slice is where a node has it (kubepods.slice/
// kubepods-besteffort.slice/kubepods-besteffort-pod<uid>.slice at the root
// of systemd's cgroups, in every hierarchy, the freezer's included) with
// the pod's processes in it, and that stopping it all leaves no cgroup of
// that systemd on the host.
func TestKubeletWithTheSystemdCgroupDriver(t *testing.T) {
	systemd.Require(t)
	cp := harness.StartControlPlaneT(t)
	c, k := StartSystemdDriverNodeT(t, cp, "hw-systemd-driver")
	sd := c.Systemd()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	uid := runStaticPod(ctx, t, cp, k, "hw-sdcg")

	slice := filepath.Join("kubepods.slice", "kubepods-besteffort.slice", "kubepods-besteffort-pod"+uid+".slice")
	var pids []int
	harness.Eventually(t, time.Minute, "the pod's processes in its slice", func() bool {
		pids = CgroupPids(k, uid)
		return len(pids) > 0
	}, harness.Every(200*time.Millisecond))
	if got, want := PodCgroup(k, "freezer", uid), filepath.Join(k.cgroupFS(), "freezer", slice); got != want {
		t.Errorf("pod cgroup %s, want %s", got, want)
	}
	for _, h := range []string{"systemd", "memory", "cpu", "pids", "freezer"} {
		if PodCgroup(k, h, uid) == "" {
			t.Errorf("no slice of pod %s in %s", uid, h)
		}
	}
	for _, pid := range pids {
		cg := procCgroups(t, pid)["freezer"] // as the host sees it
		if want := "/" + sd.CgroupRoot() + "/" + slice + "/"; !strings.HasPrefix(cg, want) {
			t.Errorf("pod process %d in freezer cgroup %s, want under %s", pid, cg, want)
		}
	}
	t.Logf("pod %s: slice %s, processes %v", uid, slice, pids)

	k.Stop()
	c.Stop()
	for h, cg := range procCgroups(t, os.Getpid()) { // systemd's are below the test's
		dir := strings.TrimPrefix(h, "name=")
		if h == "" {
			dir = "unified"
		}
		if _, err := os.Stat(filepath.Join(cgroupFS, dir, cg, sd.CgroupRoot())); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("systemd's cgroup in %s left after its Stop: %v", dir, err)
		}
	}
}
