package harness

import "testing"

// The test suites beside the default one, the correctness suite (the
// README's test command): each is a build tag that adds its tests to the
// packages' own. docs/testing.md says what each holds and which hack
// script runs it.
const (
	SuiteE2E   = "e2e"   // end-to-end scenarios that take minutes: go test -tags e2e
	SuiteBench = "bench" // benchmarks: go test -tags bench
)

// InSuite tells whether the test binary was built with the suite's tag.
func InSuite(suite string) bool {
	switch suite {
	case SuiteE2E:
		return e2eTag
	case SuiteBench:
		return benchTag
	}
	panic("harness: no test suite " + suite)
}

// RequireSuite skips the test unless the binary was built with the
// suite's tag: an end-to-end scenario or a benchmark in a file that holds
// correctness tests too (a file of one suite alone carries its build tag).
func RequireSuite(t testing.TB, suite, why string) {
	t.Helper()
	if !InSuite(suite) {
		t.Skipf("%s; in the %s suite: go test -tags %s (docs/testing.md)", why, suite, suite)
	}
}
