// Package conditions judges observations into hangwatch's node
// conditions. The engine evaluates each condition's rule, CEL expressions
// over plain observation maps (cri, kernel, lease, pleg), with
// hysteresis; it knows observations, never gRPC, regexps, the API
// server or its types. Conditions use problem polarity: True means bad.
//
// The engine's news leaves it one way: every judgement (an observation
// judged, a reload, the Node's conditions restored) is handed, in order,
// to each Subscriber, with the conditions that moved and the state after.
// Package nodestatus writes them to the Node; the agent's HTTP view and
// repair's view keep the latest state (Latest).
package conditions
