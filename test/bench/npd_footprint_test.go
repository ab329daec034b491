package bench

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/measurements"
)

// TestFootprintBesideNPD runs hangwatch and node-problem-detector side by
// side over the same window and compares their memory and CPU: first
// standalone (the same containerd, the same /dev/kmsg, no API server),
// then both reporting to the same kube-apiserver for the same Node as its
// node identity. It is a benchmark (test/bench, hack/bench.sh),
// with HANGWATCH_NPD_BIN pointing at the binary hack/lib.sh's ensure_npd
// builds (its kernel-monitor.json beside it).
func TestFootprintBesideNPD(t *testing.T) {
	npd := npdUnderTest(t)
	c := hangwatch.SharedContainerd(t)
	hw := leanHangwatch(t)
	warmUp, window := footprintWindows(t)
	var rows []footprintRow
	t.Run("standalone", func(t *testing.T) {
		hwProc, npdProc := startStandalonePair(t, c.Endpoint, hw, npd)
		rows = append(rows, measurePair(t, "standalone", hwProc, npdProc, warmUp, window)...)
	})
	t.Run("apiserver", func(t *testing.T) {
		hwProc, npdProc := startReportingPair(t, c.Endpoint, hw, npd)
		rows = append(rows, measurePair(t, "kube-apiserver", hwProc, npdProc, warmUp, window)...)
	})
	measurements.Duration(t, "npd_bench_window", window)
	measurements.Duration(t, "npd_bench_warm_up", warmUp)
	t.Logf("footprint beside node-problem-detector, %v after a %v warm-up, sampled every second:\n%s",
		window, warmUp, footprintTable(rows))
}

// npdBinary is the node-problem-detector under test and its default kernel
// monitor config.
type npdBinary struct{ bin, kernelMonitor string }

func npdUnderTest(t *testing.T) npdBinary {
	t.Helper()
	bin := os.Getenv("HANGWATCH_NPD_BIN")
	if bin == "" {
		t.Skip("no node-problem-detector: set HANGWATCH_NPD_BIN (./hack/bench.sh builds it with ensure_npd)")
	}
	n := npdBinary{bin: bin, kernelMonitor: filepath.Join(filepath.Dir(bin), "kernel-monitor.json")}
	for _, p := range []string{n.bin, n.kernelMonitor} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("node-problem-detector: %v", err)
		}
	}
	return n
}

// leanHangwatch builds hangwatch as the release does (hack/lib.sh's
// build_hangwatch: static, -trimpath, stripped), as ensure_npd builds
// node-problem-detector, so the two binaries compare.
func leanHangwatch(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "hangwatch")
	if err := harness.GoBuild(harness.ModuleRoot(), out, "./cmd/hangwatch", "-tags", harness.BuildTags, "-ldflags", "-s -w"); err != nil {
		t.Fatal(err)
	}
	return out
}

// footprintWindows are the warm-up and the measured window:
// HANGWATCH_NPD_WINDOW (default 2m) and a third of it before.
func footprintWindows(t *testing.T) (warmUp, window time.Duration) {
	t.Helper()
	window = 2 * time.Minute
	if v := os.Getenv("HANGWATCH_NPD_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 10*time.Second {
			t.Fatalf("HANGWATCH_NPD_WINDOW=%q: want a duration of at least 10s", v)
		}
		window = d
	}
	return window / 3, window
}

// startStandalonePair starts both without an API server: hangwatch on the
// containerd (and the kernel log, by default), node-problem-detector's
// system-log-monitor with its kernel-monitor.json (/dev/kmsg).
func startStandalonePair(t *testing.T, endpoint, hw string, npd npdBinary) (hwProc, npdProc *benchProc) {
	t.Helper()
	addr := harness.FreeAddr(t)
	hwProc = startBenchProc(t, "hangwatch", hw, "run", "-r", endpoint, "--listen-address", addr)
	hwProc.waitReady(t, "http://"+addr+"/healthz")
	promAddr := harness.FreeAddr(t)
	npdProc = startBenchProc(t, "node-problem-detector", npd.bin,
		append(npd.args(t, "bench-standalone", promAddr), "--enable-k8s-exporter=false")...)
	// Without the k8s exporter NPD serves no /healthz; its Prometheus
	// endpoint answers once the exporters are set up.
	npdProc.waitReady(t, "http://"+promAddr+"/metrics")
	hwProc.metricsURL, npdProc.metricsURL = "http://"+addr+"/metrics", "http://"+promAddr+"/metrics"
	return hwProc, npdProc
}

// startReportingPair registers a Node, renews its Lease as a kubelet
// would, and starts both reporting to the API server as the node
// identity; it returns once each has written its conditions.
func startReportingPair(t *testing.T, endpoint, hw string, npd npdBinary) (hwProc, npdProc *benchProc) {
	t.Helper()
	cp := hangwatch.SharedControlPlane(t)
	node := hangwatch.UniqueNode("hw-npd")
	kc := hangwatch.CreateNode(t, cp, node)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	hangwatch.RenewLease(t, harness.ClientFor(t, kc), node, 10*time.Second, stop)

	addr := harness.FreeAddr(t)
	hwProc = startBenchProc(t, "hangwatch", hw, "run", "-r", endpoint, "--listen-address", addr,
		"--kubeconfig", kc, "--node-name", node)
	hwProc.waitReady(t, "http://"+addr+"/healthz")
	healthAddr, promAddr := harness.FreeAddr(t), harness.FreeAddr(t)
	host, port, _ := net.SplitHostPort(healthAddr)
	npdProc = startBenchProc(t, "node-problem-detector", npd.bin, append(npd.args(t, node, promAddr),
		"--apiserver-override="+cp.URL+"?inClusterConfig=false&auth="+kc, "--address="+host, "--port="+port)...)
	npdProc.waitReady(t, "http://"+healthAddr+"/healthz")
	hwProc.metricsURL, npdProc.metricsURL = "http://"+addr+"/metrics", "http://"+promAddr+"/metrics"
	for _, p := range []struct {
		proc *benchProc
		cond string
	}{{hwProc, "RuntimeHung"}, {npdProc, "KernelDeadlock"}} {
		harness.Eventually(t, time.Minute, "Node "+node+" "+p.cond, func() bool { return hangwatch.NodeCond(t, cp, node, p.cond) != nil },
			harness.UnlessExited(p.proc))
	}
	if c := hangwatch.NodeCond(t, cp, node, "KubeletUnresponsive"); c == nil || c.Status != corev1.ConditionFalse {
		t.Errorf("KubeletUnresponsive %+v while the Lease is renewed", c)
	}
	return hwProc, npdProc
}

// args are node-problem-detector's flags common to both setups: the kernel
// monitor only, and its Prometheus endpoint on a free loopback port.
func (n npdBinary) args(t *testing.T, node, promAddr string) []string {
	t.Helper()
	host, port, err := net.SplitHostPort(promAddr)
	if err != nil {
		t.Fatal(err)
	}
	return []string{"--config.system-log-monitor=" + n.kernelMonitor, "--hostname-override=" + node,
		"--prometheus-address=" + host, "--prometheus-port=" + port}
}

// benchProc is a process the benchmark started (a harness.Proc).
type benchProc struct {
	*harness.Proc
	bin string
	// metricsURL is its Prometheus endpoint, scraped during the window.
	metricsURL string
	// cachedPages is how many of the binary's pages were in the page
	// cache just before the start, after dropping them.
	cachedPages int
}

// startBenchProc drops bin's pages from the page cache (a just-linked
// binary's are all there, and the faults of a warm start map more of them)
// and starts it with its output in a log file; when the test ends it gets
// SIGTERM, then SIGKILL after 10 s.
func startBenchProc(t *testing.T, name, bin string, args ...string) *benchProc {
	t.Helper()
	cached, err := dropPageCache(bin)
	if err != nil {
		t.Fatal(err)
	}
	p := harness.StartProc(t, name, harness.ProcOptions{Grace: 10 * time.Second, DieWithTest: true}, bin, args...)
	return &benchProc{Proc: p, bin: bin, cachedPages: cached}
}

// waitReady waits until url answers 200.
func (p *benchProc) waitReady(t *testing.T, url string) {
	t.Helper()
	harness.Eventually(t, time.Minute, p.Name+": "+url+" to answer 200", func() bool {
		code, _, err := harness.Get(url)
		return err == nil && code == http.StatusOK
	}, harness.UnlessExited(p))
}
