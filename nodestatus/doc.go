// Package nodestatus writes the judge's conditions to the Node's status
// and records their transitions as Events on the Node. The Reporter
// patches the owned types (a strategic-merge patch keyed on type, so the
// kubelet's conditions are never touched), carries on the Node's
// conditions after a restart, and leaves a type another field manager
// writes to it unless told to overwrite it; Events records each
// transition as a core/v1 Event. Both are conditions.Subscribers of the
// engine: the flow is signals -> observations -> conditions -> nodestatus
// -> Node, and nothing here judges.
package nodestatus
