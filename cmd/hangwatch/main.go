// Command hangwatch catches container-runtime, PLEG, kubelet and kernel
// hangs on a Kubernetes node before the node goes NotReady.
package main

import (
	"os"

	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/internal/cli"
)

func main() {
	initLogs()
	code := execute(os.Args[1:])
	klog.Flush()
	os.Exit(code)
}

// execute runs the CLI and maps its error to an exit code (cli.Execute).
func execute(args []string) int {
	return cli.Execute(newRootCommand(), args, os.Stderr)
}
