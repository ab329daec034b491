package cri

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// DefaultEndpoints are tried in crictl's order (cri-tools main_unix.go).
var DefaultEndpoints = []string{
	"unix:///run/containerd/containerd.sock",
	"unix:///run/crio/crio.sock",
	"unix:///var/run/cri-dockerd.sock",
}

// DefaultTimeout is crictl's per-call timeout.
const DefaultTimeout = 2 * time.Second

// Default paths of the files endpoint selection reads.
const (
	DefaultCrictlConfig  = "/etc/crictl.yaml"
	DefaultKubeletConfig = "/var/lib/kubelet/config.yaml"
)

// EndpointOptions is what endpoint selection looks at, in crictl's order.
type EndpointOptions struct {
	// Flag is --runtime-endpoint; Timeout is --timeout when TimeoutSet.
	Flag       string
	Timeout    time.Duration
	TimeoutSet bool
	// Getenv reads CONTAINER_RUNTIME_ENDPOINT and CRI_CONFIG_FILE.
	Getenv func(string) string
	// CrictlConfig and KubeletConfig are file paths; empty means the default.
	CrictlConfig  string
	KubeletConfig string
	// SocketExists reports whether a unix socket path exists.
	SocketExists func(path string) bool
}

// Endpoint is the chosen runtime endpoint, where it came from and the
// per-call timeout.
type Endpoint struct {
	Address string        `json:"address"`
	Source  string        `json:"source"`
	Timeout time.Duration `json:"-"`
}

type crictlConfig struct {
	RuntimeEndpoint string `json:"runtime-endpoint"`
	Timeout         int    `json:"timeout"`
}

type kubeletConfig struct {
	ContainerRuntimeEndpoint string `json:"containerRuntimeEndpoint"`
}

// ResolveEndpoint picks the runtime endpoint the way crictl does, with the
// kubelet's configured endpoint before the built-in defaults.
func ResolveEndpoint(o EndpointOptions) (Endpoint, error) {
	o = o.withDefaults()
	crictl, crictlPath, err := readCrictlConfig(o)
	if err != nil {
		return Endpoint{}, err
	}
	ep := Endpoint{Timeout: DefaultTimeout}
	switch {
	case o.TimeoutSet:
		ep.Timeout = o.Timeout
	case crictl.Timeout > 0:
		ep.Timeout = time.Duration(crictl.Timeout) * time.Second
	}
	if ep.Timeout <= 0 {
		return Endpoint{}, fmt.Errorf("--timeout %v: must be positive", ep.Timeout)
	}
	switch {
	case o.Flag != "":
		ep.Address, ep.Source = o.Flag, "--runtime-endpoint"
	case o.Getenv("CONTAINER_RUNTIME_ENDPOINT") != "":
		ep.Address, ep.Source = o.Getenv("CONTAINER_RUNTIME_ENDPOINT"), "env CONTAINER_RUNTIME_ENDPOINT"
	case crictl.RuntimeEndpoint != "":
		ep.Address, ep.Source = crictl.RuntimeEndpoint, crictlPath
	default:
		ep.Address, ep.Source = fallbackEndpoint(o)
	}
	ep.Address = normalizeEndpoint(ep.Address)
	if _, err := grpcTarget(ep.Address); err != nil {
		return Endpoint{}, fmt.Errorf("endpoint from %s: %w", ep.Source, err)
	}
	return ep, nil
}

func (o EndpointOptions) withDefaults() EndpointOptions {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.CrictlConfig == "" {
		o.CrictlConfig = o.Getenv("CRI_CONFIG_FILE")
	}
	if o.CrictlConfig == "" {
		o.CrictlConfig = DefaultCrictlConfig
	}
	if o.KubeletConfig == "" {
		o.KubeletConfig = DefaultKubeletConfig
	}
	if o.SocketExists == nil {
		o.SocketExists = func(p string) bool { _, err := os.Stat(p); return err == nil }
	}
	return o
}

// readCrictlConfig reads crictl's config; a missing file is no error.
func readCrictlConfig(o EndpointOptions) (crictlConfig, string, error) {
	var cfg crictlConfig
	data, err := os.ReadFile(o.CrictlConfig)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, o.CrictlConfig, nil
	}
	if err != nil {
		return cfg, o.CrictlConfig, fmt.Errorf("crictl config %s: %w", o.CrictlConfig, err)
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return cfg, o.CrictlConfig, fmt.Errorf("crictl config %s: %w", o.CrictlConfig, err)
	}
	if cfg.Timeout < 0 {
		return cfg, o.CrictlConfig, fmt.Errorf("crictl config %s: timeout %d: must not be negative", o.CrictlConfig, cfg.Timeout)
	}
	return cfg, o.CrictlConfig, nil
}

// fallbackEndpoint uses the kubelet's configured endpoint when its config is
// readable, then the first default socket that exists, then the first default.
func fallbackEndpoint(o EndpointOptions) (string, string) {
	if data, err := os.ReadFile(o.KubeletConfig); err == nil {
		var kc kubeletConfig
		if yaml.Unmarshal(data, &kc) == nil && kc.ContainerRuntimeEndpoint != "" {
			return kc.ContainerRuntimeEndpoint, "kubelet config " + o.KubeletConfig
		}
	}
	for _, ep := range DefaultEndpoints {
		if o.SocketExists(strings.TrimPrefix(ep, "unix://")) {
			return ep, "default"
		}
	}
	return DefaultEndpoints[0], "default (no runtime socket found)"
}

// normalizeEndpoint accepts a bare socket path as crictl does.
func normalizeEndpoint(ep string) string {
	if strings.HasPrefix(ep, "/") {
		return "unix://" + ep
	}
	return ep
}
