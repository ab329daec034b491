package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/version"
	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/apiclient"
	"github.com/hangwatch/hangwatch/leases"
)

// apiFlags reach the API server: who hangwatch is and how hard it may call.
type apiFlags struct {
	kubeconfig string
	nodeName   string
	qps        float32
	burst      int
	grace      time.Duration
	leasePoll  time.Duration
}

func (f *apiFlags) add(fs *pflag.FlagSet) {
	f.addIdentity(fs)
	fs.Float32Var(&f.qps, "kube-api-qps", 5, "most API requests per second")
	fs.IntVar(&f.burst, "kube-api-burst", 10, "most API requests in a burst")
	fs.DurationVar(&f.leasePoll, "lease-period", 5*time.Second, "how often the node's Lease is read (a node identity may get it, not watch it)")
}

// addIdentity adds the flags that say which API server and node: all diag
// needs.
func (f *apiFlags) addIdentity(fs *pflag.FlagSet) {
	f.qps, f.burst, f.leasePoll = 5, 10, 5*time.Second
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig for the API server; for the static pod, the kubelet's (/etc/kubernetes/kubelet.conf on kubeadm nodes), whose rotated client certificate is re-read; empty: the in-cluster ServiceAccount when run in a pod, else no API server")
	fs.StringVar(&f.nodeName, "node-name", "", "this node's name (default $NODE_NAME, else the hostname)")
	fs.DurationVar(&f.grace, "node-monitor-grace-period", 0, "the controller manager's --node-monitor-grace-period; 0: its default for the API server's version (50s from 1.32, 40s before)")
}

func (f *apiFlags) validate() error {
	var p problems
	p.check(f.qps <= 0, "--kube-api-qps", f.qps, "must be positive")
	p.check(f.burst < 1, "--kube-api-burst", f.burst, "must be at least 1")
	p.check(f.grace < 0, "--node-monitor-grace-period", f.grace, "must not be negative")
	p.check(f.leasePoll <= 0, "--lease-period", f.leasePoll, "must be positive")
	return p.err()
}

// node returns the node name: the flag, $NODE_NAME, then the hostname, as
// the kubelet names its node (lower case).
func (f *apiFlags) node() (string, error) {
	name := f.nodeName
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

// restConfig returns the client configuration, or nil when there is no API
// server to talk to (no --kubeconfig and not in a pod).
func (f *apiFlags) restConfig() (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	switch {
	case f.kubeconfig != "":
		cfg, err = clientcmd.BuildConfigFromFlags("", f.kubeconfig)
		if err != nil {
			return nil, fieldError("--kubeconfig", f.kubeconfig, err.Error())
		}
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		if cfg, err = rest.InClusterConfig(); err != nil {
			return nil, fmt.Errorf("in-cluster config: %w", err)
		}
	default:
		return nil, nil
	}
	cfg.QPS, cfg.Burst = f.qps, f.burst
	cfg.Timeout = 10 * time.Second // the kubelet's heartbeat client uses the same
	cfg.UserAgent = "hangwatch/" + version.Get().GitVersion
	return cfg, nil
}

// graceFor returns --node-monitor-grace-period, or the controller's default
// for the API server's version (leases.ServerGrace).
func (f *apiFlags) graceFor(ctx context.Context, client *apiclient.Client) time.Duration {
	if f.grace > 0 {
		return f.grace
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	grace, err := leases.ServerGrace(ctx, client)
	if err != nil {
		klog.ErrorS(err, "API server version unknown; assuming the 1.32+ default grace period", "grace", grace)
	}
	return grace
}
