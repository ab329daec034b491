package nhc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// installRemediationCRDs installs the module's NodeHealthCheck CRD and
// recording definitions of Self Node Remediation's two kinds (any
// content kept), and waits until all three are established.
func installRemediationCRDs(t *testing.T, dyn dynamic.Interface, nhc Operator) {
	t.Helper()
	crds, err := remediationCRDs(nhc)
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if _, err := dyn.Resource(crdGVR).Create(context.Background(), crd, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create CRD %s: %v", crd.GetName(), err)
		}
	}
	for _, crd := range crds {
		harness.Eventually(t, 30*time.Second, "CRD "+crd.GetName()+" established", func() bool {
			return crdEstablished(dyn, crd.GetName())
		})
	}
}

// remediationCRDs are the module's NodeHealthCheck CRD and recording
// CRDs of SelfNodeRemediation and SelfNodeRemediationTemplate.
func remediationCRDs(nhc Operator) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(filepath.Join(nhc.CRDDir, "remediation.medik8s.io_nodehealthchecks.yaml"))
	if err != nil {
		return nil, err
	}
	crds := []*unstructured.Unstructured{{}}
	if err := yaml.Unmarshal(raw, &crds[0].Object); err != nil {
		return nil, fmt.Errorf("the NodeHealthCheck CRD: %w", err)
	}
	for _, kind := range []string{"SelfNodeRemediation", "SelfNodeRemediationTemplate"} {
		crds = append(crds, recordingCRD(kind))
	}
	return crds, nil
}

// recordingCRD defines kind in Self Node Remediation's group, namespaced,
// with a schema that keeps any content.
func recordingCRD(kind string) *unstructured.Unstructured {
	gv, plural := SelfNodeRemediationGVR.GroupVersion(), strings.ToLower(kind)+"s"
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + gv.Group},
		"spec": map[string]any{
			"group": gv.Group, "scope": "Namespaced",
			"names": map[string]any{"kind": kind, "listKind": kind + "List", "plural": plural, "singular": strings.ToLower(kind)},
			"versions": []any{map[string]any{
				"name": gv.Version, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	}}
}

// crdEstablished says whether the CRD name's Established condition is
// True.
func crdEstablished(dyn dynamic.Interface, name string) bool {
	u, err := dyn.Resource(crdGVR).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
