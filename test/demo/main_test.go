package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestMain runs the child of TestWriteToAClosedPipeIsSurvived when
// DEMO_TEST_CHILD is set: it writes to stdout, whose pipe has no reader,
// as the demo does after Ctrl-C ended `tee`, and exits 0 only if it is
// still alive afterwards (the point where the demo's cleanup runs).
func TestMain(m *testing.M) {
	switch os.Getenv("DEMO_TEST_CHILD") {
	case "":
		os.Exit(m.Run())
	case "safe":
		keepOutputSafe()
	}
	_, err := fmt.Println("stopping hangwatch, the pods and containerd ...")
	_, err2 := fmt.Fprintln(os.Stderr, "demo: written to stderr too")
	if !errors.Is(err, syscall.EPIPE) || !errors.Is(err2, syscall.EPIPE) {
		os.Exit(3)
	}
	os.Exit(0)
}

// TestWriteToAClosedPipeIsSurvived: `./hack/run.sh 2>&1 | tee demo.log`
// stopped with Ctrl-C ends tee as well; the demo's next write must fail
// with EPIPE, not kill it with SIGPIPE before it has removed the pods,
// stopped containerd and unmounted their mounts (issue 40). Without
// keepOutputSafe the same child dies of SIGPIPE, which shows the test
// sees the difference.
func TestWriteToAClosedPipeIsSurvived(t *testing.T) {
	for _, tc := range []struct {
		mode    string
		survive bool
	}{{"safe", true}, {"unprotected", false}} {
		t.Run(tc.mode, func(t *testing.T) {
			if !tc.survive && sigpipeIgnored() {
				t.Skip("this test runs with SIGPIPE ignored, which its children inherit")
			}
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			_ = r.Close() // the reader is gone, as tee is after Ctrl-C
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "DEMO_TEST_CHILD="+tc.mode)
			cmd.Stdout, cmd.Stderr = w, w
			err = cmd.Run()
			_ = w.Close()
			if tc.survive {
				if err != nil {
					t.Fatalf("the child writing to a pipe with no reader: %v, want exit 0 (alive after EPIPE)", err)
				}
				return
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("the unprotected child: %v, want death by SIGPIPE", err)
			}
			if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGPIPE {
				t.Fatalf("the unprotected child: %v, want death by SIGPIPE", err)
			}
		})
	}
}

// sigpipeIgnored tells whether this process was started with SIGPIPE
// ignored (SigIgn in /proc/self/status).
func sigpipeIgnored() bool {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(status), "\n") {
		if mask, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			bits, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64)
			return err == nil && bits&(1<<(uint(syscall.SIGPIPE)-1)) != 0
		}
	}
	return false
}
