package kubeletmetrics

import (
	"math"
	"strings"
	"testing"
	"time"
)

// The real pair around a 200 s containerd freeze: the relists that hung
// land in +Inf only after the thaw, and list_podsandbox errors appear.
func TestWindowAcrossARealFreeze(t *testing.T) {
	before := parseFile(t, "testdata/kubelet-1.34-before-freeze.prom")
	after := parseFile(t, "testdata/kubelet-1.34-after-thaw.prom")
	w := NewWindow(10 * time.Minute)
	t0 := time.Unix(1795300000, 0)
	if st := w.Add(t0, before); st.RelistP99Source != "since-start" || st.Span != 0 {
		t.Fatalf("first scrape: %+v", st)
	}
	st := w.Add(t0.Add(280*time.Second), after)
	if st.Reset || st.Span != 280*time.Second || st.RelistP99Source != "window" {
		t.Fatalf("stats = %+v", st)
	}
	if !st.HasRelistP99 || !st.RelistP99.AboveLargestBucket || st.RelistP99.Seconds != 10 {
		t.Errorf("p99 over the freeze = %+v, want above the 10 s bucket", st.RelistP99)
	}
	if st.Operations["list_podsandbox"].Errors < 1 {
		t.Errorf("list_podsandbox errors in window = %v, want the timed-out calls", st.Operations["list_podsandbox"])
	}
	if st.Relists <= 0 {
		t.Errorf("relists in window = %v", st.Relists)
	}
}

func TestWindowCounterReset(t *testing.T) {
	after := parseFile(t, "testdata/kubelet-1.34-after-thaw.prom")
	restarted := parseFile(t, "testdata/kubelet-1.34-healthy.prom")
	restarted.Relist.Histogram.Count, restarted.Relist.Histogram.Buckets[len(restarted.Relist.Histogram.Buckets)-1].Count = 3, 3
	for i := range restarted.Relist.Histogram.Buckets {
		restarted.Relist.Histogram.Buckets[i].Count = math.Min(restarted.Relist.Histogram.Buckets[i].Count, 3)
	}
	w := NewWindow(time.Minute)
	t0 := time.Unix(0, 0)
	w.Add(t0, after)
	st := w.Add(t0.Add(10*time.Second), restarted)
	if !st.Reset || st.Relists != 3 || st.RelistP99Source != "since-start" {
		t.Fatalf("after a restart: reset=%v relists=%v source=%s", st.Reset, st.Relists, st.RelistP99Source)
	}
}

func TestWindowDropsOldScrapes(t *testing.T) {
	s := parseFile(t, "testdata/kubelet-1.34-healthy.prom")
	w := NewWindow(30 * time.Second)
	t0 := time.Unix(0, 0)
	for i := 0; i <= 10; i++ {
		w.Add(t0.Add(time.Duration(i)*10*time.Second), s)
	}
	if len(w.samples) > 4 {
		t.Errorf("kept %d samples for a 30 s span at 10 s", len(w.samples))
	}
	st := w.Add(t0.Add(110*time.Second), s)
	if st.Span < 30*time.Second || st.Span > 40*time.Second {
		t.Errorf("span = %v, want about the window", st.Span)
	}
}

func TestQuantileInterpolates(t *testing.T) {
	h := &Histogram{Buckets: []Bucket{{0.005, 195}, {0.01, 197}, {0.025, 200}, {math.Inf(1), 200}}, Count: 200}
	q, ok := h.Quantile(0.5)
	if !ok || math.Abs(q.Seconds-0.005*100/195) > 1e-9 {
		t.Errorf("p50 = %v", q)
	}
	q, _ = h.Quantile(0.99)
	if q.Seconds <= 0.01 || q.Seconds > 0.025 || q.AboveLargestBucket {
		t.Errorf("p99 = %+v", q)
	}
	if _, ok := (&Histogram{}).Quantile(0.99); ok {
		t.Error("empty histogram has a quantile")
	}
	inf := &Histogram{Buckets: []Bucket{{10, 0}, {math.Inf(1), 2}}, Count: 2}
	if q, _ := inf.Quantile(0.99); !q.AboveLargestBucket || q.Seconds != 10 {
		t.Errorf("all in +Inf: %+v", q)
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	cases := map[string]string{
		"garbage":            "# TYPE kubelet_pleg_last_seen_seconds gauge\nkubelet_pleg_last_seen_seconds 1\n<html>oops</html>\n",
		"bad value":          "kubelet_pleg_last_seen_seconds 1\nkubelet_pleg_discard_events abc\n",
		"truncated":          "# TYPE kubelet_pleg_last_seen_seconds gauge\nkubelet_pleg_last_seen_sec",
		"empty":              "\n",
		"duplicate TYPE":     "# TYPE kubelet_pleg_discard_events gauge\n# TYPE kubelet_pleg_discard_events counter\n",
		"unterminated label": "kubelet_pleg_discard_events{a=\"b 1\n",
	}
	for name, text := range cases {
		_, err := ParseBytes([]byte(text))
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if name != "empty" && !strings.Contains(err.Error(), "line") {
			t.Errorf("%s: error does not name the line: %v", name, err)
		}
	}
}

// TestParseSkipsFamiliesItDoesNotRead: a family no Snapshot field comes
// from is not parsed, so its oddities cost nothing and fail nothing.
func TestParseSkipsFamiliesItDoesNotRead(t *testing.T) {
	text := "# HELP a an unrelated family\n# TYPE a gauge\n# TYPE a counter\na{x=\"1\"} 2\n" +
		"# TYPE kubelet_pleg_last_seen_seconds gauge\nkubelet_pleg_last_seen_seconds 1.7e+09\n"
	s, err := ParseBytes([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if !s.HasLastSeen || s.LastSeen.Unix() != 1.7e9 {
		t.Errorf("last seen %v (has %v), want 1.7e9", s.LastSeen, s.HasLastSeen)
	}
	if _, err := ParseBytes([]byte(text + "kubelet_pleg_discard_events{a=\"b 1\n")); err == nil || !strings.Contains(err.Error(), "line 7") {
		t.Errorf("a broken line of a read family: %v, want an error naming line 7", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, p := range []string{"testdata/kubelet-1.13-minikube-excerpt.prom", "testdata/kubelet-1.19-constructed.prom"} {
		f.Add([]byte(readAll(f, p)))
	}
	f.Add([]byte("kubelet_pleg_last_seen_seconds NaN\n"))
	f.Add([]byte("# TYPE kubelet_pleg_relist_duration_seconds histogram\nkubelet_pleg_relist_duration_seconds_bucket{le=\"+Inf\"} -1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseBytes(data)
		if err != nil {
			return
		}
		st := Compare(s, s, time.Second)
		_ = st
		_ = EventedFromMetrics(s)
	})
}

// TestPodRelistStatsFrom136: a 1.36+ kubelet's per-pod relist histogram is
// read into the window's stats, since start and as deltas.
func TestPodRelistStatsFrom136(t *testing.T) {
	s := parseFile(t, "testdata/kubelet-1.36-derived.prom")
	st := Compare(nil, s, 0)
	if !st.HasPodRelistP99 || st.PodRelists != s.PodRelist.Count || st.PodRelistP99.Seconds <= 0 {
		t.Fatalf("since start: %+v, want the per-pod relists of the histogram", st)
	}
	if st := Compare(s, s, time.Minute); st.PodRelists != 0 || st.HasPodRelistP99 {
		t.Fatalf("no new relists: %+v, want none", st)
	}
	if st := Compare(nil, parseFile(t, "testdata/kubelet-1.34-healthy.prom"), 0); st.HasPodRelistP99 {
		t.Fatal("a 1.34 kubelet has no per-pod relist histogram")
	}
}
