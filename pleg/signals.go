package pleg

import (
	"fmt"
	"time"

	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/kubeletmetrics"
)

// assessMetrics reads the kubelet-side signals: lastSeen, relistDuration
// and the scrape itself. It returns how many were usable and the problems.
func assessMetrics(cfg Config, a *Assessment, in Inputs) (int, []finding) {
	m := in.Metrics
	if !m.Configured {
		a.Signals = append(a.Signals, Signal{signalLastSeen, stateUnavailable, "no --kubelet-metrics-url"},
			Signal{signalRelist, stateUnavailable, "no --kubelet-metrics-url"})
		return 0, nil
	}
	a.EventedPLEG = m.Evented.On
	if m.Err != nil {
		kind := kubeletmetrics.Kind(m.Err)
		a.ScrapeError = string(kind)
		a.ScrapeFailingSeconds = seconds(in.Now.Sub(m.FailingSince))
		detail := scrapeDiagnosis(kind, m.Err)
		a.Signals = append(a.Signals, Signal{signalScrape, stateProblem, detail},
			Signal{signalLastSeen, stateUnavailable, "the last scrape failed"}, Signal{signalRelist, stateUnavailable, "the last scrape failed"})
		return 0, nil
	}
	if m.Snapshot == nil {
		a.Signals = append(a.Signals, Signal{signalScrape, stateUnavailable, "not scraped yet"})
		return 0, nil
	}
	a.Signals = append(a.Signals, Signal{signalScrape, stateOK, "kubelet /metrics answered"})
	a.KubeletVersion = m.Snapshot.Build.GitVersion
	usable, found := 0, []finding(nil)
	if f, ok, n := lastSeenSignal(cfg, a, in); n {
		usable++
		if ok {
			found = append(found, f)
		}
	}
	if f, ok, n := relistDurationSignal(cfg, a, m); n {
		usable++
		if ok {
			found = append(found, f)
		}
	}
	return usable, found
}

// lastSeenSignal: ok reports a problem, usable that the signal counted.
func lastSeenSignal(cfg Config, a *Assessment, in Inputs) (f finding, problem, usable bool) {
	s := in.Metrics.Snapshot
	switch {
	case !s.HasLastSeen:
		a.Signals = append(a.Signals, Signal{signalLastSeen, stateUnavailable, "kubelet_pleg_last_seen_seconds absent (kubelet before 1.18, or no successful relist yet)"})
		return f, false, false
	case !kubeletmetrics.LastSeenTrusted(in.Metrics.Evented, s.Build):
		a.Signals = append(a.Signals, Signal{signalLastSeen, stateUntrusted,
			fmt.Sprintf("the Evented PLEG is on (seen from %s) in kubelet %s: before 1.37 it sets kubelet_pleg_last_seen_seconds to now on every check",
				in.Metrics.Evented.Source, versionText(s.Build))})
		return f, false, false
	}
	age := in.Now.Sub(s.LastSeen)
	a.LastSeenAgeSeconds = seconds(age)
	if age < cfg.StaleAfter {
		a.Signals = append(a.Signals, Signal{signalLastSeen, stateOK, fmt.Sprintf("last relist %.1fs ago", age.Seconds())})
		return f, false, true
	}
	a.Signals = append(a.Signals, Signal{signalLastSeen, stateProblem, fmt.Sprintf("last relist %.1fs ago", age.Seconds())})
	return finding{ReasonStalled, stalledMessage(fmt.Sprintf(
		"the kubelet's PLEG has not completed a relist for over %v (kubelet_pleg_last_seen_seconds)", cfg.StaleAfter))}, true, true
}

func versionText(b kubeletmetrics.Build) string {
	if !b.Known() {
		return "of unknown version"
	}
	return b.GitVersion
}

func relistDurationSignal(cfg Config, a *Assessment, m MetricsState) (f finding, problem, usable bool) {
	st := m.Stats
	if !st.HasRelistP99 {
		a.Signals = append(a.Signals, Signal{signalRelist, stateUnavailable, "no relist observed in the window"})
		return f, false, false
	}
	p99 := st.RelistP99.Seconds
	a.RelistP99Seconds, a.RelistP99AboveLargestBucket = &p99, st.RelistP99.AboveLargestBucket
	above := ""
	if st.RelistP99.AboveLargestBucket {
		above = " or more"
	}
	detail := fmt.Sprintf("relist p99 %.3gs%s over %s (%s)", p99, above, windowText(st), m.Snapshot.Relist.Source)
	if st.HasPodRelistP99 && st.PodRelists > 0 {
		pod := st.PodRelistP99.Seconds
		a.PodRelistP99Seconds = &pod
		detail += fmt.Sprintf("; one pod's relist p99 %.3gs over %.0f (kubelet_pleg_pod_relist_duration_seconds)", pod, st.PodRelists)
	}
	if st.RelistP99Source == "since-start" {
		a.Signals = append(a.Signals, Signal{signalRelist, stateInformational, detail + "; judged once two scrapes make a window"})
		return f, false, false
	}
	if !slow(cfg, st.RelistP99) {
		a.Signals = append(a.Signals, Signal{signalRelist, stateOK, detail})
		return f, false, true
	}
	if l := st.Latest; l != nil && l.HasRelistP99 && !slow(cfg, l.RelistP99) {
		// The slow relists are in the window but the ones since the last
		// scrape were on time: recovered (after a thaw the hung relists
		// land in the histogram only now).
		a.Signals = append(a.Signals, Signal{signalRelist, stateOK, detail + fmt.Sprintf("; the %.0f since the last scrape were on time", l.Relists)})
		return f, false, true
	}
	a.Signals = append(a.Signals, Signal{signalRelist, stateProblem, detail})
	return finding{ReasonSlow, fmt.Sprintf("the kubelet's PLEG relist p99 is %v or more (kubelet_pleg_relist_duration_seconds)", cfg.SlowRelist)}, true, true
}

func slow(cfg Config, q kubeletmetrics.Quantile) bool {
	return q.AboveLargestBucket || time.Duration(q.Seconds*float64(time.Second)) >= cfg.SlowRelist
}

func windowText(st kubeletmetrics.Stats) string {
	switch st.RelistP99Source {
	case "window":
		return fmt.Sprintf("the last %v", st.Span.Round(time.Second))
	case "summary":
		return "the kubelet's summary window"
	}
	return "the kubelet's lifetime"
}

// assessEmulationSize finds a full list that the kubelet cannot receive.
func assessEmulationSize(e *RelistResult) (finding, bool) {
	if e == nil || (e.Class != cri.ClassTooLarge && float64(e.ListBytes) < tooLargeShare*cri.MaxMessageSize) {
		return finding{}, false
	}
	return finding{ReasonTooLarge, fmt.Sprintf(
		"a full ListPodSandbox or ListContainers response is at or near the %d MiB the kubelet accepts, so its relist fails", cri.MaxMessageSize>>20)}, true
}

func assessEmulation(cfg Config, a *Assessment, e *RelistResult, slowInARow int) (int, []finding) {
	if e == nil {
		a.Signals = append(a.Signals, Signal{signalEmulation, stateUnavailable, "relist emulation off or not run yet"})
		return 0, nil
	}
	if relistCouldNotList(e) {
		// No list answered (no socket, refused, an error): the emulation
		// tells nothing about the relist, so it is no signal.
		a.Signals = append(a.Signals, Signal{signalEmulation, stateUnavailable, emulationDetail(e)})
		return 0, nil
	}
	a.EmulatedRelistSeconds, a.EmulationInFlight = seconds(e.Duration), e.InFlight
	switch {
	case e.InFlight && e.Duration >= cfg.EmulationStallAfter:
		a.Signals = append(a.Signals, Signal{signalEmulation, stateProblem, fmt.Sprintf("own relist waiting on %s for %.1fs", e.Method, e.Duration.Seconds())})
		return 1, []finding{{ReasonStalled, stalledMessage(fmt.Sprintf(
			"hangwatch's own relist (the CRI calls of the kubelet's PLEG relist) has waited on %s for over %v", e.Method, cfg.EmulationStallAfter))}}
	case e.InFlight:
		a.Signals = append(a.Signals, Signal{signalEmulation, stateOK, fmt.Sprintf("own relist waiting on %s for %.1fs", e.Method, e.Duration.Seconds())})
	case e.Duration >= cfg.SlowRelist && slowInARow >= max(cfg.SlowRelistsInARow, 1):
		a.Signals = append(a.Signals, Signal{signalEmulation, stateProblem, emulationDetail(e)})
		return 1, []finding{{ReasonSlow, fmt.Sprintf("hangwatch's own relist took %v or more", cfg.SlowRelist)}}
	case e.Duration >= cfg.SlowRelist:
		a.Signals = append(a.Signals, Signal{signalEmulation, stateInformational, emulationDetail(e) + fmt.Sprintf(
			"; slow, %d of the %d slow relists in a row that raise RelistSlow", slowInARow, cfg.SlowRelistsInARow)})
	default:
		a.Signals = append(a.Signals, Signal{signalEmulation, stateOK, emulationDetail(e)})
	}
	return 1, nil
}

// relistCouldNotList is a finished relist whose full list failed other than
// by timing out or by a response too large (those are judged as stalls and
// as too large).
func relistCouldNotList(e *RelistResult) bool {
	listFailed := e.Method == cri.MethodListPodSandbox || e.Method == cri.MethodListContainers
	judged := e.Class == cri.ClassTimeout || e.Class == cri.ClassTooLarge
	return !e.InFlight && e.Err != "" && listFailed && !judged
}

func emulationDetail(e *RelistResult) string {
	s := fmt.Sprintf("own relist %.3fs: %d pods, %d containers, %d changed, %d calls, largest list %d bytes",
		e.Duration.Seconds(), e.Pods, e.Containers, e.ChangedPods, e.Calls, e.ListBytes)
	if e.Err != "" {
		s += fmt.Sprintf("; %s failed (%s): %s", e.Method, e.Class, e.Err)
	}
	return s
}

// scrapeDiagnosis says what a failed scrape means for an operator.
func scrapeDiagnosis(kind kubeletmetrics.ErrorKind, err error) string {
	switch kind {
	case kubeletmetrics.KindTimeout:
		return "kubelet /metrics did not answer in time; a kubelet blocked on a frozen runtime does this (its /healthz may still say ok): " + err.Error()
	case kubeletmetrics.KindUnauthorized:
		return "401 from the kubelet: give a valid token (--kubelet-token-file) or client certificate (--kubelet-kubeconfig): " + err.Error()
	case kubeletmetrics.KindForbidden:
		return "403 from the kubelet: the identity needs get on nodes/metrics (ClusterRole rule; never nodes/proxy): " + err.Error()
	case kubeletmetrics.KindParse:
		return "the kubelet's answer is not Prometheus text: " + err.Error()
	case kubeletmetrics.KindTLS:
		return "the kubelet's serving certificate did not verify: give --kubelet-ca-file, and --kubelet-tls-server-name (or the right --node-name for a loopback URL) when the certificate names another host than the URL's (a self-signed kubelet certificate names its node and has no IP SANs): " + err.Error()
	}
	return err.Error()
}
