package kubeletmetrics

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// goldenView is the stable, JSON-able part of a Snapshot.
type goldenView struct {
	Generation     Generation        `json:"generation"`
	LastSeenUnix   *int64            `json:"lastSeenUnix"`
	Relist         timingView        `json:"relist"`
	RelistInterval timingView        `json:"relistInterval"`
	PodRelist      timingView        `json:"podRelist"`
	RelistP99      *float64          `json:"relistP99SinceStart"`
	RelistP99Above bool              `json:"relistP99AboveLargestBucket"`
	DiscardEvents  *float64          `json:"discardEvents"`
	EventedPresent bool              `json:"eventedMetricsPresent"`
	EventedOn      bool              `json:"eventedOn"`
	EventedKnown   bool              `json:"eventedKnown"`
	KubeletVersion string            `json:"kubeletVersion,omitempty"`
	Gates          map[string]bool   `json:"gates,omitempty"`
	LastSeenTrust  bool              `json:"lastSeenTrusted"`
	Operations     map[string]opView `json:"operations"`
}

type timingView struct {
	Source    string             `json:"source"`
	Count     float64            `json:"count"`
	Sum       float64            `json:"sumSeconds"`
	Buckets   int                `json:"buckets"`
	Quantiles map[string]float64 `json:"quantiles,omitempty"`
}

type opView struct {
	Total          float64 `json:"total"`
	Errors         float64 `json:"errors"`
	DurationSource string  `json:"durationSource"`
	DurationCount  float64 `json:"durationCount"`
}

func viewTiming(t Timing) timingView {
	v := timingView{Source: t.Source, Count: t.Count, Sum: round6(t.Sum)}
	if t.Histogram != nil {
		v.Buckets = len(t.Histogram.Buckets)
	}
	for q, s := range t.Quantiles {
		if v.Quantiles == nil {
			v.Quantiles = map[string]float64{}
		}
		v.Quantiles[strings.TrimRight(strings.TrimRight(formatQ(q), "0"), ".")] = round6(s)
	}
	return v
}

func formatQ(q float64) string { b, _ := json.Marshal(q); return string(b) }

func round6(f float64) float64 { return float64(int64(f*1e6+0.5)) / 1e6 }

func view(s *Snapshot) goldenView {
	v := goldenView{Generation: s.Generation, Relist: viewTiming(s.Relist), RelistInterval: viewTiming(s.RelistInterval),
		PodRelist: viewTiming(s.PodRelist), EventedPresent: s.Evented.Present, Operations: map[string]opView{}}
	if s.HasLastSeen {
		u := s.LastSeen.Unix()
		v.LastSeenUnix = &u
	}
	if s.HasDiscard {
		d := s.DiscardEvents
		v.DiscardEvents = &d
	}
	st := Compare(nil, s, 0)
	if st.HasRelistP99 {
		p := round6(st.RelistP99.Seconds)
		v.RelistP99, v.RelistP99Above = &p, st.RelistP99.AboveLargestBucket
	}
	ev := EventedFromMetrics(s)
	v.EventedOn, v.EventedKnown = ev.On, ev.Known
	v.KubeletVersion, v.Gates, v.LastSeenTrust = s.Build.GitVersion, s.Gates, LastSeenTrusted(ev, s.Build)
	for name, op := range s.Operations {
		v.Operations[name] = opView{Total: op.Total, Errors: op.Errors, DurationSource: op.Duration.Source, DurationCount: op.Duration.Count}
	}
	return v
}

func TestGoldenPerGeneration(t *testing.T) {
	files, err := filepath.Glob("testdata/*.prom")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	sort.Strings(files)
	seen := map[Generation]bool{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			snap := parseFile(t, f)
			seen[snap.Generation] = true
			got, err := json.MarshalIndent(view(snap), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "golden", strings.TrimSuffix(filepath.Base(f), ".prom")+".json")
			if *update {
				if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if strings.TrimSpace(string(want)) != strings.TrimSpace(string(got)) {
				t.Errorf("%s differs from %s:\n%s", f, golden, got)
			}
		})
	}
	for _, g := range []Generation{GenMicroseconds, GenTransition, GenLastSeen, GenWideBuckets, GenEvented, GenPodRelist, GenEventedHints} {
		if !seen[g] {
			t.Errorf("no fixture of generation %s", g)
		}
	}
}

func parseFile(t *testing.T, path string) *Snapshot {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	snap, err := Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return snap
}
