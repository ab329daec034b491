package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/apiclient"
	"github.com/hangwatch/hangwatch/internal/buildinfo"
	"github.com/hangwatch/hangwatch/internal/cli"
	"github.com/hangwatch/hangwatch/remedy"
)

// runOptions are `run`'s flags.
type runOptions struct {
	api
	listen        string
	secureListen  string
	namespace     string
	leaseName     string
	leaderElect   bool
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration
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
			if o.leaseDuration <= o.renewDeadline || o.renewDeadline <= o.retryPeriod || o.retryPeriod <= 0 {
				return fmt.Errorf("--leader-elect-lease-duration %v, --leader-elect-renew-deadline %v, --leader-elect-retry-period %v: want lease > renew > retry > 0",
					o.leaseDuration, o.renewDeadline, o.retryPeriod)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return o.run(ctx)
		},
	}
	fs := cmd.Flags()
	o.add(fs)
	fs.StringVar(&o.listen, "listen-address", "127.0.0.1:9766", "plain HTTP, not authenticated: /healthz, and with no --secure-listen-address also /metrics (then keep it on loopback)")
	fs.StringVar(&o.secureListen, "secure-listen-address", "", "HTTPS /metrics for Prometheus, with bearer tokens checked by TokenReview and SubjectAccessReview (get on the non-resource URL /metrics), for example 0.0.0.0:9767")
	fs.StringVar(&o.namespace, "namespace", "", "namespace of the leader-election Lease (default $POD_NAMESPACE, else kube-system)")
	fs.StringVar(&o.leaseName, "leader-elect-lease-name", "hangwatch-remedy", "the leader-election Lease")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader on the Lease; only the leader acts")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a leader's Lease lasts unrenewed before another replica takes over")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader tries to renew before it stops acting")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "time between tries to take or renew the Lease")
	return cmd
}

func (o *runOptions) run(ctx context.Context) error {
	policy, err := newPolicyFile(o.config)
	if err != nil {
		return err
	}
	cs, err := o.client()
	if err != nil {
		return err
	}
	watchCS, err := o.watchClient()
	if err != nil {
		return err
	}
	ns, id, err := o.identity()
	if err != nil {
		return err
	}
	reg := metrics.NewKubeRegistry()
	buildinfo.Register(reg)
	m := remedy.NewMetrics(reg)
	factory := informers.NewSharedInformerFactoryWithOptions(watchCS, 0, informers.WithTransform(slimNode))
	nodes := factory.Core().V1().Nodes()
	lister := nodes.Lister()
	factory.Start(ctx.Done())
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return cli.Exit(1, fmt.Errorf("--listen-address %s: %w", o.listen, err))
	}
	srv := serve(ln, reg, nodes.Informer().HasSynced, o.secureListen == "")
	defer func() { _ = srv.Close() }()
	if o.secureListen != "" {
		secure, err := o.serveSecure(reg)
		if err != nil {
			return err
		}
		defer func() { _ = secure.Close() }()
	}
	go policy.watch(ctx, 2*time.Second)
	if !cache.WaitForCacheSync(ctx.Done(), nodes.Informer().HasSynced) {
		return nil // stopped before the nodes were read
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	budget := remedy.NewBudget(cs.CoordinationV1(), types.NamespacedName{Namespace: ns, Name: o.leaseName + "-actions"}, id)
	c := remedy.NewController(remedy.Options{Client: cs, Policy: policy.get, Metrics: m, Clock: clock.RealClock{}, Budget: budget,
		Nodes:    nodeLister(func() ([]*corev1.Node, error) { return lister.List(labels.Everything()) }),
		Recorder: broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "hangwatch-remedy"})})
	klog.InfoS("hangwatch-remedy running", "listen", ln.Addr().String(), "leaderElect", o.leaderElect, "dryRun", policy.get().DryRun)
	if !o.leaderElect {
		m.SetLeader(true)
		c.Run(ctx)
		return nil
	}
	return o.elect(ctx, cs, c, m, ns, id)
}

// identity is the namespace of the Leases (leader election, the action
// budget) and this replica's identity on them.
func (o *runOptions) identity() (namespace, id string, err error) {
	namespace = o.namespace
	if namespace == "" {
		namespace = os.Getenv("POD_NAMESPACE")
	}
	if namespace == "" {
		namespace = "kube-system"
	}
	host, err := os.Hostname()
	if err != nil {
		return "", "", fmt.Errorf("leader election identity: %w", err)
	}
	return namespace, fmt.Sprintf("%s_%d", host, os.Getpid()), nil
}

// elect acts while this replica leads; a replica that loses the lead
// stops with an error, and its Deployment starts it again as a follower.
func (o *runOptions) elect(ctx context.Context, cs kubernetes.Interface, c *remedy.Controller, m *remedy.Metrics, ns, id string) error {
	lost := false
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{LeaseMeta: metav1ObjectMeta(o.leaseName, ns), Client: cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id}},
		LeaseDuration: o.leaseDuration, RenewDeadline: o.renewDeadline, RetryPeriod: o.retryPeriod,
		ReleaseOnCancel: true, Name: o.leaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				klog.InfoS("Leading: acting on the policy", "identity", id, "lease", ns+"/"+o.leaseName)
				m.SetLeader(true)
				c.Run(ctx)
			},
			OnStoppedLeading: func() {
				m.SetLeader(false)
				lost = ctx.Err() == nil
			},
			OnNewLeader: func(leader string) { klog.InfoS("Leader", "identity", leader) },
		},
	})
	if lost {
		return cli.Exit(1, fmt.Errorf("lost the lead on %s/%s", ns, o.leaseName))
	}
	return nil
}

// serve serves /healthz (the node cache synced) and, when there is no
// secure port, /metrics.
func serve(ln net.Listener, reg metrics.KubeRegistry, synced func() bool, withMetrics bool) *http.Server {
	mux := http.NewServeMux()
	if withMetrics {
		mux.Handle("/metrics", metrics.HandlerFor(reg, metrics.HandlerOpts{}))
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !synced() {
			http.Error(w, "node cache not synced", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv
}

// slimNode drops from a cached Node what the controller never reads: the
// images (up to 50 entries a node) and every managedFields entry but the
// status writers', which say who wrote each condition.
func slimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	n.Status.Images = nil
	kept := n.ManagedFields[:0]
	for _, e := range n.ManagedFields {
		if e.Subresource == "status" {
			kept = append(kept, e)
		}
	}
	n.ManagedFields = kept
	return n, nil
}

// nodeLister adapts the informer's lister.
type nodeLister func() ([]*corev1.Node, error)

func (l nodeLister) List() ([]*corev1.Node, error) { return l() }
