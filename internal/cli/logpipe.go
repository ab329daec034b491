package cli

import (
	"fmt"
	"os"
	"syscall"
)

// NeverBlockOnLogs makes the daemons' writes to stderr (klog's lines)
// fail rather than wait when stderr is a pipe or a FIFO nobody drains.
// In a container, stderr is a pipe to the runtime's shim, which passes it
// on to the runtime (containerd's CRI plugin, CRI-O's conmon), and a
// runtime that hangs, or is restarted and never serves again, stops
// reading it: once the pipe's buffers fill, every write waits, and a
// hangwatch goroutine that logs (a condition changed, a restart made)
// would wait with them, on the node where it is needed most. With
// O_NONBLOCK such a write returns EAGAIN and klog drops the line. A file
// or a terminal is left as it is.
func NeverBlockOnLogs(f *os.File) error {
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	if info.Mode()&os.ModeNamedPipe == 0 {
		return nil
	}
	if err := syscall.SetNonblock(int(f.Fd()), true); err != nil {
		return fmt.Errorf("make %s non-blocking: %w", f.Name(), err)
	}
	return nil
}
