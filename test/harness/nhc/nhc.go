package nhc

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hangwatch/hangwatch/internal/pins"
)

// Version is medik8s' node-healthcheck-operator the NodeHealthCheck
// test runs (internal/pins/pins.env).
var Version = pins.NHCVersion

// Where the NodeHealthCheck controller runs, and as whom.
const (
	// Namespace is the controller's own namespace (DEPLOYMENT_NAMESPACE)
	// and the remediation template's in docs/remediation.md, as the medik8s
	// operators install together there.
	Namespace = "openshift-workload-availability"
	// NHCServiceAccount is the controller's identity: the shipped RBAC's
	// ServiceAccount after its kustomization's namePrefix.
	NHCServiceAccount = "node-healthcheck-controller-manager"
	// NHCWebhookPort is where the controller serves its validating webhook:
	// 9443 on every address, fixed in its main.go.
	NHCWebhookPort = 9443
)

// The resources of NodeHealthCheck and of Self Node Remediation, the
// remediator the docs pair it with.
var (
	// NodeHealthCheckGVR is NodeHealthCheck's resource.
	NodeHealthCheckGVR = schema.GroupVersionResource{Group: "remediation.medik8s.io", Version: "v1alpha1", Resource: "nodehealthchecks"}
	// SelfNodeRemediationGVR is the remediation NodeHealthCheck creates.
	SelfNodeRemediationGVR = schema.GroupVersionResource{Group: "self-node-remediation.medik8s.io", Version: "v1alpha1", Resource: "selfnoderemediations"}
	// SelfNodeRemediationTemplateGVR is the template a NodeHealthCheck names.
	SelfNodeRemediationTemplateGVR = schema.GroupVersionResource{Group: "self-node-remediation.medik8s.io", Version: "v1alpha1", Resource: "selfnoderemediationtemplates"}
	crdGVR                         = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// Operator is the NodeHealthCheck controller the setup command built (hack/lib.sh's
// ensure_nhc) and the files of its module's config/ it copied beside it.
type Operator struct {
	// Bin is the controller's binary.
	Bin string
	// CRDDir holds the NodeHealthCheck CRD (config/crd/bases).
	CRDDir string
	// RBACDir holds the controller's shipped RBAC (config/rbac).
	RBACDir string
	// WebhookDir holds its ValidatingWebhookConfiguration (config/webhook).
	WebhookDir string
}

// FindOperator finds it: $HANGWATCH_NHC_BIN, else the nhc-<version> folder of
// $HANGWATCH_CACHE or ~/.cache/hangwatch.
func FindOperator() (Operator, error) {
	const name = "node-healthcheck-operator"
	sub := "nhc-" + Version
	var bins []string
	if b := os.Getenv("HANGWATCH_NHC_BIN"); b != "" {
		bins = append(bins, b)
	}
	if d := os.Getenv("HANGWATCH_CACHE"); d != "" {
		bins = append(bins, filepath.Join(d, sub, name))
	}
	if home, err := os.UserHomeDir(); err == nil {
		bins = append(bins, filepath.Join(home, ".cache", "hangwatch", sub, name))
	}
	for _, b := range bins {
		dir := filepath.Dir(b)
		n := Operator{Bin: b, CRDDir: filepath.Join(dir, "crd"), RBACDir: filepath.Join(dir, "rbac"), WebhookDir: filepath.Join(dir, "webhook")}
		st, err := os.Stat(b)
		if err != nil || st.Mode()&0o111 == 0 {
			continue
		}
		if _, err := os.Stat(filepath.Join(n.CRDDir, "remediation.medik8s.io_nodehealthchecks.yaml")); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(n.WebhookDir, "manifests.yaml")); err != nil {
			continue
		}
		return n, nil
	}
	return Operator{}, fmt.Errorf("node-healthcheck-operator %s is not built (hack/lib.sh's ensure_nhc builds it, with its CRD, RBAC and webhook configuration beside it); looked for %v", Version, bins)
}
