// Package remedy is hangwatch-remedy's controller: it turns hangwatch's
// conditions on the Nodes into early recovery. A condition True for
// taintAfter adds a NoSchedule taint hangwatch.io/<condition-in-kebab-case>
// (so no new pod lands on the sick node), True for evictAfter evicts the
// node's pods through the Eviction API (so PodDisruptionBudgets hold), and
// False for clearAfter removes the taint.
//
// Guards keep it from mass action: maxUnhealthy (no new action while more
// nodes are sick than that: an API server or registry outage looks like a
// fleet-wide problem), a global rate limit, a per-node opt-out annotation,
// a global pause and a dry run. It acts only on fresh conditions and only
// on taints it added.
//
// The decision (plan.go) is a pure function of the Nodes, the policy and
// the time, so it is tested on a fake clock; the controller applies it
// level-triggered, so a new leader picks up where the last one stopped.
package remedy
