// Package remedy is hangwatch-remedy's controller: it turns hangwatch's
// conditions on the Nodes into early recovery. A condition True for
// taintAfter adds a NoSchedule taint hangwatch.io/<condition-in-kebab-case>
// (so no new pod lands on the sick node), True for evictAfter evicts the
// node's pods through the Eviction API (so PodDisruptionBudgets hold), and
// False for clearAfter removes the taint.
//
// Guards keep it from mass action: maxUnhealthy (no new action while more
// nodes are sick than that: an API server or registry outage looks like a
// fleet-wide problem), an action budget kept on a Lease across leaders, a
// per-node flap back-off, a per-node opt-out annotation, a global pause and
// a dry run. It times conditions on its own clock (clocks.go), acts only
// on fresh conditions written by a trusted field manager, reads each Node
// afresh before acting on it, evicts only pods a controller recreates under
// a new name (podfilter.go), and touches only taints it added.
//
// The decision (plan.go) is a pure function of the Nodes, the policy, the
// clocks and the time, so it is tested on a fake clock; the controller
// applies it level-triggered, so a new leader keeps the last one's taints.
package remedy
