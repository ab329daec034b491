package hangwatch

import (
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/kubelet"
)

// KubeletNode is a real kubelet on its own containerd, registered with the
// shared control plane.
type KubeletNode struct {
	CP *harness.ControlPlane
	C  kubelet.NodeRuntime
	K  *kubelet.Kubelet
}

func StartKubeletNode(t *testing.T) KubeletNode {
	t.Helper()
	cp := SharedControlPlane(t)
	c := containerd.StartT(t, 0, 0)
	start := time.Now()
	k := kubelet.StartT(t, cp, c, UniqueNode("kubelet"))
	t.Logf("kubelet %s Ready in %v", k.Node, time.Since(start).Round(time.Millisecond))
	return KubeletNode{CP: cp, C: c, K: k}
}

// GetNodesMetrics is the right to the kubelet's metrics the DaemonSet's
// ClusterRole grants.
var GetNodesMetrics = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes/metrics"}, Verbs: []string{"get"}}

// PLEGDaemon runs hangwatch against the kubelet node with its metrics
// (ServiceAccount token with nodes/metrics) and the relist emulation.
func PLEGDaemon(t *testing.T, n KubeletNode, extra ...string) *Daemon {
	t.Helper()
	token := harness.TokenFile(t, n.CP.ServiceAccountToken(t, "hw-pleg-"+n.K.Node, GetNodesMetrics))
	args := []string{"--kernel=false", "--period", "2s",
		"--kubelet-metrics-url", n.K.MetricsURL(), "--kubelet-ca-file", n.K.ServingCert, "--kubelet-tls-server-name", n.K.Node,
		"--kubelet-token-file", token, "--kubelet-metrics-period", "5s", "--pleg-emulation-period", "2s"}
	return StartDaemon(t, n.C.Where().Endpoint, append(args, extra...)...)
}
