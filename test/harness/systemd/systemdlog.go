package systemd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
)

// copyLog makes the FIFO systemd logs to and copies what comes through it
// to systemd.log until Stop.
func (s *Systemd) copyLog(fifo string) error {
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		return fmt.Errorf("mkfifo %s: %w", fifo, err)
	}
	// Read and write: opening does not wait for a writer, and reads never
	// see an end between writers.
	in, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	out, err := os.Create(s.logPath())
	if err != nil {
		_ = in.Close()
		return err
	}
	s.logFIFO, s.logDone = in, make(chan struct{})
	go func() {
		_, _ = io.Copy(out, in)
		_ = out.Close()
		close(s.logDone)
	}()
	return nil
}

// stopLog drains systemd's log FIFO, once no one writes to it, and ends
// the copy.
func (s *Systemd) stopLog() {
	if s.logFIFO == nil {
		return
	}
	if err := s.logFIFO.SetReadDeadline(time.Now().Add(200 * time.Millisecond)); err == nil {
		select {
		case <-s.logDone:
		case <-time.After(5 * time.Second):
		}
	}
	_ = s.logFIFO.Close()
}

func (s *Systemd) logPath() string { return filepath.Join(s.Dir, "systemd.log") }

// LogTail returns the last n lines of systemd's own log: units started,
// main processes exited, restarts scheduled.
func (s *Systemd) LogTail(n int) string { return harness.FileTail("systemd", s.logPath(), n) }
