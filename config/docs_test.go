package config

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsConfigExamplesLoad checks that every HangwatchConfiguration in
// the README and docs/ decodes and compiles, and that the manifests' config
// files pass what `hangwatch config check` checks.
func TestDocsConfigExamplesLoad(t *testing.T) {
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, doc := range append([]string{"../README.md"}, docs...) {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(text, -1)
		for _, b := range blocks {
			if !strings.Contains(string(b[1]), "kind: "+Kind) {
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
	files, _ := filepath.Glob("../manifests/*/config.yaml")
	more, _ := filepath.Glob("../manifests/overlays/*/config.yaml")
	if len(files)+len(more) < 2 {
		t.Fatalf("manifests' config files not found: %v %v", files, more)
	}
	for _, f := range append(files, more...) {
		if raw, err := os.ReadFile(f); err == nil && !strings.Contains(string(raw), "kind: "+Kind) {
			continue // another kind's (hangwatch-remedy's RemedyConfiguration)
		}
		checkConfigFile(t, f, f)
	}
}

// checkConfigFile runs what `hangwatch config check` runs, but the kernel
// rules files the example may name.
func checkConfigFile(t *testing.T, what, path string) {
	t.Helper()
	if _, err := load(t, path); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

func TestConfigErrorsNameEveryField(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	body := "apiVersion: hangwatch.io/v9\nkind: HangwatchConfiguration\nconditions:\n- type: X\n  problems:\n  - when: cri.nope(\n    reason: Bad\n  healthy: {reason: Fine}\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := load(t, path)
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
	if _, err := load(t, path); err == nil || !strings.Contains(err.Error(), "conditons") {
		t.Errorf("an unknown field must be an error naming it: %v", err)
	}
}
