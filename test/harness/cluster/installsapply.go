package cluster

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// installsPatches are the only changes the installs suite makes to what
// ships (read the file for each and why); docs/testing.md lists them.
//
//go:embed installs-patches.yaml
var installsPatches string

// HelmRelease is the release name the installs suite gives the chart: its
// objects are then named as the overlays' are.
const HelmRelease = "hangwatch"

// Install installs hangwatch by in.How and records when the command
// returned.
func (in *Installs) Install(t *testing.T) {
	t.Helper()
	switch in.How {
	case "kustomize":
		in.CP.Kubectl(t, "apply", "-k", in.kustomization(t))
	case "helm":
		in.helm(t, "install", HelmRelease, filepath.Join(harness.ModuleRoot(), "manifests", "helm", "hangwatch"),
			"--namespace", "kube-system", "--post-renderer", in.postRenderer(t),
			"--set", "repair.enabled=true", "--set", "repair.fence.enabled=true",
			"--set", "remedy.enabled=true", "--set", "remedy.config.fence.enabled=true",
			// the uninstall hook's Job, which a post-renderer does not reach
			// (Helm renders hooks apart): installs-patches.yaml's changes as values
			"--set", "uninstall.hostNetwork=true", "--set", installsRoleLabelValue+"="+roleSpare,
			"--set-json", fmt.Sprintf(`uninstall.env=[{"name":"KUBERNETES_SERVICE_HOST","value":"127.0.0.1"},{"name":"KUBERNETES_SERVICE_PORT","value":%q}]`, in.CP.Port()))
	case "binaries":
		in.startBinaries(t)
	default:
		t.Fatalf("install %q: want kustomize, helm or binaries", in.How)
	}
	in.Installed = time.Now()
}

// Uninstall removes what Install installed, as an operator does:
// `kubectl delete -k` of the same kustomization, or `helm uninstall`.
func (in *Installs) Uninstall(t *testing.T) {
	t.Helper()
	if in.How == "helm" {
		in.helm(t, "uninstall", HelmRelease, "--namespace", "kube-system", "--wait", "--timeout", "2m")
		return
	}
	in.CP.Kubectl(t, "delete", "-k", in.kustomization(t), "--wait", "--timeout", "2m")
}

// kustomization writes a kustomization of the shipped fence and remedy
// overlays (the fence's includes repair's and the daemonset's), the
// installs patches, and remedy's shipped policy with the fence turned on,
// and returns its folder.
func (in *Installs) kustomization(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "install")
	overlays := filepath.Join(harness.ModuleRoot(), "manifests", "overlays")
	policy := FencePolicy(t, nil)
	files := map[string]string{
		"patches.yaml": in.patches,
		"kustomization.yaml": fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %s
- %s
patches:
- path: patches.yaml
configMapGenerator:
- name: hangwatch-remedy-config
  namespace: kube-system
  behavior: replace
  files:
  - config.yaml=%s
`, relTo(t, dir, filepath.Join(overlays, "fence")), relTo(t, dir, filepath.Join(overlays, "remedy")), filepath.Base(policy)),
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	files[filepath.Base(policy)] = string(raw)
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// postRenderer writes a helm post-renderer that applies the installs
// patches to the chart's objects with kubectl kustomize, and returns it.
func (in *Installs) postRenderer(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "post-render")
	kubectl, err := harness.KubeBinary("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"patches.yaml":       in.patches,
		"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- chart.yaml\npatches:\n- path: patches.yaml\n",
		"render":             fmt.Sprintf("#!/bin/sh\nset -e\ncat > %s/chart.yaml\nexec %s kustomize %s\n", dir, kubectl, dir),
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "render")
}

func (in *Installs) helm(t *testing.T, args ...string) {
	t.Helper()
	bin, err := harness.Helm()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append(args, "--kubeconfig", in.CP.AdminKubeconfig)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// PodLogs is the end of the log of each hangwatch container on A, for a
// failure's message.
func (in *Installs) PodLogs(t *testing.T) string {
	var b strings.Builder
	logs, _ := filepath.Glob(filepath.Join(in.K.Dir, "logs", "kube-system_hangwatch*", "*", "*.log"))
	if in.KB != nil {
		more, _ := filepath.Glob(filepath.Join(in.KB.Dir, "logs", "kube-system_hangwatch*", "*", "*.log"))
		logs = append(logs, more...)
	}
	for _, l := range logs {
		fmt.Fprintf(&b, "%s:\n%s\n", l, harness.FileTail(filepath.Base(l), l, 60))
	}
	return b.String()
}

// startBinaries runs hangwatch for A as the other e2e tests do, processes
// on the test machine with the fence overlay's settings (its identity, the
// runtime's and systemd's sockets where the test reaches them), and
// hangwatch-remedy with its shipped policy and the fence on.
func (in *Installs) startBinaries(t *testing.T) {
	t.Helper()
	kc, err := in.CP.NodeKubeconfig(in.A)
	if err != nil {
		t.Fatal(err)
	}
	// the kubelet's /metrics as the static pod reads it: the node's
	// identity, which the static-pod overlay lets read it
	in.CP.Kubectl(t, "apply", "-k", filepath.Join(harness.ModuleRoot(), "manifests", "overlays", "static-pod"))
	config := filepath.Join(t.TempDir(), "hangwatch.yaml")
	body := fmt.Sprintf("apiVersion: hangwatch.io/v1alpha1\nkind: HangwatchConfiguration\n"+
		"kubelet:\n  healthzURL: %s\n  metricsURL: %s\n  kubeconfig: %s\n  caFile: %s\n"+
		"repair:\n  enabled: true\n  runtimeUnit: %s\n  runtimeSocket: %s\n  systemdSocket: %s\n  fence: true\n  kubeletRootDir: %s\n"+
		"podStarts:\n  podsAPISocket: %s\n  podLogsDir: %s\n",
		in.K.HealthzURL(), in.K.MetricsURL(), kc, in.K.ServingCert, containerd.Unit, in.C.Socket, in.SD.Socket(), in.K.RootDir(),
		filepath.Join(in.K.RootDir(), "pods-api", "pods-api.sock"), filepath.Join(in.K.Dir, "logs"))
	if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	in.daemon = hangwatch.StartRepairing(t, in.C.Endpoint, hangwatch.NodeArgs(kc, in.A, "--config", config)...)
	in.remedy = hangwatch.StartRemedy(t, hangwatch.RemedyIdentity(t, in.CP), FencePolicy(t, nil), "hangwatch-remedy")
}

// relTo is path relative to dir: kustomize takes no absolute root.
func relTo(t *testing.T, dir, path string) string {
	t.Helper()
	rel, err := filepath.Rel(dir, path)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}
