package fence

import (
	"context"
	"net"
	"path/filepath"
	"testing"
)

// TestProbeOfASocketNothingListensOnAnswersNothing: a runtime socket
// that refuses the connection (a runtime restarted that never listened
// again) is no answer; the fence takes it for a runtime that is stuck.
func TestProbeOfASocketNothingListensOnAnswersNothing(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "containerd.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // the file stays; nothing listens on it
	if got := probeRuntime(context.Background(), sock); got != "" {
		t.Errorf("probe of a refused socket = %q, want no answer", got)
	}
	if got := probeRuntime(context.Background(), filepath.Join(t.TempDir(), "none.sock")); got != "" {
		t.Errorf("probe of a missing socket = %q, want no answer", got)
	}
}
