package apiclient

import (
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/version"
)

// RESTConfig returns the client configuration: from kubeconfig when given,
// else the in-cluster ServiceAccount when in a pod, else nil (no API
// server to talk to).
func RESTConfig(kubeconfig string, qps float32, burst int) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	switch {
	case kubeconfig != "":
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
		}
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		if cfg, err = rest.InClusterConfig(); err != nil {
			return nil, fmt.Errorf("in-cluster config: %w", err)
		}
	default:
		return nil, nil
	}
	cfg.QPS, cfg.Burst = qps, burst
	cfg.Timeout = 10 * time.Second // the kubelet's heartbeat client uses the same
	cfg.UserAgent = "hangwatch/" + version.Get().GitVersion
	return cfg, nil
}

// NodeName returns the node's name: given, else $NODE_NAME, else the
// hostname, as the kubelet names its node (lower case).
func NodeName(given string) (string, error) {
	name := given
	if name == "" {
		name = os.Getenv("NODE_NAME")
	}
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("--node-name not given and no hostname: %w", err)
		}
		name = h
	}
	return strings.ToLower(strings.TrimSpace(name)), nil
}
