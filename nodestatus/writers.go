package nodestatus

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/internal/managedfields"
)

// FieldManager names hangwatch's writes in the Node's managedFields (the
// name client-go derived from hangwatch's user agent before it was set).
const FieldManager = "hangwatch"

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
		for condType, fields := range managedfields.ConditionEntries(e.FieldsV1.GetRawBytes()) {
			switch {
			case e.Manager == FieldManager:
				w.Ours[condType] = true
			case managedfields.OwnsContent(fields) && !slices.Contains(w.Others[condType], e.Manager):
				w.Others[condType] = append(w.Others[condType], e.Manager)
				slices.Sort(w.Others[condType])
			}
		}
	}
	return w
}

// stale are the types hangwatch wrote before (its manager holds their
// entry) that it no longer owns, that no other manager writes and that are
// not the kubelet's: left on the Node they would never change again.
func (w Writers) stale(owned []string) []string {
	var out []string
	for t := range w.Ours {
		if !slices.Contains(owned, t) && len(w.Others[t]) == 0 && !slices.Contains(conditions.KubeletConditionTypes, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}
