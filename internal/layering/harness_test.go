package layering

import (
	"slices"
	"strings"
	"testing"
)

// harnessParts are test/harness's packages, lowest first: the core (the
// control plane, processes, the poller, ports, HTTP, images, metrics and
// what both runtimes share), then the parts, each using only what is
// below it. A part's own tests may use any part.
var harnessParts = [][]string{
	{"test/harness"},
	{"test/harness/systemd", "test/harness/stuckdir", "test/harness/alerting", "test/harness/nhc"},
	{"test/harness/containerd", "test/harness/crio"},
	{"test/harness/kubelet"},
	{"test/harness/csi", "test/harness/hangwatch"},
	{"test/harness/cluster"},
}

// TestTheHarnessPartsStackOneWay checks the harness's packages against
// harnessParts: each is in it, and none depends on a harness package of
// its own level or above.
func TestTheHarnessPartsStackOneWay(t *testing.T) {
	level := map[string]int{}
	for i, ps := range harnessParts {
		for _, p := range ps {
			level[p] = i
		}
	}
	deps := moduleDeps(t)
	for pkg, ds := range deps {
		if !under(pkg, "test/harness") {
			continue
		}
		at, ok := level[pkg]
		if !ok {
			t.Errorf("%s is in no level of harnessParts: add it", pkg)
			continue
		}
		for _, d := range ds {
			if dl, isPart := level[d]; isPart && dl >= at {
				t.Errorf("%s imports %s, a harness package of its level or above: a part uses only what is below it", pkg, d)
			}
		}
	}
	if !slices.ContainsFunc(deps["test/harness/cluster"], func(d string) bool { return strings.HasPrefix(d, "test/harness/kubelet") }) {
		t.Fatalf("no harness imports read for test/harness/cluster: %v", deps["test/harness/cluster"])
	}
}
