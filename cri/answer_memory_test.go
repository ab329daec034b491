package cri_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/test/fakecri"
)

// The daemon's settings under the shipped 128Mi limit (agent/memory.go):
// GOGC 50 and a Go memory limit of 80% of the container's.
const (
	daemonGCPercent   = 50
	shippedLimitBytes = 128 << 20
	daemonGoLimit     = shippedLimitBytes / 100 * 80
)

// TestListContainersAnswerMemory (a benchmark: HANGWATCH_BENCH=1) runs
// probe cycles against a CRI runtime (fakecri) whose ListContainers answer
// is about 4, 8, 12 and 16 MiB (the kubelet's and hangwatch's limit), and
// logs per size what the answer takes decoded and the Go heap's peak while
// cycles run, with GOGC 50 as the daemon, without and with the memory
// limit it sets under 128Mi. fakecri runs in this process: its encoded
// answers are in the baseline, and the figures over it are the client's.
// TestLargeCRIAnswerWithin128Mi (test/integration) measures the daemon.
func TestListContainersAnswerMemory(t *testing.T) {
	if os.Getenv("HANGWATCH_BENCH") == "" {
		t.Skip("benchmark: run with HANGWATCH_BENCH=1")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(daemonGCPercent))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	for _, mib := range []int{4, 8, 12, 16} {
		srv, live := startAnswering(t, mib<<20-4<<10)
		for _, limit := range []int64{math.MaxInt64, daemonGoLimit} {
			debug.SetMemoryLimit(limit)
			peak := cyclePeak(t, srv)
			limitText := "none"
			if limit != math.MaxInt64 {
				limitText = fmt.Sprintf("%.1fMiB", mib64(limit))
			}
			// The baseline holds fakecri's encoded answers (in this process):
			// what the cycles add over it is the client's.
			t.Logf("MEASURE list_containers_answer answer=%.2fMiB containers=%d decoded_live=%.1fMiB go_limit=%s "+
				"peak_heap_objects=%.1fMiB (+%.1fMiB over the baseline) peak_heap_goal=%.1fMiB peak_go_mapped=%.1fMiB (+%.1fMiB) "+
				"baseline_objects=%.1fMiB baseline_mapped=%.1fMiB",
				mib64(int64(len(srv.Answer()))), srv.containers, mib64(live), limitText,
				mib64(peak.objects), mib64(peak.objects-peak.baseObjects), mib64(peak.goal), mib64(peak.mapped),
				mib64(peak.mapped-peak.baseMapped), mib64(peak.baseObjects), mib64(peak.baseMapped))
			if limit != math.MaxInt64 && peak.mapped > shippedLimitBytes {
				t.Errorf("answer of %d MiB under the daemon's limit: the Go runtime mapped %.1f MiB at its peak, over the shipped 128Mi",
					mib, mib64(peak.mapped))
			}
		}
		srv.Stop()
	}
}

type answering struct {
	*fakecri.Server
	containers int
}

// startAnswering starts fakecri with an answer of at most target bytes and
// returns it with the answer's decoded size (live heap after a collection).
func startAnswering(t *testing.T, target int) (answering, int64) {
	t.Helper()
	dir, err := os.MkdirTemp("", "hw-fakecri-") // short: a socket path is at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	pods, ctrs := fakecri.Objects(target)
	srv, err := fakecri.Start(filepath.Join(dir, "cri.sock"), pods, ctrs)
	if err != nil {
		t.Fatal(err)
	}
	n := len(ctrs)
	before := heapLive() // the objects above dropped
	var decoded runtimeapi.ListContainersResponse
	if err := proto.Unmarshal(srv.Answer(), &decoded); err != nil {
		t.Fatal(err)
	}
	live := heapLive() - before
	runtime.KeepAlive(&decoded)
	return answering{Server: srv, containers: n}, live
}

func heapLive() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

type peaks struct{ objects, goal, mapped, baseObjects, baseMapped int64 }

// cyclePeak runs five probe cycles against srv and samples the runtime's
// memory every 200µs meanwhile: the peak of the heap's objects (live and
// not yet swept), of the heap goal, and of what the runtime has mapped
// and not returned (/memory/classes/total minus heap/released: what the
// Go memory limit holds down, and what counts in the RSS).
func cyclePeak(t *testing.T, srv answering) peaks {
	t.Helper()
	conn, err := cri.Dial(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	p := cri.NewProber(conn.Runtime, conn.Image, cri.DefaultConfig(), clock.RealClock{}, &callCounter{})
	runtime.GC() // twice, and once more in FreeOSMemory: pooled buffers (sync.Pool) of the run before go too
	runtime.GC()
	debug.FreeOSMemory()
	var out peaks
	out.baseObjects, out.baseMapped, _ = readMemory()
	stop, done := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	go func() {
		defer close(done)
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for {
			objects, mapped, goal := readMemory()
			mu.Lock()
			out.objects, out.mapped, out.goal = max(out.objects, objects), max(out.mapped, mapped), max(out.goal, goal)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c := p.Cycle(ctx)
		cancel()
		if c.Containers != srv.containers {
			t.Fatalf("cycle %d listed %d containers, want %d: %+v", i, c.Containers, srv.containers, c.Calls)
		}
	}
	close(stop)
	<-done
	mu.Lock()
	defer mu.Unlock()
	return out
}

var memorySamples = []metrics.Sample{
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/memory/classes/total:bytes"},
	{Name: "/memory/classes/heap/released:bytes"},
	{Name: "/gc/heap/goal:bytes"},
}

func readMemory() (objects, mapped, goal int64) {
	s := append([]metrics.Sample(nil), memorySamples...)
	metrics.Read(s)
	v := func(i int) int64 { return int64(s[i].Value.Uint64()) }
	return v(0), v(1) - v(2), v(3)
}

func mib64(b int64) float64 { return float64(b) / (1 << 20) }
