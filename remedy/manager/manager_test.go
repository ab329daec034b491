package manager

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	authzv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/retry"
	testclock "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/httpauth/httpauthtest"
)

var managerT0 = time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)

// inProcess is hangwatch-remedy's assembly run against a fake Clientset
// on a fake clock.
type inProcess struct {
	api    *fake.Clientset
	clk    *testclock.FakeClock
	addrs  []string
	called chan struct{} // the controller or the elector asked the API server
	done   chan error
	stop   context.CancelFunc
}

// startInProcess runs New(o) as `run` would, its Client a fake Clientset
// holding objs and its clock a fake one, until the test ends.
func startInProcess(t *testing.T, o Options, objs ...runtime.Object) *inProcess {
	t.Helper()
	p := &inProcess{api: fake.NewClientset(objs...), clk: testclock.NewFakeClock(managerT0),
		called: make(chan struct{}, 1), done: make(chan error, 1)}
	leasesWithVersions(p.api)
	p.api.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		select {
		case p.called <- struct{}{}:
		default:
		}
		return false, nil, nil
	})
	ready := make(chan []string, 1)
	o.Client, o.Clock, o.OnReady = p.api, p.clk, func(addrs []string) { ready <- addrs }
	if o.ListenAddress == "" {
		o.ListenAddress = "127.0.0.1:0"
	}
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.stop = cancel
	go func() { p.done <- m.Run(ctx) }()
	select {
	case p.addrs = <-ready:
	case err := <-p.done:
		t.Fatalf("the manager stopped before serving: %v", err)
	}
	t.Cleanup(func() { p.stop(); <-p.done })
	return p
}

// leasesWithVersions gives the fake Clientset's Leases resourceVersions
// and refuses the update of a stale one, as the API server does: an
// elector's renewal of a Lease another replica took fails.
func leasesWithVersions(cs *fake.Clientset) {
	var mu sync.Mutex
	version := 0
	leases := coordinationv1.SchemeGroupVersion.WithResource("leases")
	write := func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		l := a.(interface{ GetObject() runtime.Object }).GetObject().(*coordinationv1.Lease).DeepCopy()
		if a.GetVerb() == "create" {
			version++
			l.ResourceVersion = strconv.Itoa(version)
			return true, l, cs.Tracker().Create(leases, l, l.Namespace)
		}
		stored, err := cs.Tracker().Get(leases, l.Namespace, l.Name)
		if err != nil {
			return true, nil, err
		}
		if stored.(*coordinationv1.Lease).ResourceVersion != l.ResourceVersion {
			return true, nil, apierrors.NewConflict(leases.GroupResource(), l.Name, fmt.Errorf("the object has been modified"))
		}
		version++
		l.ResourceVersion = strconv.Itoa(version)
		return true, l, cs.Tracker().Update(leases, l, l.Namespace)
	}
	cs.PrependReactor("create", "leases", write)
	cs.PrependReactor("update", "leases", write)
}

// until steps the fake clock a quarter second whenever the assembly goes
// quiet, until cond holds; it fails after 30 real seconds.
func (p *inProcess) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	quiet := time.NewTicker(20 * time.Millisecond)
	defer quiet.Stop()
	for !cond() {
		select {
		case <-p.called:
		case <-quiet.C:
			p.clk.Step(250 * time.Millisecond)
		case <-deadline.C:
			t.Fatalf("%s: not within 30 s", what)
		}
	}
}

// stopped cancels Run's context and returns what Run returned.
func (p *inProcess) stopped(t *testing.T) error {
	t.Helper()
	p.stop()
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30 s of its context's end")
		return nil
	}
}

var plainClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}

func get(t *testing.T, client *http.Client, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// hungNode is a Node whose RuntimeHung hangwatch wrote at t0.
func hungNode(name string, status corev1.ConditionStatus) *corev1.Node {
	raw := `{"f:status":{"f:conditions":{"k:{\"type\":\"RuntimeHung\"}":{".":{},"f:status":{},"f:type":{}}}}}`
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "hangwatch",
		Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(raw)}}}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: "RuntimeHung", Status: status, Reason: "VersionHung",
			LastTransitionTime: metav1.NewTime(managerT0), LastHeartbeatTime: metav1.NewTime(managerT0)}}}}
}

func writePolicy(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("apiVersion: hangwatch.io/v1alpha1\nkind: RemedyConfiguration\n"+body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (p *inProcess) taints(t *testing.T, node string) []corev1.Taint {
	t.Helper()
	n, err := p.api.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n.Spec.Taints
}

func (p *inProcess) event(t *testing.T, reason, node string) *corev1.Event {
	t.Helper()
	events, err := p.api.CoreV1().Events(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range events.Items {
		if e.Reason == reason && e.InvolvedObject.Name == node {
			return &events.Items[i]
		}
	}
	return nil
}

func (p *inProcess) lease(t *testing.T, name string) *coordinationv1.Lease {
	t.Helper()
	l, err := p.api.CoordinationV1().Leases("kube-system").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return l
}

func election(identity string) Election {
	return Election{Enabled: true, Namespace: "kube-system", Name: "hangwatch-remedy", Identity: identity,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
}

// ignoreKlog leaves out klog's flush daemon, which runs for the whole
// test binary.
var ignoreKlog = goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1")

// TestTheManagerLeadsActsReloadsAndStops runs the whole assembly
// in-process: it takes the Lease, serves /healthz once the Nodes are read
// and /metrics, turns a hung node into a dry-run Event, then, when the
// policy file drops the dry run, into a taint and its Event; cancelled, it
// gives the Lease up, and leaves no goroutine behind. The real API server
// and binary are exercised by test/integration (remedy_*_test.go).
func TestTheManagerLeadsActsReloadsAndStops(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	writePolicy(t, policy, "dryRun: true\n")
	p := startInProcess(t, Options{PolicyPath: policy, Election: election("replica-a")},
		hungNode("sick", corev1.ConditionTrue), hungNode("well", corev1.ConditionFalse))
	base := "http://" + p.addrs[0]
	p.until(t, "/healthz ok once the Nodes are read", func() bool { code, _ := get(t, plainClient, base+"/healthz", ""); return code == http.StatusOK })
	p.until(t, "replica-a holds the Lease", func() bool {
		l := p.lease(t, "hangwatch-remedy")
		return l != nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "replica-a"
	})
	p.until(t, "a RemedyDryRun Event on the sick node", func() bool { return p.event(t, "RemedyDryRun", "sick") != nil })
	if taints := p.taints(t, "sick"); len(taints) != 0 {
		t.Errorf("a dry run tainted the node: %v", taints)
	}
	_, body := get(t, plainClient, base+"/metrics", "")
	for _, want := range []string{"hangwatch_remedy_leader 1", `hangwatch_remedy_actions_total{action="taint",condition="RuntimeHung",result="dry_run"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	writePolicy(t, policy, "dryRun: false\n")
	p.until(t, "the sick node tainted after the reload", func() bool { return len(p.taints(t, "sick")) == 1 })
	if taint := p.taints(t, "sick")[0]; taint.Key != "hangwatch.io/runtime-hung" || taint.Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("the taint: %+v", taint)
	}
	p.until(t, "a RemedyTainted Event", func() bool { return p.event(t, "RemedyTainted", "sick") != nil })
	if taints := p.taints(t, "well"); len(taints) != 0 {
		t.Errorf("the well node tainted: %v", taints)
	}
	if err := p.stopped(t); err != nil {
		t.Errorf("Run after its context ended: %v", err)
	}
	if l := p.lease(t, "hangwatch-remedy"); l == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "" {
		t.Errorf("the Lease after the stop: %+v, want it given up", l)
	}
	if l := p.lease(t, "hangwatch-remedy-actions"); l == nil {
		t.Error("the action budget's Lease was not kept")
	}
	goleak.VerifyNone(t, ignoreKlog)
}

// TestAReplicaThatLosesTheLeadStops: another replica taking the Lease
// stops this one with an error (its Deployment starts it again as a
// follower), and it acts no more. Leader election keeps client-go's real
// clock, so its periods here are short.
func TestAReplicaThatLosesTheLeadStops(t *testing.T) {
	e := election("replica-a")
	e.LeaseDuration, e.RenewDeadline, e.RetryPeriod = time.Second, 500*time.Millisecond, 100*time.Millisecond
	p := startInProcess(t, Options{Election: e}, hungNode("well", corev1.ConditionFalse))
	p.until(t, "replica-a holds the Lease", func() bool {
		l := p.lease(t, "hangwatch-remedy")
		return l != nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "replica-a"
	})
	// replica-a renews it every 100 ms: a takeover read before a renewal
	// conflicts, and is made again on what the renewal wrote
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l := p.lease(t, "hangwatch-remedy")
		l.Spec.HolderIdentity = ptrTo("replica-b")
		l.Spec.LeaseDurationSeconds = ptrTo[int32](3600)
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		_, err := p.api.CoordinationV1().Leases("kube-system").Update(context.Background(), l, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.done <- err
		if err == nil || !strings.Contains(err.Error(), "lost the lead on kube-system/hangwatch-remedy") {
			t.Errorf("Run after the lead was taken: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("still running 30 s after the lead was taken")
	}
	if l := p.lease(t, "hangwatch-remedy"); *l.Spec.HolderIdentity != "replica-b" {
		t.Errorf("the Lease's holder after the loss: %s, want replica-b's kept", *l.Spec.HolderIdentity)
	}
	goleak.VerifyNone(t, ignoreKlog)
}

func ptrTo[T any](v T) *T { return &v }

// TestNewRefusesWhatCannotRun: a policy file that fails its checks, lease
// durations out of order, and a secure port without an API server are
// configuration errors from New, before anything runs.
func TestNewRefusesWhatCannotRun(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	writePolicy(t, bad, "maxActionsPerMinute: 0\n")
	shortLease := election("a")
	shortLease.LeaseDuration = shortLease.RenewDeadline
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{PolicyPath: bad}, "maxActionsPerMinute 0: must be from 1 to 100"},
		{Options{PolicyPath: filepath.Join(t.TempDir(), "none.yaml")}, "--config"},
		{Options{Election: shortLease}, "want lease > renew > retry > 0"},
		{Options{SecureListenAddress: "127.0.0.1:0"}, "--secure-listen-address 127.0.0.1:0: needs an API server"},
	} {
		c.o.Client = fake.NewClientset()
		if _, err := New(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v): %v, want an error with %q", c.o, err, c.want)
		}
	}
	if _, err := New(Options{}); err == nil {
		t.Error("New without a client: no error")
	}
}

func TestSlimNodeKeepsOnlyWhatTheControllerReads(t *testing.T) {
	n := hungNode("n", corev1.ConditionTrue)
	n.Status.Images = []corev1.ContainerImage{{Names: []string{"registry/big:1"}}}
	n.ManagedFields = append(n.ManagedFields, metav1.ManagedFieldsEntry{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate})
	out, err := slimNode(n)
	if err != nil {
		t.Fatal(err)
	}
	slim := out.(*corev1.Node)
	if len(slim.Status.Images) != 0 || len(slim.ManagedFields) != 1 || slim.ManagedFields[0].Subresource != "status" {
		t.Errorf("slimmed: images %v, managedFields %v", slim.Status.Images, slim.ManagedFields)
	}
	if len(slim.Status.Conditions) != 1 {
		t.Errorf("the conditions went: %v", slim.Status.Conditions)
	}
	if _, err := slimNode(&corev1.Pod{}); err != nil {
		t.Errorf("a non-Node: %v", err)
	}
}

// TestTheSecurePortServesMetricsToReviewedCallers: with a secure port,
// /metrics is served there to callers the API server's reviews allow, and
// the plain port keeps only /healthz. Without an election the replica
// acts alone, and says it leads.
func TestTheSecurePortServesMetricsToReviewedCallers(t *testing.T) {
	api := httpauthtest.NewAPIServer(t, map[string]string{"prometheus-token": "prometheus"},
		func(user string, a authzv1.SubjectAccessReviewSpec) bool {
			return user == "prometheus" && a.NonResourceAttributes != nil && a.NonResourceAttributes.Path == "/metrics"
		})
	p := startInProcess(t, Options{API: api.Config, SecureListenAddress: "127.0.0.1:0", Host: "remedy-0"},
		hungNode("well", corev1.ConditionFalse))
	plain, secure := "http://"+p.addrs[0], "https://"+p.addrs[1]
	p.until(t, "/healthz ok once the Nodes are read", func() bool { code, _ := get(t, plainClient, plain+"/healthz", ""); return code == http.StatusOK })
	if code, _ := get(t, plainClient, plain+"/metrics", ""); code != http.StatusNotFound {
		t.Errorf("plain /metrics with the secure port on: HTTP %d, want 404", code)
	}
	tlsClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // #nosec G402 -- the port's certificate is self-signed
	p.until(t, "the replica leads", func() bool {
		_, body := get(t, tlsClient, secure+"/metrics", "prometheus-token")
		return strings.Contains(body, "hangwatch_remedy_leader 1")
	})
	_, body := get(t, tlsClient, secure+"/metrics", "prometheus-token")
	if !strings.Contains(body, `hangwatch_remedy_secure_requests_total{result="allowed"}`) {
		t.Errorf("secure /metrics lacks its own request count:\n%s", body)
	}
	if code, _ := get(t, tlsClient, secure+"/metrics", "stolen-token"); code != http.StatusUnauthorized {
		t.Errorf("secure /metrics with an unknown token: HTTP %d, want 401", code)
	}
	if err := p.stopped(t); err != nil {
		t.Errorf("Run after its context ended: %v", err)
	}
	api.Close() // the reviewer's connections to it end with it
	goleak.VerifyNone(t, ignoreKlog)
}
