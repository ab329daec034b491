package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheReadmeLayoutIsUpToDate: the README's layout table is the one the
// tree makes now: one row per Go package, with the first sentence of its
// doc comment. A package added, moved or removed, or a doc comment changed,
// fails it until `go run ./hack/layout -w` writes the table again.
func TestTheReadmeLayoutIsUpToDate(t *testing.T) {
	root := filepath.Join("..", "..")
	want, err := Table(root)
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	i, j := strings.Index(string(readme), Begin), strings.Index(string(readme), End)
	if i < 0 || j < i {
		t.Fatalf("README.md has no layout table between %q and %q; run: go run ./hack/layout -w", Begin, End)
	}
	got := string(readme[i : j+len(End)+1])
	if got == want {
		return
	}
	gotRows, wantRows := rows(got), rows(want)
	for _, r := range strings.Split(want, "\n") {
		if r != "" && !gotRows[r] {
			t.Errorf("README.md's layout table lacks this row:\n%s", r)
		}
	}
	for _, r := range strings.Split(got, "\n") {
		if r != "" && !wantRows[r] {
			t.Errorf("README.md's layout table has a row the tree does not make:\n%s", r)
		}
	}
	t.Errorf("run: go run ./hack/layout -w")
}

func rows(table string) map[string]bool {
	m := map[string]bool{}
	for _, r := range strings.Split(table, "\n") {
		m[r] = true
	}
	return m
}

func TestPackagesFindsOnlyPackagesWithCode(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"a/a.go":           "// Package a does one thing. And more.\npackage a\n",
		"a/b/b_test.go":    "package b\n",
		"c/c.go":           "package c\n",
		"c/doc.go":         "// Package c is documented in doc.go.\npackage c\n",
		"mod/go.mod":       "module x\n",
		"mod/m.go":         "package m\n",
		"a/testdata/t.go":  "package t\n",
		".hidden/h.go":     "package h\n",
		"cmd/tool/main.go": "// Command tool prints.\npackage main\n",
		"d/README.md":      "not go\n",
	}
	for name, text := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pkgs, err := Packages(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pkgs {
		got = append(got, p.Path+" "+p.Synopsis)
	}
	want := []string{"a/ Package a does one thing.", "c/ Package c is documented in doc.go.", "cmd/tool/ Command tool prints."}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Packages = %q, want %q", got, want)
	}
	if err := os.WriteFile(filepath.Join(root, "e.go"), []byte("package e\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Table(root); err == nil || !strings.Contains(err.Error(), "./") {
		t.Errorf("Table with an undocumented package: %v", err)
	}
}
