package harness

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestControlPlaneServesTheAPI(t *testing.T) {
	cp := StartControlPlaneT(t)
	v, err := cp.Admin.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != KubeVersion {
		t.Fatalf("server %s, want %s", v.GitVersion, KubeVersion)
	}
	if _, err := cp.Admin.CoreV1().Namespaces().Get(context.Background(), "kube-node-lease", metav1.GetOptions{}); err != nil {
		t.Fatalf("kube-node-lease: %v", err)
	}
}
