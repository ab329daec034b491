// Command demo brings up a real containerd with a few running pods from the
// test harness and runs `hangwatch run` against it, standalone, so a person
// on a machine without Kubernetes can watch RuntimeHung appear and clear.
// It stops containerd, its pods and hangwatch when interrupted (SIGINT,
// SIGTERM or SIGHUP), whatever became of its output: a pipe whose reader
// is gone (`./hack/run.sh | tee demo.log`, Ctrl-C ends tee too) or a
// closed stdout or stderr.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hangwatch/hangwatch/kernellog"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
)

func main() {
	os.Exit(run())
}

func run() int {
	keepOutputSafe()
	bin := flag.String("hangwatch", "bin/hangwatch", "hangwatch binary to run")
	pods := flag.Int("pods", 3, "pods to create, each with two containers")
	listen := flag.String("listen-address", "127.0.0.1:9764", "hangwatch's --listen-address")
	period := flag.Duration("period", 5*time.Second, "hangwatch's --period")
	flag.Parse()

	// The first signal cancels ctx; the ones after it (a second Ctrl-C
	// while the pods are removed) are taken by the same registration,
	// which stays until run returns, so they do not cut the cleanup short.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	bins, err := containerd.FindBinaries()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	fmt.Printf("demo pid %d: starting containerd %s in a temp dir ...\n", os.Getpid(), bins.Version)
	c, err := containerd.StartFrom(ctx, bins)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	defer c.Stop()
	if _, err := c.CreatePods(ctx, *pods, 2); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	rules, err := demoRules()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	defer os.RemoveAll(filepath.Dir(rules))
	printGuide(c, *pods, *listen, *period)

	cmd := exec.Command(*bin, "run", "-r", c.Endpoint, "--listen-address", *listen, "--kernel-rules", rules,
		"--period", period.String(), "--max-period", maxPeriod(*period).String(), "--heartbeat-period", min(heartbeat, *period).String())
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	// A process group of its own: the terminal's Ctrl-C reaches the demo
	// alone, which stops hangwatch first, then the pods and containerd;
	// and hangwatch dies with the demo if the demo is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "demo: start hangwatch:", err)
		return 1
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-ctx.Done():
		stopHangwatch(cmd.Process, exited)
	case err := <-exited:
		fmt.Fprintln(os.Stderr, "demo: hangwatch exited:", err)
		return 1
	}
	fmt.Println("\nstopping hangwatch, the pods and containerd ...")
	return 0
}

// stopHangwatch sends hangwatch SIGTERM and waits for it, SIGKILL after
// 10 seconds.
func stopHangwatch(p *os.Process, exited <-chan error) {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = p.Kill()
		<-exited
	}
}

// keepOutputSafe makes a write to stdout or stderr harmless, so that the
// deferred cleanup (pods, containerd's shims, mounts, temp dirs) always
// runs. A write to a pipe whose reader is gone kills a Go program with
// SIGPIPE when it is to fd 1 or 2, unless SIGPIPE is notified (os/signal,
// "SIGPIPE"); with the registration the write fails with EPIPE, which the
// demo ignores. Notify, not Ignore: an ignored SIGPIPE would be inherited
// by containerd and hangwatch. (A closed fd 1 or 2 is no danger: the Go
// runtime opens /dev/null on it at start.)
func keepOutputSafe() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}

func printGuide(c *containerd.Containerd, pods int, listen string, period time.Duration) {
	fmt.Printf(`
containerd pid %[1]d is serving CRI on %[2]s with %[3]d pods (%[4]d containers).
hangwatch runs against it below (--period %[6]v, --timeout 2s). In another shell:

  curl -s http://%[5]s/conditions          # RuntimeHung and PLEGUnhealthy: False
  curl -s http://%[5]s/metrics | grep hangwatch_cri_call_in_flight_seconds
  bin/hangwatch diag -r %[2]s

  kill -STOP %[1]d    # freeze the runtime. RuntimeHung turns True within about
                      #   %[7]v (heartbeat + timeout); PLEGUnhealthy (RelistStalled) about
                      #   %[8]v in, once hangwatch's own relist has waited 30s
  kill -CONT %[1]d    # thaw it. PLEGUnhealthy clears within about %[9]v (the next
                      #   relists); RuntimeHung within about %[10]v: the first
                      #   heartbeat that answers starts a full cycle at once

  echo '<6>INFO: task containerd:4242 blocked for more than 120 seconds.' > /dev/kmsg
                      # KernelDeadlock True within a second (it clears after 15 quiet minutes):
                      #   the demo's rules also match what userspace writes to /dev/kmsg
                      #   (facility user); as shipped they match the kernel's own lines alone
  curl -s http://%[5]s/events              # kernel events such as TaskHung, OOMKilling
                      #   (their kernel lines only on the authenticated secure port)

Stop everything (hangwatch, the pods, containerd) with Ctrl-C here, or from
another shell: kill -INT %[11]d  (or kill -TERM %[11]d)

`, c.PID(), c.Endpoint, pods, 2*pods, listen, period,
		heartbeat+2*time.Second, 30*time.Second+2*period, 2*period, 2*heartbeat, os.Getpid())
}

// heartbeat is hangwatch's default --heartbeat-period.
const heartbeat = 2500 * time.Millisecond

// maxPeriod is the --max-period the demo gives hangwatch.
func maxPeriod(period time.Duration) time.Duration { return 4 * period }

// demoRules writes hangwatch's built-in kernel rules with "facilities":
// ["kern", "user"] to a temp dir, so that the line the guide writes to
// /dev/kmsg, which the kernel tags facility user, raises KernelDeadlock.
func demoRules() (string, error) {
	set := kernellog.DefaultRuleSet()
	set.Facilities = []string{"kern", "user"}
	body, err := json.Marshal(set)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "hangwatch-demo-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kernel-rules.json")
	return path, os.WriteFile(path, body, 0o644)
}
