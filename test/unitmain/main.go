// Command unitmain is a systemd unit's main process in the repair tests:
// it listens on a Unix socket, as a runtime does on its CRI socket, so
// repair finds it as the socket's listener. With -stuck-dir, one of its
// threads makes that directory, which a FUSE server never answers while
// another mkdir holds the directory's lock: that thread waits in D while
// the leader sleeps in S, as a Go runtime wedged in the kernel does.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"syscall"
)

func main() {
	listen := flag.String("listen", "", "the Unix socket to listen on")
	stuck := flag.String("stuck-dir", "", "a directory whose mkdir never returns, made from a thread of its own")
	flag.Parse()
	if err := run(*listen, *stuck); err != nil {
		fmt.Fprintln(os.Stderr, "unitmain:", err)
		os.Exit(1)
	}
}

func run(path, stuck string) error {
	_ = os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	defer func() { _ = l.Close() }()
	if stuck != "" {
		go func() {
			runtime.LockOSThread() // the thread stays in the kernel, not the goroutine alone
			_ = os.Mkdir(stuck, 0o755)
		}()
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	<-sigs
	return nil
}
