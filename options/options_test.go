package options

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/kernellog"
)

// load loads a file of body as `run` would, under no flags.
func load(t *testing.T, body string) (*config.Loaded, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("apiVersion: hangwatch.io/v1alpha1\nkind: HangwatchConfiguration\n"+body), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	config.AddFlags(fs, config.Default())
	return (&config.Loader{Path: path, Named: "--config", Flags: fs, Check: Check}).Load()
}

// TestRuntimeHungSettingsTuneItsRule: runtimeHung.raiseAfter and
// clearAfter of the file reach the built-in rule.
func TestRuntimeHungSettingsTuneItsRule(t *testing.T) {
	c, err := load(t, "runtimeHung:\n  raiseAfter: 3\n  clearAfter: 4\n")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range Specs(c.Configuration) {
		if s.Type == "RuntimeHung" {
			found = true
			if s.RaiseAfter != 3 || s.ClearAfter != 4 {
				t.Errorf("RuntimeHung raise %d clear %d, want the file's 3 and 4", s.RaiseAfter, s.ClearAfter)
			}
		}
	}
	if !found {
		t.Fatal("no RuntimeHung rule")
	}
}

// TestDisabledKernelConditionStaysUnwritten: a KernelDeadlock disabled in
// the file (left to node-problem-detector) is not brought back by the
// kernel rules that raise it.
func TestDisabledKernelConditionStaysUnwritten(t *testing.T) {
	c, err := load(t, "conditions:\n- type: KernelDeadlock\n  disabled: true\n")
	if err != nil {
		t.Fatal(err)
	}
	kernelTypes := kernellog.DefaultRuleSet().Conditions
	for _, s := range WithKernelSpecs(c.Configuration, Specs(c.Configuration), kernelTypes) {
		if s.Type == "KernelDeadlock" {
			t.Fatalf("KernelDeadlock is back: %+v", s)
		}
	}
	if len(kernelTypes) == 0 {
		t.Fatal("the default kernel rules raise no condition")
	}
}

// TestKernelRulesOfTheUsersOwnDropTheBuiltInKernelDeadlock: rules files
// that do not raise KernelDeadlock leave hangwatch no way to decide it, so
// its built-in rule goes; a rule naming a kernel condition they do not
// raise is refused.
func TestKernelRulesOfTheUsersOwnDropTheBuiltInKernelDeadlock(t *testing.T) {
	c, err := load(t, "conditions:\n- type: OOMStorm\n  problems:\n  - when: kernel.FrequentOOM.matches > 3\n"+
		"    reason: Storm\n  healthy: {reason: Calm}\n")
	if err != nil {
		t.Fatal(err)
	}
	own := []kernellog.ConditionSpec{{Type: "FrequentOOM", Reason: "NoOOM", Message: "none"}}
	var types []string
	for _, s := range WithKernelSpecs(c.Configuration, Specs(c.Configuration), own) {
		types = append(types, s.Type)
	}
	if slices.Contains(types, "KernelDeadlock") || !slices.Contains(types, "FrequentOOM") {
		t.Fatalf("conditions %v: want FrequentOOM and no KernelDeadlock", types)
	}
	if err := CheckRules(c.Configuration, own); err != nil {
		t.Fatalf("the rules as the agent runs them: %v", err)
	}
	if err := CheckRules(c.Configuration, kernellog.DefaultRuleSet().Conditions); err == nil || !strings.Contains(err.Error(), "kernel.FrequentOOM") {
		t.Fatalf("a rule naming a kernel condition the rules do not raise: %v", err)
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
	_, err := RuleSets(config.Kernel{Rules: []string{path}})
	if err == nil || !strings.Contains(err.Error(), `conditions[0].type "DiskPressure": is the kubelet's`) {
		t.Fatalf("err = %v", err)
	}
}

// TestCheckHasTheScrapersChecks: the kubelet scraper's own checks of its
// options run as the configuration loads, naming the setting as given.
func TestCheckHasTheScrapersChecks(t *testing.T) {
	for body, want := range map[string]string{
		"kubelet:\n  metricsURL: ftp://node/metrics\n":                                            `--kubelet-metrics-url "ftp://node/metrics": want an http:// or https:// URL`,
		"kubelet:\n  metricsURL: https://10.0.0.1:10250/metrics\n  insecureSkipTLSVerify: true\n": "--kubelet-insecure-skip-tls-verify: allowed only for a loopback address",
	} {
		if _, err := load(t, body); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", body, err, want)
		}
	}
	if _, err := load(t, "kubelet:\n  metricsURL: https://127.0.0.1:10250/metrics\n  tlsServerName: node-a\n"); err != nil {
		t.Errorf("a good kubelet URL: %v", err)
	}
}
