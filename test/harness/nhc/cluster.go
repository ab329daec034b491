package nhc

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// Cluster is medik8s' NodeHealthCheck controller (FindOperator's) with its
// shipped RBAC and validating webhook against an API server of its own.
// Self Node Remediation's part is played by recording CRDs: a
// SelfNodeRemediation is an object that nothing acts on.
type Cluster struct {
	CP *harness.ControlPlane
	// Dynamic is the admin's dynamic client, for the medik8s kinds.
	Dynamic dynamic.Interface
	// Controller is the NodeHealthCheck controller's process.
	Controller *harness.Proc
	// Build is the controller that runs, and its module's config.
	Build Operator
}

// ClusterOptions are a test's own parts of the start.
type ClusterOptions struct {
	// Meanwhile runs on the test's goroutine while the control plane
	// starts (the test's containerds, say).
	Meanwhile func()
	// Populate runs once the CRDs, the namespace and the RBAC are in,
	// while kube-controller-manager starts and before the controller does
	// (the test's Nodes and remediation template, say).
	Populate func(c *Cluster)
}

// StartCluster starts the control plane and kube-controller-manager
// (ClusterRole aggregation alone), installs the NodeHealthCheck CRD and
// recording Self Node Remediation CRDs, Namespace and the controller's
// shipped RBAC, starts the controller, waits for its aggregated
// ClusterRole to hold the remediator's rules and registers its webhook.
// All of it stops when t ends.
func StartCluster(t *testing.T, o ClusterOptions) *Cluster {
	t.Helper()
	harness.RequireRealParts(t)
	build, err := FindOperator()
	if err != nil {
		t.Fatal(err)
	}
	cpStarted := harness.StartInBackground(t, "start control plane", 3*time.Minute, harness.StartControlPlane, (*harness.ControlPlane).Stop)
	if o.Meanwhile != nil {
		o.Meanwhile()
	}
	c := &Cluster{Build: build, CP: cpStarted()}
	// ClusterRole aggregation, which the controller's RBAC relies on (its
	// aggregated role gathers the remediators' rules), is
	// kube-controller-manager's: it runs that controller alone (no node
	// lifecycle controller: no kubelet renews these Nodes' Leases).
	kcmStarted := harness.StartInBackground(t, "start kube-controller-manager", 2*time.Minute, func(ctx context.Context) (*harness.ControllerManager, error) {
		return harness.StartControllers(ctx, c.CP, "clusterrole-aggregation-controller")
	}, (*harness.ControllerManager).Stop)
	c.Dynamic = harness.DynamicClientFor(t, c.CP.AdminKubeconfig)
	installRemediationCRDs(t, c.Dynamic, build)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if _, err := c.CP.Admin.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	installNHCRBAC(t, c.CP, build)
	if o.Populate != nil {
		o.Populate(c)
	}
	kcmStarted()
	c.Controller = startNHCController(t, c.CP, build)
	c.waitAggregation(t)
	registerNHCWebhook(t, c.CP, build)
	return c
}

// waitAggregation waits for the controller's aggregated ClusterRole to
// hold the remediator's rules.
func (c *Cluster) waitAggregation(t *testing.T) {
	t.Helper()
	harness.Eventually(t, 30*time.Second, "the aggregated ClusterRole to hold the remediators' rules", func() bool {
		r, err := c.CP.Admin.RbacV1().ClusterRoles().Get(context.Background(), "node-healthcheck-operator-aggregation", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, rule := range r.Rules {
			if strings.Contains(strings.Join(rule.Resources, ","), "selfnoderemediations") {
				return true
			}
		}
		return false
	}, harness.UnlessExited(c.Controller))
}
