package watchdog

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestStopInTimeDoesNotPanic(t *testing.T) {
	stop := Start(time.Hour, func() string { return "never" })
	stop()
}

// TestLateStepPanics runs a step that overruns in a child process, which
// must die naming it.
func TestLateStepPanics(t *testing.T) {
	if os.Getenv("WATCHDOG_CHILD") == "1" {
		Start(time.Millisecond, func() string { return "the slow step" })
		select {} // the watchdog's panic ends the process
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLateStepPanics$")
	cmd.Env = append(os.Environ(), "WATCHDOG_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "over 1ms: the slow step") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}
