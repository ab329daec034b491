package kubelet

import (
	"context"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/systemd"
)

// StartSystemdDriverNodeT starts, for node, containerd with runc's systemd
// cgroup driver under a systemd with cgroups of its own and a kubelet as
// its unit with pod cgroups and cgroupDriver systemd, as most production
// nodes run them (StartUnderSystemdWith), and stops them when t
// ends.
func StartSystemdDriverNodeT(t testing.TB, cp *harness.ControlPlane, node string) (*containerd.Containerd, *Kubelet) {
	t.Helper()
	systemd.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := containerd.FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := containerd.StartUnderSystemdWith(ctx, bin, true)
	if err != nil {
		t.Fatalf("start containerd with the systemd cgroup driver under systemd: %v", err)
	}
	t.Cleanup(c.Stop)
	k, err := StartUnderSystemdWith(ctx, cp, c, node, UnitOptions{PodCgroups: true, CgroupDriver: "systemd"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	return c, k
}

// StartT starts a kubelet for node against c and cp, and stops it
// when t ends.
func StartT(t testing.TB, cp *harness.ControlPlane, c NodeRuntime, node string) *Kubelet {
	t.Helper()
	return StartViaT(t, cp, c, c.Where().Endpoint, node)
}

// StartViaT starts a kubelet whose CRI endpoint is runtimeEndpoint
// and stops it when t ends.
func StartViaT(t testing.TB, cp *harness.ControlPlane, c NodeRuntime, runtimeEndpoint, node string) *Kubelet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	k, err := StartVia(ctx, cp, c, runtimeEndpoint, node)
	if err != nil {
		t.Fatalf("start kubelet: %v", err)
	}
	t.Cleanup(k.Stop)
	return k
}
