package config

import (
	"github.com/hangwatch/hangwatch/config/configtest"

	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// load parses args as `run` would and loads path under them.
func load(t *testing.T, path string, args ...string) (*Loaded, error) {
	t.Helper()
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.String("config", "", "")
	AddFlags(fs, Default())
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return (&Loader{Path: path, Named: "--config", Flags: fs}).Load()
}

func TestFlagsOverrideTheFile(t *testing.T) {
	raw, err := os.ReadFile(configtest.Write(t, "runtime:\n  period: 5s\n  timeout: 3s\nkernel:\n  rules: [a.json, b.json]\nrunTimeHung: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(raw); err != nil {
		t.Fatal(err)
	}
	path := configtest.Write(t, "runtime:\n  period: 5s\n  timeout: 3s\nkernel:\n  rules: [a.json, b.json]\nruntimeHung:\n  raiseAfter: 3\n")
	c, err := load(t, path, "--config", path, "--period", "7s")
	if err != nil {
		t.Fatal(err)
	}
	if c.Runtime.Period.Duration != 7*time.Second || c.Runtime.TimeoutOr(0) != 3*time.Second {
		t.Errorf("period %v (want the flag's 7s), timeout %v (want the file's 3s)", c.Runtime.Period.Duration, c.Runtime.TimeoutOr(0))
	}
	if strings.Join(c.Kernel.Rules, ",") != "a.json,b.json" {
		t.Errorf("kernel rules %v", c.Kernel.Rules)
	}
	if n := c.RuntimeHung.RaiseAfter; n == nil || *n != 3 {
		t.Errorf("runtimeHung.raiseAfter from the file not read: %v", n)
	}
	c, err = load(t, path, "--kernel-rules", "c.json", "--timeout", "4s")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Kernel.Rules, ",") != "c.json" || c.Runtime.TimeoutOr(0) != 4*time.Second || c.Runtime.Period.Duration != 5*time.Second {
		t.Errorf("flags over the file: rules %v, timeout %v, period %v", c.Kernel.Rules, c.Runtime.TimeoutOr(0), c.Runtime.Period.Duration)
	}
}

// TestProblemsNameTheSettingAsGiven: a value the file set is named by its
// path with the flag beside it; one the command line set, by the flag.
func TestProblemsNameTheSettingAsGiven(t *testing.T) {
	path := configtest.Write(t, "runtime:\n  period: 0s\n  sampleSize: -1\n  concurency: 3\napiServer:\n  qps: 0\npleg:\n  window: -5m\n")
	_, err := load(t, path, "--concurrency", "0")
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`unknown field "runtime.concurency"`, "runtime.period (--period) 0s: must be positive",
		"runtime.sampleSize (--sample-size) -1", "apiServer.qps (--kube-api-qps) 0", "pleg.window (--pleg-window) -5m0s",
		"--concurrency 0: must be at least 1", "invalid configuration (--config " + path + " and flags)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := Decode([]byte("runtime:\n  period: soon\n")); err == nil || !strings.Contains(err.Error(), "runtime.period") {
		t.Errorf("a value of the wrong type must name its field: %v", err)
	}
}

// FuzzDecodeConfig: no config file panics the decoder or the checks run on
// it, under no flags.
func FuzzDecodeConfig(f *testing.F) {
	f.Add([]byte("apiVersion: hangwatch.io/v1alpha1\nkind: HangwatchConfiguration\nruntime:\n  period: 5s\n"))
	f.Add([]byte("apiVersion: hangwatch.io/v1alpha1\nkind: HangwatchConfiguration\nconditions:\n- type: X\n  problems:\n  - when: cri.containers > 1\n    reason: R\n  healthy: {reason: Ok}\n"))
	f.Add([]byte("runtime: {period: soon}\nkernel:\n  rules: [a, b]\n"))
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	AddFlags(fs, Default())
	l := &Loader{Path: "config.yaml", Named: "--config", Flags: fs}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = l.LoadBytes(data)
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
		got, err := load(t, "", c.args...)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: error %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", c.args, err)
		} else if hb := got.Runtime.EffectiveHeartbeat(); hb != c.want {
			t.Errorf("%v: heartbeat in effect %v, want %v", c.args, hb, c.want)
		}
	}
}
