package harness

import (
	"context"
	"os"
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
