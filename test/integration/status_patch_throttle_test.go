package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/measurements"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// throttlingWebhook answers the API server's admission reviews: 429 with
// Retry-After while throttle is set, allowed otherwise.
type throttlingWebhook struct {
	srv      *httptest.Server
	caPEM    []byte
	throttle atomic.Bool
	reviews  atomic.Int64
}

func startThrottlingWebhook(t *testing.T) *throttlingWebhook {
	t.Helper()
	w := &throttlingWebhook{}
	cert, caPEM := selfSignedLoopbackCert(t)
	w.caPEM = caPEM
	w.srv = httptest.NewUnstartedServer(http.HandlerFunc(w.review))
	w.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	w.srv.StartTLS()
	t.Cleanup(w.srv.Close)
	return w
}

func (w *throttlingWebhook) review(rw http.ResponseWriter, req *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(http.MaxBytesReader(rw, req.Body, 1<<20)).Decode(&review); err != nil || review.Request == nil {
		http.Error(rw, "bad review", http.StatusBadRequest)
		return
	}
	w.reviews.Add(1)
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	if w.throttle.Load() {
		resp.Allowed = false
		resp.Result = &metav1.Status{Code: http.StatusTooManyRequests, Reason: metav1.StatusReasonTooManyRequests,
			Message: "the test throttles status patches", Details: &metav1.StatusDetails{RetryAfterSeconds: 2}}
	}
	review.Response, review.Request = resp, nil
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(review)
}

// register sends the identity's status patches to the webhook.
func (w *throttlingWebhook) register(t *testing.T, f *faultIdentity) {
	t.Helper()
	ctx := context.Background()
	name := "hw-throttle-" + f.node
	url := w.srv.URL + "/validate"
	cfg := &admissionregv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregv1.ValidatingWebhook{{
			Name:         "throttle.hangwatch.test",
			ClientConfig: admissionregv1.WebhookClientConfig{URL: &url, CABundle: w.caPEM},
			Rules: []admissionregv1.RuleWithOperations{{Operations: []admissionregv1.OperationType{admissionregv1.Update},
				Rule: admissionregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"nodes/status"}}}},
			MatchConditions:         []admissionregv1.MatchCondition{{Name: "the-test-identity", Expression: `request.userInfo.username == "` + f.user + `"`}},
			SideEffects:             ptr.To(admissionregv1.SideEffectClassNone),
			FailurePolicy:           ptr.To(admissionregv1.Fail),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To(int32(5)),
		}}}
	if _, err := f.cp.Admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.cp.Admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// selfSignedLoopbackCert is a serving certificate for 127.0.0.1 that is its
// own CA.
func selfSignedLoopbackCert(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hangwatch-test-webhook"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestStatusPatchThrottled: an admission webhook answers hangwatch's status
// patches with 429 and Retry-After 2 s. hangwatch waits at least that long
// between attempts, so the reviews stay few, and writes once the webhook
// lets it.
func TestStatusPatchThrottled(t *testing.T) {
	harness.Parallel(t)
	c, cp := hangwatch.OwnContainerd(t), harness.StartControlPlaneT(t) // its own: no other test's admission policy refuses its identity
	node := hangwatch.UniqueNode("hw-throttle")
	nodeKC := hangwatch.CreateNode(t, cp, node)
	stop := make(chan struct{})
	defer close(stop)
	hangwatch.RenewLease(t, harness.ClientFor(t, nodeKC), node, 2*time.Second, stop)
	f := newFaultIdentity(t, cp, node)
	wh := startThrottlingWebhook(t)
	wh.register(t, f)
	d := hangwatch.StartDaemon(t, c.Endpoint, hangwatch.NodeArgs(f.kubeconfig, node, "--lease-period", "1s", "--period", "1s", "-t", "1s", noKubeletProbe)...)
	hangwatch.WaitNode(t, cp, d, 30*time.Second, node, "KubeletUnresponsive", hangwatch.CondIs(corev1.ConditionFalse, ""))
	if wh.reviews.Load() == 0 {
		t.Fatal("the webhook saw no review: it does not stand in hangwatch's way")
	}

	wh.throttle.Store(true)
	f.grant(t, false, true) // the Lease read refused: KubeletUnresponsive goes Unknown, and hangwatch writes
	harness.Eventually(t, 30*time.Second, "a throttled patch", func() bool {
		text, err := d.Get("/metrics")
		return err == nil && harness.MetricValue(text, `hangwatch_node_status_patches_total{result="error"}`) >= 1
	}, harness.UnlessExited(d))
	from, start := wh.reviews.Load(), time.Now()
	harness.Eventually(t, 20*time.Second, "15 s of throttling", func() bool { return time.Since(start) >= 15*time.Second }, harness.UnlessExited(d))
	reviews := wh.reviews.Load() - from
	measurements.Record(t, "throttled_reviews_in_15s", float64(reviews), "reviews")
	if reviews > 12 { // at most one attempt per Retry-After (2 s), client-go's own retries included
		t.Errorf("%d reviews in 15 s of 429 with Retry-After 2 s: hangwatch does not wait it out", reviews)
	}
	if c := hangwatch.NodeCond(t, cp, node, "KubeletUnresponsive"); c == nil || c.Status != corev1.ConditionFalse {
		t.Fatalf("a throttled patch landed: %+v", c)
	}

	wh.throttle.Store(false)
	released := time.Now()
	hangwatch.WaitNode(t, cp, d, 30*time.Second, node, "KubeletUnresponsive", hangwatch.CondIs(corev1.ConditionUnknown, "LeaseUnreadable"))
	harness.Measure(t, "throttled_written_after_release", time.Since(released))
	f.grant(t, true, true)
	hangwatch.WaitNode(t, cp, d, 30*time.Second, node, "KubeletUnresponsive", hangwatch.CondIs(corev1.ConditionFalse, ""))
}
