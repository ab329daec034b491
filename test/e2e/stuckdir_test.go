package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/stuckdir"
)

// TestStuckDirHungTaskReported lowers the kernel's hung-task timeout to 3 s
// for a few seconds: any task then blocked that long is reported, and a
// containerd caught in a slow fsync would raise KernelDeadlock in tests
// running beside it. So it is in the e2e suite (hack/e2e.sh --ladder).
func TestStuckDirHungTaskReported(t *testing.T) {
	stuckdir.RequireFUSE(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kmsg, err := os.Open("/dev/kmsg")
	if err != nil {
		t.Skipf("no kernel log: %v", err)
	}
	defer func() { _ = kmsg.Close() }()
	if _, err := kmsg.Seek(0, io.SeekEnd); err != nil {
		t.Fatalf("seek /dev/kmsg to its end: %v", err)
	}
	restore, err := harness.SetHungTaskTimeout(3)
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	s, err := stuckdir.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	pid, err := s.HoldInD(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	want := fmt.Sprintf("task mkdir:%d blocked for more than 3 seconds", pid)
	line, err := waitKmsg(ctx, kmsg, want)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v after D: %s", time.Since(start), line)
}

// waitKmsg reads kernel log records from f until one contains want, or
// ctx ends.
func waitKmsg(ctx context.Context, f *os.File, want string) (string, error) {
	if deadline, ok := ctx.Deadline(); ok {
		if err := f.SetReadDeadline(deadline); err != nil {
			return "", fmt.Errorf("deadline on /dev/kmsg: %w", err)
		}
	}
	buf := make([]byte, 16<<10) // a read returns one whole record
	for {
		n, err := f.Read(buf)
		if errors.Is(err, syscall.EPIPE) {
			continue // records overwritten before we read them
		}
		if err != nil {
			return "", fmt.Errorf("no %q in the kernel log: %w", want, err)
		}
		if rec := string(buf[:n]); strings.Contains(rec, want) {
			_, msg, _ := strings.Cut(rec, ";")
			return strings.TrimSpace(msg), nil
		}
	}
}
