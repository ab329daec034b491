package agent

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/hangwatch/hangwatch/internal/memlimit"
)

// TestMemoryLimitFromTheCgroup: without GOMEMLIMIT the daemon's Go memory
// limit is 80% of its cgroup's; with it, or with no cgroup limit, it is
// left as it is.
func TestMemoryLimitFromTheCgroup(t *testing.T) {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		t.Skip("GOMEMLIMIT is set in the test's environment")
	}
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "memory.max"), []byte("134217728\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(t.TempDir(), "cgroup")
	if err := os.WriteFile(self, []byte("0::/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := setMemoryLimit(memlimit.Files{Root: root, Self: self}), int64(128<<20)/100*80; got != want || debug.SetMemoryLimit(-1) != want {
		t.Fatalf("limit = %d (runtime %d), want 80%% of 128 MiB, %d", got, debug.SetMemoryLimit(-1), want)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if got := setMemoryLimit(memlimit.Files{Root: t.TempDir(), Self: self}); got != math.MaxInt64 {
		t.Fatalf("with no cgroup limit: %d, want none", got)
	}
	t.Setenv("GOMEMLIMIT", "100MiB") // read by the runtime at start only: here it stands for one set there
	debug.SetMemoryLimit(100 << 20)
	if got := setMemoryLimit(memlimit.Files{Root: root, Self: self}); got != 100<<20 {
		t.Fatalf("with GOMEMLIMIT set: %d, want it left at 100 MiB", got)
	}
}
