package main

import (
	"errors"
	"fmt"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The README's table sits between these two lines.
const (
	Begin = "<!-- layout:begin (written by go run ./hack/layout -w from the packages' doc comments) -->"
	End   = "<!-- layout:end -->"
)

// Package is one row of the table.
type Package struct {
	Path     string // relative to the module's root, with a slash at the end
	Synopsis string // the first sentence of the package's doc comment
}

// Packages are the module's Go packages under root: every directory with a
// .go file that is not a test, outside testdata, hidden directories and
// nested modules (a directory with a go.mod of its own), sorted by path.
func Packages(root string) ([]Package, error) {
	var pkgs []Package
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root {
			if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor" || name == "bin" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a module of its own
			}
		}
		pkg, ok, err := packageIn(path)
		if err != nil || !ok {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		pkg.Path = filepath.ToSlash(rel) + "/"
		pkgs = append(pkgs, pkg)
		return nil
	})
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].Path < pkgs[j].Path })
	return pkgs, err
}

// packageIn reads the doc comment of the package in dir, if dir holds one.
func packageIn(dir string) (Package, bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Package{}, false, err
	}
	var comment string
	found := false
	fset := token.NewFileSet()
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return Package{}, false, err
		}
		found = true
		if f.Doc != nil && comment == "" {
			comment = f.Doc.Text()
		}
	}
	if !found {
		return Package{}, false, nil
	}
	return Package{Synopsis: new(doc.Package).Synopsis(comment)}, true, nil
}

// Table is the markdown table of root's packages, between its markers. A
// package without a doc comment fails it, named.
func Table(root string) (string, error) {
	pkgs, err := Packages(root)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	var undocumented []string
	b.WriteString(Begin + "\n| package | what it is (the first sentence of its doc comment) |\n| --- | --- |\n")
	for _, p := range pkgs {
		if p.Synopsis == "" {
			undocumented = append(undocumented, p.Path)
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", p.Path, strings.ReplaceAll(p.Synopsis, "|", `\|`))
	}
	b.WriteString(End + "\n")
	if len(undocumented) > 0 {
		return "", fmt.Errorf("no package doc comment (// Package x ... in one of its files) in %s", strings.Join(undocumented, ", "))
	}
	return b.String(), nil
}

// Replace puts table in readme in place of the text between the markers,
// markers included.
func Replace(readme, table string) (string, error) {
	i := strings.Index(readme, Begin)
	j := strings.Index(readme, End)
	if i < 0 || j < i {
		return "", errors.New("README.md has no " + Begin + " ... " + End)
	}
	return readme[:i] + table + readme[j+len(End)+1:], nil
}
