package kubelet

import (
	"context"
	"os"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/crio"
)

// NodeRuntime is a CRI runtime the harness runs beside a kubelet:
// containerd or CRI-O.
type NodeRuntime interface {
	Freeze() error
	Thaw() error
	Runtime() runtimeapi.RuntimeServiceClient
	// ImportImage loads an OCI layout tarball's images, by the names it
	// gives them, as a node's image import would.
	ImportImage(ctx context.Context, tarPath string) error
	Where() harness.RuntimePaths
	String() string
}

// E2ERuntime is the runtime the end-to-end node tests run on:
// $HANGWATCH_E2E_RUNTIME, "containerd" (the default) or "crio" (a row of
// hack/e2e.sh's matrix).
func E2ERuntime() string {
	if r := os.Getenv("HANGWATCH_E2E_RUNTIME"); r != "" {
		return r
	}
	return "containerd"
}

// StartNodeRuntimeT starts the runtime E2ERuntime names, with no pods,
// and stops it when the test ends.
func StartNodeRuntimeT(t testing.TB) NodeRuntime {
	t.Helper()
	if E2ERuntime() != "crio" {
		return containerd.StartT(t, 0, 0)
	}
	harness.RequireRealParts(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := crio.Start(ctx)
	if err != nil {
		t.Fatalf("start CRI-O: %v", err)
	}
	t.Cleanup(c.Stop)
	return c
}
