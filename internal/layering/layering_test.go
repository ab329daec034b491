// Package layering holds the test that keeps hangwatch's imports flowing
// one way: signals -> observations -> conditions -> nodestatus -> Node.
package layering

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/hangwatch/hangwatch/"

// layers are the module's packages, lowest first. A package depends only
// on packages of lower layers (or of its own tree, such as cri/sub on
// cri), never on one of its own layer or above, but for the named
// exceptions; open layers (the tests and tools) may use each other. A
// name ending in "/" is every package under it.
var layers = []layer{
	{name: "leaves", pkgs: []string{"internal/", "observations"},
		why: "a leaf imports nothing of the module: observations is what the signals fill and the rules read, internal/ holds helpers"},
	{name: "mechanisms", pkgs: []string{"apiclient", "httpauth", "nodelink"},
		why: "a mechanism (the API client's transport, the secure port's authentication, the node link's wire) knows nothing of what uses it"},
	{name: "the data path", pkgs: []string{"cri", "pleg", "kubeletmetrics", "leases", "kernellog", "gpus", "podstarts", "conditions", "nodestatus", "repair", "fence", "remedy"},
		why: "signals fill observations, conditions judges them, nodestatus writes what it judged, repair, the fence and remedy act on conditions: none of them imports another (but the named pairs), and none reads the configuration"},
	{name: "configuration", pkgs: []string{"config"},
		why: "config is the types, their checks and their defaults"},
	{name: "options", pkgs: []string{"options"},
		why: "options turns the configuration into each package's options, for the assemblies"},
	{name: "assemblies", pkgs: []string{"agent", "diag", "remedy/manager", "repair/daemon"},
		why: "an assembly wires the packages for one command; assemblies do not import each other"},
	{name: "tests and tools", pkgs: []string{"test/", "hack/", "manifests", "docs"}, open: true,
		why: "the tests and tools use what they test, never a command"},
	{name: "commands", pkgs: []string{"cmd/"},
		why: "nothing imports a command"},
}

// exceptions allow or forbid a dependency the layers alone would not.
var exceptions = []exception{
	{pkg: "pleg", dep: "cri", allow: true, why: "pleg emulates the kubelet's relist through the CRI"},
	{pkg: "pleg", dep: "kubeletmetrics", allow: true, why: "pleg reads the kubelet's relist metrics"},
	{pkg: "nodestatus", dep: "conditions", allow: true, why: "nodestatus writes the conditions conditions publishes"},
	{pkg: "config", dep: "kernellog", why: "the kernel rules files are read by the assemblies, not by config"},
	{pkg: "remedy/manager", deps: nodeSide, why: "the cluster side reads Nodes, not the node agent's packages"},
	{pkg: "cmd/hangwatch-remedy", deps: nodeSide, why: "the cluster side reads Nodes, not the node agent's packages: it restarts and fences nothing"},
	{pkg: "!remedy/manager", dep: "remedy", below: "commands", why: "only hangwatch-remedy's assembly and command import the remedy controller"},
	{pkg: "cmd/hangwatch", dep: "remedy", why: "the node agent does not link the cluster-side controller"},
	{pkg: "test/", dep: "agent", why: "only the command imports the agent's assembly"},
	{pkg: "test/", dep: "diag", why: "only the command imports diag's assembly"},
}

// nodeSide are the node agent's packages.
var nodeSide = []string{"cri", "pleg", "kubeletmetrics", "leases", "kernellog", "gpus", "podstarts", "conditions", "nodestatus", "repair", "fence",
	"config", "options", "agent", "diag"}

type layer struct {
	name string
	pkgs []string
	open bool
	why  string
}

// exception is a dependency of pkg on dep (and dep's tree) allowed, or
// forbidden. A pkg of "!P" is every package but P's tree, in a layer below
// the one named below.
type exception struct {
	pkg, dep string
	deps     []string // more than one dep
	below    string
	allow    bool
	why      string
}

// TestImportsFlowOneWay checks every package's whole import graph against
// layers and exceptions, tests left out.
func TestImportsFlowOneWay(t *testing.T) {
	deps := moduleDeps(t)
	for pkg, ds := range deps {
		if layerOf(pkg) < 0 {
			t.Errorf("%s is in no layer: add it to layers", pkg)
		}
		for _, d := range ds {
			if why := forbidden(pkg, d); why != "" {
				t.Errorf("%s imports %s: %s", pkg, d, why)
			}
		}
	}
	if len(deps["pleg"]) == 0 {
		t.Fatalf("no imports read for pleg: %v", deps)
	}
}

// forbidden says why pkg may not depend on dep, or "" when it may.
func forbidden(pkg, dep string) string {
	if sameTree(pkg, dep) {
		return ""
	}
	for _, e := range exceptions {
		if e.matches(pkg, dep) {
			if e.allow {
				return ""
			}
			return e.why
		}
	}
	p, d := layerOf(pkg), layerOf(dep)
	switch {
	case p < 0 || d < 0:
		return "" // TestImportsFlowOneWay names a package in no layer
	case d > p || d == p && !layers[p].open:
		return layers[d].why
	}
	return ""
}

func (e exception) matches(pkg, dep string) bool {
	if !slices.ContainsFunc(append([]string{e.dep}, e.deps...), func(d string) bool { return d != "" && under(dep, d) }) {
		return false
	}
	if not, ok := strings.CutPrefix(e.pkg, "!"); ok {
		return !under(pkg, not) && layerOf(pkg) < layerIndex(e.below)
	}
	return under(pkg, e.pkg)
}

// layerOf is the index of pkg's layer in layers, -1 for none.
func layerOf(pkg string) int {
	at, _ := placed(pkg)
	return at
}

// placed finds the layer and the name in it that hold pkg: the longest
// name decides (remedy/manager is not remedy).
func placed(pkg string) (int, string) {
	at, by := -1, ""
	for i, l := range layers {
		for _, name := range l.pkgs {
			if under(pkg, name) && len(name) > len(by) {
				at, by = i, name
			}
		}
	}
	return at, by
}

// sameTree: one package's tree, such as cri/sub and cri (not two packages
// under one "x/" name, such as internal/a and internal/b).
func sameTree(pkg, dep string) bool {
	_, a := placed(pkg)
	_, b := placed(dep)
	return a != "" && a == b && !strings.HasSuffix(a, "/")
}

func layerIndex(name string) int {
	for i, l := range layers {
		if l.name == name {
			return i
		}
	}
	panic("no layer " + name)
}

// under tells whether pkg is name's package or in its tree ("x/" is only
// the tree).
func under(pkg, name string) bool {
	if strings.HasSuffix(name, "/") {
		return strings.HasPrefix(pkg, name)
	}
	return pkg == name || strings.HasPrefix(pkg, name+"/")
}

// TestTheJudgeLinksNoClientGo: conditions judges and publishes; talking
// to the API server, and its types, are nodestatus's and the agent's.
func TestTheJudgeLinksNoClientGo(t *testing.T) {
	deps := goList(t, `{{join .Deps "\n"}}`, module+"conditions")
	if !slices.Contains(deps, "k8s.io/utils/clock") {
		t.Fatalf("conditions' dependencies read without its clock: %v", deps)
	}
	for _, d := range deps {
		for _, api := range []string{"k8s.io/client-go", "k8s.io/api"} {
			if d == api || strings.HasPrefix(d, api+"/") {
				t.Errorf("conditions depends on %s: the judge links neither client-go nor the API's types", d)
			}
		}
	}
}

// moduleDeps maps each of the module's packages (path inside the module)
// to the module's packages it depends on, directly or not.
func moduleDeps(t *testing.T) map[string][]string {
	t.Helper()
	deps := map[string][]string{}
	for _, line := range goList(t, `{{.ImportPath}} {{join .Deps " "}}`, module+"...") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		deps[pkg] = []string{}
		for _, d := range fields[1:] {
			if rest, ok := strings.CutPrefix(d, module); ok {
				deps[pkg] = append(deps[pkg], rest)
			}
		}
	}
	return deps
}

// goList runs go list with format over pkgs and returns its lines.
func goList(t *testing.T, format string, pkgs ...string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to list imports: %v", err)
	}
	out, err := exec.Command(goTool, append([]string{"list", "-f", format}, pkgs...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

func TestForbiddenNamesEachRule(t *testing.T) {
	for _, c := range []struct {
		pkg, dep string
		ok       bool
	}{
		{"conditions", "cri", false},
		{"conditions", "internal/reason", true},
		{"cri", "conditions", false},
		{"kernellog", "leases", false},
		{"pleg", "cri", true},
		{"pleg", "kubeletmetrics", true},
		{"cri", "pleg", false},
		{"pleg", "kernellog", false},
		{"conditions", "agent", false},
		{"test/integration", "cmd/hangwatch", false},
		{"test/e2e", "cmd/hangwatch", false},
		{"test/harness", "repair", true},
		{"cri/sub", "cri", true},
		{"repair", "conditions", false},
		{"repair", "cri", false},
		{"remedy", "repair", false},
		{"agent", "repair", true},
		{"remedy/manager", "remedy", true},
		{"remedy/manager", "config", false},
		{"remedy/manager", "conditions", false},
		{"remedy", "remedy/manager", false},
		{"cmd/hangwatch", "remedy/manager", false},
		{"agent", "remedy/manager", false},
		{"cmd/hangwatch-remedy", "remedy/manager", true},
		{"cmd/hangwatch-remedy", "remedy", true},
		{"agent", "remedy", false},
		{"agent", "options", true},
		{"cmd/hangwatch", "options", true},
		{"repair/daemon", "options", true},
		{"repair/daemon", "repair", true},
		{"repair", "repair/daemon", false},
		{"agent", "repair/daemon", false},
		{"cmd/hangwatch-remedy", "repair/daemon", false},
		{"conditions", "options", false},
		{"pleg", "options", false},
		{"config", "options", false},
		{"options", "config", true},
		{"internal/cli", "internal/reason", false},
		{"internal/cli", "config", false},
		{"observations", "internal/reason", false},
		{"kernellog", "internal/reason", true},
		{"repair", "fence", false},
		{"fence", "repair", false},
		{"fence", "nodelink", true},
		{"repair", "nodelink", true},
		{"repair/daemon", "fence", true},
		{"agent", "fence", true},
		{"cri", "fence", false},
		{"remedy", "fence", false},
		{"cmd/hangwatch-remedy", "fence", false},
		{"httpauth/httpauthtest", "httpauth", true},
		{"fence", "internal/fencing", true},
		{"fence", "cri", false},
		{"fence", "conditions", false},
		{"nodelink", "fence", false},
		{"test/integration", "test/harness", true},
		{"hack/benchtable", "test/measurements", true},
		{"test/harness", "agent", false},
		{"cmd/hangwatch", "cmd/hangwatch-remedy", false},
		{"config", "kernellog", false},
		{"config", "cri", true},
		{"options", "repair", true},
		{"cri", "repair", false},
		{"cmd/hangwatch", "diag", true},
		{"agent", "diag", false},
		{"diag", "agent", false},
		{"diag", "options", true},
		{"diag", "repair", true},
		{"diag", "remedy", false},
		{"pleg", "diag", false},
		{"conditions", "nodestatus", false},
		{"nodestatus", "conditions", true},
		{"nodestatus", "cri", false},
		{"nodestatus", "config", false},
		{"nodestatus", "agent", false},
		{"nodestatus", "fence", false},
		{"cri", "nodestatus", false},
		{"leases", "nodestatus", false},
		{"repair", "nodestatus", false},
		{"remedy", "nodestatus", false},
		{"agent", "nodestatus", true},
		{"test/integration", "nodestatus", true},
	} {
		if got := forbidden(c.pkg, c.dep) == ""; got != c.ok {
			t.Errorf("%s -> %s allowed = %v, want %v", c.pkg, c.dep, got, c.ok)
		}
	}
}
