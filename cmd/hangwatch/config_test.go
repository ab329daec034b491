package main

import (
	"github.com/hangwatch/hangwatch/config/configtest"

	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigCheckReportsEveryProblem(t *testing.T) {
	path := configtest.Write(t, "runtime:\n  period: 0s\n  sampleSize: -1\n  concurency: 3\napiServer:\n  qps: 0\npleg:\n  window: -5m\n")
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
	first := check(configtest.Write(t, "runtime:\n  period: 5s\napiServer:\n  qps: 2.5\n"))
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
	path := configtest.Write(t, "conditions:\n- type: KernelDeadlock\n  disabled: true\n")
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
	_, err = run(configtest.Write(t, "runtime:\n  period: 0s\n"), "--kernel=false")
	if err == nil || !strings.Contains(err.Error(), "(FILE ") || strings.Contains(err.Error(), "--config") {
		t.Errorf("an invalid FILE: %v", err)
	}
}

// TestConfigCheckRefusesAMisspelledField: a rule naming a field no input
// has fails `config check` with its path, its rule and the field meant.
func TestConfigCheckRefusesAMisspelledField(t *testing.T) {
	check := func(when string) error {
		path := configtest.Write(t, "conditions:\n- type: TooManyContainers\n  problems:\n  - when: "+when+"\n"+
			"    reason: ContainersPiledUp\n  healthy: {reason: ContainersFew}\n")
		cmd := newConfigCheckCommand()
		cmd.SetArgs([]string{path})
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		return cmd.Execute()
	}
	err := check("cri.containres > 500")
	if err == nil {
		t.Fatal("a misspelled field passed config check")
	}
	for _, want := range []string{"rule TooManyContainers: conditions[0].problems[0].when:", "undefined field 'containres'",
		"did you mean cri.containers?"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if err := check("kernel.KernelDedlock.active"); err == nil || !strings.Contains(err.Error(), "the kernel rules raise no condition KernelDedlock") {
		t.Errorf("a misspelled kernel condition: %v", err)
	}
	if err := check("kernel.KernelDeadlock.active && cri.containers > 500"); err != nil {
		t.Errorf("a rule that reads well: %v", err)
	}
}
