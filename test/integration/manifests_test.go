package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// manifestFiles lists the Kubernetes objects under manifests/ that a user
// applies (or copies to a node), leaving out kustomize's own files (the
// kustomizations and *-patch.yaml) and the hangwatch config files.
func manifestFiles(t *testing.T) (files, overlays []string) {
	t.Helper()
	root := filepath.Join(harness.ModuleRoot(), "manifests")
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		base := filepath.Base(p)
		switch {
		case info.IsDir() && (base == "tests" || base == "helm"): // helm: templates, rendered below
			return filepath.SkipDir
		case info.IsDir() && fileExists(filepath.Join(p, "kustomization.yaml")) && strings.Contains(p, "overlays"):
			overlays = append(overlays, p)
		case !info.IsDir() && strings.HasSuffix(base, ".yaml") && base != "kustomization.yaml" && base != "config.yaml" &&
			!strings.HasSuffix(base, "-patch.yaml"): // a kustomize patch is applied with its overlay
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, overlays
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestManifestsDryRunServer applies every manifest, and each kustomize
// overlay, with the real kubectl as a server-side dry-run with strict field
// validation against the real kube-apiserver.
func TestManifestsDryRunServer(t *testing.T) {
	harness.Parallel(t)
	cp := harness.StartControlPlaneT(t) // its own: another test creating a manifest's object between the dry run's read and its create would fail it
	cp.Kubectl(t, "apply", "-f", filepath.Join("testdata", "monitoring-crds.yaml"))
	cp.Kubectl(t, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/prometheusrules.monitoring.coreos.com", "crd/podmonitors.monitoring.coreos.com")
	hangwatch.EnsureDefaultServiceAccount(t, cp, "kube-system") // no controller manager makes it here
	files, overlays := manifestFiles(t)
	if len(files) < 8 || len(overlays) != 5 {
		t.Fatalf("found %d manifests and %d overlays; the walk no longer matches the layout", len(files), len(overlays))
	}
	for _, f := range files {
		out := cp.Kubectl(t, "apply", "--dry-run=server", "--validate=strict", "-f", f)
		t.Logf("%s: %s", strings.TrimPrefix(f, harness.ModuleRoot()+"/"), strings.TrimSpace(out))
	}
	for _, o := range overlays {
		out := cp.Kubectl(t, "apply", "--dry-run=server", "--validate=strict", "-k", o)
		t.Logf("-k %s:\n%s", strings.TrimPrefix(o, harness.ModuleRoot()+"/"), strings.TrimSpace(out))
	}
	rendered := renderHelmChart(t)
	out := cp.Kubectl(t, "apply", "--dry-run=server", "--validate=strict", "-f", rendered)
	t.Logf("helm template (every option on):\n%s", strings.TrimSpace(out))
}

// renderHelmChart writes the chart's objects, with its optional
// prometheus-operator objects on, to a file for kubectl. The release has a
// name of its own: other tests in this package apply the kustomize overlay
// for real to the shared API server, and a DaemonSet named alike but with the
// chart's selector would be refused as an immutable-field change.
func renderHelmChart(t *testing.T) string {
	t.Helper()
	out, err := harness.HelmTemplate("hangwatch-chart", append(harness.HelmMonitorsOn[:len(harness.HelmMonitorsOn):len(harness.HelmMonitorsOn)],
		"--set", "remedy.enabled=true", "--set", "repair.enabled=true", "--set", "repair.fence.enabled=true")...)
	if err != nil {
		t.Fatal(err)
	}
	// The secure port with a certificate of one's own: the PodMonitor then
	// verifies it against the Secret's CA.
	withCert, err := harness.HelmTemplate("hangwatch-chart", append(harness.HelmMonitorsOn, "--set", "secureServing.certSecret=hangwatch-tls",
		"--set", "secureServing.serverName=hangwatch.kube-system.svc", "--show-only", "templates/podmonitor.yaml", "--set", "fullnameOverride=hangwatch-chart-tls")...)
	if err != nil {
		t.Fatal(err)
	}
	out = append(append(out, "\n---\n"...), withCert...)
	path := filepath.Join(t.TempDir(), "hangwatch-chart.yaml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
