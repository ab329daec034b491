package e2e

import (
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness/cluster"
)

// TestFenceNeverAsksANodeWhosePodsAreFine: with the shipped policy
// (fence.after 45 s), ImageFsInfo alone held for 3 minutes on a Ready
// node, then every call answered 2.5 s late for 90 s: no fence request,
// web-0 untouched (harness.FenceNeverAsksANodeWhosePodsAreFine).
func TestFenceNeverAsksANodeWhosePodsAreFine(t *testing.T) {
	cluster.FenceNeverAsksANodeWhosePodsAreFine(t, nil, 3*time.Minute, 90*time.Second)
}
