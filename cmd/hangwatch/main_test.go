package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	logsapi "k8s.io/component-base/logs/api/v1"
)

func TestExitCodes(t *testing.T) {
	// Each execute applies the same logging flags again, as no process does.
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
	missing := "unix://" + filepath.Join(t.TempDir(), "none.sock")
	t.Setenv("CRI_CONFIG_FILE", filepath.Join(t.TempDir(), "crictl.yaml"))
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	stdout, stderr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = devnull, devnull
	defer func() { os.Stdout, os.Stderr = stdout, stderr }()
	cases := []struct {
		args []string
		want int
	}{
		{[]string{"version"}, 0},
		{[]string{"diag", "-r", missing}, 1}, // Unreachable
		{[]string{"diag", "-o", "xml"}, 2},
		{[]string{"diag", "--samples", "0"}, 2},
		{[]string{"diag", "--no-such-flag"}, 2},
		{[]string{"diag", "extra-arg"}, 2},
		{[]string{"run", "--period", "0s"}, 2},
		{[]string{"repair"}, 2},                                   // no repair.agentSocket: no view to read
		{[]string{"repair", "--repair-socket", "repair.sock"}, 2}, // not an absolute path
		{[]string{"no-such-command"}, 2},
	}
	for _, tc := range cases {
		if got := execute(tc.args); got != tc.want {
			t.Errorf("hangwatch %v: exit %d, want %d", tc.args, got, tc.want)
		}
	}
}

// TestVersionJSONHasMajorMinor: a build without -X ldflags (go build, go
// test) still fills major and minor.
func TestVersionJSONHasMajorMinor(t *testing.T) {
	var out bytes.Buffer
	cmd := newVersionCommand()
	cmd.SetArgs([]string{"-o", "json"})
	cmd.SetOut(&out)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var info struct{ Major, Minor, GitVersion string }
	if err := json.Unmarshal(out.Bytes(), &info); err != nil {
		t.Fatal(err)
	}
	if info.Major == "" || info.Minor == "" || info.GitVersion == "" {
		t.Errorf("version JSON lacks major, minor or gitVersion: %s", out.String())
	}
}

// TestHelpHidesAlphaLogFlags: klog's [Alpha] buffer flags stay out of
// --help; the ones a user needs stay in.
func TestHelpHidesAlphaLogFlags(t *testing.T) {
	var out bytes.Buffer
	cmd := newRootCommand()
	cmd.SetArgs([]string{"--help"})
	cmd.SetOut(&out)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "[Alpha]") {
		t.Errorf("--help shows [Alpha] flags:\n%s", out.String())
	}
	for _, want := range []string{"--logging-format", "--v Level"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %s:\n%s", want, out.String())
		}
	}
}
