package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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

// TestREADMEConfigExamplesLoad checks every HangwatchConfiguration in the
// README decodes and compiles.
func TestREADMEConfigExamplesLoad(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(readme, -1)
	n := 0
	for _, b := range blocks {
		if !strings.Contains(string(b[1]), "kind: "+configKind) {
			continue
		}
		n++
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, b[1], 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := loadConfig(path); err != nil {
			t.Errorf("README example %d: %v", n, err)
		}
	}
	if n == 0 {
		t.Fatal("no config example found in the README")
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
