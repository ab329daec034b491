package harness

import (
	"context"
	"path/filepath"
	"strings"
	"time"
)

// ControllerManager is a real kube-controller-manager running only the
// node lifecycle controller, at the release's default
// --node-monitor-grace-period (50s in 1.34): it marks a node Unknown when
// the kubelet stops renewing its Lease and posting status.
type ControllerManager struct {
	proc *Process
}

// StartControllerManager starts it against cp and waits for /healthz. It
// runs the node lifecycle controller, and the controllers named in more
// (deployment-controller, replicaset-controller, disruption-controller...).
func StartControllerManager(ctx context.Context, cp *ControlPlane, more ...string) (*ControllerManager, error) {
	return StartControllers(ctx, cp, append([]string{"node-lifecycle-controller"}, more...)...)
}

// StartControllers starts kube-controller-manager against cp running only
// the named controllers (clusterrole-aggregation-controller, say: a test
// whose Nodes have no kubelet renewing their Lease keeps the node
// lifecycle controller from marking them Unknown) and waits for /healthz.
func StartControllers(ctx context.Context, cp *ControlPlane, controllers ...string) (*ControllerManager, error) {
	p, err := startComponent(ctx, cp, "kube-controller-manager",
		"--controllers", strings.Join(controllers, ","),
		"--cert-dir", filepath.Join(cp.Dir, "kcm-certs"),
		"--root-ca-file", cp.PKI.CAFile) // the kube-root-ca.crt ConfigMaps, where root-ca-certificate-publisher-controller runs
	if err != nil {
		return nil, err
	}
	return &ControllerManager{proc: p}, nil
}

// Stop stops it by PID.
func (cm *ControllerManager) Stop() { cm.proc.Stop(10 * time.Second) }
