// Package integration holds the correctness tests against the real parts
// (containerd, CRI-O, etcd, kube-apiserver, kubelets, systemd) that the
// README's test command, ./hack/test.sh, runs. They run side by side
// (harness.Parallel). The scenarios that take minutes are in test/e2e, the
// benchmarks in test/bench.
package integration

import (
	"os"
	"testing"

	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

func TestMain(m *testing.M) {
	os.Exit(hangwatch.Main(m, hangwatch.SuiteOptions{Name: "integration", Lanes: true, QuietHungTasks: true}))
}
