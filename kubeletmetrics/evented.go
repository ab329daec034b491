package kubeletmetrics

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
)

// EventedPLEG is whether the kubelet runs the Evented PLEG, and how that
// was learned. With it on, kubelets before kubernetes PR #139262 set
// kubelet_pleg_last_seen_seconds to "now" on every health check, so the
// gauge cannot show a stall (kubelet.md §1.2).
type EventedPLEG struct {
	On bool
	// Known is false when neither /configz nor the metrics could tell.
	Known bool
	// Source is "configz", "metrics" or "".
	Source string
}

// slowRelistInterval: with the Evented PLEG on, the generic relist runs
// every 300 s instead of every second.
const slowRelistInterval = 100.0

// EventedFromMetrics judges the Evented PLEG from the metrics alone: the
// gate as kubernetes_feature_enabled reports it (1.26 on), else the event
// stream has connected or failed (the counters move only with the gate
// on), or the generic relist runs minutes apart.
func EventedFromMetrics(s *Snapshot) EventedPLEG {
	if on, ok := s.Gates[GateEventedPLEG]; ok {
		return EventedPLEG{On: on, Known: true, Source: "metrics"}
	}
	if s.Evented.ConnectionOK > 0 || s.Evented.ConnectionErrors > 0 {
		return EventedPLEG{On: true, Known: true, Source: "metrics"}
	}
	if s.RelistInterval.Count >= 2 && s.RelistInterval.Sum/s.RelistInterval.Count > slowRelistInterval {
		return EventedPLEG{On: true, Known: true, Source: "metrics"}
	}
	return EventedPLEG{Known: s.Evented.Present || s.HasLastSeen, Source: "metrics"}
}

// configz is the part of the kubelet's /configz this package reads.
type configz struct {
	KubeletConfig *struct {
		FeatureGates map[string]bool `json:"featureGates"`
	} `json:"kubeletconfig"`
}

// EventedFromConfigz reads the EventedPLEG feature gate from the kubelet's
// /configz (authorized as nodes/proxy, so often forbidden; the caller then
// falls back to EventedFromMetrics).
func (s *Scraper) EventedFromConfigz(ctx context.Context) (EventedPLEG, error) {
	u, err := url.Parse(s.opts.URL)
	if err != nil {
		return EventedPLEG{}, err
	}
	u.Path, u.RawQuery = "/configz", ""
	body, err := s.get(ctx, u.String())
	if err != nil {
		return EventedPLEG{}, err
	}
	var c configz
	if err := json.Unmarshal(body, &c); err != nil {
		return EventedPLEG{}, &ScrapeError{Kind: KindParse, URL: u.String(), Err: fmt.Errorf("not a kubelet /configz: %w", err)}
	}
	if c.KubeletConfig == nil {
		return EventedPLEG{}, &ScrapeError{Kind: KindParse, URL: u.String(), Err: fmt.Errorf("not a kubelet /configz: no kubeletconfig key")}
	}
	return EventedPLEG{On: c.KubeletConfig.FeatureGates["EventedPLEG"], Known: true, Source: "configz"}, nil
}
