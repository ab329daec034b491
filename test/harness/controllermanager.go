package harness

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ControllerManager is a real kube-controller-manager running only the
// node lifecycle controller, at the release's default
// --node-monitor-grace-period (50s in 1.34): it marks a node Unknown when
// the kubelet stops renewing its Lease and posting status.
type ControllerManager struct {
	proc *process
}

// StartControllerManager starts it against cp and waits for /healthz. It
// runs the node lifecycle controller, and the controllers named in more
// (deployment-controller, replicaset-controller, disruption-controller...).
func StartControllerManager(ctx context.Context, cp *ControlPlane, more ...string) (*ControllerManager, error) {
	bin, err := KubeBinary("kube-controller-manager")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	args := []string{"--kubeconfig", cp.AdminKubeconfig, "--authentication-kubeconfig", cp.AdminKubeconfig,
		"--authorization-kubeconfig", cp.AdminKubeconfig, "--controllers", strings.Join(append([]string{"node-lifecycle-controller"}, more...), ","),
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--cert-dir", filepath.Join(cp.Dir, "kcm-certs"), "--v", "2"}
	p, err := startProcess(cp.Dir, "kube-controller-manager", bin, args...)
	if err != nil {
		return nil, err
	}
	cm := &ControllerManager{proc: p}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // its own self-signed loopback certificate
	if err := waitHTTP(ctx, p, client, fmt.Sprintf("https://127.0.0.1:%d/healthz", port)); err != nil {
		cm.Stop()
		return nil, fmt.Errorf("%w\n%s", err, p.logTail(20))
	}
	return cm, nil
}

// Stop stops it by PID.
func (cm *ControllerManager) Stop() { cm.proc.stop(10 * time.Second) }
