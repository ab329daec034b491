// Package e2e holds the end-to-end scenarios that take minutes: the static
// pod against a real kubelet's PLEG verdict, two nodes, the recovery
// ladder, the fence, the API request budget, the healthy run with 100
// pods, the kernel's own hung-task line. They run one at a time, and only
// when asked: HANGWATCH_SUITE=e2e (./hack/e2e.sh sets it).
package e2e

import (
	"os"
	"testing"

	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

func TestMain(m *testing.M) {
	os.Exit(hangwatch.Main(m, hangwatch.SuiteOptions{Name: "e2e", OnPurpose: true, Run: "./hack/e2e.sh"}))
}
