package pleg

import "github.com/hangwatch/hangwatch/observations"

// Observation is the `pleg` input of the condition rules
// (observations.PLEG documents each field). Figures that are unknown are
// left nil, so rules test them with has().
func (a Assessment) Observation() observations.PLEG {
	signals := []string{}
	for _, s := range a.Signals {
		if s.State == stateOK || s.State == stateProblem {
			signals = append(signals, s.Name)
		}
	}
	return observations.PLEG{
		Verdict: a.Verdict, Reason: a.Reason, Message: a.Message, Signals: signals,
		EmulationInFlight: a.EmulationInFlight, EventedPLEG: a.EventedPLEG, ScrapeError: a.ScrapeError,
		LastSeenAgeSeconds: a.LastSeenAgeSeconds, RelistP99Seconds: a.RelistP99Seconds,
		EmulatedRelistSeconds: a.EmulatedRelistSeconds, ScrapeFailingSeconds: a.ScrapeFailingSeconds,
		PodRelistP99Seconds: a.PodRelistP99Seconds,
	}
}
