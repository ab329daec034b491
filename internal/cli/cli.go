// Package cli is what hangwatch's two commands share in main: the error
// that carries an exit code, the run of the root command that maps its
// error to one, and klog's verbosity flags.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// ExitError ends the process with Code; Err, if any, is printed.
type ExitError struct {
	Code int
	Err  error
}

// Exit is an ExitError of code and err.
func Exit(code int, err error) error { return &ExitError{Code: code, Err: err} }

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit code %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Execute runs root with args and maps its error to an exit code: 0 for
// success, the Code of an ExitError, and 2 for anything else (a usage or
// configuration error). Errors are printed on stderr.
func Execute(root *cobra.Command, args []string, stderr io.Writer) int {
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if err == nil {
		return 0
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintln(stderr, "Error:", err)
		}
		return ee.Code
	}
	fmt.Fprintf(stderr, "Error: %v\nRun '%s --help' for usage.\n", err, root.Name())
	return 2
}

// AddVerbosityFlags adds klog's -v and --vmodule to fs and returns klog's
// own flag set, where their values are read.
func AddVerbosityFlags(fs *pflag.FlagSet) *flag.FlagSet {
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	for _, name := range []string{"v", "vmodule"} {
		pf := pflag.PFlagFromGoFlag(klogFlags.Lookup(name))
		if name == "v" {
			pf.Shorthand = "v"
		}
		fs.AddFlag(pf)
	}
	return klogFlags
}
