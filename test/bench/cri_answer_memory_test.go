package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/fakecri"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/measurements"
)

// TestLargeCRIAnswerWithin128Mi (a benchmark; root and
// cgroup v1) runs the hangwatch binary in a memory cgroup limited to
// 128Mi, as the shipped manifests limit it, against a runtime (fakecri)
// whose ListContainers answers 4, 8, 12 and 16 MiB (the kubelet's and
// hangwatch's gRPC limit) over 110 pods, probing every second: as shipped
// (no GOMEMLIMIT: hangwatch sets 80% of the cgroup's limit) and with
// GOMEMLIMIT=off (no Go limit, as before), each with the PLEG emulation
// off (the prober alone lists: the shipped configs scrape the kubelet, and
// the emulation runs only while that cannot tell) and on (standalone: it
// lists every 5 s beside the prober, and two answers are decoded at once).
// It logs per run the cgroup's peak usage, hangwatch's peak RSS and
// whether the kernel OOM-killed it. As shipped, the prober alone must not
// be killed at any size, nor the two together up to 8 MiB; past that the
// two together run in 192Mi (docs/install.md's advice for such nodes).
func TestLargeCRIAnswerWithin128Mi(t *testing.T) {
	if _, err := os.Stat(filepath.Join(memoryCgroupRoot, "memory.limit_in_bytes")); err != nil || os.Geteuid() != 0 {
		t.Skipf("needs root and cgroup v1's memory controller at %s: euid %d, %v", memoryCgroupRoot, os.Geteuid(), err)
	}
	for _, mib := range []int{4, 8, 12, 16} {
		dir, err := os.MkdirTemp("", "hw-fakecri-") // short: a socket path is at most 107 bytes
		if err != nil {
			t.Fatal(err)
		}
		pods, ctrs := fakecri.Objects(mib<<20 - 4<<10)
		srv, err := fakecri.Start(filepath.Join(dir, "cri.sock"), pods, ctrs)
		if err != nil {
			t.Fatal(err)
		}
		runs := []cgroupCase{{128, false, ""}, {128, false, "off"}, {128, true, ""}, {128, true, "off"}}
		if mib > 8 {
			runs = append(runs, cgroupCase{192, true, ""})
		}
		for _, c := range runs {
			r := runInMemoryCgroup(t, srv.Endpoint, len(srv.Answer()), c)
			recordCgroupRun(t, c, mib, r, fmt.Sprintf("answer %.2f MiB, %d containers, GOMEMLIMIT=%q, Go limit %s",
				float64(len(srv.Answer()))/(1<<20), len(ctrs), c.goMemLimit, r.goLimit))
			if c.goMemLimit == "" && r.oomKilled && (!c.emulation || mib <= 8 || c.limitMiB > 128) {
				t.Errorf("a %d MiB answer (emulation %v): hangwatch as shipped was OOM-killed within %dMi", mib, c.emulation, c.limitMiB)
			}
		}
		srv.Stop()
		_ = os.RemoveAll(dir)
	}
}

// recordCgroupRun records one run's figures under the name of its case:
// cri_answer_<answer>mib_limit_<limit>mi_emulation_<on|off>_gomemlimit_<unset|off>_.
func recordCgroupRun(t *testing.T, c cgroupCase, answerMiB int, r cgroupRun, note string) {
	t.Helper()
	onOff := map[bool]string{true: "on", false: "off"}
	goMemLimit := c.goMemLimit
	if goMemLimit == "" {
		goMemLimit = "unset"
	}
	prefix := fmt.Sprintf("cri_answer_%dmib_limit_%dmi_emulation_%s_gomemlimit_%s_", answerMiB, c.limitMiB, onOff[c.emulation], goMemLimit)
	measurements.Record(t, prefix+"cgroup_peak_mib", float64(r.cgroupPeak)/(1<<20), "MiB", note)
	measurements.Record(t, prefix+"rss_peak_mib", float64(r.rssPeakKiB)/1024, "MiB")
	measurements.Record(t, prefix+"oom_killed", map[bool]float64{true: 1, false: 0}[r.oomKilled], "bool")
	measurements.Record(t, prefix+"cycles", r.cycles, "cycles")
	measurements.Record(t, prefix+"relists", r.relists, "relists")
}

const memoryCgroupRoot = "/sys/fs/cgroup/memory"

// cgroupCase is one run: the cgroup's limit, whether the PLEG emulation
// lists too, and GOMEMLIMIT ("": not set, as shipped).
type cgroupCase struct {
	limitMiB   int64
	emulation  bool
	goMemLimit string
}

type cgroupRun struct {
	goLimit    string // hangwatch_go_memory_limit_bytes, in MiB
	cgroupPeak int64  // memory.max_usage_in_bytes
	rssPeakKiB int    // VmHWM
	oomKilled  bool
	cycles     float64 // ListContainers probes answered
	relists    float64 // emulated relists that listed everything
}

// runInMemoryCgroup runs hangwatch in a new memory cgroup until it has
// probed 8 times with the whole answer (answerBytes) and, with the PLEG
// emulation, relisted twice, or it dies; then stops it and removes the
// cgroup.
func runInMemoryCgroup(t *testing.T, endpoint string, answerBytes int, c cgroupCase) cgroupRun {
	t.Helper()
	cg := newMemoryCgroup(t, c.limitMiB<<20)
	defer cg.remove(t)
	addr := harness.FreeAddr(t)
	logFile, err := os.Create(filepath.Join(t.TempDir(), "hangwatch.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	// sh joins the cgroup, then becomes hangwatch: every page it touches is charged there.
	cmd := exec.Command("/bin/sh", "-c", `echo $$ > "$0" && exec "$@"`, filepath.Join(cg.dir, "cgroup.procs"),
		hangwatch.HangwatchBin, "run", "-r", endpoint, "--listen-address", addr, "--period", "1s", "--kernel-lookback", "0s")
	if !c.emulation {
		cmd.Args = append(cmd.Args, "--pleg-emulation-period", "0")
	}
	cmd.Env = environWithout("GOMEMLIMIT", "GOGC")
	if c.goMemLimit != "" {
		cmd.Env = append(cmd.Env, "GOMEMLIMIT="+c.goMemLimit)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &hangwatch.Daemon{Proc: harness.WatchProc("hangwatch", cmd, logFile.Name()), Base: "http://" + addr}
	r := cgroupRun{goLimit: "?"}
	// A run that neither gets there nor dies within 60 s is measured as it is.
	_, _ = harness.Poll(context.Background(), 60*time.Second, "8 cycles with the whole answer", func() bool {
		return largeAnswersSeen(d, answerBytes, c.emulation, &r)
	}, harness.Every(250*time.Millisecond), harness.UnlessExited(d))
	exited := !d.Running()
	mem, _ := harness.ReadProcMemory(cmd.Process.Pid) // zero once it is gone
	r.rssPeakKiB = int(mem.Peak)
	r.cgroupPeak = cg.readInt(t, "memory.max_usage_in_bytes")
	if !exited {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-d.Exited()
	}
	exitErr := d.ExitErr
	var ee *exec.ExitError
	if errors.As(exitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			r.oomKilled = cg.oomKills(t) > 0
		}
	}
	if exited && !r.oomKilled {
		log, _ := os.ReadFile(d.LogPath)
		t.Fatalf("hangwatch exited (%v), not OOM-killed:\n%s", exitErr, log)
	}
	return r
}

// largeAnswersSeen scrapes /metrics into r and tells whether hangwatch
// has answered 8 cycles with the whole answer and, with the emulation,
// relisted twice.
func largeAnswersSeen(d *hangwatch.Daemon, answerBytes int, emulation bool, r *cgroupRun) bool {
	text, err := d.Get("/metrics")
	if err != nil {
		return false
	}
	if v := harness.MetricValue(text, "hangwatch_go_memory_limit_bytes"); v >= 0 {
		r.goLimit = "none"
		if v < 1<<62 {
			r.goLimit = fmt.Sprintf("%.1fMiB", v/(1<<20))
		}
	}
	r.cycles = harness.MetricValue(text, `hangwatch_cri_probes_total{method="ListContainers",result="ok"}`) +
		max(harness.MetricValue(text, `hangwatch_cri_probes_total{method="ListContainers",result="slow"}`), 0)
	size := harness.MetricValue(text, `hangwatch_cri_response_size_bytes{method="ListContainers"}`)
	r.relists = 0
	for _, result := range []string{"ok", "slow", "too_large"} { // each decoded the whole list
		r.relists += max(harness.MetricValue(text, `hangwatch_pleg_emulated_relists_total{result="`+result+`"}`), 0)
	}
	return size >= float64(answerBytes) && r.cycles >= 8 && (!emulation || r.relists >= 2)
}

type memoryCgroup struct{ dir string }

// newMemoryCgroup makes a v1 memory cgroup limited to limit bytes (and as
// much memory plus swap, where swap is accounted).
func newMemoryCgroup(t *testing.T, limit int64) memoryCgroup {
	t.Helper()
	cg := memoryCgroup{dir: filepath.Join(memoryCgroupRoot, fmt.Sprintf("hwtest-%d-%d", os.Getpid(), time.Now().UnixNano()))}
	if err := os.Mkdir(cg.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"} {
		if err := os.WriteFile(filepath.Join(cg.dir, f), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil &&
			!errors.Is(err, os.ErrNotExist) {
			cg.remove(t)
			t.Fatalf("%s: %v", f, err)
		}
	}
	return cg
}

// remove removes the cgroup; its process has exited.
func (cg memoryCgroup) remove(t *testing.T) {
	t.Helper()
	if err := os.Remove(cg.dir); err != nil {
		t.Errorf("remove the test's cgroup %s: %v", cg.dir, err)
	}
}

func (cg memoryCgroup) readInt(t *testing.T, file string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cg.dir, file))
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v
}

// oomKills is memory.oom_control's oom_kill count.
func (cg memoryCgroup) oomKills(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cg.dir, "memory.oom_control"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// environWithout is this process's environment without the names given.
func environWithout(names ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			out = append(out, kv)
		}
	}
	return out
}
