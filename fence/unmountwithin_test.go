package fence

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestUnmountPodStuckReturnsWithinItsDeadline: an unmount that never
// returns (a dead NFS server) makes UnmountPod impossible when its
// context's deadline passes; a second fence while it is still stuck starts
// no second unmount of that mount point; once the kernel returns, the
// next fence unmounts again.
func TestUnmountPodStuckReturnsWithinItsDeadline(t *testing.T) {
	m := fakeMounts(t)
	stuck := make(chan struct{})
	var calls atomic.Int32
	m.Unmount = func(target string) error {
		if strings.HasSuffix(target, "/deeper") {
			calls.Add(1)
			<-stuck
		}
		return nil
	}
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		start := time.Now()
		done, err := m.UnmountPod(ctx, podUID)
		cancel()
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("UnmountPod took %v; want about its 200ms deadline", took)
		}
		if !errors.Is(err, ErrImpossible) || !strings.Contains(err.Error(), wantMounts[0]) || len(done) != 0 {
			t.Fatalf("UnmountPod = %v, %v; want ErrImpossible naming %s", done, err, wantMounts[0])
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d unmounts of the stuck mount point started; want 1", n)
	}
	close(stuck)
	done, err := m.UnmountPod(context.Background(), podUID)
	if err != nil || len(done) != len(wantMounts) || calls.Load() != 2 {
		t.Errorf("after the kernel returned: UnmountPod = %v, %v after %d calls", done, err, calls.Load())
	}
}

// TestUnmountPodCancelledIsNotImpossible: a cancelled context (the agent
// stopping) proves nothing about the mount: an error, not ErrImpossible.
func TestUnmountPodCancelledIsNotImpossible(t *testing.T) {
	m := fakeMounts(t)
	stuck := make(chan struct{})
	defer close(stuck)
	m.Unmount = func(string) error { <-stuck; return nil }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.UnmountPod(ctx, podUID)
	if err == nil || errors.Is(err, ErrImpossible) {
		t.Fatalf("UnmountPod error = %v; want a cancellation, not ErrImpossible", err)
	}
}
