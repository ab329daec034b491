package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/remedy"
)

func TestConfigCheckExitCodes(t *testing.T) {
	if code := execute([]string{"config", "check", "../../manifests/overlays/remedy/config.yaml"}); code != 0 {
		t.Errorf("the shipped policy: exit %d", code)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: hangwatch.io/v1alpha1\nkind: RemedyConfiguration\nmaxUnhealthy: lots\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := execute([]string{"config", "check", bad}); code != 2 {
		t.Errorf("a bad policy: exit %d, want 2", code)
	}
	ready := filepath.Join(t.TempDir(), "ready.yaml")
	if err := os.WriteFile(ready, []byte("apiVersion: hangwatch.io/v1alpha1\nkind: RemedyConfiguration\nconditions:\n- type: Ready\n  taintAfter: 0s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := remedy.LoadPolicyFile(ready); err == nil || !strings.Contains(err.Error(), "conditions[0].type Ready") {
		t.Errorf("a policy on Ready: %v, want conditions[0].type named", err)
	}
	if code := execute([]string{"uninstall", "--condition-type", "Ready"}); code != 2 {
		t.Errorf("uninstall taking the kubelet's Ready off: exit %d, want 2", code)
	}
	if code := execute([]string{"run", "--leader-elect-lease-duration", "1s"}); code != 2 {
		t.Errorf("lease shorter than the renew deadline: exit %d, want 2", code)
	}
}

// TestTheInformerHasNoRequestTimeout: the informer's client keeps no
// request timeout (it would cut each watch, and a large cluster's first
// list) and speaks protobuf; the client that acts keeps its 10 s.
func TestTheInformerHasNoRequestTimeout(t *testing.T) {
	kc := unreachableKubeconfig(t)
	a := &api{kubeconfig: kc, qps: 10, burst: 20}
	acting, err := a.restConfig()
	if err != nil {
		t.Fatal(err)
	}
	watching, err := a.watchConfig()
	if err != nil {
		t.Fatal(err)
	}
	if acting.Timeout != 10*time.Second || watching.Timeout != 0 {
		t.Errorf("timeouts: acting %v (want 10s), informer %v (want none)", acting.Timeout, watching.Timeout)
	}
	if watching.ContentType != "application/vnd.kubernetes.protobuf" {
		t.Errorf("the informer's content type %q", watching.ContentType)
	}
}

// TestLeaderElectionHasAClientOfItsOwn: the election renews on a Clientset
// (and so a rate limiter) of its own, not the one that reads and acts.
func TestLeaderElectionHasAClientOfItsOwn(t *testing.T) {
	kc := unreachableKubeconfig(t)
	o := &runOptions{api: api{kubeconfig: kc, qps: 10, burst: 20}}
	o.election.Enabled, o.election.Name = true, "hangwatch-remedy"
	o.election.LeaseDuration, o.election.RenewDeadline, o.election.RetryPeriod = 15*time.Second, 10*time.Second, 2*time.Second
	m, err := o.managerOptions()
	if err != nil {
		t.Fatal(err)
	}
	if m.ElectionClient == nil || m.ElectionClient == m.Client {
		t.Error("leader election shares the acting client")
	}
}

// unreachableKubeconfig is a kubeconfig of a server nothing listens on:
// the clients are built, and never asked anything.
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return kc
}
