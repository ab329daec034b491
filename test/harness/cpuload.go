package harness

import (
	"os/exec"
	"syscall"
	"testing"
)

// BurnCPU keeps n busy processes (shell loops) running, a load beside
// what a test measures, until stop, which kills them by PID; the test's
// end stops them too.
func BurnCPU(t testing.TB, n int) (stop func()) {
	t.Helper()
	var procs []*exec.Cmd
	for range max(n, 1) {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	}
	t.Cleanup(stop)
	return stop
}
