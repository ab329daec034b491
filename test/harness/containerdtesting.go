package harness

import (
	"context"
	"sync"
	"testing"
	"time"
)

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
