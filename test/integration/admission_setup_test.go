package integration

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// admissionSetup is the admission tests' common start: it holds the
// admission policies' lane on the shared control plane, applies the
// DaemonSet overlay and then each of more (files under manifests/), and
// creates a Node for each name prefix. It returns the control plane, a
// context of 3 minutes (ended with t) and the Nodes' names.
func admissionSetup(t *testing.T, more []string, prefixes ...string) (*harness.ControlPlane, context.Context, []string) {
	t.Helper()
	harness.Parallel(t, harness.LaneAdmissionPolicies)
	cp := hangwatch.SharedControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	manifests := filepath.Join(harness.ModuleRoot(), "manifests")
	cp.Kubectl(t, "apply", "-k", filepath.Join(manifests, "overlays", "daemonset"))
	for _, m := range more {
		cp.Kubectl(t, "apply", "-f", filepath.Join(manifests, m))
	}
	var nodes []string
	for _, p := range prefixes {
		node := hangwatch.UniqueNode(p)
		hangwatch.CreateNode(t, cp, node)
		nodes = append(nodes, node)
	}
	return cp, ctx, nodes
}
