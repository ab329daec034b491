package integration

import (
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/cluster"
)

// TestFenceNeverAsksANodeWhosePodsAreFine is the e2e suite's scenario of
// the same name (ImageFsInfo held for 3 minutes, then every call 2.5 s
// late for 90 s, at the shipped fence.after of 45 s) at fence.after's
// least, 10 s: ImageFsInfo held for 60 s and late answers for 40 s, each
// past four times fence.after, ask nothing.
func TestFenceNeverAsksANodeWhosePodsAreFine(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	cluster.FenceNeverAsksANodeWhosePodsAreFine(t, func(p map[string]any) { p["fence"].(map[string]any)["after"] = "10s" },
		time.Minute, 40*time.Second)
}
