package cli

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestExecuteMapsErrorsToExitCodes: success is 0, an ExitError its code
// (wrapped or not, with or without an error to print), anything else 2
// with the usage hint. An ExitError without an error once crashed
// hangwatch-remedy's copy of Error (a nil dereference).
func TestExecuteMapsErrorsToExitCodes(t *testing.T) {
	for _, c := range []struct {
		name   string
		err    error
		code   int
		stderr string
	}{
		{"success", nil, 0, ""},
		{"exit error", Exit(1, errors.New("list nodes: refused")), 1, "Error: list nodes: refused\n"},
		{"exit error without an error", Exit(1, nil), 1, ""},
		{"wrapped exit error without an error", fmt.Errorf("diag: %w", Exit(3, nil)), 3, ""},
		{"wrapped exit error", fmt.Errorf("serve: %w", Exit(1, errors.New("port taken"))), 1, "Error: serve: port taken\n"},
		{"usage error", errors.New("--period 0s: must be positive"), 2, "Error: --period 0s: must be positive\nRun 'tool --help' for usage.\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := &cobra.Command{Use: "tool", SilenceUsage: true, SilenceErrors: true,
				RunE: func(*cobra.Command, []string) error { return c.err }}
			var stderr bytes.Buffer
			if code := Execute(root, nil, &stderr); code != c.code || stderr.String() != c.stderr {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, stderr.String(), c.code, c.stderr)
			}
		})
	}
}

func TestExitErrorWithoutAnErrorSaysItsCode(t *testing.T) {
	if got := Exit(4, nil).Error(); got != "exit code 4" {
		t.Errorf("Error() = %q", got)
	}
	inner := errors.New("inner")
	if !errors.Is(Exit(1, inner), inner) {
		t.Error("an ExitError does not unwrap to its error")
	}
}

func TestAddVerbosityFlagsSetsKlogs(t *testing.T) {
	root := &cobra.Command{Use: "tool", RunE: func(*cobra.Command, []string) error { return nil }}
	klogFlags := AddVerbosityFlags(root.PersistentFlags())
	root.SetArgs([]string{"-v", "3", "--vmodule", "cli=4"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if v := klogFlags.Lookup("v").Value.String(); v != "3" {
		t.Errorf("-v 3 gave klog's v %q", v)
	}
	if m := klogFlags.Lookup("vmodule").Value.String(); !strings.Contains(m, "cli=4") {
		t.Errorf("--vmodule cli=4 gave %q", m)
	}
	t.Cleanup(func() { _ = klogFlags.Set("v", "0"); _ = klogFlags.Set("vmodule", "") })
}
