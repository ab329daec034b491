package pleg

// Observation is the `pleg` input of the condition rules (README: "pleg").
// Figures that are unknown are left out, so rules test them with has().
func (a Assessment) Observation() map[string]any {
	signals := []string{}
	for _, s := range a.Signals {
		if s.State == stateOK || s.State == stateProblem {
			signals = append(signals, s.Name)
		}
	}
	obs := map[string]any{
		"verdict": a.Verdict, "reason": a.Reason, "message": a.Message, "signals": signals,
		"emulationInFlight": a.EmulationInFlight, "eventedPLEG": a.EventedPLEG, "scrapeError": a.ScrapeError,
	}
	for k, v := range map[string]*float64{"lastSeenAgeSeconds": a.LastSeenAgeSeconds, "relistP99Seconds": a.RelistP99Seconds,
		"emulatedRelistSeconds": a.EmulatedRelistSeconds, "scrapeFailingSeconds": a.ScrapeFailingSeconds,
		"podRelistP99Seconds": a.PodRelistP99Seconds} {
		if v != nil {
			obs[k] = *v
		}
	}
	return obs
}
