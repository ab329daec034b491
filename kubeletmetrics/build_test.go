package kubeletmetrics

import (
	"strings"
	"testing"
)

const buildAndGates = `# HELP kubernetes_build_info [ALPHA] A metric with a constant '1' value labeled by major, minor, git version.
# TYPE kubernetes_build_info gauge
kubernetes_build_info{build_date="2026-11-01T00:00:00Z",compiler="gc",git_version="v1.37.2",major="1",minor="37",platform="linux/amd64"} 1
# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage and enablement of a k8s feature.
# TYPE kubernetes_feature_enabled gauge
kubernetes_feature_enabled{name="AllAlpha",stage="ALPHA"} 0
kubernetes_feature_enabled{name="CRIListStreaming",stage="ALPHA"} 1
kubernetes_feature_enabled{name="EventedPLEG",stage="ALPHA"} 1
`

func TestBuildAndGatesFromMetrics(t *testing.T) {
	s, err := ParseBytes([]byte(buildAndGates))
	if err != nil {
		t.Fatal(err)
	}
	if s.Build.GitVersion != "v1.37.2" || !s.Build.AtLeast(1, 37) || s.Build.AtLeast(1, 38) {
		t.Fatalf("build = %+v, want v1.37.2", s.Build)
	}
	if s.Generation != GenEventedHints {
		t.Fatalf("generation %s, want %s", s.Generation, GenEventedHints)
	}
	if !s.Gates[GateEventedPLEG] || !s.Gates[GateCRIListStreaming] || len(s.Gates) != 2 {
		t.Fatalf("gates = %v, want the two read, both on", s.Gates)
	}
	if ev := EventedFromMetrics(s); !ev.On || !ev.Known {
		t.Fatalf("evented %+v, want on from the gate", ev)
	}
	kept, err := keepReadFamilies([]byte(buildAndGates))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(kept), "AllAlpha") {
		t.Fatal("a gate not read was kept for the parser")
	}
}

func TestParseMajorMinor(t *testing.T) {
	for v, want := range map[string][2]int{
		"v1.37.2": {1, 37}, "v1.36.0-alpha.1+abc": {1, 36}, "v0.0.0-master+$Format:%H$": {0, 0},
		"": {0, 0}, "v1": {0, 0}, "vX.Y.Z": {0, 0}, "v1.-3.0": {0, 0},
	} {
		if ma, mi := parseMajorMinor(v); ma != want[0] || mi != want[1] {
			t.Errorf("parseMajorMinor(%q) = %d, %d, want %v", v, ma, mi, want)
		}
	}
}

// TestLastSeenTrustedByGeneration: the gauge is real with the Evented PLEG
// off, and with it on only from 1.37 (the generic relist keeps its 1 s
// period); before that, or when the version is unknown, it is not.
func TestLastSeenTrustedByGeneration(t *testing.T) {
	on, off := EventedPLEG{On: true, Known: true}, EventedPLEG{Known: true}
	cases := []struct {
		ev   EventedPLEG
		v    string
		want bool
	}{
		{off, "v1.34.2", true}, {off, "", true},
		{on, "v1.29.0", false}, {on, "v1.35.4", false}, {on, "v1.36.3", false},
		{on, "v1.37.2", true}, {on, "v1.38.0-alpha.0", true}, {on, "v0.0.0-master", false},
	}
	for _, c := range cases {
		ma, mi := parseMajorMinor(c.v)
		if got := LastSeenTrusted(c.ev, Build{GitVersion: c.v, Major: ma, Minor: mi}); got != c.want {
			t.Errorf("evented %v, kubelet %q: trusted %v, want %v", c.ev.On, c.v, got, c.want)
		}
	}
}
