package kernellog

import (
	"time"

	"k8s.io/utils/clock"
)

// ScanMatch is one match found by a scan.
type ScanMatch struct {
	Time      time.Time `json:"time"`
	Seq       uint64    `json:"-"` // kmsg sequence number, or the line number in other formats
	Rule      string    `json:"rule"`
	Reason    string    `json:"reason"`
	Type      string    `json:"type"`
	Condition string    `json:"condition,omitempty"`
	Recovery  bool      `json:"-"` // the rule's recoveryPattern matched
	Line      string    `json:"line"`
}

// Match feeds one record through the matchers that accept its facility
// and hands on each match, recoveries included. `diag` and `rules test`
// both see records this way.
func (m Matchers) Match(r Record, fn func(ScanMatch)) {
	hit := func(h Hit) {
		fn(ScanMatch{Time: r.Time, Seq: r.Seq, Rule: h.Rule.Name, Reason: h.Rule.Reason, Type: h.Rule.Type,
			Condition: h.Rule.Condition, Recovery: h.Recovery, Line: h.Text})
	}
	for _, one := range m {
		if one.Accepts(r.Facility) {
			one.Feed(r.Message, hit)
		}
	}
}

// Scan is what a one-shot read of the kernel log found.
type Scan struct {
	Source          string      `json:"source"`
	LookbackSeconds float64     `json:"lookbackSeconds"`
	Lines           uint64      `json:"linesRead"`
	Lost            uint64      `json:"recordsLost"`
	TotalMatches    int         `json:"totalMatches"`
	Matches         []ScanMatch `json:"matches"` // the most recent, at most the scan's limit
}

// ScanKmsg reads the records of the lookback window that are in the kernel
// log now, matches them and keeps the last max matches.
func ScanKmsg(path string, lookback time.Duration, sets []*RuleSet, clk clock.PassiveClock, max int) (Scan, error) {
	s := Scan{Source: path, LookbackSeconds: lookback.Seconds(), Matches: []ScanMatch{}}
	matchers, err := NewMatchers(sets)
	if err != nil {
		return s, err
	}
	k, source, err := OpenSource(path, lookback, clk)
	if err != nil {
		return s, err
	}
	defer k.Close()
	s.Source = source
	err = k.ReadAvailable(func(r Record) {
		matchers.Match(r, func(m ScanMatch) {
			if m.Recovery {
				return
			}
			s.TotalMatches++
			s.Matches = append(s.Matches, m)
			if len(s.Matches) > max {
				s.Matches = s.Matches[1:]
			}
		})
	})
	st := k.Stats()
	s.Lines, s.Lost = st.Lines, st.Lost
	return s, err
}
