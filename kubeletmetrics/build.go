package kubeletmetrics

import (
	"strconv"
	"strings"
)

// The families that say which kubelet is answering and which of its
// feature gates are on (kubernetes_feature_enabled from 1.26 on).
const (
	buildInfoFamily = "kubernetes_build_info"
	featureFamily   = "kubernetes_feature_enabled"
)

// The feature gates a Snapshot reads.
const (
	GateEventedPLEG      = "EventedPLEG"
	GateCRIListStreaming = "CRIListStreaming"
)

// Build is the kubelet's version from kubernetes_build_info. Minor is 0
// when unknown (a build without version stamps says v0.0.0-master).
type Build struct {
	GitVersion string
	Major      int
	Minor      int
}

// Known reports whether the version could be read.
func (b Build) Known() bool { return b.Major > 0 }

// AtLeast reports whether the kubelet is major.minor or newer; false when
// the version is unknown.
func (b Build) AtLeast(major, minor int) bool {
	return b.Known() && (b.Major > major || b.Major == major && b.Minor >= minor)
}

func readBuild(fams map[string]*family) Build {
	f := fams[buildInfoFamily]
	if f == nil || len(f.Metric) == 0 {
		return Build{}
	}
	b := Build{}
	for _, l := range f.Metric[0].GetLabel() {
		if l.GetName() == "git_version" {
			b.GitVersion = l.GetValue()
		}
	}
	b.Major, b.Minor = parseMajorMinor(b.GitVersion)
	return b
}

// parseMajorMinor reads "v1.37.2" (or "v1.37.0-alpha.1+abc") as 1, 37;
// anything else, v0.0.0-master included, as 0, 0.
func parseMajorMinor(v string) (int, int) {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return 0, 0
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || major <= 0 || minor < 0 {
		return 0, 0
	}
	return major, minor
}

// readGates reads the kept lines of kubernetes_feature_enabled.
func readGates(fams map[string]*family) map[string]bool {
	f := fams[featureFamily]
	if f == nil {
		return nil
	}
	gates := map[string]bool{}
	for _, m := range f.Metric {
		for _, l := range m.GetLabel() {
			if l.GetName() == "name" {
				gates[l.GetValue()] = scalar(m) == 1
			}
		}
	}
	return gates
}

// LastSeenTrusted says whether kubelet_pleg_last_seen_seconds shows the
// generic relist's real progress, by the kubelet's PLEG generation:
//   - Evented PLEG off: always.
//   - 1.26-1.36 with it on: no. The generic relist runs every 300 s and the
//     gauge is set to "now" on each health check (kubelet.md §1.2).
//   - 1.37 on (kubernetes PR #139262): yes. The Evented PLEG only asks for
//     relists; the 1 s generic relist keeps running and sets the gauge.
//   - With it on and the version unknown: no, the safe side.
func LastSeenTrusted(ev EventedPLEG, b Build) bool {
	return !ev.On || b.AtLeast(1, 37)
}

// ListStreaming is the kubelet's CRIListStreaming gate (alpha, off by
// default, in 1.36 and 1.37): whether it lists with the CRI streams. known
// is false on a nil snapshot or a kubelet that does not say.
func (s *Snapshot) ListStreaming() (on, known bool) {
	if s == nil {
		return false, false
	}
	on, known = s.Gates[GateCRIListStreaming]
	return on, known
}
