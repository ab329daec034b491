// Command pause is the tiny static binary packed as the test pause image:
// it waits for a signal to stop, like the Kubernetes pause container.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
