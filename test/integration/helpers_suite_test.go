// Package integration runs the hangwatch binary against a real containerd
// started by the test harness.
package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/measurements"
)

var (
	hangwatchBin string
	// unitmainBin is test/unitmain: a unit's main process in the repair tests.
	unitmainBin string
	// workDir holds what the package builds once (the binary, the image
	// tarball); TestMain removes it.
	workDir string
	shared  = harness.Shared{Pods: sharedPods, PerPod: sharedPerPod}
)

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

// runTests runs the tests and then stops and removes what the package
// shared between them: the containerd, the control plane, workDir.
func runTests(m *testing.M) int {
	var err error
	workDir, err = os.MkdirTemp("", "hw-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(workDir)
	hangwatchBin = filepath.Join(workDir, "hangwatch")
	build := exec.Command("go", "build", "-tags", harness.BuildTags, "-o", hangwatchBin, "./cmd/hangwatch")
	build.Dir = harness.ModuleRoot()
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build hangwatch: %v\n%s", err, out)
		return 1
	}
	unitmainBin = filepath.Join(workDir, "unitmain")
	build = exec.Command("go", "build", "-o", unitmainBin, "./test/unitmain")
	build.Dir = harness.ModuleRoot()
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build unitmain: %v\n%s", err, out)
		return 1
	}
	defer stopControlPlane()
	defer shared.Stop()
	// The tests run side by side, and some hold a process in D on purpose
	// (harness.StuckDir): the kernel would report one held past its
	// hung-task timeout (120 s) to every hangwatch then reading /dev/kmsg,
	// and raise KernelDeadlock on other tests' nodes. The tests that want
	// the kernel's own line set the timeout themselves.
	if restore, err := harness.SetHungTaskTimeout(quietHungTaskTimeout); err == nil {
		defer restore()
	} else {
		fmt.Fprintf(os.Stderr, "the kernel's hung-task timeout left as it is: %v\n", err)
	}
	return m.Run()
}

// Pods and containers in the shared containerd: 10 pods of 2 containers.
const (
	sharedPods    = 10
	sharedPerPod  = 2
	sharedCtrs    = sharedPods * sharedPerPod
	probeTimeout  = 2 * time.Second
	generousSlack = 5 * time.Second // shared 2-core machines: bounds are loose, numbers are logged
	// quietHungTaskTimeout is the kernel's hung-task timeout while the
	// package runs: longer than any test holds a process in D.
	quietHungTaskTimeout = 900
)

// sharedContainerd is one containerd with 20 running containers for the
// package, used by one test at a time (harness.LaneSharedContainerd);
// tests that freeze it thaw it before they end.
func sharedContainerd(t *testing.T) *harness.Containerd {
	t.Helper()
	harness.RequireLane(t, harness.LaneSharedContainerd)
	return shared.Get(t)
}

// ownContainerd is a containerd of the test's own with the shared one's 20
// running containers: for a test that freezes its runtime for long
// while the others run beside it.
func ownContainerd(t *testing.T) *harness.Containerd {
	t.Helper()
	return harness.StartContainerdT(t, sharedPods, sharedPerPod)
}

// freezable is a runtime the tests stop with SIGSTOP: containerd or CRI-O.
type freezable interface {
	Freeze() error
	Thaw() error
}

// freeze stops the runtime until the test ends (or thaw is called).
func freeze(t *testing.T, c freezable) (thaw func()) {
	t.Helper()
	if err := c.Freeze(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	thaw = func() {
		once.Do(func() {
			if err := c.Thaw(); err != nil {
				t.Errorf("thaw: %v", err)
			}
		})
	}
	t.Cleanup(thaw)
	return thaw
}

// measure records a duration in seconds (package measurements: a MEASURE
// line in the log, a JSON line in $HANGWATCH_MEASUREMENTS).
func measure(t *testing.T, name string, d time.Duration) {
	t.Helper()
	measurements.Duration(t, name, d)
}
