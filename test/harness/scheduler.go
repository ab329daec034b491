package harness

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Scheduler is a real kube-scheduler with its default profile, so pods the
// controllers create land on the harness's kubelets, and not on a node
// tainted NoSchedule.
type Scheduler struct {
	proc *process
}

// StartScheduler starts it against cp and waits for /healthz.
func StartScheduler(ctx context.Context, cp *ControlPlane) (*Scheduler, error) {
	bin, err := KubeBinary("kube-scheduler")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	args := []string{"--kubeconfig", cp.AdminKubeconfig, "--authentication-kubeconfig", cp.AdminKubeconfig,
		"--authorization-kubeconfig", cp.AdminKubeconfig, "--leader-elect=false", "--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port), "--v", "2"}
	p, err := startProcess(cp.Dir, "kube-scheduler", bin, args...)
	if err != nil {
		return nil, err
	}
	s := &Scheduler{proc: p}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // its own self-signed loopback certificate
	if err := waitHTTP(ctx, p, client, fmt.Sprintf("https://127.0.0.1:%d/healthz", port)); err != nil {
		s.Stop()
		return nil, fmt.Errorf("%w\n%s", err, p.logTail(20))
	}
	return s, nil
}

// Stop stops it by PID.
func (s *Scheduler) Stop() { s.proc.stop(10 * time.Second) }
