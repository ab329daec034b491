package main

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"
	"text/template"
	"time"
)

//go:embed sections/*.md.tmpl
var sectionFiles embed.FS

// sectionNames are the sections benchtable renders, one template each.
func sectionNames() []string {
	entries, err := fs.ReadDir(sectionFiles, "sections")
	if err != nil {
		panic(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".md.tmpl"))
	}
	return names
}

// render executes a section's template on f; a measurement or -var it
// names that is not there fails it, every missing one named.
func render(section string, f *figures) (string, error) {
	src, err := sectionFiles.ReadFile("sections/" + section + ".md.tmpl")
	if err != nil {
		return "", fmt.Errorf("no section %q (there are %s)", section, strings.Join(sectionNames(), ", "))
	}
	tmpl, err := template.New(section).Option("missingkey=error").Funcs(funcs(f)).Parse(string(src))
	if err != nil {
		return "", fmt.Errorf("template: %w", err)
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, nil); err != nil {
		return "", fmt.Errorf("template: %w", err)
	}
	if missing := f.missingNames(); len(missing) > 0 {
		return "", fmt.Errorf("not measured: %s", strings.Join(missing, ", "))
	}
	return b.String(), nil
}

// funcs are what the templates call; sections/ reads them.
func funcs(f *figures) template.FuncMap {
	return template.FuncMap{
		"s":             f.seconds,       // s NAME: the latest value, "12.3 s"
		"n":             f.number,        // n NAME DECIMALS: the latest value
		"v":             f.value,         // v NAME: the latest value as a number
		"med":           f.medianSeconds, // med NAME: "2.8 s (median of 3: 2.6-3.1)"
		"note":          f.note,          // note NAME: the latest record's note
		"has":           f.has,           // has NAME: recorded at all (an optional figure)
		"var":           f.variable,      // var KEY: a -var value
		"fleet":         f.fleet,         // fleet NAME: per node per minute | requests/s at 5,000 nodes
		"ms":            f.milliseconds,  // ms NAME: a value in seconds as "13ms"
		"footprintRows": f.footprintRows,
		"after":         after,
		"mul":           func(a, b float64) float64 { return a * b },
		"div":           func(a, b float64) float64 { return a / b },
		"printf":        fmt.Sprintf,
		"today":         func() string { return time.Now().UTC().Format(time.DateOnly) },
	}
}

// after is the text after the first sep in s, or s without one.
func after(sep, s string) string {
	if _, rest, ok := strings.Cut(s, sep); ok {
		return rest
	}
	return s
}

// fleet is name's requests per node per minute and what they come to at
// 5,000 nodes, per second: two cells of the api-budget table.
func (f *figures) fleet(name string) string {
	m, ok := f.latest(name)
	if !ok {
		return "? | ?"
	}
	return fmt.Sprintf("%.2f | %.0f", m.Value, m.Value*5000/60)
}

func (f *figures) milliseconds(name string) string {
	m, ok := f.latest(name)
	if !ok {
		return "?"
	}
	return fmt.Sprintf("%.0fms", m.Value*1000)
}
