package cluster

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
)

// What the installs suite does to node A's runtime: its main process, its
// age, a restart, and a start that wedges.

// RuntimePID is A's containerd's main PID as its systemd has it.
func (in *Installs) RuntimePID(t *testing.T) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pid, err := in.SD.MainPID(ctx, containerd.Unit)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// WaitRestarted waits until systemd runs another containerd than pid0.
func (in *Installs) WaitRestarted(t *testing.T, pid0 int) {
	t.Helper()
	harness.Eventually(t, 2*time.Minute, "systemd to start a new containerd on A", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		pid, err := in.SD.MainPID(ctx, containerd.Unit)
		return err == nil && pid != 0 && pid != pid0
	})
	in.runtimeStarted = time.Now()
}

// WaitRuntimeOldEnough waits until A's containerd is old enough for
// repair to restart it 20 s from now: repair never kills a main process
// younger than 3 waits (3 × restartRuntimeAfter, 20 s as shipped).
func (in *Installs) WaitRuntimeOldEnough(t *testing.T) {
	t.Helper()
	harness.Eventually(t, 2*time.Minute, "A's containerd to be 45 s old", func() bool { return time.Since(in.runtimeStarted) > 45*time.Second })
}

// PodsOn is each of node's pods (every namespace) by name: its UID and
// restart count.
func (in *Installs) PodsOn(t *testing.T, node string) map[string]string {
	t.Helper()
	list, err := in.CP.Admin.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range list.Items {
		restarts := int32(0)
		for _, c := range p.Status.ContainerStatuses {
			restarts += c.RestartCount
		}
		out[p.Namespace+"/"+p.Name] = fmt.Sprintf("uid %s, %d restarts, deleting %v", p.UID, restarts, p.DeletionTimestamp != nil)
	}
	return out
}

// WedgeRuntimeStarts makes every later start of A's containerd wedge
// before it serves (a drop-in whose ExecStartPre stops itself): a hang no
// restart cures.
func (in *Installs) WedgeRuntimeStarts(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := in.SD.SetDropIn(ctx, containerd.Unit, wedgeDropIn, "[Service]\nExecStartPre=/bin/sh -c 'kill -STOP $$$$'\n"); err != nil {
		t.Fatal(err)
	}
}

const wedgeDropIn = "50-wedge.conf"

// UnwedgeRuntime lets A's containerd start again: the drop-in removed,
// its wedged ExecStartPre continued, and containerd serving.
func (in *Installs) UnwedgeRuntime(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := in.SD.RemoveDropIn(ctx, containerd.Unit, wedgeDropIn); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, time.Minute, "A's containerd started again", func() bool {
		if pid, err := in.SD.ControlPID(ctx, containerd.Unit); err == nil && pid != 0 {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
		pid, err := in.SD.MainPID(ctx, containerd.Unit)
		return err == nil && pid != 0
	})
	if err := in.SD.WaitActive(ctx, containerd.Unit); err != nil {
		t.Fatal(err)
	}
}
