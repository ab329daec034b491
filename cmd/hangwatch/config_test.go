package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/hangwatch/hangwatch/kernellog"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("apiVersion: hangwatch.io/v1alpha1\nkind: HangwatchConfiguration\n"+body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestEveryRunFlagHasASetting keeps the file and the flags in step.
func TestEveryRunFlagHasASetting(t *testing.T) {
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	(&runOptions{}).addFlags(fs)
	byFlag := map[string]string{}
	for _, l := range (&settings{}).leaves() {
		if fs.Lookup(l.flag) == nil {
			t.Errorf("%s names --%s, which run does not have", l.path, l.flag)
		}
		byFlag[l.flag] = l.path
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if _, ok := byFlag[f.Name]; !ok && f.Name != "config" {
			t.Errorf("--%s has no setting in the config file", f.Name)
		}
	})
}

func TestFlagsOverrideTheFile(t *testing.T) {
	path := writeConfig(t, "runtime:\n  period: 5s\n  timeout: 3s\nkernel:\n  rules: [a.json, b.json]\nrunTimeHung: {}\n")
	if _, _, err := decodeConfig(path, "--config"); err != nil {
		t.Fatal(err)
	}
	path = writeConfig(t, "runtime:\n  period: 5s\n  timeout: 3s\nkernel:\n  rules: [a.json, b.json]\nruntimeHung:\n  raiseAfter: 3\n")
	o := &runOptions{}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	o.addFlags(fs)
	if err := fs.Parse([]string{"--config", path, "--period", "7s"}); err != nil {
		t.Fatal(err)
	}
	fromFile, err := o.configure(fs)
	if err != nil {
		t.Fatal(err)
	}
	if o.period != 7*time.Second || o.rt.timeout != 3*time.Second {
		t.Errorf("period %v (want the flag's 7s), timeout %v (want the file's 3s)", o.period, o.rt.timeout)
	}
	if strings.Join(o.kernel.rules, ",") != "a.json,b.json" {
		t.Errorf("kernel rules %v", o.kernel.rules)
	}
	if _, ok := fromFile["period"]; ok {
		t.Error("--period was given; the file must not count as having set it")
	}
	for _, s := range o.conds.specs() {
		if s.Type == "RuntimeHung" && s.RaiseAfter != 3 {
			t.Errorf("runtimeHung.raiseAfter from the file not applied: %d", s.RaiseAfter)
		}
	}
}

func TestConfigCheckReportsEveryProblem(t *testing.T) {
	path := writeConfig(t, "runtime:\n  period: 0s\n  sampleSize: -1\n  concurency: 3\napiServer:\n  qps: 0\npleg:\n  window: -5m\n")
	var out bytes.Buffer
	cmd := newConfigCheckCommand()
	cmd.SetArgs([]string{path, "--concurrency", "0"})
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.Execute()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`unknown field "runtime.concurency"`, "runtime.period (--period) 0s: must be positive",
		"runtime.sampleSize (--sample-size) -1", "apiServer.qps (--kube-api-qps) 0", "pleg.window (--pleg-window) -5m0s", "--concurrency 0: must be at least 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, _, err := decodeConfig(writeConfig(t, "runtime:\n  period: soon\n"), "--config"); err == nil || !strings.Contains(err.Error(), "period") {
		t.Errorf("a value of the wrong type must name its field: %v", err)
	}
}

// TestEffectiveConfigLoadsBack checks that what config check prints is a
// valid file that gives the same configuration.
func TestEffectiveConfigLoadsBack(t *testing.T) {
	check := func(path string) string {
		var out bytes.Buffer
		cmd := newConfigCheckCommand()
		cmd.SetArgs([]string{path, "--kernel=false", "-o", "yaml"})
		cmd.SetOut(&out)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	first := check(writeConfig(t, "runtime:\n  period: 5s\napiServer:\n  qps: 2.5\n"))
	for _, want := range []string{"period: 5s", "qps: 2.5", "type: RuntimeHung", "listenAddress: 127.0.0.1:9764"} {
		if !strings.Contains(first, want) {
			t.Errorf("effective configuration lacks %q:\n%s", want, first)
		}
	}
	path := filepath.Join(t.TempDir(), "effective.yaml")
	if err := os.WriteFile(path, []byte(first), 0o644); err != nil {
		t.Fatal(err)
	}
	if second := check(path); second != first {
		t.Errorf("the effective configuration does not load back the same:\n%s\n---\n%s", first, second)
	}
}

// TestDisabledKernelConditionStaysUnwritten: a KernelDeadlock disabled in
// the file (left to node-problem-detector) is not brought back by the
// kernel rules that raise it.
func TestDisabledKernelConditionStaysUnwritten(t *testing.T) {
	o := &runOptions{}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	o.addFlags(fs)
	path := writeConfig(t, "conditions:\n- type: KernelDeadlock\n  disabled: true\n")
	if err := fs.Parse([]string{"--config", path}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.configure(fs); err != nil {
		t.Fatal(err)
	}
	kernelTypes := kernellog.DefaultRuleSet().Conditions
	specs := o.conds.withKernelSpecs(o.conds.specs(), kernelTypes)
	for _, s := range specs {
		if s.Type == "KernelDeadlock" {
			t.Fatalf("KernelDeadlock is back: %+v", s)
		}
	}
	if len(kernelTypes) == 0 {
		t.Fatal("the default kernel rules raise no condition")
	}
}

// TestConfigCheckSaysValid: a valid file gets one line saying so, with the
// conditions it leaves on; a bad FILE argument is named as such.
func TestConfigCheckSaysValid(t *testing.T) {
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		cmd := newConfigCheckCommand()
		cmd.SetArgs(args)
		cmd.SetOut(&out)
		cmd.SetErr(io.Discard)
		err := cmd.Execute()
		return out.String(), err
	}
	path := writeConfig(t, "conditions:\n- type: KernelDeadlock\n  disabled: true\n")
	out, err := run(path, "--kernel=false")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, path+": valid (") || strings.Count(out, "\n") != 2 {
		t.Errorf("want a valid line and a conditions line, got:\n%s", out)
	}
	if !strings.Contains(out, "conditions: RuntimeHung") || strings.Contains(out, "KernelDeadlock") {
		t.Errorf("conditions line: %s", out)
	}
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	_, err = run(missing)
	if err == nil || !strings.HasPrefix(err.Error(), "FILE "+missing+": ") {
		t.Errorf("a missing FILE: %v", err)
	}
	_, err = run(writeConfig(t, "runtime:\n  period: 0s\n"), "--kernel=false")
	if err == nil || !strings.Contains(err.Error(), "(FILE ") || strings.Contains(err.Error(), "--config") {
		t.Errorf("an invalid FILE: %v", err)
	}
}

// TestRuleFilesCannotOwnKubeletConditions: a rules file whose condition is
// one the kubelet writes is refused wherever rules files are loaded.
func TestRuleFilesCannotOwnKubeletConditions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.json")
	rules := `{"source":"x","conditions":[{"type":"DiskPressure","reason":"Fine","message":"ok"}],
	 "rules":[{"type":"permanent","condition":"DiskPressure","reason":"Full","pattern":"no space"}]}`
	if err := os.WriteFile(path, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	f := kernelFlags{rules: []string{path}}
	_, err := f.ruleSets()
	if err == nil || !strings.Contains(err.Error(), `conditions[0].type "DiskPressure": is the kubelet's`) {
		t.Fatalf("err = %v", err)
	}
}

// FuzzDecodeConfig: no config file panics the decoder or the checks run on
// it; a file that decodes without problems loads as run would load it.
func FuzzDecodeConfig(f *testing.F) {
	f.Add([]byte("apiVersion: hangwatch.io/v1alpha1\nkind: HangwatchConfiguration\nruntime:\n  period: 5s\n"))
	f.Add([]byte("apiVersion: hangwatch.io/v1alpha1\nkind: HangwatchConfiguration\nconditions:\n- type: X\n  problems:\n  - when: cri.containers > 1\n    reason: R\n  healthy: {reason: Ok}\n"))
	f.Add([]byte("runtime: {period: soon}\nkernel:\n  rules: [a, b]\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		o := &runOptions{}
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		o.addFlags(fs)
		if err := fs.Parse([]string{"--config", path}); err != nil {
			t.Fatal(err)
		}
		_, _ = o.configure(fs)
	})
}

// TestHeartbeatOnlyWhenShorterThanThePeriod: `--period 1s` alone must run
// (the full cycles already call Version each second); a heartbeat under
// 500ms is refused by name.
func TestHeartbeatOnlyWhenShorterThanThePeriod(t *testing.T) {
	cases := []struct {
		args []string
		want time.Duration
		err  string
	}{
		{args: nil, want: 2500 * time.Millisecond},
		{args: []string{"--period", "1s"}, want: 0},
		{args: []string{"--period", "1s", "--heartbeat-period", "500ms"}, want: 500 * time.Millisecond},
		{args: []string{"--heartbeat-period", "0"}, want: 0},
		{args: []string{"--heartbeat-period", "100ms"}, err: "--heartbeat-period 100ms: must be 0 (off) or at least 500ms"},
	}
	for _, c := range cases {
		o := &runOptions{}
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		o.addFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		_, err := o.configure(fs)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: error %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", c.args, err)
		} else if got := o.heartbeatPeriod(); got != c.want {
			t.Errorf("%v: heartbeat in effect %v, want %v", c.args, got, c.want)
		}
	}
}
