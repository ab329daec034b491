package manifests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/kernellog"
	"github.com/hangwatch/hangwatch/options"
	"github.com/hangwatch/hangwatch/test/harness"
)

const chartDir = "helm/hangwatch"

// TestHelmChartLints runs helm lint --strict with the default values and
// with every optional object on.
func TestHelmChartLints(t *testing.T) {
	helm := helmOrSkip(t)
	for _, extra := range [][]string{nil, harness.HelmMonitorsOn} {
		args := append([]string{"lint", "--strict", "--namespace", "kube-system", chartDir}, extra...)
		out, err := exec.Command(helm, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("helm %s:\n%s", strings.Join(args, " "), out)
	}
}

// TestHelmChartMatchesKustomize renders the chart and checks that it
// installs what the kustomize DaemonSet overlay installs: the same pod
// security, volumes, resources and arguments, the same configuration, the
// same RBAC rules and the same alerts, so that the two cannot drift.
func TestHelmChartMatchesKustomize(t *testing.T) {
	// Without the generated certificate, which kustomize cannot make
	// (TestHelmChartGeneratesAServingCertificate checks what it adds).
	objs := renderHelmChart(t, "hangwatch", append(harness.HelmMonitorsOn, "--set", "secureServing.generateCert=false")...)
	ds := objs["DaemonSet/hangwatch"]
	want := readObject(t, "overlays/daemonset/daemonset.yaml")
	for _, path := range [][]string{
		{"spec", "template", "spec", "containers"},
		{"spec", "template", "spec", "volumes"},
		{"spec", "template", "spec", "tolerations"},
		{"spec", "template", "spec", "hostNetwork"},
		{"spec", "template", "spec", "priorityClassName"},
		{"spec", "updateStrategy"},
	} {
		got, exp := dig(ds, path...), dig(want, path...)
		if !reflect.DeepEqual(got, exp) {
			t.Errorf("DaemonSet %s differs from the overlay's:\nchart: %v\nkustomize: %v", strings.Join(path, "."), got, exp)
		}
	}
	var gotConfig, wantConfig any
	mustUnmarshal(t, []byte(dig(objs["ConfigMap/hangwatch-config"], "data", "config.yaml").(string)), &gotConfig)
	mustUnmarshal(t, mustRead(t, "overlays/daemonset/config.yaml"), &wantConfig)
	if !reflect.DeepEqual(gotConfig, wantConfig) {
		t.Errorf("the chart's config.yaml differs from the overlay's:\nchart: %v\nkustomize: %v", gotConfig, wantConfig)
	}
	wantRules := append(dig(readObject(t, "overlays/daemonset/rbac.yaml"), "rules").([]any),
		dig(readObject(t, "base/clusterrole-kubelet-metrics.yaml"), "rules").([]any)...)
	if got := dig(objs["ClusterRole/hangwatch"], "rules"); !reflect.DeepEqual(got, wantRules) {
		t.Errorf("the chart's ClusterRole rules differ from the overlay's:\nchart: %v\nkustomize: %v", got, wantRules)
	}
	if got, exp := dig(objs["PrometheusRule/hangwatch"], "spec"), dig(readObject(t, "prometheus/prometheusrule.yaml"), "spec"); !reflect.DeepEqual(got, exp) {
		t.Errorf("the chart's files/alerts.yaml differs from prometheus/prometheusrule.yaml's spec: copy the spec over")
	}
	if got, exp := dig(objs["ValidatingAdmissionPolicy/hangwatch-own-node-only"], "spec"),
		dig(readObject(t, "overlays/daemonset/admission-policy.yaml"), "spec"); !reflect.DeepEqual(got, exp) {
		t.Errorf("the chart's admission policy differs from the overlay's:\nchart: %v\nkustomize: %v", got, exp)
	}
	for _, kind := range []string{"ServiceAccount/hangwatch",
		"ValidatingAdmissionPolicyBinding/hangwatch-own-node-only", "Role/hangwatch:events", "Role/hangwatch:node-lease",
		"PodMonitor/hangwatch"} {
		if objs[kind] == nil {
			t.Errorf("the chart renders no %s", kind)
		}
	}
}

// TestHelmChartPolicyNamesItsServiceAccount checks that the admission
// policy follows the release's name and namespace.
func TestHelmChartPolicyNamesItsServiceAccount(t *testing.T) {
	objs := renderHelmChart(t, "hw")
	vap := objs["ValidatingAdmissionPolicy/hw-own-node-only"]
	got := dig(vap, "spec", "matchConditions").([]any)[0].(map[string]any)["expression"]
	if want := `request.userInfo.username == "system:serviceaccount:kube-system:hw"`; got != want {
		t.Errorf("policy matches %q, want %q", got, want)
	}
	if objs["PodMonitor/hw"] != nil || objs["PrometheusRule/hw"] != nil {
		t.Error("prometheus-operator objects rendered although off by default")
	}
}

// TestHelmChartRefusesToRenderWithoutThePolicy: turning the admission
// policy off must be said twice, since it leaves every Node's status open
// to a stolen token.
func TestHelmChartRefusesToRenderWithoutThePolicy(t *testing.T) {
	helmOrSkip(t)
	_, err := harness.HelmTemplate("hangwatch", "--set", "admissionPolicy.enabled=false")
	if err == nil || !strings.Contains(err.Error(), "admissionPolicy.acceptAnyNodeStatusWrites=true") {
		t.Fatalf("rendering without the policy: %v; want a refusal naming admissionPolicy.acceptAnyNodeStatusWrites", err)
	}
	objs := renderHelmChart(t, "hangwatch", "--set", "admissionPolicy.enabled=false", "--set", "admissionPolicy.acceptAnyNodeStatusWrites=true")
	if objs["ValidatingAdmissionPolicy/hangwatch-own-node-only"] != nil || objs["DaemonSet/hangwatch"] == nil {
		t.Errorf("with the policy off and accepted: policy %v, DaemonSet rendered %v",
			objs["ValidatingAdmissionPolicy/hangwatch-own-node-only"] != nil, objs["DaemonSet/hangwatch"] != nil)
	}
}

// renderHelmChart runs helm template for a release in kube-system and
// returns its objects by Kind/name.
func renderHelmChart(t *testing.T, release string, extra ...string) map[string]map[string]any {
	t.Helper()
	helmOrSkip(t)
	out, err := harness.HelmTemplate(release, extra...)
	if err != nil {
		t.Fatal(err)
	}
	return objectsByName(t, out)
}

func helmOrSkip(t *testing.T) string {
	t.Helper()
	return toolOrSkip(t, harness.Helm)
}

// readObject reads the first object of a YAML file.
func readObject(t *testing.T, path string) map[string]any {
	t.Helper()
	var o map[string]any
	mustUnmarshal(t, mustRead(t, path), &o)
	return o
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.FromSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustUnmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
}

// dig returns the value at path in a decoded YAML object, or nil.
func dig(o any, path ...string) any {
	for _, k := range path {
		m, ok := o.(map[string]any)
		if !ok {
			return nil
		}
		o = m[k]
	}
	return o
}

// TestHelmChartCanLeaveConfigChangesToTheReload: by default a changed
// config rolls the pods (a checksum annotation); rollOnConfigChange=false
// leaves them, and hangwatch reloads the rules from the ConfigMap.
func TestHelmChartCanLeaveConfigChangesToTheReload(t *testing.T) {
	annotations := func(objs map[string]map[string]any) any {
		return dig(objs["DaemonSet/hangwatch"], "spec", "template", "metadata", "annotations")
	}
	if a, _ := annotations(renderHelmChart(t, "hangwatch")).(map[string]any); a["checksum/config"] == nil {
		t.Errorf("default pod annotations %v, want checksum/config", a)
	}
	if a, _ := annotations(renderHelmChart(t, "hangwatch", "--set", "rollOnConfigChange=false")).(map[string]any); a["checksum/config"] != nil {
		t.Errorf("rollOnConfigChange=false: pod annotations %v, want no checksum/config", a)
	}
}

// TestHelmRemedyMatchesKustomize: with remedy.enabled the chart installs
// what manifests/overlays/remedy does: the same ClusterRole rules, the
// same admission policy (for the chart's ServiceAccount), the same policy
// file and the same pod security.
func TestHelmRemedyMatchesKustomize(t *testing.T) {
	objs := renderHelmChart(t, "hw", "--set", "remedy.enabled=true")
	if len(renderHelmChart(t, "hw")) >= len(objs) {
		t.Fatal("remedy.enabled=true renders nothing more")
	}
	chartPod, overlayPod := objs["Deployment/hw-remedy"], readObject(t, "overlays/remedy/deployment.yaml")
	if got, exp := dig(containerOf(chartPod), "securityContext"), dig(containerOf(overlayPod), "securityContext"); !reflect.DeepEqual(got, exp) {
		t.Errorf("the chart's remedy securityContext differs from the overlay's:\nchart: %v\nkustomize: %v", got, exp)
	}
	if got, exp := dig(chartPod, "spec", "template", "spec", "securityContext"), dig(overlayPod, "spec", "template", "spec", "securityContext"); !reflect.DeepEqual(got, exp) {
		t.Errorf("the chart's remedy pod securityContext differs from the overlay's:\nchart: %v\nkustomize: %v", got, exp)
	}
	if got, exp := dig(objs["ClusterRole/hw-remedy"], "rules"), dig(readObject(t, "overlays/remedy/rbac.yaml"), "rules"); !reflect.DeepEqual(got, exp) {
		t.Errorf("the chart's remedy ClusterRole rules differ from the overlay's:\nchart: %v\nkustomize: %v", got, exp)
	}
	policy := strings.ReplaceAll(string(mustRead(t, "overlays/remedy/admission-policy.yaml")),
		"system:serviceaccount:kube-system:hangwatch-remedy", "system:serviceaccount:kube-system:hw-remedy")
	var want map[string]any
	mustUnmarshal(t, []byte(strings.Split(policy, "\n---\n")[0]), &want)
	if got := dig(objs["ValidatingAdmissionPolicy/hw-remedy-taints-only"], "spec"); !reflect.DeepEqual(got, want["spec"]) {
		t.Errorf("the chart's remedy admission policy differs from the overlay's:\nchart: %v\nkustomize: %v", got, want["spec"])
	}
	var gotConfig, wantConfig map[string]any
	mustUnmarshal(t, []byte(dig(objs["ConfigMap/hw-remedy-config"], "data", "config.yaml").(string)), &gotConfig)
	mustUnmarshal(t, mustRead(t, "overlays/remedy/config.yaml"), &wantConfig)
	if !reflect.DeepEqual(gotConfig, wantConfig) {
		t.Errorf("the chart's remedy policy differs from the overlay's:\nchart: %v\nkustomize: %v", gotConfig, wantConfig)
	}
}

// TestHelmChartRepairMatchesTheOverlay: repair.enabled adds what the repair
// overlay adds: to the agent only the link's directory, and a repair
// DaemonSet of its own with the host privileges, no port and no token;
// the same repair settings; and nothing at all when off.
func TestHelmChartRepairMatchesTheOverlay(t *testing.T) {
	objs := renderHelmChart(t, "hangwatch", "--set", "repair.enabled=true", "--set", "secureServing.generateCert=false")
	ds, patch := objs["DaemonSet/hangwatch"], readObject(t, "overlays/repair/daemonset-patch.yaml")
	checkAgentKeepsNoHostPrivilege(t, "the chart's agent", ds)
	checkAgentKeepsNoHostPrivilege(t, "the overlay's agent patch", patch)
	for _, path := range [][]string{{"volumes"}, {"containers"}} {
		want := dig(patch, append([]string{"spec", "template", "spec"}, path...)...).([]any)
		got := dig(ds, append([]string{"spec", "template", "spec"}, path...)...).([]any)
		if path[0] == "containers" {
			want = dig(want[0].(map[string]any), "volumeMounts").([]any)
			got = dig(got[0].(map[string]any), "volumeMounts").([]any)
		}
		if !containsAll(got, want) {
			t.Errorf("the chart's %s lack the overlay's %v:\n%v", path[0], want, got)
		}
	}
	var overlayRepair map[string]any
	mustUnmarshal(t, []byte(strings.Split(string(mustRead(t, "overlays/repair/repair-daemonset.yaml")), "\n---\n")[1]), &overlayRepair)
	chartRepair := objs["DaemonSet/hangwatch-repair"]
	for _, what := range []struct {
		name string
		obj  map[string]any
	}{{"the chart's", chartRepair}, {"the overlay's", overlayRepair}} {
		checkRepairPodIsPrivilegedAndDeaf(t, what.name, what.obj)
	}
	for _, path := range [][]string{{"securityContext"}, {"args"}, {"volumeMounts"}} {
		want := dig(containerOf(overlayRepair), path...)
		if got := dig(containerOf(chartRepair), path...); !reflect.DeepEqual(got, want) {
			t.Errorf("the chart's repair container %s differs from the overlay's:\nchart: %v\nkustomize: %v", path[0], got, want)
		}
	}
	var gotConfig, wantConfig map[string]any
	mustUnmarshal(t, []byte(dig(objs["ConfigMap/hangwatch-config"], "data", "config.yaml").(string)), &gotConfig)
	mustUnmarshal(t, mustRead(t, "overlays/repair/config.yaml"), &wantConfig)
	if !reflect.DeepEqual(gotConfig, wantConfig) {
		t.Errorf("the chart's config.yaml with repair on differs from the repair overlay's:\nchart: %v\nkustomize: %v", gotConfig, wantConfig)
	}
	offObjs := renderHelmChart(t, "hangwatch")
	if off := offObjs["DaemonSet/hangwatch"]; strings.Contains(fmt.Sprint(off), "repair") {
		t.Error("with repair off the agent's DaemonSet still mounts the repair link")
	}
	if _, ok := offObjs["DaemonSet/hangwatch-repair"]; ok {
		t.Error("with repair off the chart still makes the repair DaemonSet")
	}
}

// checkAgentKeepsNoHostPrivilege: the agent, which serves HTTPS, has
// neither hostPID nor systemd's socket.
func checkAgentKeepsNoHostPrivilege(t *testing.T, name string, ds map[string]any) {
	t.Helper()
	if got := dig(ds, "spec", "template", "spec", "hostPID"); got != nil {
		t.Errorf("%s has hostPID = %v", name, got)
	}
	if strings.Contains(fmt.Sprint(ds), "systemd") {
		t.Errorf("%s mounts systemd's directory", name)
	}
}

// checkRepairPodIsPrivilegedAndDeaf: the repair pod has what it needs to
// kill (hostPID, systemd's socket), and no port, no probe and no token.
func checkRepairPodIsPrivilegedAndDeaf(t *testing.T, name string, ds map[string]any) {
	t.Helper()
	spec := dig(ds, "spec", "template", "spec").(map[string]any)
	if spec["hostPID"] != true || spec["automountServiceAccountToken"] != false {
		t.Errorf("%s repair pod: hostPID %v, automountServiceAccountToken %v; want true and false", name, spec["hostPID"], spec["automountServiceAccountToken"])
	}
	c := containerOf(ds)
	for _, key := range []string{"ports", "livenessProbe", "readinessProbe"} {
		if c[key] != nil {
			t.Errorf("%s repair container has %s: %v", name, key, c[key])
		}
	}
	if !strings.Contains(fmt.Sprint(c["volumeMounts"]), "/run/systemd") {
		t.Errorf("%s repair container lacks systemd's directory", name)
	}
}

func containerOf(ds map[string]any) map[string]any {
	cs, _ := dig(ds, "spec", "template", "spec", "containers").([]any)
	if len(cs) == 0 {
		return map[string]any{}
	}
	return cs[0].(map[string]any)
}

func containsAll(got, want []any) bool {
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || reflect.DeepEqual(g, w)
		}
		if !found {
			return false
		}
	}
	return true
}

// TestHelmChartFenceMatchesTheOverlay: repair.fence.enabled adds what the
// fence overlay adds: the repair container privileged with the cgroup
// file system and the kubelet's directory (Bidirectional), the agent's
// fence ClusterRole, and the same config; nothing when off.
func TestHelmChartFenceMatchesTheOverlay(t *testing.T) {
	objs := renderHelmChart(t, "hangwatch", "--set", "repair.enabled=true", "--set", "repair.fence.enabled=true",
		"--set", "secureServing.generateCert=false")
	var patch map[string]any
	mustUnmarshal(t, mustRead(t, "overlays/fence/fence-patch.yaml"), &patch)
	want, got := containerOf(patch), containerOf(objs["DaemonSet/hangwatch-repair"])
	for key, v := range want["securityContext"].(map[string]any) {
		if g := dig(got, "securityContext", key); !reflect.DeepEqual(g, v) {
			t.Errorf("the chart's fence securityContext.%s = %v, the overlay's %v", key, g, v)
		}
	}
	for _, m := range want["volumeMounts"].([]any) {
		if !slices.ContainsFunc(got["volumeMounts"].([]any), func(g any) bool { return reflect.DeepEqual(g, m) }) {
			t.Errorf("the chart's repair container lacks the overlay's mount %v", m)
		}
	}
	if g, w := dig(objs["ClusterRole/hangwatch:fence"], "rules"), dig(readObject(t, "overlays/fence/rbac-fence.yaml"), "rules"); !reflect.DeepEqual(g, w) {
		t.Errorf("the chart's fence ClusterRole rules %v, the overlay's %v", g, w)
	}
	var gotConfig, wantConfig map[string]any
	mustUnmarshal(t, []byte(dig(objs["ConfigMap/hangwatch-config"], "data", "config.yaml").(string)), &gotConfig)
	mustUnmarshal(t, mustRead(t, "overlays/fence/config.yaml"), &wantConfig)
	if !reflect.DeepEqual(gotConfig, wantConfig) {
		t.Errorf("the chart's config.yaml with the fence on differs from the fence overlay's:\nchart: %v\nkustomize: %v", gotConfig, wantConfig)
	}
	off := renderHelmChart(t, "hangwatch", "--set", "repair.enabled=true", "--set", "secureServing.generateCert=false")
	if off["ClusterRole/hangwatch:fence"] != nil || dig(containerOf(off["DaemonSet/hangwatch-repair"]), "securityContext", "privileged") != false {
		t.Error("with the fence off the chart still grants it or makes the repair pod privileged")
	}
}

// objectsByName are the objects of a multi-document YAML by kind/name.
func objectsByName(t *testing.T, out []byte) map[string]map[string]any {
	t.Helper()
	objs := map[string]map[string]any{}
	for _, doc := range strings.Split(string(out), "\n---") {
		var o map[string]any
		mustUnmarshal(t, []byte(doc), &o)
		if o != nil {
			objs[o["kind"].(string)+"/"+dig(o, "metadata", "name").(string)] = o
		}
	}
	return objs
}

// TestHelmChartGPUSwitch: gpu.enabled loads the GPU rule pack, and the
// chart's configuration stays one that `hangwatch config check` accepts,
// the pack's rules with it.
func TestHelmChartGPUSwitch(t *testing.T) {
	on := renderHelmChart(t, "hangwatch", "--set", "gpu.enabled=true")
	raw := dig(on["ConfigMap/hangwatch-config"], "data", "config.yaml").(string)
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	config.AddFlags(fs, config.Default())
	loaded, err := (&config.Loader{Named: "the chart's config.yaml", Flags: fs}).LoadBytes([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if got := loaded.Kernel.RulePacks; !slices.Equal(got, []string{"gpu"}) {
		t.Errorf("kernel.rulePacks = %v, want [gpu]", got)
	}
	// the GPU inventory: its file in the one directory the agent may write
	const inventory = "/var/lib/hangwatch/gpu/gpus.json"
	if got := loaded.Kernel.GPUInventoryFile; got != inventory {
		t.Errorf("kernel.gpuInventoryFile = %q, want %q", got, inventory)
	}
	spec := dig(on["DaemonSet/hangwatch"], "spec", "template", "spec").(map[string]any)
	mounts := hostPathMounts(spec, spec["containers"].([]any)[0].(map[string]any))
	if !slices.Contains(mounts, "hostPath /var/lib/hangwatch/gpu rw") {
		t.Errorf("the agent's hostPath mounts with gpu.enabled: %v, want /var/lib/hangwatch/gpu read-write", mounts)
	}
	sets, err := options.RuleSets(loaded.Kernel)
	if err != nil {
		t.Fatal(err)
	}
	var kernelTypes []kernellog.ConditionSpec
	for _, set := range sets {
		kernelTypes = append(kernelTypes, set.Conditions...)
	}
	if err := options.CheckRules(loaded.Configuration, kernelTypes); err != nil {
		t.Error(err)
	}
	off := dig(renderHelmChart(t, "hangwatch")["ConfigMap/hangwatch-config"], "data", "config.yaml").(string)
	if strings.Contains(off, "rulePacks") || strings.Contains(off, "gpuInventoryFile") {
		t.Errorf("the default chart loads a rule pack:\n%s", off)
	}
}
