package harness

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// startComponent starts a control-plane component (kube-controller-manager,
// kube-scheduler) of KubeBinary(name) as the admin, serving HTTPS on a
// free loopback port, with args after the common flags, and waits for its
// /healthz.
func startComponent(ctx context.Context, cp *ControlPlane, name string, args ...string) (*Process, error) {
	bin, err := KubeBinary(name)
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	all := append([]string{"--kubeconfig", cp.AdminKubeconfig, "--authentication-kubeconfig", cp.AdminKubeconfig,
		"--authorization-kubeconfig", cp.AdminKubeconfig, "--leader-elect=false", "--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port), "--v", "2"}, args...)
	p, err := StartProcess(cp.Dir, name, bin, all...)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // its own self-signed loopback certificate
	if err := waitHTTP(ctx, p, client, fmt.Sprintf("https://127.0.0.1:%d/healthz", port)); err != nil {
		p.Stop(10 * time.Second)
		return nil, fmt.Errorf("%w\n%s", err, p.LogTail(20))
	}
	return p, nil
}
