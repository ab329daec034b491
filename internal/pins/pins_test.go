package pins

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

func TestParse(t *testing.T) {
	got, err := Parse("# a comment\n\nA=v1\n  B=x y \n")
	if err != nil || len(got) != 2 || got["A"] != "v1" || got["B"] != "x y" {
		t.Fatalf("Parse = %v, %v", got, err)
	}
	for _, bad := range []string{"A", "=v1", "A=", "A=1\nA=2"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q): no error", bad)
		}
	}
}

// TestPinsFileIsComplete reads the embedded pins.env: every pin there,
// nothing else.
func TestPinsFileIsComplete(t *testing.T) {
	want := []string{"KUBE_VERSION", "CONTAINERD_VERSION", "CONTAINERD_UPGRADE_VERSION", "CRIO_VERSION", "CRIO_RUNC_VERSION", "CRIO_CONMON_DEB", "GOLANGCI_LINT_VERSION",
		"PROMETHEUS_MODULE_VERSION", "ALERTMANAGER_VERSION", "HELM_MODULE_VERSION", "NPD_VERSION", "CSI_ATTACHER_VERSION", "CSI_PROVISIONER_VERSION", "NHC_VERSION", "BUILD_TAGS", "BUILD_GCFLAGS"}
	all := All()
	for _, k := range want {
		if all[k] == "" {
			t.Errorf("pins.env sets no %s", k)
		}
	}
	if len(all) != len(want) {
		t.Errorf("pins.env sets %d pins, package pins knows %d: %v", len(all), len(want), all)
	}
}

// TestPinsMatchTheModulesThatBuildThem checks the go.mod files under hack/
// that build each pinned tool against pins.env.
func TestPinsMatchTheModulesThatBuildThem(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, dir := range []string{"hack/kube/" + KubeVersion, "hack/containerd/" + ContainerdVersion, "hack/containerd/" + ContainerdUpgradeVersion,
		"hack/crio/" + CRIOVersion, "hack/runc/" + CRIORuncVersion} {
		if _, err := os.Stat(filepath.Join(root, dir, "go.mod")); err != nil {
			t.Errorf("no %s/go.mod pins it: %v", dir, err)
		}
	}
	// hack/csi/go.mod requires both CSI sidecars (in this order, as go
	// mod sorts them).
	csiSidecars := `(?s)github.com/kubernetes-csi/external-attacher/v4 ` + regexp.QuoteMeta(CSIAttacherVersion) + `\b.*` +
		`github.com/kubernetes-csi/external-provisioner/v6 ` + regexp.QuoteMeta(CSIProvisionerVersion) + `\b`
	requires := map[string]string{
		"hack/tools/go.mod":                        `github.com/prometheus/prometheus ` + regexp.QuoteMeta(PrometheusModuleVersion) + `\b`,
		"hack/alertmanager/go.mod":                 `github.com/prometheus/alertmanager ` + regexp.QuoteMeta(AlertmanagerVersion) + `\b`,
		"hack/helm/go.mod":                         `helm.sh/helm/v3 ` + regexp.QuoteMeta(HelmModuleVersion) + `\b`,
		"hack/npd/go.mod":                          `k8s.io/node-problem-detector ` + regexp.QuoteMeta(NPDVersion) + `\b`,
		"hack/csi/go.mod":                          csiSidecars,
		"hack/nhc/go.mod":                          `github.com/medik8s/node-healthcheck-operator ` + regexp.QuoteMeta(NHCVersion) + `\b`,
		"hack/crio/" + CRIOVersion + "/go.mod":     `github.com/cri-o/cri-o ` + regexp.QuoteMeta(CRIOVersion) + `\b`,
		"hack/runc/" + CRIORuncVersion + "/go.mod": `github.com/opencontainers/runc ` + regexp.QuoteMeta(CRIORuncVersion) + `\b`,
	}
	for mod, re := range requires {
		b, err := os.ReadFile(filepath.Join(root, mod))
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(re).Match(b) {
			t.Errorf("%s does not require %s, as pins.env says", mod, re)
		}
	}
}
