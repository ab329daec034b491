package containerd

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/systemd"
)

// StartUnderSystemdT starts containerd (FindBinaries) as a
// unit of its own systemd with pods, and stops both when t ends.
func StartUnderSystemdT(t testing.TB, pods, perPod int) (*Containerd, *systemd.Systemd) {
	t.Helper()
	systemd.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	c, sd, err := StartUnderSystemd(ctx, bin)
	if err != nil {
		t.Fatalf("start containerd under systemd: %v", err)
	}
	t.Cleanup(c.Stop)
	if _, err := c.CreatePods(ctx, pods, perPod); err != nil {
		t.Fatalf("create pods: %v\n%s", err, c.logTail())
	}
	return c, sd
}

// StartT starts containerd with pods and stops it when t ends.
func StartT(t testing.TB, pods, perPod int) *Containerd {
	t.Helper()
	harness.RequireRealParts(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := Start(ctx)
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
	harness.RequireRealParts(t)
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		s.c, s.err = Start(ctx)
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
