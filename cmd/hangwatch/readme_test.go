package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hangwatch/hangwatch/observations"
)

// TestEveryMetricIsDocumented finds every metric name defined in the
// module's code and checks docs/metrics.md's table lists it.
func TestEveryMetricIsDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`Name:\s*"(hangwatch_[a-z_]+)"`)
	found := 0
	err = filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range name.FindAllSubmatch(src, -1) {
			found++
			if !strings.Contains(string(readme), "| `"+string(m[1])+"` |") {
				t.Errorf("%s (defined in %s) is not in docs/metrics.md's metrics table", m[1], path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 15 {
		t.Fatalf("found only %d metric definitions; the pattern no longer matches the code", found)
	}
}

// TestTheInputsTableIsMadeFromTheTypes: docs/rules.md's table of the rules'
// inputs is the one package observations makes from its types.
func TestTheInputsTableIsMadeFromTheTypes(t *testing.T) {
	readme, err := os.ReadFile("../../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	if table := observations.MarkdownTable(); !strings.Contains(string(readme), table) {
		t.Fatalf("docs/rules.md's table of inputs is not the one made from package observations; put this in its place:\n%s", table)
	}
}
