package harness

import (
	"testing"
	"time"
)

type Footprint struct {
	At             time.Time
	Cpu            time.Duration
	Rss            RSS
	HangwatchCalls float64 // CRI calls hangwatch sent (probes plus at least 2 per emulated relist)
	KubeletCalls   float64 // kubelet_runtime_operations_total, all operations
	HangwatchText  string  // hangwatch's /metrics, for the breakdown of its calls
}

// RSS is a process's resident memory: all of it (VmRSS), and the part
// that is its own (RssAnon: heap, stacks), not pages of its binary.
type RSS struct{ TotalKiB, AnonKiB uint64 }

func (r RSS) Max(o RSS) RSS { return RSS{max(r.TotalKiB, o.TotalKiB), max(r.AnonKiB, o.AnonKiB)} }

// ReadFootprint reads pid's CPU time and resident memory.
func ReadFootprint(t *testing.T, pid int) (time.Duration, RSS) {
	t.Helper()
	cpu, mem := ProcUsage(t, pid)
	return cpu, RSS{TotalKiB: mem.RSS, AnonKiB: mem.Anon}
}
