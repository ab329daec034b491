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

// signals are the packages that read a signal; each hands the engine
// observations and imports no other signal package but these pairs.
var (
	signals      = []string{"cri", "pleg", "kubeletmetrics", "leases", "kernellog", "podstarts"}
	signalImport = map[string][]string{"pleg": {"cri", "kubeletmetrics"}}
)

// TestImportsFlowOneWay: conditions imports no signal package and not
// nodestatus, which writes what it judges; nodestatus imports no signal
// package; a signal package imports neither conditions, nodestatus nor
// another signal package (but for pleg, which reads cri and
// kubeletmetrics); nothing imports cmd/, only cmd/ imports the assemblies
// agent/ and diag/, only cmd/hangwatch-remedy imports remedy/manager,
// neither conditions, nodestatus nor a signal package imports config/, and
// only the assemblies use internal/options, which builds each package's
// options from config's types;
// observations, which the signals fill and conditions reads, imports
// nothing of the module. Checked on each package's whole import graph,
// tests left out.
func TestImportsFlowOneWay(t *testing.T) {
	deps := moduleDeps(t)
	for pkg, ds := range deps {
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
	switch {
	case top(pkg) == "observations":
		return "observations is the leaf the signals fill and the rules read: it imports nothing of the module"
	case top(dep) == "cmd":
		return "nothing imports the command"
	case top(dep) == "agent" && top(pkg) != "cmd":
		return "only the command imports the agent's assembly"
	case top(dep) == "diag" && top(pkg) != "cmd":
		return "only the command imports diag's assembly"
	case dep == "remedy/manager" && pkg != "cmd/hangwatch-remedy":
		return "only hangwatch-remedy's command imports its assembly"
	case top(dep) == "remedy" && top(pkg) != "cmd" && top(pkg) != "remedy":
		return "only hangwatch-remedy's command and its assembly import the remedy controller"
	case pkg == "cmd/hangwatch" && top(dep) == "remedy":
		return "the node agent does not link the cluster-side controller"
	case top(pkg) == "remedy" && (slices.Contains(signals, top(dep)) || judgeOrWriter(dep) || top(dep) == "config"):
		return "the remedy controller reads Nodes, not the node agent's packages"
	case top(pkg) == "repair" && (slices.Contains(signals, top(dep)) || judgeOrWriter(dep) || top(dep) == "config"):
		return "repair acts on verdicts the agent hands it, not on signals, conditions or the configuration"
	case top(dep) == "repair" && !assembly(pkg) && pkg != "internal/options" && top(pkg) != "config" && top(pkg) != "test":
		return "only the assemblies, the configuration (its defaults) and the translation into repair's settings use repair"
	case dep == "internal/options" && !assembly(pkg):
		return "only the assemblies (agent, diag, the command) translate the configuration into each package's options"
	case top(pkg) == "config" && (dep == "kernellog" || dep == "internal/options"):
		return "config is the types, their checks and defaults: the kernel rules files and each package's options are the assemblies'"
	case top(dep) == "fence" && (top(pkg) == "remedy" || judgeOrWriter(pkg) || slices.Contains(signals, top(pkg)) || pkg == "cmd/hangwatch-remedy"):
		return "only the repair process's fencer (and what assembles it) stops pods through the kernel"
	case top(pkg) == "fence" && top(dep) != "internal":
		return "the fence's kernel mechanics import nothing of the module but internal/"
	case pkg == "cmd/hangwatch-remedy" && top(dep) == "repair":
		return "the cluster-side controller does not restart anything on a node"
	case top(dep) == "config" && (judgeOrWriter(pkg) || slices.Contains(signals, top(pkg))):
		return "the configuration is read by the agent and the command; signal packages, conditions and nodestatus take their own options"
	case top(pkg) == "conditions" && top(dep) == "nodestatus":
		return "the judge publishes to its subscribers; it does not know the Node's status writer"
	case judgeOrWriter(pkg) && slices.Contains(signals, top(dep)):
		return "conditions reads observations, and nodestatus conditions, not signal packages"
	case slices.Contains(signals, top(pkg)) && judgeOrWriter(dep):
		return "a signal package does not import the conditions it feeds, nor their writer"
	case slices.Contains(signals, top(pkg)) && slices.Contains(signals, top(dep)) && top(pkg) != top(dep) &&
		!slices.Contains(signalImport[top(pkg)], top(dep)):
		return "signal packages do not import each other (only pleg reads cri and kubeletmetrics)"
	}
	return ""
}

// assembly reports whether pkg wires the packages together: the agent,
// diag, or a command.
func assembly(pkg string) bool {
	return top(pkg) == "agent" || top(pkg) == "diag" || top(pkg) == "cmd"
}

func top(p string) string { return strings.SplitN(p, "/", 2)[0] }

// judgeOrWriter: conditions judges, nodestatus writes what it judged.
func judgeOrWriter(pkg string) bool { return top(pkg) == "conditions" || top(pkg) == "nodestatus" }

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
		{"agent", "internal/options", true},
		{"cmd/hangwatch", "internal/options", true},
		{"conditions", "internal/options", false},
		{"pleg", "internal/options", false},
		{"config", "internal/options", false},
		{"config", "kernellog", false},
		{"config", "cri", true},
		{"internal/options", "repair", true},
		{"cri", "repair", false},
		{"cmd/hangwatch", "diag", true},
		{"agent", "diag", false},
		{"diag", "agent", false},
		{"diag", "internal/options", true},
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
