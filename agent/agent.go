// Package agent assembles `hangwatch run` from a configuration: the CRI
// prober and heartbeat, the PLEG watch, the kernel log, the node Lease,
// the condition engine, the Node reporter, the HTTP endpoints and the
// config reloader. What it talks to (the CRI dialer, the API server's
// client configuration, the clock and the kernel log) is injected, so the
// whole wiring runs in-process in tests.
package agent

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/apiclient"
	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/internal/memlimit"
	"github.com/hangwatch/hangwatch/kernellog"
	"github.com/hangwatch/hangwatch/leases"
	"github.com/hangwatch/hangwatch/nodestatus"
)

// Options are what the agent runs with and what it talks to.
type Options struct {
	// Config is the loaded configuration.
	Config *config.Loaded
	// Endpoint is the CRI endpoint chosen for Config.Runtime.
	Endpoint cri.Endpoint
	// Node is this node's name.
	Node string
	// API is the API server's client configuration; nil with no Client:
	// standalone, the conditions go to /conditions and /metrics only.
	API *rest.Config
	// Client talks to the API server; nil: one built from API.
	Client APIClient
	// Reload reloads the config file's condition rules; nil: no file.
	Reload *Reload
	// Clock is the daemon's clock; nil: the real one.
	Clock clock.WithTicker
	// DialCRI prepares the connection to the runtime; nil: cri.Dial.
	DialCRI func(address string) (*cri.Conn, error)
	// OpenKernelLog opens the kernel log, skipping records older than the
	// lookback; nil: kernellog.OpenSource.
	OpenKernelLog func(path string, lookback time.Duration, clk clock.PassiveClock) (kernellog.Source, string, error)
	// Registry is where the metrics go; nil: a new one.
	Registry metrics.KubeRegistry
	// Cgroup is where the cgroup's memory limit is read, for the Go
	// memory limit (memory.go); zero: memlimit.Default.
	Cgroup memlimit.Files
	// OnReady, when set, is told the addresses served once the listeners
	// are open.
	OnReady func(addrs []string)
	// SinceBoot is how long ago the node's kernel booted; nil:
	// CLOCK_BOOTTIME (repair.HostBoot). A kernel condition restored True
	// from before the boot is not held (conditions.EngineOptions.BootTime).
	SinceBoot func() (time.Duration, error)
	// PCIDevicesDir is where the GPU inventory counts the GPUs on the PCI
	// bus (kernel.gpuInventoryFile); empty: gpus.DevicesDir.
	PCIDevicesDir string
}

// APIClient is what the agent asks of the API server: the Node and its
// status, Events, the node's Lease and the server's version.
// *apiclient.Client is one.
type APIClient interface {
	nodestatus.NodeClient
	nodestatus.EventSink
	leases.Client
}

// Reload says where the config file is and how it loads.
type Reload struct {
	Path string
	// Load loads new content of the file as the start did: the command
	// line's flags over it, every check of `config check`.
	Load func(raw []byte) (*config.Loaded, error)
	// Signal forces a reload (SIGHUP); nil: polling only.
	Signal <-chan os.Signal
}

func (o *Options) defaults() error {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.DialCRI == nil {
		o.DialCRI = cri.Dial
	}
	if o.OpenKernelLog == nil {
		o.OpenKernelLog = kernellog.OpenSource
	}
	if o.Client == nil && o.API != nil {
		c, err := apiclient.New(o.API)
		if err != nil {
			return fmt.Errorf("API server client: %w", err)
		}
		o.Client = c
	}
	if o.Registry == nil {
		o.Registry = metrics.NewKubeRegistry()
	}
	if o.Cgroup == (memlimit.Files{}) {
		o.Cgroup = memlimit.Default()
	}
	return nil
}

// ServeError is a failure of the running agent (a port that cannot be
// listened on, a server that stops), as opposed to a configuration that
// cannot run.
type ServeError struct{ Err error }

func (e *ServeError) Error() string { return e.Err.Error() }
func (e *ServeError) Unwrap() error { return e.Err }

func serveError(format string, args ...any) error {
	return &ServeError{Err: fmt.Errorf(format, args...)}
}

// Run assembles the agent and runs it until ctx ends.
func Run(ctx context.Context, o Options) error {
	a, err := New(o)
	if err != nil {
		return err
	}
	defer a.Close()
	return a.Run(ctx)
}
