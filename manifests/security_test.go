package manifests

import (
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/hangwatch/hangwatch/test/harness"
)

// privilegeTableHeading opens the table in docs/security.md that names
// every container's privileges, one row each.
const privilegeTableHeading = "### Every container's privileges"

// podSource is one place a container is installed from: a kustomize
// overlay (a directory) or a plain manifest (a .yaml file), and the Helm
// values that make the chart install the same (chart false: the chart
// has no such workload).
type podSource struct {
	manifest string
	chart    bool
	values   []string
}

// securedContainers are the containers of docs/security.md's table, each
// with the workload (Kind/name, the same in the overlays and the chart)
// and every place it is installed from.
var securedContainers = []struct {
	name, workload string
	sources        []podSource
}{
	{"agent (DaemonSet)", "DaemonSet/hangwatch", []podSource{
		{"overlays/daemonset", true, nil},
		{"overlays/repair", true, []string{"repair.enabled=true"}},
		{"overlays/fence", true, []string{"repair.enabled=true", "repair.fence.enabled=true"}},
	}},
	{"agent (static pod)", "Pod/hangwatch", []podSource{{"static-pod/hangwatch.yaml", false, nil}}},
	{"repair", "DaemonSet/hangwatch-repair", []podSource{
		{"overlays/repair", true, []string{"repair.enabled=true"}},
	}},
	{"repair with the fence", "DaemonSet/hangwatch-repair", []podSource{
		{"overlays/fence", true, []string{"repair.enabled=true", "repair.fence.enabled=true"}},
	}},
	{"remedy", "Deployment/hangwatch-remedy", []podSource{
		{"overlays/remedy", true, []string{"remedy.enabled=true"}},
	}},
}

// TestSecurityTableMatchesTheManifests keeps docs/security.md's table of
// privileges and the manifests in step: every privilege a container is
// granted by a kustomize overlay, the static pod or the chart (user,
// capabilities, privileged, host namespaces, each hostPath mount, the
// AppArmor, SELinux and seccomp it runs under, a service account token)
// is a row of the table, and every row's privilege is granted by one of
// the container's overlays; the chart grants each container exactly what
// the matching overlay grants. It also fails on a workload with a pod
// that the table does not cover.
func TestSecurityTableMatchesTheManifests(t *testing.T) {
	table := readPrivilegeTable(t)
	covered := map[string]bool{}
	for _, c := range securedContainers {
		rows := table[c.name]
		if len(rows) == 0 {
			t.Errorf("docs/security.md: the table has no rows for %s", c.name)
		}
		granted := map[string]string{} // privilege -> the first manifest granting it
		for _, src := range c.sources {
			covered[src.manifest+" "+c.workload] = true
			got := privilegesIn(t, src.manifest, renderManifest(t, src.manifest), c.workload)
			for _, p := range got {
				if _, ok := granted[p]; !ok {
					granted[p] = src.manifest
				}
				if !slices.Contains(rows, p) {
					t.Errorf("%s: %s is granted %q, which docs/security.md's table does not list", src.manifest, c.name, p)
				}
			}
			if src.chart {
				checkChartGrantsTheSame(t, c.name, c.workload, src, got)
			}
		}
		for _, p := range rows {
			if _, ok := granted[p]; !ok {
				t.Errorf("docs/security.md: the table lists %q for %s, which none of %v grants", p, c.name, manifestsOf(c.sources))
			}
		}
	}
	for _, m := range []string{"overlays/daemonset", "overlays/repair", "overlays/fence", "overlays/remedy", "static-pod/hangwatch.yaml"} {
		for key, obj := range renderManifest(t, m) {
			if podSpecOf(obj) != nil && !covered[m+" "+key] {
				t.Errorf("%s: %s runs a pod that docs/security.md's table does not cover (securedContainers)", m, key)
			}
		}
	}
}

// checkChartGrantsTheSame renders the chart with src's values and
// compares the container's privileges with the overlay's.
func checkChartGrantsTheSame(t *testing.T, name, workload string, src podSource, want []string) {
	t.Helper()
	args := []string{"--set", "secureServing.generateCert=false"}
	for _, v := range src.values {
		args = append(args, "--set", v)
	}
	got := privilegesIn(t, "the chart with "+strings.Join(src.values, ","), renderHelmChart(t, "hangwatch", args...), workload)
	for _, p := range got {
		if !slices.Contains(want, p) {
			t.Errorf("the chart (values %v) grants %s %q, which %s does not", src.values, name, p, src.manifest)
		}
	}
	for _, p := range want {
		if !slices.Contains(got, p) {
			t.Errorf("the chart (values %v) does not grant %s %q, which %s does", src.values, name, p, src.manifest)
		}
	}
}

func manifestsOf(srcs []podSource) []string {
	var out []string
	for _, s := range srcs {
		out = append(out, s.manifest)
	}
	return out
}

// readPrivilegeTable parses the table under privilegeTableHeading:
// | container | privilege | why | without it |, the privilege a code span,
// a blank container cell meaning the row above's container.
func readPrivilegeTable(t *testing.T) map[string][]string {
	t.Helper()
	doc := string(mustRead(t, "../docs/security.md"))
	_, after, ok := strings.Cut(doc, "\n"+privilegeTableHeading+"\n")
	if !ok {
		t.Fatalf("docs/security.md has no heading %q", privilegeTableHeading)
	}
	rows := map[string][]string{}
	container, inTable := "", false
	for i, line := range strings.Split(after, "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if !inTable || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") {
			inTable = true // the header row and the separator
			continue
		}
		if len(cells) != 4 {
			t.Fatalf("docs/security.md, table row %d: %d cells, want 4 (container, privilege, why, without it): %s", i, len(cells), line)
		}
		if c := strings.TrimSpace(cells[0]); c != "" {
			container = c
		}
		_, code, ok := strings.Cut(cells[1], "`")
		privilege, _, closed := strings.Cut(code, "`")
		if !ok || !closed || container == "" || strings.TrimSpace(cells[2]) == "" || strings.TrimSpace(cells[3]) == "" {
			t.Fatalf("docs/security.md, table row %d: want a container, the privilege as a code span, why and what breaks without it: %s", i, line)
		}
		if slices.Contains(rows[container], privilege) {
			t.Errorf("docs/security.md: %s lists %q twice", container, privilege)
		}
		rows[container] = append(rows[container], privilege)
	}
	return rows
}

// renderManifest renders a kustomize overlay with kubectl kustomize, or
// reads a plain manifest, and returns its objects by Kind/name.
func renderManifest(t *testing.T, manifest string) map[string]map[string]any {
	t.Helper()
	var out []byte
	if strings.HasSuffix(manifest, ".yaml") {
		out = mustRead(t, manifest)
	} else {
		kubectl := toolOrSkip(t, func() (string, error) { return harness.KubeBinary("kubectl") })
		var stderr bytes.Buffer
		cmd := exec.Command(kubectl, "kustomize", manifest)
		cmd.Stderr = &stderr
		var err error
		if out, err = cmd.Output(); err != nil {
			t.Fatalf("kubectl kustomize %s: %v\n%s", manifest, err, stderr.String())
		}
	}
	return objectsByName(t, out)
}

// podSpecOf is the pod spec of a Pod or of a workload's template, or nil.
func podSpecOf(obj map[string]any) map[string]any {
	if obj["kind"] == "Pod" {
		spec, _ := obj["spec"].(map[string]any)
		return spec
	}
	spec, _ := dig(obj, "spec", "template", "spec").(map[string]any)
	return spec
}

// privilegesIn lists the privileges of workload's one container in objs,
// named as the table names them.
func privilegesIn(t *testing.T, where string, objs map[string]map[string]any, workload string) []string {
	t.Helper()
	spec := podSpecOf(objs[workload])
	if spec == nil {
		t.Fatalf("%s: no %s", where, workload)
	}
	containers, _ := spec["containers"].([]any)
	if len(containers) != 1 || spec["initContainers"] != nil || spec["ephemeralContainers"] != nil {
		t.Fatalf("%s: %s has %d containers and init containers %v: the table names one container per workload", where, workload, len(containers), spec["initContainers"])
	}
	return containerPrivileges(spec, containers[0].(map[string]any))
}

// containerPrivileges names what a container may do beyond an ordinary
// pod's container, and the user and security modules it runs under, as
// the runtime applies them: a privileged container runs with no AppArmor
// profile, as SELinux spc_t (unless a type is given) and with no seccomp
// filter, whatever its securityContext says (containerd's and CRI-O's
// CRI, docs/security.md).
func containerPrivileges(spec, c map[string]any) []string {
	sc, _ := c["securityContext"].(map[string]any)
	pod, _ := spec["securityContext"].(map[string]any)
	field := func(path ...string) any {
		if v := dig(sc, path...); v != nil {
			return v
		}
		return dig(pod, path...)
	}
	privileged := dig(sc, "privileged") == true
	var out []string
	if uid := field("runAsUser"); uid != nil {
		out = append(out, fmt.Sprintf("user %v", uid))
	} else {
		out = append(out, "user image's") // whatever the image says
	}
	for _, capability := range asStrings(dig(sc, "capabilities", "add")) {
		out = append(out, "capability "+capability)
	}
	if privileged {
		out = append(out, "privileged")
	}
	if dig(sc, "allowPrivilegeEscalation") != false {
		out = append(out, "allowPrivilegeEscalation")
	}
	for _, ns := range []string{"hostPID", "hostNetwork", "hostIPC"} {
		if spec[ns] == true {
			out = append(out, ns)
		}
	}
	out = append(out, hostPathMounts(spec, c)...)
	out = append(out, lsmPrivileges(field, privileged)...)
	if spec["serviceAccountName"] != nil && spec["automountServiceAccountToken"] != false {
		out = append(out, "service account token")
	}
	return out
}

// lsmPrivileges names the AppArmor profile, SELinux type and seccomp
// profile the container runs under.
func lsmPrivileges(field func(...string) any, privileged bool) []string {
	apparmor, selinux, seccomp := "default", "default", "unset"
	if v := field("appArmorProfile", "type"); v != nil {
		apparmor = fmt.Sprint(v)
	}
	if v := field("seLinuxOptions", "type"); v != nil {
		selinux = fmt.Sprint(v)
	}
	if v := field("seccompProfile", "type"); v != nil {
		seccomp = fmt.Sprint(v)
	}
	if privileged {
		apparmor, seccomp = "Unconfined", "Unconfined"
		if selinux == "default" {
			selinux = "spc_t"
		}
	}
	return []string{"AppArmor " + apparmor, "SELinux " + selinux, "seccomp " + seccomp}
}

// hostPathMounts names each mount of a hostPath volume: its host path,
// ro or rw, and Bidirectional where the container's mounts reach the
// host.
func hostPathMounts(spec, c map[string]any) []string {
	paths := map[string]string{}
	for _, v := range asMaps(spec["volumes"]) {
		if p, ok := dig(v, "hostPath", "path").(string); ok {
			paths[v["name"].(string)] = p
		}
	}
	var out []string
	for _, m := range asMaps(c["volumeMounts"]) {
		p, ok := paths[m["name"].(string)]
		if !ok {
			continue
		}
		mode := "rw"
		if m["readOnly"] == true {
			mode = "ro"
		}
		s := "hostPath " + p + " " + mode
		if m["mountPropagation"] == "Bidirectional" {
			s += " Bidirectional"
		}
		out = append(out, s)
	}
	return out
}

func asStrings(v any) []string {
	var out []string
	for _, x := range asSlice(v) {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func asMaps(v any) []map[string]any {
	var out []map[string]any
	for _, x := range asSlice(v) {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// TestSecurityTableDerivesPrivileges pins how a pod spec's fields become
// the table's privileges: a privileged container's security modules are
// what the runtime gives it, not what its securityContext says.
func TestSecurityTableDerivesPrivileges(t *testing.T) {
	var spec map[string]any
	mustUnmarshal(t, []byte(`
serviceAccountName: sa
hostPID: true
volumes:
- {name: a, hostPath: {path: /run/a}}
- {name: b, hostPath: {path: /var/lib/b}}
- {name: c, configMap: {name: c}}
containers:
- name: x
  securityContext:
    runAsUser: 0
    privileged: true
    capabilities: {add: [SYS_PTRACE]}
    seccompProfile: {type: RuntimeDefault}
  volumeMounts:
  - {name: a, mountPath: /run/a, readOnly: true}
  - {name: b, mountPath: /var/lib/b, mountPropagation: Bidirectional}
  - {name: c, mountPath: /etc/c}
`), &spec)
	got := containerPrivileges(spec, asMaps(spec["containers"])[0])
	want := []string{"user 0", "capability SYS_PTRACE", "privileged", "allowPrivilegeEscalation", "hostPID",
		"hostPath /run/a ro", "hostPath /var/lib/b rw Bidirectional",
		"AppArmor Unconfined", "SELinux spc_t", "seccomp Unconfined", "service account token"}
	if !slices.Equal(got, want) {
		t.Errorf("privileges\n got %q\nwant %q", got, want)
	}
}
