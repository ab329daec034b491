package observations

import "time"

// NameParams is the variable the built-in knobs are read as.
const NameParams = "params"

// Params are the configuration's knobs that the built-in rules read as
// `params`: typed parameters of the rules, as a ValidatingAdmissionPolicy
// reads its params. They are not an observation: a rule that reads only
// params reads no input.
type Params struct {
	LeaseGraceShare float64       "cel:\"leaseGraceShare\" doc:\"`kubeletUnresponsive.share`: the share of the grace period the Lease may go unrenewed before NodeLeaseNotRenewed; 0: after 2 missed renewals\""
	PLEGSlowFor     time.Duration "cel:\"plegSlowFor\" doc:\"`pleg.slowFor`: how long RelistSlow must last before it counts\""
}
