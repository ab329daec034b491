// Package managedfields reads who wrote a Node's conditions from its
// managedFields: the node agent uses it to find another writer of its own
// conditions, and hangwatch-remedy to act only on hangwatch's.
package managedfields

import (
	"encoding/json"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// contentFields are the fields of a condition that say something: a field
// manager that owns one of them has written the condition.
var contentFields = []string{"f:status", "f:reason", "f:message", "f:lastHeartbeatTime", "f:lastTransitionTime"}

// ConditionEntries returns the fields owned in each status.conditions
// entry of one managedFields entry, by condition type; nil when raw is not
// a fields set it can read.
func ConditionEntries(raw []byte) map[string]map[string]json.RawMessage {
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

// OwnsContent: the fields of one condition entry include one that says
// something (its status, reason, message or times).
func OwnsContent(fields map[string]json.RawMessage) bool {
	for _, f := range contentFields {
		if _, ok := fields[f]; ok {
			return true
		}
	}
	return false
}

// ContentWriters are the field managers that own a content field of the
// condition condType, in the order of entries.
func ContentWriters(entries []metav1.ManagedFieldsEntry, condType string) []string {
	var out []string
	for _, e := range entries {
		if e.FieldsV1 == nil {
			continue
		}
		if fields, ok := ConditionEntries(e.FieldsV1.GetRawBytes())[condType]; ok && OwnsContent(fields) {
			out = append(out, e.Manager)
		}
	}
	return out
}
