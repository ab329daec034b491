package conditions

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReasonRelistSlow is the PLEGUnhealthy problem of a relist that is slow
// but completes.
const ReasonRelistSlow = "RelistSlow"

// WithPLEGSlowFor has PLEGUnhealthy's RelistSlow problem count once it has
// lasted slowFor (--pleg-slow-for), in place of the built-in 2m. The other
// problems stay as they are.
func WithPLEGSlowFor(specs []Spec, slowFor time.Duration) []Spec {
	out := make([]Spec, len(specs))
	copy(out, specs)
	for i := range out {
		if out[i].Type != TypePLEGUnhealthy {
			continue
		}
		problems := append([]Problem(nil), out[i].Problems...)
		for j := range problems {
			if problems[j].Reason == ReasonRelistSlow {
				problems[j].MinDuration = metav1.Duration{Duration: slowFor}
			}
		}
		out[i].Problems = problems
	}
	return out
}
