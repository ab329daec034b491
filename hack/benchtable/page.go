package main

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"
)

// pageTemplate is BENCHMARKS.md: its header, its headings and, for each
// section, {{section "NAME"}}, rendered from records/NAME.jsonl.
//
//go:embed page.md.tmpl
var pageTemplate string

// renderPage renders all of BENCHMARKS.md from the records in dir.
func renderPage(dir string) (string, error) {
	var failed []string
	tmpl, err := template.New("page").Option("missingkey=error").Funcs(template.FuncMap{
		"section": func(name string) (string, error) {
			records, err := readRecords(filepath.Join(dir, name+".jsonl"))
			if err != nil {
				failed = append(failed, fmt.Sprintf("section %s: %v", name, err))
				return "", nil
			}
			text, err := render(name, figuresOf(records))
			if err != nil {
				failed = append(failed, fmt.Sprintf("section %s from %s: %v", name, filepath.Join(dir, name+".jsonl"), err))
				return "", nil
			}
			return strings.TrimSuffix(text, "\n"), nil
		},
	}).Parse(pageTemplate)
	if err != nil {
		return "", fmt.Errorf("page template: %w", err)
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, nil); err != nil {
		return "", fmt.Errorf("page template: %w", err)
	}
	if len(failed) > 0 {
		return "", fmt.Errorf("%s", strings.Join(failed, "\n"))
	}
	return b.String(), nil
}

// writePage renders the page from dir's records into path.
func writePage(dir, path string) error {
	text, err := renderPage(dir)
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(text), 0o644)
}
