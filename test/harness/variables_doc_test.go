package harness

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

var (
	hangwatchVariable = regexp.MustCompile(`HANGWATCH_[A-Z0-9_]+`)
	// a row of docs/testing.md's table of variables: the name in backquotes in its first cell
	documentedVariable = regexp.MustCompile("(?m)^\\| `(HANGWATCH_[A-Z0-9_]+)` \\|")
)

// TestEveryHangwatchVariableIsDocumented greps the repository for
// HANGWATCH_* names and fails on one that docs/testing.md's table of
// variables does not name, and on a row of the table that names one the
// repository does not use anywhere else.
func TestEveryHangwatchVariableIsDocumented(t *testing.T) {
	root := ModuleRoot()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "testing.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range documentedVariable.FindAllSubmatch(doc, -1) {
		documented[string(m[1])] = true
	}
	used := variablesIn(t, root, filepath.Join(root, "docs", "testing.md"))
	for _, name := range sortedKeys(used) {
		if !documented[name] {
			t.Errorf("%s (in %s) is not in docs/testing.md's table of variables", name, strings.Join(used[name], ", "))
		}
	}
	for _, name := range sortedKeys(documented) {
		if used[name] == nil {
			t.Errorf("docs/testing.md documents %s, which nothing else names", name)
		}
	}
}

// variablesIn maps each HANGWATCH_* name in the text files under root
// (but skip) to the files that name it.
func variablesIn(t *testing.T, root, skip string) map[string][]string {
	t.Helper()
	used := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") && name != ".ci" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if path == skip || !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil || bytes.IndexByte(b, 0) >= 0 { // unreadable or binary
			return nil //nolint:nilerr // not a text file of the repository
		}
		rel, _ := filepath.Rel(root, path)
		for _, name := range uniqueMatches(b) {
			used[name] = append(used[name], rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return used
}

func uniqueMatches(b []byte) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range hangwatchVariable.FindAll(b, -1) {
		if name := string(m); !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

var (
	// a variable a script reads from its environment, with a default: ${NAME:-...}
	scriptVariable = regexp.MustCompile(`\$\{([A-Z][A-Z0-9_]*):-`)
	// a row of one of docs/testing.md's tables of variables
	documentedAnyVariable = regexp.MustCompile("(?m)^\\| `([A-Z][A-Z0-9_]*)` \\|")
)

// TestEveryScriptVariableIsDocumented finds the variables the scripts under
// hack/ read from their environment with a default (${NAME:-default}) and
// fails on one that no table of docs/testing.md names.
func TestEveryScriptVariableIsDocumented(t *testing.T) {
	root := ModuleRoot()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "testing.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range documentedAnyVariable.FindAllSubmatch(doc, -1) {
		documented[string(m[1])] = true
	}
	scripts, err := filepath.Glob(filepath.Join(root, "hack", "*.sh"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join(root, "hack", "*", "*.sh"))
	scripts = append(scripts, more...)
	if len(scripts) < 5 {
		t.Fatalf("found %d scripts under hack/", len(scripts))
	}
	found := 0
	for _, path := range scripts {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, path)
		for _, m := range scriptVariable.FindAllSubmatch(b, -1) {
			found++
			if name := string(m[1]); !documented[name] {
				t.Errorf("%s reads %s, which no table of docs/testing.md's \"Variables\" names", rel, name)
			}
		}
	}
	if found < 10 {
		t.Fatalf("found only %d ${NAME:-default} reads in hack/; the pattern no longer matches the scripts", found)
	}
}
