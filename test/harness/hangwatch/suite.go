package hangwatch

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
)

// The suites are packages: test/integration holds the correctness tests
// (./hack/test.sh, the README's test command), test/e2e the scenarios that
// take minutes (./hack/e2e.sh), test/bench the benchmarks (./hack/bench.sh).
// Each has a TestMain that calls Main. docs/testing.md says what each holds.

// SuiteEnv names the suite a run asks for on purpose: the e2e and bench
// packages run their tests only when it is theirs (HANGWATCH_SUITE=e2e or
// bench, which hack/e2e.sh and hack/bench.sh set).
const SuiteEnv = "HANGWATCH_SUITE"

// SuiteOptions are what a suite's TestMain asks of Main.
type SuiteOptions struct {
	// Name is the suite: its package's name ("integration", "e2e",
	// "bench").
	Name string
	// OnPurpose runs the tests only when SuiteEnv names the suite;
	// otherwise Main prints how to run them and exits 0, so a developer's
	// go test ./... does not start an hour of scenarios.
	OnPurpose bool
	// Run is the script that runs the suite, named in that line.
	Run string
	// Lanes makes the shared containerd a lane (LaneSharedContainerd):
	// a test takes it only with its turn. For the suite whose tests run
	// side by side (harness.Parallel); the others run one at a time.
	Lanes bool
	// QuietHungTasks raises the kernel's hung-task timeout while the
	// suite runs (quietHungTaskTimeout).
	QuietHungTasks bool
}

var (
	// HangwatchBin is the hangwatch binary Main builds for the package.
	HangwatchBin string
	// UnitmainBin is test/unitmain: a unit's main process in the repair tests.
	UnitmainBin string
	// workDir holds what the package builds once (the binaries, the image
	// tarball); Main removes it.
	workDir string
	// suite is the running package's options.
	suite         SuiteOptions
	sharedRuntime = containerd.Shared{Pods: SharedPods, PerPod: SharedPerPod}
)

// Pods and containers in the shared containerd: 10 pods of 2 containers.
const (
	SharedPods    = 10
	SharedPerPod  = 2
	SharedCtrs    = SharedPods * SharedPerPod
	ProbeTimeout  = 2 * time.Second
	GenerousSlack = 5 * time.Second // shared 2-core machines: bounds are loose, numbers are logged
	// quietHungTaskTimeout is the kernel's hung-task timeout while the
	// integration suite runs: longer than any test holds a process in D.
	quietHungTaskTimeout = 900
)

// Main runs a suite package's tests, for its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(hangwatch.Main(m, hangwatch.SuiteOptions{...})) }
//
// It builds hangwatch and test/unitmain once for the package, runs the
// tests, then stops and removes what they shared: the containerd, the
// control plane, the binaries. It returns the exit code.
func Main(m *testing.M, o SuiteOptions) int {
	suite = o
	if o.OnPurpose && os.Getenv(SuiteEnv) != o.Name {
		fmt.Printf("the %s suite runs only when asked: %s=%s go test ./test/%s/ (or %s; docs/testing.md)\n",
			o.Name, SuiteEnv, o.Name, o.Name, o.Run)
		return 0
	}
	var err error
	workDir, err = os.MkdirTemp("", "hw-"+o.Name+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(workDir)
	HangwatchBin = filepath.Join(workDir, "hangwatch")
	if err := goBuild(HangwatchBin, "./cmd/hangwatch"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	UnitmainBin = filepath.Join(workDir, "unitmain")
	if err := goBuild(UnitmainBin, "./test/unitmain"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stopSharedControlPlane()
	defer sharedRuntime.Stop()
	if o.QuietHungTasks {
		// The tests run side by side, and some hold a process in D on
		// purpose (StuckDir): the kernel would report one held past its
		// hung-task timeout (120 s) to every hangwatch then reading
		// /dev/kmsg, and raise KernelDeadlock on other tests' nodes. The
		// tests that want the kernel's own line (the e2e suite) set the
		// timeout themselves.
		if restore, err := harness.SetHungTaskTimeout(quietHungTaskTimeout); err == nil {
			defer restore()
		} else {
			fmt.Fprintf(os.Stderr, "the kernel's hung-task timeout left as it is: %v\n", err)
		}
	}
	return m.Run()
}

// goBuild builds the module's package pkg into out as hack/lib.sh's
// build_hangwatch builds hangwatch: static, -trimpath, hangwatch's build
// tags and compiler flags. The binaries the tests run are the shipped
// build, and they reuse the compiles of the test command's `go build`
// step (only the link differs: no version stamps).
func goBuild(out, pkg string) error {
	return harness.GoBuild(harness.ModuleRoot(), out, pkg, "-tags", harness.BuildTags)
}

// SharedContainerd is one containerd with 20 running containers for the
// package; tests that freeze it thaw it before they end. In a suite of
// lanes (SuiteOptions.Lanes) one test uses it at a time
// (LaneSharedContainerd).
func SharedContainerd(t *testing.T) *containerd.Containerd {
	t.Helper()
	if suite.Lanes {
		harness.RequireLane(t, harness.LaneSharedContainerd)
	}
	return sharedRuntime.Get(t)
}

// OwnContainerd is a containerd of the test's own with the shared one's 20
// running containers: for a test that freezes its runtime for long
// while the others run beside it.
func OwnContainerd(t *testing.T) *containerd.Containerd {
	t.Helper()
	return containerd.StartT(t, SharedPods, SharedPerPod)
}

// SocketDir is a temp dir short enough for sockets (sun_path's 108
// bytes), which t.TempDir, named after the test, may not be.
func SocketDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hwrp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
