package bench

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
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/test/fakecri"
	"github.com/hangwatch/hangwatch/test/measurements"
)

// The daemon's settings under the shipped 128Mi limit (agent/memory.go):
// GOGC 50 and a Go memory limit of 80% of the container's.
const (
	daemonGCPercent   = 50
	shippedLimitBytes = 128 << 20
	daemonGoLimit     = shippedLimitBytes / 100 * 80
)

// TestListContainersAnswerMemory (a benchmark) runs
// probe cycles against a CRI runtime (fakecri) whose ListContainers answer
// is about 4, 8, 12 and 16 MiB (the kubelet's and hangwatch's limit), and
// logs per size what the answer takes decoded and the Go heap's peak while
// cycles run, with GOGC 50 as the daemon, without and with the memory
// limit it sets under 128Mi. fakecri runs in this process: its encoded
// answers are in the baseline, and the figures over it are the client's.
// TestLargeCRIAnswerWithin128Mi measures the daemon.
func TestListContainersAnswerMemory(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(daemonGCPercent))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	for _, mib := range []int{4, 8, 12, 16} {
		srv, live := startAnswering(t, mib<<20-4<<10)
		for _, limit := range []int64{math.MaxInt64, daemonGoLimit} {
			debug.SetMemoryLimit(limit)
			peak := cyclePeak(t, srv)
			limitText, limitName := "none", "none"
			if limit != math.MaxInt64 {
				limitText, limitName = fmt.Sprintf("%.1fMiB", mib64(limit)), "daemon"
			}
			// The baseline holds fakecri's encoded answers (in this process):
			// what the cycles add over it is the client's.
			prefix := fmt.Sprintf("list_containers_answer_%dmib_go_limit_%s_", mib, limitName)
			note := "Go memory limit " + limitText
			measurements.Record(t, prefix+"answer_mib", mib64(int64(len(srv.Answer()))), "MiB", note, fmt.Sprintf("%d containers", srv.containers))
			for _, f := range []struct {
				name  string
				bytes int64
			}{
				{"decoded_live_mib", live}, {"peak_heap_objects_mib", peak.objects}, {"peak_heap_objects_over_baseline_mib", peak.objects - peak.baseObjects},
				{"peak_heap_goal_mib", peak.goal}, {"peak_go_mapped_mib", peak.mapped}, {"peak_go_mapped_over_baseline_mib", peak.mapped - peak.baseMapped},
				{"baseline_objects_mib", peak.baseObjects}, {"baseline_mapped_mib", peak.baseMapped},
			} {
				measurements.Record(t, prefix+f.name, mib64(f.bytes), "MiB", note)
			}
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

// callCounter is the prober's observer: it counts the completed calls.
type callCounter struct{ calls atomic.Int64 }

func (c *callCounter) ObserveProbe(cri.CallResult)      {}
func (c *callCounter) ObserveCompletion(cri.CallResult) { c.calls.Add(1) }
func (c *callCounter) ObserveCycle(cri.Cycle)           {}
