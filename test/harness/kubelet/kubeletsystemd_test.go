package kubelet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/systemd"
)

// TestSystemdRestartsAFrozenKubelet runs a kubelet as kubeadm's unit runs
// it (Restart=always, RestartSec=10) beside containerd under the harness's
// systemd, with a static pod, freezes it (SIGSTOP), checks that its
// /healthz stops answering, kills its main process through systemd's
// D-Bus API as a repair would, and checks that systemd starts a new
// kubelet which answers again, renews the node's Lease and leaves the
// pod's container running.
func TestSystemdRestartsAFrozenKubelet(t *testing.T) {
	systemd.Require(t)
	asOnAFreshMachine(t)
	cp := harness.StartControlPlaneT(t)
	c, sd := containerd.StartUnderSystemdT(t, 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const node = "hw-systemd-kubelet"
	start := time.Now()
	k, err := StartUnderSystemd(ctx, cp, c, node)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	pid0 := k.PID()
	t.Logf("kubelet %d under systemd %d: node Ready in %v", pid0, sd.PID(), time.Since(start).Round(time.Millisecond))
	checkKubeletAsOnANode(t, k, c, sd, pid0)

	// A pod runs.
	const podName = "hw-static"
	if err := k.StaticPod(podName); err != nil {
		t.Fatal(err)
	}
	mirror := podName + "-" + node
	var last string
	harness.Eventually(t, 2*time.Minute, "static pod "+mirror+" running", func() bool {
		p, err := cp.Admin.CoreV1().Pods("default").Get(ctx, mirror, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("phase %s, containers %v", p.Status.Phase, p.Status.ContainerStatuses)
		running := len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
		return p.Status.Phase == corev1.PodRunning && running
	}, harness.Every(200*time.Millisecond), harness.Explaining(func() string { return last }))
	containers := harness.RunningContainers(ctx, t, c.Runtime())
	if len(containers) != 1 {
		t.Fatalf("running containers %v, want the static pod's one", containers)
	}

	// The kubelet makes its Lease a while after the Node (its lease
	// controller backs off while the Node is not there yet).
	harness.Eventually(t, 2*time.Minute, "the node's Lease", func() bool { return !leaseRenewTime(ctx, t, cp, node).IsZero() },
		harness.Every(200*time.Millisecond))

	// Frozen, the kubelet's /healthz accepts connections (the kernel
	// does) and never answers.
	if err := k.Freeze(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Thaw() })
	if err := harness.WaitStopped(ctx, pid0, true); err != nil {
		t.Fatal(err)
	}
	asked := time.Now()
	err = healthz(ctx, k.HealthzURL())
	var netErr net.Error
	if !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Fatalf("frozen kubelet's /healthz: %v, want a timeout", err)
	}
	t.Logf("frozen kubelet's /healthz: no answer in %v (%v)", time.Since(asked).Round(time.Millisecond), err)
	renewed0 := leaseRenewTime(ctx, t, cp, node) // its last renewal before the freeze

	// Kill it as a repair does, through systemd: the SIGKILL reaches a
	// stopped process. systemd starts a new one RestartSec later.
	killed := time.Now()
	if err := sd.Conn().KillUnitWithTarget(ctx, KubeletUnit, sddbus.Main, int32(syscall.SIGKILL)); err != nil {
		t.Fatal(err)
	}
	pid1, err := sd.WaitMainPIDChange(ctx, KubeletUnit, pid0)
	if err != nil {
		t.Fatalf("%v\n%s", err, k.logTail())
	}
	restarted := time.Since(killed)
	if err := syscall.Kill(pid0, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("killed kubelet %d still there: %v", pid0, err)
	}
	if got := k.PID(); got != pid1 {
		t.Errorf("PID() = %d, want the new main PID %d", got, pid1)
	}
	prop, err := sd.Conn().GetServicePropertyContext(ctx, KubeletUnit, "NRestarts")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := prop.Value.Value().(uint32); n != 1 {
		t.Errorf("NRestarts = %v, want 1", prop.Value)
	}

	var lastErr error
	harness.Eventually(t, 2*time.Minute, "the new kubelet's /healthz", func() bool {
		lastErr = healthz(ctx, k.HealthzURL())
		return lastErr == nil
	}, harness.Explaining(func() string { return fmt.Sprint(lastErr) }))
	answered := time.Since(killed)
	var renewed1 time.Time
	harness.Eventually(t, 2*time.Minute, "the Lease renewed", func() bool {
		renewed1 = leaseRenewTime(ctx, t, cp, node)
		return renewed1.After(renewed0)
	}, harness.Explaining(func() string { return fmt.Sprintf("renewTime %v", renewed1) }))
	leased := time.Since(killed)
	t.Logf("kubelet %d killed through D-Bus: systemd started %d in %v, /healthz answered in %v, Lease renewed in %v (renewTime %v -> %v)",
		pid0, pid1, restarted.Round(time.Millisecond), answered.Round(time.Millisecond), leased.Round(time.Millisecond),
		renewed0.Format(time.RFC3339Nano), renewed1.Format(time.RFC3339Nano))

	harness.Eventually(t, 2*time.Minute, "node Ready", func() bool { ready, msg := k.Ready(ctx, cp); last = msg; return ready },
		harness.Every(200*time.Millisecond), harness.Explaining(func() string { return last }))
	if after := harness.RunningContainers(ctx, t, c.Runtime()); !slices.Equal(after, containers) {
		t.Errorf("running containers after the restart %v, want %v", after, containers)
	}

	harness.CheckFreezeThaw(ctx, t, pid1, k.Freeze, k.Thaw) // they follow the new main process

	// Stop stops the unit, not systemd, and removes the kubelet's dir.
	k.Stop()
	if st, err := sd.ActiveState(ctx, KubeletUnit); err != nil || st != "inactive" {
		t.Errorf("after Stop %s is %q (%v), want inactive", KubeletUnit, st, err)
	}
	if err := syscall.Kill(pid1, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kubelet %d still there after Stop: %v", pid1, err)
	}
	if _, err := os.Stat(k.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("kubelet's dir %s left: %v", k.Dir, err)
	}
	if st, err := sd.ActiveState(ctx, containerd.Unit); err != nil || st != "active" {
		t.Errorf("after the kubelet's Stop %s is %q (%v), want active", containerd.Unit, st, err)
	}
}

// checkKubeletAsOnANode checks that the kubelet pid is the harness's
// kubelet binary run by the unit, in the PID and mount namespace of
// systemd and containerd, in the unit's cgroup in name=systemd and in the
// test's own cgroups of the controllers.
func checkKubeletAsOnANode(t *testing.T, k *Kubelet, c *containerd.Containerd, sd *systemd.Systemd, pid int) {
	t.Helper()
	bin, err := harness.KubeBinary("kubelet")
	if err != nil {
		t.Fatal(err)
	}
	if bin, err = filepath.Abs(bin); err != nil {
		t.Fatal(err)
	}
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); exe != bin {
		t.Errorf("main PID %d is %q, not %s", pid, exe, bin)
	}
	for _, ns := range []string{"mnt", "pid"} {
		kubelet, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
		systemd, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", sd.PID(), ns))
		containerd, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", c.PID(), ns))
		if kubelet == "" || kubelet != systemd || kubelet != containerd {
			t.Errorf("%s namespace: kubelet %q, systemd %q, containerd %q", ns, kubelet, systemd, containerd)
		}
	}
	kubelet, test := procCgroups(t, pid), procCgroups(t, os.Getpid())
	if got := kubelet["name=systemd"]; got != "" && !strings.HasSuffix(got, "/"+sd.CgroupRoot()+"/system.slice/"+KubeletUnit) {
		t.Errorf("kubelet in name=systemd cgroup %s", got)
	}
	for h, cg := range test {
		// systemd's own cgroup root is in name=systemd and the unified
		// hierarchy (""); the controllers' hierarchies are the test's.
		if h != "name=systemd" && h != "" && kubelet[h] != cg {
			t.Errorf("kubelet in %s cgroup %q, the test in %q", h, kubelet[h], cg)
		}
	}
	if _, err := os.Stat(filepath.Join(k.Dir, "root", "pods")); err != nil {
		t.Errorf("the kubelet's root dir on the host: %v", err)
	}
	t.Logf("kubelet %d cgroups: %v", pid, kubelet)
}

// procCgroups maps the controllers of pid's cgroups (or name=systemd, or
// "" for the unified hierarchy) to its cgroup in each.
func procCgroups(t *testing.T, pid int) map[string]string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if f := strings.SplitN(line, ":", 3); len(f) == 3 {
			out[f[1]] = f[2]
		}
	}
	return out
}

// healthz asks url once with a 2s timeout and wants 200.
func healthz(ctx context.Context, url string) error {
	code, body, err := harness.Get(url, harness.Within(ctx), harness.Timeout(2*time.Second))
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("%s: %d %s", url, code, harness.FirstLine(body))
	}
	return nil
}

// leaseRenewTime is the node's Lease's renewTime, zero while it has none.
func leaseRenewTime(ctx context.Context, t *testing.T, cp *harness.ControlPlane, node string) time.Time {
	t.Helper()
	l, err := cp.Admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, node, metav1.GetOptions{})
	if err != nil || l.Spec.RenewTime == nil {
		return time.Time{}
	}
	return l.Spec.RenewTime.Time
}

// asOnAFreshMachine sets the kernel settings a kubelet changes to a new
// machine's values (FreshMachineSysctls), where a kubelet under the test's
// systemd failed to start ("open /proc/sys/vm/overcommit_memory:
// read-only file system"), and puts back the values it found when the
// test ends.
func asOnAFreshMachine(t *testing.T) {
	t.Helper()
	unlock, err := lockSysctls(true) // no other test binary's kubelet under systemd meanwhile
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unlock)
	before, err := ReadSysctls(KubeletSysctls)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := WriteSysctls(before); err != nil {
			t.Errorf("put back the kernel settings: %v", err)
		}
	})
	if err := WriteSysctls(FreshMachineSysctls); err != nil {
		t.Fatal(err)
	}
}
