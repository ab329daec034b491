// Package reason holds the form Kubernetes gives a condition's reason, for
// every package that writes one: the condition rules and the kernel rules.
package reason

import "regexp"

// MaxBytes bounds a reason hangwatch writes.
const MaxBytes = 128

// pattern is metav1.Condition's reason: CamelCase, with digits, "_", ","
// and ":" inside.
var pattern = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// Form says whether s has the reason's form, whatever its length.
func Form(s string) bool { return pattern.MatchString(s) }

// Valid says whether s has the form and is at most MaxBytes long.
func Valid(s string) bool { return len(s) <= MaxBytes && Form(s) }
