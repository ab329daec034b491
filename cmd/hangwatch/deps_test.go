package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/hangwatch/hangwatch/test/harness"
)

// TestTheAgentLinksNoClientset keeps the binary lean: only the API groups
// hangwatch sends or reads, and no Clientset, typed client, apply
// configuration or tools/record (which pull in every group).
func TestTheAgentLinksNoClientset(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to list the binary's packages: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	allowed := []string{"k8s.io/api/core/v1", "k8s.io/api/coordination/v1", "k8s.io/api/authentication/v1", "k8s.io/api/authorization/v1"}
	banned := []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/tools/record", "k8s.io/client-go/applyconfigurations"}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "k8s.io/api/") && !slices.Contains(allowed, pkg) {
			t.Errorf("%s is linked: an API group hangwatch does not use", pkg)
		}
		for _, b := range banned {
			if pkg == b || strings.HasPrefix(pkg, b+"/") {
				t.Errorf("%s is linked: it brings every API group back", pkg)
			}
		}
	}
}

// TestTheReleaseBuildLinksNoHTMLTemplate: built with the release's tags
// (hack/lib.sh BUILD_TAGS), gRPC leaves out golang.org/x/net/trace, and
// nothing else brings html/template, which turns off the linker's pruning
// of unused methods: 6 MB of binary.
func TestTheReleaseBuildLinksNoHTMLTemplate(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to list the binary's packages: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-tags", harness.BuildTags, "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "html/template" || pkg == "golang.org/x/net/trace" {
			t.Errorf("%s is linked with -tags %s", pkg, harness.BuildTags)
		}
	}
}
