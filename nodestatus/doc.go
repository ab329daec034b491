// Package nodestatus writes the judge's conditions to the Node: the
// Reporter patches the owned types into the Node's status (a
// strategic-merge patch keyed on type, so the kubelet's conditions are
// never touched), carries on the Node's conditions after a restart,
// leaves a type another field manager writes to it unless told to
// overwrite it, and Events records each transition as a core/v1 Event on
// the Node. Both are conditions.Subscribers of the engine: the flow is
// signals -> observations -> conditions -> nodestatus -> Node, and
// nothing here judges.
package nodestatus
