package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// configMapDir lays out a config file as the kubelet mounts a ConfigMap:
// config.yaml -> ..data/config.yaml, ..data -> a timestamped directory, so
// an update is one rename of the ..data symlink.
type configMapDir struct {
	dir string
	gen int
}

func newConfigMapDir(t *testing.T, content string) *configMapDir {
	t.Helper()
	m := &configMapDir{dir: t.TempDir()}
	m.update(t, content)
	if err := os.Symlink(filepath.Join("..data", "config.yaml"), m.path()); err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *configMapDir) path() string { return filepath.Join(m.dir, "config.yaml") }

// update writes content to a new directory and swaps ..data to it.
func (m *configMapDir) update(t *testing.T, content string) {
	t.Helper()
	m.gen++
	ts := fmt.Sprintf("..2026_11_25_00_00_00.%d", m.gen)
	if err := os.Mkdir(filepath.Join(m.dir, ts), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(m.dir, ts, "config.yaml"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(m.dir, "..data_tmp")
	if err := os.Symlink(ts, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(m.dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

// containersConfig has one rule of its own: ContainersPresent, True while
// cri.containers is over n.
func containersConfig(when string) string {
	return `apiVersion: hangwatch.io/v1alpha1
kind: HangwatchConfiguration
conditions:
- type: ContainersPresent
  problems:
  - when: '` + when + `'
    reason: ContainersRunning
    message: the runtime lists containers
  healthy:
    reason: NoContainers
`
}

// TestConfigReloadChangesARuleWithoutARestart edits a rule on a running
// hangwatch through a ConfigMap-style symlink swap: the edited rule raises
// its condition within a second of the swap, in the same process, and the
// unchanged RuntimeHung keeps its state and transition time. A file with a
// bad rule is refused (the running rules stay, the metric says 0); SIGHUP
// reloads the file as it is.
func TestConfigReloadChangesARuleWithoutARestart(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd)
	c := hangwatch.SharedContainerd(t)
	m := newConfigMapDir(t, containersConfig("cri.containers > 1000000"))
	d := hangwatch.StartDaemon(t, c.Endpoint, "--config", m.path(), "--kernel=false")
	pid := d.Cmd.Process.Pid
	harness.Eventually(t, 30*time.Second, "ContainersPresent False and RuntimeHung False", func() bool {
		return d.ReloadCond(t, "ContainersPresent").Status == "False" && d.ReloadCond(t, "RuntimeHung").Status == "False"
	}, harness.UnlessExited(d))
	hung := d.ReloadCond(t, "RuntimeHung")

	m.update(t, containersConfig("cri.containers > 0"))
	swapped := time.Now()
	harness.Eventually(t, 5*time.Second, "the edited rule to raise ContainersPresent", func() bool {
		return d.ReloadCond(t, "ContainersPresent").Status == "True"
	}, harness.UnlessExited(d))
	took := time.Since(swapped)
	harness.Measure(t, "config_reload_rule_raised_after_swap", took)
	if took > time.Second { // goal: one 500ms poll and the evaluation; measured 0.50s. The wait above bounds it at 5s
		t.Logf("the edited rule raised its condition %v after the swap: over the 1s goal", took)
	}
	if after := d.ReloadCond(t, "RuntimeHung"); after.Status != hung.Status || !after.LastTransitionTime.Equal(hung.LastTransitionTime) {
		t.Errorf("RuntimeHung %+v after the reload, want it kept as %+v", after, hung)
	}

	m.update(t, containersConfig("cri.containers >"))
	harness.Eventually(t, 5*time.Second, "the bad file to be refused", func() bool {
		metrics, err := d.Get("/metrics")
		return err == nil && harness.MetricValue(metrics, "hangwatch_config_last_reload_successful") == 0
	}, harness.UnlessExited(d))
	if got := d.ReloadCond(t, "ContainersPresent"); got.Status != "True" {
		t.Errorf("ContainersPresent %+v after a refused reload, want the running rule's True", got)
	}

	m.update(t, containersConfig("cri.containers > 1000000"))
	harness.Eventually(t, 5*time.Second, "the fixed file to load and clear ContainersPresent", func() bool {
		metrics, err := d.Get("/metrics")
		return err == nil && harness.MetricValue(metrics, "hangwatch_config_last_reload_successful") == 1 &&
			d.ReloadCond(t, "ContainersPresent").Status == "False"
	}, harness.UnlessExited(d))
	if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 5*time.Second, "SIGHUP's reload in the log", func() bool {
		logText, _ := os.ReadFile(d.LogPath)
		return strings.Count(string(logText), "Reloaded the config file's condition rules") >= 3 &&
			strings.Contains(string(logText), "SIGHUP: reloading the config file")
	}, harness.UnlessExited(d))
	if d.Cmd.Process.Pid != pid || d.ReloadCond(t, "ContainersPresent").Status != "False" {
		t.Errorf("after SIGHUP: pid %d (was %d), ContainersPresent %+v", d.Cmd.Process.Pid, pid, d.ReloadCond(t, "ContainersPresent"))
	}
}
