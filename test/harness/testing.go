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
		t.Fatalf("create pods: %v\ncontainerd log:\n%s", err, c.logTail())
	}
	return c
}
