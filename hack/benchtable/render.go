package main

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"
	"text/template"

	"github.com/hangwatch/hangwatch/test/measurements"
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
		"runs":          f.runs,      // runs NAME DECIMALS: every value in the order recorded, "342 / 354 / 338"
		"thousands":     f.thousands, // thousands NAME DECIMALS: the latest value, "1,322,658"
		"source":        f.source,    // source NAME: the latest record's .Date, .Machine, .Command
		"matrixRows":    f.matrixRows,
		"rowSources":    f.rowSources,
		"benchRows":     f.benchRows,      // benchRows PREFIX: a table row per recorded name that starts with PREFIX (!PREFIX: does not)
		"minsec":        f.minutesSeconds, // minsec NAME: the latest value, in seconds, as "5m31s"
		"after":         after,
		"mul":           func(a, b float64) float64 { return a * b },
		"div":           func(a, b float64) float64 { return a / b },
		"printf":        fmt.Sprintf,
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

// matrixRows are the rows of the e2e-matrix table, one per row of the
// records, in the order first recorded, each rendered by the
// e2e-matrix-row section from its own records. A row whose scenarios did
// not all measure still gets its row: its figures' cell names what was not
// measured, as hack/e2e-matrix.sh wrote it.
func (f *figures) matrixRows() string {
	var lines []string
	for _, key := range f.rowOrder {
		rf := f.rows[key]
		row, err := render("e2e-matrix-row", rf)
		if err != nil {
			v := func(k string) string { return rf.vars[k] }
			gates := v("gates")
			if gates == "" {
				gates = "-"
			}
			fails := v("fails")
			if fails == "" {
				fails = "all passed"
			}
			row = fmt.Sprintf("| %s | %s | %s | %s | | | %s |", v("kubelet"), v("containerd"), gates, strings.ReplaceAll(err.Error(), "|", "/"), fails)
		}
		lines = append(lines, strings.TrimSuffix(row, "\n"))
	}
	return strings.Join(lines, "\n")
}

// minutesSeconds is the latest value of name, in seconds, as "5m31s".
func (f *figures) minutesSeconds(name string) string {
	m, ok := f.latest(name)
	if !ok {
		return "?"
	}
	total := int(m.Value + 0.5)
	return fmt.Sprintf("%dm%02ds", total/60, total%60)
}

// rowSources lists where each row's figures came from: its date, machine
// and command, as its latest record names them, one list item a row.
func (f *figures) rowSources() string {
	var lines []string
	for _, key := range f.rowOrder {
		rf := f.rows[key]
		var src Record
		for _, r := range rf.records {
			if r.Date > src.Date || src.Date == "" {
				src = r
			}
		}
		lines = append(lines, fmt.Sprintf("- %s: %s, %s; `%s`", strings.Join(strings.Fields(key), " "), src.Date, src.Machine, src.Command))
	}
	return strings.Join(lines, "\n")
}

// benchRows are the rows of a table of Go benchmark (or fuzzing) records:
// one per recorded name that starts with prefix (or, for "!prefix", does
// not), in the order first recorded: the name, the unit, every run's
// value and where they came from.
func (f *figures) benchRows(prefix string) string {
	var names []string
	seen := map[string]bool{}
	exclude := strings.HasPrefix(prefix, "!")
	for _, name := range f.order {
		if strings.HasPrefix(name, strings.TrimPrefix(prefix, "!")) != exclude && !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		f.missing[prefix+"*"] = true
		return "?"
	}
	var lines []string
	for _, name := range names {
		var vals []string
		for _, m := range f.byName[name] {
			vals = append(vals, group(measurements.FormatValue(m.Value)))
		}
		r := f.records[name]
		bench, unit, _ := strings.Cut(name, " ")
		lines = append(lines, fmt.Sprintf("| `%s` | %s | %s | %s | `%s` |", bench, unit, strings.Join(vals, " / "), r.Date, r.Command))
	}
	return strings.Join(lines, "\n")
}
