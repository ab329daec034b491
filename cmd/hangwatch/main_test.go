package main

import (
	"os"
	"path/filepath"
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
		{[]string{"no-such-command"}, 2},
	}
	for _, tc := range cases {
		if got := execute(tc.args); got != tc.want {
			t.Errorf("hangwatch %v: exit %d, want %d", tc.args, got, tc.want)
		}
	}
}
