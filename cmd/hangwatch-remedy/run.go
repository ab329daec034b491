package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hangwatch/hangwatch/apiclient"
	"github.com/hangwatch/hangwatch/internal/buildinfo"
	"github.com/hangwatch/hangwatch/internal/cli"
	"github.com/hangwatch/hangwatch/remedy"
	"github.com/hangwatch/hangwatch/remedy/manager"
)

// runOptions are `run`'s flags.
type runOptions struct {
	api
	listen       string
	secureListen string
	namespace    string
	election     manager.Election // completed by identity
}

// api is how to reach the API server, and the policy: what `run` and
// `status` share.
type api struct {
	config     string
	kubeconfig string
	qps        float32
	burst      int
}

func (a *api) add(fs *pflag.FlagSet) {
	fs.StringVar(&a.config, "config", "", "RemedyConfiguration file ("+remedy.APIVersion+"); empty: the default policy")
	fs.StringVar(&a.kubeconfig, "kubeconfig", "", "kubeconfig; empty: the in-cluster ServiceAccount")
	fs.Float32Var(&a.qps, "kube-api-qps", 10, "most API requests per second")
	fs.IntVar(&a.burst, "kube-api-burst", 20, "most API requests in a burst")
}

// client builds the Clientset (this cluster-side binary may: the node
// agent may not).
func (a *api) client() (kubernetes.Interface, error) {
	cfg, err := a.restConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// watchClient is the informer's client (watchConfig).
func (a *api) watchClient() (kubernetes.Interface, error) {
	cfg, err := a.watchConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// watchConfig is restConfig for the informer: without the request timeout,
// which would cut each watch, and a large cluster's first list, short; and
// in protobuf, which takes far less memory to decode than JSON (the first
// list of a large cluster's Nodes is the controller's peak).
func (a *api) watchConfig() (*rest.Config, error) {
	cfg, err := a.restConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 0
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return cfg, nil
}

func (a *api) restConfig() (*rest.Config, error) {
	cfg, err := apiclient.RESTConfig(a.kubeconfig, a.qps, a.burst)
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		return nil, fmt.Errorf("--kubeconfig not given and not in a pod: no API server")
	}
	cfg.UserAgent = "hangwatch-remedy/" + buildinfo.Get().GitVersion
	return cfg, nil
}

func newRunCommand() *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the controller (leader-elected on a Lease)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cli.NeverBlockOnLogs(os.Stderr); err != nil {
				return err
			}
			opts, err := o.managerOptions()
			if err != nil {
				return err
			}
			m, err := manager.New(opts)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			if err := m.Run(ctx); err != nil {
				return cli.Exit(1, err)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	o.add(fs)
	fs.StringVar(&o.listen, "listen-address", "127.0.0.1:9766", "plain HTTP, not authenticated: /healthz, and with no --secure-listen-address also /metrics (then keep it on loopback)")
	fs.StringVar(&o.secureListen, "secure-listen-address", "", "HTTPS /metrics for Prometheus, with bearer tokens checked by TokenReview and SubjectAccessReview (get on the non-resource URL /metrics), for example 0.0.0.0:9767")
	fs.StringVar(&o.namespace, "namespace", "", "namespace of the leader-election Lease (default $POD_NAMESPACE, else kube-system)")
	fs.StringVar(&o.election.Name, "leader-elect-lease-name", "hangwatch-remedy", "the leader-election Lease")
	fs.BoolVar(&o.election.Enabled, "leader-elect", true, "elect a leader on the Lease; only the leader acts")
	fs.DurationVar(&o.election.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a leader's Lease lasts unrenewed before another replica takes over")
	fs.DurationVar(&o.election.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader tries to renew before it stops acting")
	fs.DurationVar(&o.election.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "time between tries to take or renew the Lease")
	return cmd
}

// managerOptions checks the flags, then builds the API server's clients.
func (o *runOptions) managerOptions() (manager.Options, error) {
	if err := o.election.Validate(); err != nil {
		return manager.Options{}, err
	}
	e, host, err := o.identity()
	if err != nil {
		return manager.Options{}, err
	}
	api, err := o.restConfig()
	if err != nil {
		return manager.Options{}, err
	}
	cs, err := kubernetes.NewForConfig(api)
	if err != nil {
		return manager.Options{}, err
	}
	watchCS, err := o.watchClient()
	if err != nil {
		return manager.Options{}, err
	}
	// its own rate limiter (a Clientset per config): a renewal never waits
	// behind the actions' reads and writes
	electionCS, err := kubernetes.NewForConfig(rest.CopyConfig(api))
	if err != nil {
		return manager.Options{}, err
	}
	return manager.Options{Client: cs, WatchClient: watchCS, ElectionClient: electionCS, API: api, PolicyPath: o.config, ListenAddress: o.listen,
		SecureListenAddress: o.secureListen, Host: host, Election: e}, nil
}

// identity completes the election: the namespace of the Leases (leader
// election, the action budget) and this replica's identity on them; and
// this replica's host name.
func (o *runOptions) identity() (manager.Election, string, error) {
	e := o.election
	e.Namespace = o.namespace
	if e.Namespace == "" {
		e.Namespace = os.Getenv("POD_NAMESPACE")
	}
	if e.Namespace == "" {
		e.Namespace = "kube-system"
	}
	host, err := os.Hostname()
	if err != nil {
		return e, "", fmt.Errorf("leader election identity: %w", err)
	}
	e.Identity = fmt.Sprintf("%s_%d", host, os.Getpid())
	return e, host, nil
}
