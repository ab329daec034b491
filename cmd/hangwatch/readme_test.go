package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestEveryMetricIsDocumented finds every metric name defined in the
// module's code and checks the README's metrics table lists it.
func TestEveryMetricIsDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
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
				t.Errorf("%s (defined in %s) is not in the README's metrics table", m[1], path)
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

// TestDocsConfigExamplesLoad checks that every HangwatchConfiguration in
// the README and docs/ decodes and compiles, and that the manifests' config
// files pass what `hangwatch config check` checks.
func TestDocsConfigExamplesLoad(t *testing.T) {
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, doc := range append([]string{"../../README.md"}, docs...) {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(text, -1)
		for _, b := range blocks {
			if !strings.Contains(string(b[1]), "kind: "+configKind) {
				continue
			}
			n++
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, b[1], 0o644); err != nil {
				t.Fatal(err)
			}
			checkConfigFile(t, fmt.Sprintf("%s example %d", filepath.Base(doc), n), path)
		}
	}
	if n < 3 {
		t.Fatalf("found %d config examples in the README and docs/", n)
	}
	files, _ := filepath.Glob("../../manifests/*/config.yaml")
	more, _ := filepath.Glob("../../manifests/overlays/*/config.yaml")
	if len(files)+len(more) < 2 {
		t.Fatalf("manifests' config files not found: %v %v", files, more)
	}
	for _, f := range append(files, more...) {
		checkConfigFile(t, f, f)
	}
}

// checkConfigFile runs what `hangwatch config check` runs, but the kernel
// rules files the example may name.
func checkConfigFile(t *testing.T, what, path string) {
	t.Helper()
	o := &runOptions{}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	o.addFlags(fs)
	o.conds.config = path
	if _, err := o.configure(fs); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

func TestConfigErrorsNameEveryField(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	body := "apiVersion: hangwatch.io/v9\nkind: HangwatchConfiguration\nconditions:\n- type: X\n  problems:\n  - when: cri.nope(\n    reason: Bad\n  healthy: {reason: Fine}\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := loadConfig(path)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`apiVersion: "hangwatch.io/v9"`, "conditions[0].problems[0].when:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if err := os.WriteFile(path, []byte("apiVersion: hangwatch.io/v1alpha1\nkind: HangwatchConfiguration\nconditons: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadConfig(path); err == nil || !strings.Contains(err.Error(), "conditons") {
		t.Errorf("an unknown field must be an error naming it: %v", err)
	}
}

// loadConfig reads and checks the config file, reporting every problem at
// once with its field path: unknown and duplicate fields, wrong identity and
// rules that do not compile.
func loadConfig(path string) (*configFile, error) {
	c, errs, err := decodeConfig(path, "--config")
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("--config %s:\n%w", path, errors.Join(errs...))
	}
	return c, nil
}
