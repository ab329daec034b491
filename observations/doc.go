// Package observations holds what each signal observed, as the condition
// rules read it: one Go type per input (cri, kernel, lease, pleg). The
// signal packages fill them; conditions declares its CEL environment from
// them, so a rule that names a field no input has, or compares a field
// with a value of the wrong type, is refused when it is compiled (by
// `hangwatch config check`, at start and on reload), not at run time.
//
// Each field's `cel` tag is its name in CEL and its `doc` tag what it
// means; the README's table of inputs is checked against them.
package observations
