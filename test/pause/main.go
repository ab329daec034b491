// Command pause is the tiny static binary packed as the test pause image:
// it waits for a signal to stop, like the Kubernetes pause container. With
// WRITE_TO set it is also a writer: every 100 ms it appends a line
// "<POD_UID> <seq> <unix nanoseconds>" to that file and fsyncs it, so a
// test can tell which pod wrote to a volume, and when.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	if path := os.Getenv("WRITE_TO"); path != "" {
		go write(path, os.Getenv("POD_UID"))
	}
	<-stop
}

// write appends a line to path every 100 ms, fsynced, until the process
// ends; it exits on the first failure.
func write(path, uid string) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for seq := 0; ; seq++ {
		if _, err := fmt.Fprintf(f, "%s %d %d\n", uid, seq, time.Now().UnixNano()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := f.Sync(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
