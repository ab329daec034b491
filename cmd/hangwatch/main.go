// Command hangwatch catches container-runtime, PLEG, kubelet and kernel
// hangs on a Kubernetes node before the node goes NotReady.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"k8s.io/klog/v2"
)

// exitError ends the process with a code; its error, if any, is printed.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit code %d", e.code)
	}
	return e.err.Error()
}

func main() {
	initLogs()
	code := execute(os.Args[1:])
	klog.Flush()
	os.Exit(code)
}

// execute runs the CLI and maps its error to an exit code: 0 for success,
// the code of an exitError, and 2 for anything else (a usage error).
func execute(args []string) int {
	cmd := newRootCommand()
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "Error:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(os.Stderr, "Error: %v\nRun 'hangwatch --help' for usage.\n", err)
	return 2
}
