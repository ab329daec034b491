package harness

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"
)

// RequireRealParts skips a test that needs root and the real packages when
// they are missing, except under CI, where a missing part is a failure.
func RequireRealParts(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("real-containerd tests need root; run the README's test command as root")
	}
	t.Skip("real-containerd tests need root (run the README's test command)")
}

// RequireSystemd skips a test that runs systemd (StartSystemd) where it
// cannot: not root, or no systemd or util-linux. Under CI, where the test
// command installs Debian's systemd, either is a failure.
func RequireSystemd(t testing.TB) {
	t.Helper()
	RequireRealParts(t)
	if err := RequireSystemdParts(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("systemd tests need systemd and util-linux (hack/lib.sh installs them): %v", err)
		}
		t.Skipf("systemd tests need systemd and util-linux: %v", err)
	}
}

// StartContainerdUnderSystemdT starts containerd (ContainerdBinaries) as a
// unit of its own systemd with pods, and stops both when t ends.
func StartContainerdUnderSystemdT(t testing.TB, pods, perPod int) (*Containerd, *Systemd) {
	t.Helper()
	RequireSystemd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := ContainerdBinaries()
	if err != nil {
		t.Fatal(err)
	}
	c, sd, err := StartContainerdUnderSystemd(ctx, bin)
	if err != nil {
		t.Fatalf("start containerd under systemd: %v", err)
	}
	t.Cleanup(c.Stop)
	if _, err := c.CreatePods(ctx, pods, perPod); err != nil {
		t.Fatalf("create pods: %v\n%s", err, c.logTail())
	}
	return c, sd
}

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

// StartContainerdT starts containerd with pods and stops it when t ends.
func StartContainerdT(t testing.TB, pods, perPod int) *Containerd {
	t.Helper()
	RequireRealParts(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := StartContainerd(ctx)
	if err != nil {
		t.Fatalf("start containerd: %v", err)
	}
	t.Cleanup(c.Stop)
	if _, err := c.CreatePods(ctx, pods, perPod); err != nil {
		t.Fatalf("create pods: %v\n%s", err, c.logTail())
	}
	return c
}

// Shared is one containerd with Pods pods of PerPod containers, started on
// first use and kept for the whole test binary; call Stop from TestMain.
type Shared struct {
	Pods, PerPod int
	once         sync.Once
	c            *Containerd
	err          error
}

// Get starts the shared containerd once and returns it.
func (s *Shared) Get(t testing.TB) *Containerd {
	t.Helper()
	RequireRealParts(t)
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		s.c, s.err = StartContainerd(ctx)
		if s.err == nil {
			_, s.err = s.c.CreatePods(ctx, s.Pods, s.PerPod)
		}
	})
	if s.err != nil {
		t.Fatalf("start containerd with %d pods of %d containers: %v", s.Pods, s.PerPod, s.err)
	}
	return s.c
}

// Stop stops the shared containerd if it was started.
func (s *Shared) Stop() {
	if s.c != nil {
		s.c.Stop()
	}
}

// StartControlPlaneT starts etcd and kube-apiserver and stops them when t
// ends.
func StartControlPlaneT(t testing.TB) *ControlPlane {
	t.Helper()
	RequireRealParts(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err := StartControlPlane(ctx)
	if err != nil {
		t.Fatalf("start control plane: %v", err)
	}
	t.Cleanup(cp.Stop)
	return cp
}

// StartInBackground runs start on a goroutine of its own, with limit to
// start in, and stops what it started when t ends; started waits for the
// start and returns what it started, failing the test (what: the error's
// prefix) if it did not.
func StartInBackground[T any](t testing.TB, what string, limit time.Duration, start func(context.Context) (T, error), stop func(T)) (started func() T) {
	var part T
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		part, err = start(ctx)
	}()
	t.Cleanup(func() {
		<-done
		if err == nil {
			stop(part)
		}
	})
	return func() T {
		t.Helper()
		<-done
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return part
	}
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

// StartControllerManagerT starts the node lifecycle controller, and the
// controllers named in more, against cp and stops it when t ends.
func StartControllerManagerT(t testing.TB, cp *ControlPlane, more ...string) *ControllerManager {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cm, err := StartControllerManager(ctx, cp, more...)
	if err != nil {
		t.Fatalf("start kube-controller-manager: %v", err)
	}
	t.Cleanup(cm.Stop)
	return cm
}

// StartSchedulerT starts kube-scheduler against cp and stops it when t ends.
func StartSchedulerT(t testing.TB, cp *ControlPlane) *Scheduler {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := StartScheduler(ctx, cp)
	if err != nil {
		t.Fatalf("start kube-scheduler: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}
