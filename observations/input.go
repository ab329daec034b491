package observations

// The inputs a rule may read, each a CEL variable holding one signal's
// latest observation.
const (
	NameCRI    = "cri"
	NameKernel = "kernel"
	NameLease  = "lease"
	NamePLEG   = "pleg"
	// NamePodStarts is the write path's input, from the kubelet's Pods API.
	NamePodStarts = "podStarts"
)

// Names are the inputs a rule may read, in the order they are documented.
var Names = []string{NameCRI, NameKernel, NameLease, NamePLEG, NamePodStarts}

// Input is one signal's observation, read by the rules under InputName.
type Input interface {
	InputName() string
}

// InputName is "cri".
func (CRI) InputName() string { return NameCRI }

// InputName is "kernel".
func (Kernel) InputName() string { return NameKernel }

// InputName is "lease".
func (Lease) InputName() string { return NameLease }

// InputName is "pleg".
func (PLEG) InputName() string { return NamePLEG }

// InputName is "podStarts".
func (PodStarts) InputName() string { return NamePodStarts }
