package observations

// CRI is the `cri` input: one probe cycle of the runtime, plain values,
// no decisions.
type CRI struct {
	Unreachable     bool     "cel:\"unreachable\" doc:\"no probed call reached the runtime\""
	HungCalls       []string "cel:\"hungCalls\" doc:\"calls past the timeout: `Method` or `Method(id)`, sorted\""
	HungMethods     []string "cel:\"hungMethods\" doc:\"their methods, in the order sent\""
	FixedMethods    int      "cel:\"fixedMethods\" doc:\"methods probed without an object (Version, Status, the lists, ImageFsInfo)\""
	FixedHung       int      "cel:\"fixedHung\" doc:\"how many of those hung\""
	SlowCalls       int      "cel:\"slowCalls\" doc:\"calls answered past `--slow-threshold`\""
	FailedCalls     int      "cel:\"failedCalls\" doc:\"calls failed other than by timing out\""
	RuntimeNotReady []string "cel:\"runtimeNotReady\" doc:\"required runtime conditions (`RuntimeReady`, `NetworkReady`) that `Status` reported false\""
	Sandboxes       int      "cel:\"sandboxes\" doc:\"sandboxes listed, -1 when unknown\""
	Containers      int      "cel:\"containers\" doc:\"containers listed, -1 when unknown\""
	Timeout         string   "cel:\"timeout\" doc:\"the per-call timeout, such as `2s`\""
	TimeoutSeconds  float64  "cel:\"timeoutSeconds\" doc:\"the same, in seconds\""
	DurationSeconds float64  "cel:\"durationSeconds\" doc:\"how long the cycle took\""
}
