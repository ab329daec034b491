// Package conditions turns observations into hangwatch's node conditions
// and reports them. The engine evaluates each condition's rule, CEL
// expressions over plain observation maps (cri, kernel, lease, pleg), with
// hysteresis; it knows observations, never gRPC or regexps. The reporter
// writes the owned conditions to the Node's status and records transition
// Events through client-go. Conditions use problem polarity: True means bad.
package conditions
