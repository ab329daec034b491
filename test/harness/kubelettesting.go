package harness

import (
	"context"
	"testing"
	"time"
)

// StartSystemdDriverNodeT starts, for node, containerd with runc's systemd
// cgroup driver under a systemd with cgroups of its own and a kubelet as
// its unit with pod cgroups and cgroupDriver systemd, as most production
// nodes run them (StartKubeletUnderSystemdWith), and stops them when t
// ends.
func StartSystemdDriverNodeT(t testing.TB, cp *ControlPlane, node string) (*Containerd, *Kubelet) {
	t.Helper()
	RequireSystemd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := ContainerdBinaries()
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := StartContainerdUnderSystemdWith(ctx, bin, true)
	if err != nil {
		t.Fatalf("start containerd with the systemd cgroup driver under systemd: %v", err)
	}
	t.Cleanup(c.Stop)
	k, err := StartKubeletUnderSystemdWith(ctx, cp, c, node, UnitKubeletOptions{PodCgroups: true, CgroupDriver: "systemd"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	return c, k
}

// StartKubeletT starts a kubelet for node against c and cp, and stops it
// when t ends.
func StartKubeletT(t testing.TB, cp *ControlPlane, c NodeRuntime, node string) *Kubelet {
	t.Helper()
	return StartKubeletViaT(t, cp, c, c.Where().Endpoint, node)
}

// StartKubeletViaT starts a kubelet whose CRI endpoint is runtimeEndpoint
// and stops it when t ends.
func StartKubeletViaT(t testing.TB, cp *ControlPlane, c NodeRuntime, runtimeEndpoint, node string) *Kubelet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	k, err := StartKubeletVia(ctx, cp, c, runtimeEndpoint, node)
	if err != nil {
		t.Fatalf("start kubelet: %v", err)
	}
	t.Cleanup(k.Stop)
	return k
}
