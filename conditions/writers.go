package conditions

import (
	"encoding/json"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FieldManager names hangwatch's writes in the Node's managedFields (the
// name client-go derived from hangwatch's user agent before it was set).
const FieldManager = "hangwatch"

// contentFields are the fields of a condition that say something: a field
// manager that owns one of them has written the condition.
var contentFields = []string{"f:status", "f:reason", "f:message", "f:lastHeartbeatTime", "f:lastTransitionTime"}

// Writers is who writes the Node's conditions, read from its managedFields.
type Writers struct {
	// Others are, by condition type, the field managers other than
	// hangwatch that own a content field of it, sorted.
	Others map[string][]string
	// Ours are the types whose entry hangwatch's field manager holds.
	Ours map[string]bool
}

// ReadWriters reads the condition entries of the Node's managedFields. An
// entry it cannot read is skipped: it names no writer.
func ReadWriters(entries []metav1.ManagedFieldsEntry) Writers {
	w := Writers{Others: map[string][]string{}, Ours: map[string]bool{}}
	for _, e := range entries {
		if e.FieldsV1 == nil {
			continue
		}
		for condType, fields := range conditionEntries(e.FieldsV1.Raw) {
			switch {
			case e.Manager == FieldManager:
				w.Ours[condType] = true
			case ownsContent(fields) && !slices.Contains(w.Others[condType], e.Manager):
				w.Others[condType] = append(w.Others[condType], e.Manager)
				slices.Sort(w.Others[condType])
			}
		}
	}
	return w
}

// conditionEntries returns the fields owned in each status.conditions
// entry of one managedFields entry, by condition type.
func conditionEntries(raw []byte) map[string]map[string]json.RawMessage {
	var top struct {
		Status struct {
			Conditions map[string]map[string]json.RawMessage `json:"f:conditions"`
		} `json:"f:status"`
	}
	if json.Unmarshal(raw, &top) != nil {
		return nil
	}
	out := map[string]map[string]json.RawMessage{}
	for key, fields := range top.Status.Conditions {
		var k struct {
			Type string `json:"type"`
		}
		if !strings.HasPrefix(key, "k:") || json.Unmarshal([]byte(key[2:]), &k) != nil || k.Type == "" {
			continue
		}
		out[k.Type] = fields
	}
	return out
}

func ownsContent(fields map[string]json.RawMessage) bool {
	for _, f := range contentFields {
		if _, ok := fields[f]; ok {
			return true
		}
	}
	return false
}

// stale are the types hangwatch wrote before (its manager holds their
// entry) that it no longer owns, that no other manager writes and that are
// not the kubelet's: left on the Node they would never change again.
func (w Writers) stale(owned []string) []string {
	var out []string
	for t := range w.Ours {
		if !slices.Contains(owned, t) && len(w.Others[t]) == 0 && !slices.Contains(KubeletConditionTypes, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}
