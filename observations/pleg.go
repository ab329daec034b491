package observations

// PLEG is the `pleg` input: the PLEG assessment. The figures that may be
// unknown are pointers, left nil when unknown: rules test them with has().
type PLEG struct {
	Verdict               string   "cel:\"verdict\" doc:\"the PLEG assessment: `Healthy`, `Unhealthy` or `Unknown` (see PLEG health)\""
	Reason                string   "cel:\"reason\" doc:\"its reason; the built-in PLEGUnhealthy rule passes it through\""
	Message               string   "cel:\"message\" doc:\"its message\""
	Signals               []string "cel:\"signals\" doc:\"the signals that counted: `scrape`, `lastSeen`, `relistDuration`, `emulation`\""
	EmulationInFlight     bool     "cel:\"emulationInFlight\" doc:\"hangwatch's own relist is still waiting\""
	EventedPLEG           bool     "cel:\"eventedPLEG\" doc:\"the kubelet's Evented PLEG is on\""
	ScrapeError           string   "cel:\"scrapeError\" doc:\"the last scrape's failure (`timeout`, `unauthorized`, `forbidden`, ...), empty when it answered\""
	LastSeenAgeSeconds    *float64 "cel:\"lastSeenAgeSeconds\" doc:\"`now - kubelet_pleg_last_seen_seconds`; unknown without the kubelet's metrics, when the scrape failed, or while the Evented PLEG is on\""
	RelistP99Seconds      *float64 "cel:\"relistP99Seconds\" doc:\"the 99th percentile of the kubelet's relist duration over the window\""
	PodRelistP99Seconds   *float64 "cel:\"podRelistP99Seconds\" doc:\"the same, per pod\""
	EmulatedRelistSeconds *float64 "cel:\"emulatedRelistSeconds\" doc:\"how long hangwatch's own relist took, or has waited\""
	ScrapeFailingSeconds  *float64 "cel:\"scrapeFailingSeconds\" doc:\"how long the kubelet's metrics have failed to scrape\""
}
