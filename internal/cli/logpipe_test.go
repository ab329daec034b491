package cli

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestNeverBlockOnLogsDropsWhatAFullPipeCannotTake: with nobody reading
// the pipe, writes fail once its buffer is full instead of waiting.
func TestNeverBlockOnLogsDropsWhatAFullPipeCannotTake(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	// os.Pipe's files are non-blocking in Go's poller; a process's stderr
	// is not: wrap the descriptor as NewFile does for fd 2.
	stderr := os.NewFile(w.Fd(), "stderr")
	if err := NeverBlockOnLogs(stderr); err != nil {
		t.Fatal(err)
	}
	line := []byte(strings.Repeat("x", 200) + "\n")
	done := make(chan int)
	go func() {
		dropped := 0
		for range 10000 { // 2 MB: far past a pipe's buffer
			if _, err := stderr.Write(line); err != nil {
				dropped++
			}
		}
		done <- dropped
	}()
	select {
	case dropped := <-done:
		if dropped == 0 {
			t.Errorf("no write failed into a full pipe")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("writes into a full pipe waited")
	}
}

func TestNeverBlockOnLogsLeavesAFileAlone(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := NeverBlockOnLogs(f); err != nil {
		t.Fatal(err)
	}
}
