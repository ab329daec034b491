// Package manager assembles `hangwatch-remedy run`: the Node informer,
// the policy file and its reloads, the plain and secure HTTP ports, the
// event broadcaster, leader election and the remedy controller, as a
// controller manager does. What it talks to (the API server's clients and
// client configuration, the clock) is injected, so the whole wiring runs
// in-process in tests.
package manager

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/httpauth"
	"github.com/hangwatch/hangwatch/internal/buildinfo"
	"github.com/hangwatch/hangwatch/remedy"
)

// Options are what the controller runs with and what it talks to.
type Options struct {
	// Client acts: it reads and taints Nodes, evicts pods, records Events
	// and keeps the Leases.
	Client kubernetes.Interface
	// WatchClient feeds the Node informer (a client without a request
	// timeout); nil: Client.
	WatchClient kubernetes.Interface
	// ElectionClient keeps the leader election's Lease, with a rate
	// limiter of its own, so a renewal never queues behind the actions'
	// reads; nil: Client.
	ElectionClient kubernetes.Interface
	// API is the API server's client configuration, which reviews the
	// secure port's callers; needed with SecureListenAddress.
	API *rest.Config
	// PolicyPath is the RemedyConfiguration file, read again every
	// PolicyPoll; empty: the default policy.
	PolicyPath string
	PolicyPoll time.Duration // zero: 2s
	// ListenAddress serves /healthz, and /metrics when there is no
	// SecureListenAddress.
	ListenAddress       string
	SecureListenAddress string
	// Host is this replica's host name, named in the secure port's
	// self-signed certificate.
	Host     string
	Election Election
	// Clock is the controller's and the policy poll's clock; nil: the
	// real one. Leader election keeps client-go's real clock.
	Clock clock.WithTicker
	// Registry is where the metrics go; nil: a new one.
	Registry metrics.KubeRegistry
	// Resync is the time between the controller's passes; zero: remedy's.
	Resync time.Duration
	// OnReady, when set, is told the addresses served once the ports are
	// open.
	OnReady func(addrs []string)
}

// Election is the Lease the replicas elect a leader on; the fleet's
// action budget is kept on the Lease Name-actions beside it, elected or
// not.
type Election struct {
	// Enabled elects a leader; off, this replica acts alone.
	Enabled         bool
	Namespace, Name string
	// Identity is this replica's on the Leases.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's
	// leader election's.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Validate checks the durations: lease > renew > retry > 0.
func (e Election) Validate() error {
	if e.LeaseDuration <= e.RenewDeadline || e.RenewDeadline <= e.RetryPeriod || e.RetryPeriod <= 0 {
		return fmt.Errorf("--leader-elect-lease-duration %v, --leader-elect-renew-deadline %v, --leader-elect-retry-period %v: want lease > renew > retry > 0",
			e.LeaseDuration, e.RenewDeadline, e.RetryPeriod)
	}
	return nil
}

// Manager is `hangwatch-remedy run` wired together.
type Manager struct {
	o       Options
	policy  *policyFile
	metrics *remedy.Metrics
	factory informers.SharedInformerFactory
	nodes   cache.SharedIndexInformer
	lister  corelisters.NodeLister
	secure  *httpauth.SecureServer // nil without SecureListenAddress
}

// New assembles the controller from o: its policy, informer, metrics and
// secure port. Its errors are configurations that cannot run; nothing
// runs until Run.
func New(o Options) (*Manager, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	policy, err := newPolicyFile(o.PolicyPath)
	if err != nil {
		return nil, err
	}
	m := &Manager{o: o, policy: policy, metrics: remedy.NewMetrics(o.Registry)}
	buildinfo.Register(o.Registry)
	m.factory = informers.NewSharedInformerFactoryWithOptions(o.WatchClient, 0, informers.WithTransform(slimNode))
	nodes := m.factory.Core().V1().Nodes()
	m.nodes, m.lister = nodes.Informer(), nodes.Lister()
	if o.SecureListenAddress != "" {
		m.secure, err = httpauth.NewPort(httpauth.PortOptions{Address: o.SecureListenAddress, API: o.API, Names: []string{o.Host},
			CacheTTL: 2 * time.Minute, Clock: o.Clock, Registry: o.Registry, RequestsMetric: "hangwatch_remedy_secure_requests_total"})
	}
	return m, err
}

func (o *Options) defaults() error {
	if o.Client == nil {
		return fmt.Errorf("no API server client")
	}
	if o.Election.Enabled {
		if err := o.Election.Validate(); err != nil {
			return err
		}
	}
	if o.WatchClient == nil {
		o.WatchClient = o.Client
	}
	if o.ElectionClient == nil {
		o.ElectionClient = o.Client
	}
	if o.PolicyPoll == 0 {
		o.PolicyPoll = 2 * time.Second
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Registry == nil {
		o.Registry = metrics.NewKubeRegistry()
	}
	return nil
}

// Run serves, watches the Nodes and the policy file, and acts while this
// replica leads, until ctx ends. Its errors are the running controller's
// failures: a port that cannot be opened or stops serving, the lead lost.
func (m *Manager) Run(ctx context.Context) error {
	servers, err := m.openServers()
	if err != nil {
		return err
	}
	serveErr := servers.Start(m.o.OnReady)
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	m.factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); m.policy.watch(ctx, m.o.Clock, m.o.PolicyPoll) }()
	acted := make(chan error, 1)
	go func() { acted <- m.act(ctx, servers.Addrs()) }()
	select {
	case err = <-acted:
	case err = <-serveErr:
		stop()
		<-acted
	}
	stop()
	wg.Wait()
	m.factory.Shutdown()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := servers.Shutdown(shutdownCtx); serr != nil && err == nil {
		err = serr
	}
	return err
}
