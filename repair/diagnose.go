package repair

import (
	"context"
	"net/url"
	"strconv"
	"time"
)

// PortOf is the port of an http(s) URL (its scheme's default when it
// names none); 0 when it is not one.
func PortOf(raw string) int {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return 0
	}
	if p := u.Port(); p != "" {
		n, _ := strconv.Atoi(p)
		return n
	}
	switch u.Scheme {
	case "http":
		return 80
	case "https":
		return 443
	}
	return 0
}

// Report says, for each target, whether repair could restart it on this
// node now: systemd reached, the unit found, its Restart= setting, and
// its main process killable. It does not say whether repair is enabled.
type Report struct {
	Enabled bool           `json:"enabled"`
	DryRun  bool           `json:"dryRun,omitempty"`
	Targets []TargetReport `json:"targets"`
}

// TargetReport is one target's part of a Report.
type TargetReport struct {
	Target   Target `json:"target"`
	Unit     string `json:"unit,omitempty"`
	Restart  string `json:"restart,omitempty"`
	KillMode string `json:"killMode,omitempty"`
	MainPID  int    `json:"mainPID,omitempty"`
	Possible bool   `json:"possible"`
	Why      string `json:"why,omitempty"`
}

// Diagnose finds each target's unit as a repair would, and kills nothing.
func Diagnose(ctx context.Context, s Settings, criSocket, kubeletHealthzURL string, dial func(context.Context, string) (Manager, error)) Report {
	s.StateFile = "" // diag reads no budget
	r := New(Options{Settings: s, CRISocket: criSocket, KubeletHealthzPort: PortOf(kubeletHealthzURL), Dial: dial, Clock: nil})
	rep := Report{Enabled: s.Enabled, DryRun: s.DryRun}
	for _, t := range []Target{TargetRuntime, TargetKubelet} {
		tr := TargetReport{Target: t}
		ctx, cancel := context.WithTimeout(ctx, systemdTimeout)
		m, f, err := r.locate(ctx, t, time.Time{})
		cancel()
		tr.Unit, tr.Restart, tr.KillMode, tr.MainPID = f.unit.Name, f.unit.Restart, f.unit.KillMode, f.pid
		if err != nil {
			tr.Why = err.Error()
		} else {
			m.Close()
			tr.Possible = true
		}
		rep.Targets = append(rep.Targets, tr)
	}
	return rep
}
