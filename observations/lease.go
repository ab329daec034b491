package observations

// Lease is the `lease` input: the node's Lease and the kubelet's local
// /healthz. While the kubelet answers on the node and renewed on time,
// the fields from the Lease are those of a read up to the idle period old.
type Lease struct {
	Readable             bool    "cel:\"readable\" doc:\"hangwatch's read of the Lease worked; when false, the fields below are the last good read's (zero before one)\""
	ReadError            string  "cel:\"readError\" doc:\"why it did not: `forbidden`, `unauthorized`, `timeout`, `throttled` or `error`; empty when it worked\""
	ReadSeconds          float64 "cel:\"readSeconds\" doc:\"how long the read took\""
	Found                bool    "cel:\"found\" doc:\"the Lease exists\""
	Holder               string  "cel:\"holder\" doc:\"`spec.holderIdentity`\""
	RenewAgeSeconds      float64 "cel:\"renewAgeSeconds\" doc:\"since `renewTime` last changed\""
	RenewIntervalSeconds float64 "cel:\"renewIntervalSeconds\" doc:\"the kubelet's renew interval: a quarter of the Lease's duration\""
	LeaseDurationSeconds int64   "cel:\"leaseDurationSeconds\" doc:\"`spec.leaseDurationSeconds`\""
	GraceSeconds         float64 "cel:\"graceSeconds\" doc:\"the node lifecycle controller's `--node-monitor-grace-period`\""
	SecondsLeft          float64 "cel:\"secondsLeft\" doc:\"what is left of it: grace minus renew age, negative once overdue\""
	MissedRenewals       int     "cel:\"missedRenewals\" doc:\"renewals due since the last one\""
	Healthz              string  "cel:\"healthz\" doc:\"the last probe of the kubelet's local `/healthz`: `ok` (200), `unhealthy` (it answered with another code), `timeout`, `refused`, `error`; empty when not probed\""
	KubeletSilent        bool    "cel:\"kubeletSilent\" doc:\"that probe got no answer in time\""
	LateWhileAnswering   bool    "cel:\"lateWhileAnswering\" doc:\"a read found the Lease 2 renewals late while the kubelet answered on the node; held until renewals have been on time for 5 min\""
}
