// Package bench holds the benchmarks: the measured runs whose figures
// BENCHMARKS.md records, bounded loosely or not at all. They run one at a
// time, and only when asked: HANGWATCH_SUITE=bench (./hack/bench.sh sets
// it).
package bench

import (
	"os"
	"testing"

	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

func TestMain(m *testing.M) {
	os.Exit(hangwatch.Main(m, hangwatch.SuiteOptions{Name: "bench", OnPurpose: true, Run: "./hack/bench.sh"}))
}
