package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/hangwatch/hangwatch/test/measurements"
)

// figures is what a section's template reads: the measurements by name,
// in the order they were recorded, and the -var values. What the template
// asks for and is not there is remembered, and the section fails.
type figures struct {
	byName  map[string][]measurements.Measurement
	vars    map[string]string
	missing map[string]bool
	// from a records file: each measurement's latest record (where it
	// came from), and the rows of a table of rows with their own figures
	records  map[string]Record
	rows     map[string]*figures
	rowOrder []string
	order    []string // measurement names in the order first recorded
}

func newFigures(all []measurements.Measurement, vars map[string]string) *figures {
	f := &figures{byName: map[string][]measurements.Measurement{}, vars: vars, missing: map[string]bool{}, records: map[string]Record{}}
	for _, m := range all {
		f.add(m)
	}
	return f
}

func (f *figures) add(m measurements.Measurement) {
	if len(f.byName[m.Name]) == 0 {
		f.order = append(f.order, m.Name)
	}
	f.byName[m.Name] = append(f.byName[m.Name], m)
}

// latest is the last record of name: a scenario run again (hack/e2e.sh's
// E2E_RUN) replaces its figure.
func (f *figures) latest(name string) (measurements.Measurement, bool) {
	ms := f.byName[name]
	if len(ms) == 0 {
		f.missing[name] = true
		return measurements.Measurement{}, false
	}
	return ms[len(ms)-1], true
}

// has tells whether name was recorded, for a section whose text depends on
// it (the figure is optional there, and the template says what its
// absence means).
func (f *figures) has(name string) bool { return len(f.byName[name]) > 0 }

// seconds is the latest value of name as "12.3 s".
func (f *figures) seconds(name string) string {
	m, ok := f.latest(name)
	if !ok {
		return "?"
	}
	return fmt.Sprintf("%.1f s", m.Value)
}

// number is the latest value of name with that many decimals.
func (f *figures) number(name string, decimals int) string {
	m, ok := f.latest(name)
	if !ok {
		return "?"
	}
	return fmt.Sprintf("%.*f", decimals, m.Value)
}

// value is the latest value of name, for arithmetic in a template.
func (f *figures) value(name string) float64 {
	m, _ := f.latest(name)
	return m.Value
}

// note is the note of name's latest record.
func (f *figures) note(name string) string {
	m, _ := f.latest(name)
	return m.Note
}

// medianSeconds is the median of every record of name, in seconds, with
// how many there were and their range: "2.8 s (median of 3: 2.6-3.1)".
func (f *figures) medianSeconds(name string) string {
	v := f.values(name)
	if len(v) == 0 {
		f.missing[name] = true
		return "?"
	}
	return fmt.Sprintf("%.1f s (median of %d: %.1f-%.1f)", median(v), len(v), v[0], v[len(v)-1])
}

// values are every recorded value of name, sorted.
func (f *figures) values(name string) []float64 {
	var v []float64
	for _, m := range f.byName[name] {
		v = append(v, m.Value)
	}
	slices.Sort(v)
	return v
}

// median of sorted values; the mean of the middle two for an even count.
func median(sorted []float64) float64 {
	n := len(sorted)
	return (sorted[(n-1)/2] + sorted[n/2]) / 2
}

// variable is a -var value; one not given fails the section as a missing
// measurement does.
func (f *figures) variable(key string) string {
	v, ok := f.vars[key]
	if !ok {
		f.missing["-var "+key] = true
		return "?"
	}
	return v
}

// missingNames are what the section asked for and did not get, sorted.
func (f *figures) missingNames() []string {
	var names []string
	for n := range f.missing {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// writeSummary lists every measurement: the median of its records, its
// unit, how many records and their range.
func writeSummary(w io.Writer, all []measurements.Measurement) error {
	f := newFigures(all, nil)
	names := make([]string, 0, len(f.byName))
	for n := range f.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v, unit := f.values(n), f.byName[n][0].Unit
		line := fmt.Sprintf("%s %s %s", n, measurements.FormatValue(median(v)), unit)
		if len(v) > 1 {
			line += fmt.Sprintf(" (median of %d: %s-%s)", len(v), measurements.FormatValue(v[0]), measurements.FormatValue(v[len(v)-1]))
		}
		if _, err := fmt.Fprintln(w, strings.TrimSpace(line)); err != nil {
			return err
		}
	}
	return nil
}

// runs are every recorded value of name, in the order recorded, with that
// many decimals, joined by " / ": "342 / 354 / 338".
func (f *figures) runs(name string, decimals int) string {
	ms := f.byName[name]
	if len(ms) == 0 {
		f.missing[name] = true
		return "?"
	}
	var parts []string
	for _, m := range ms {
		parts = append(parts, fmt.Sprintf("%.*f", decimals, m.Value))
	}
	return strings.Join(parts, " / ")
}

// thousands is the latest value of name with that many decimals and its
// thousands grouped with commas: "1,322,658".
func (f *figures) thousands(name string, decimals int) string {
	m, ok := f.latest(name)
	if !ok {
		return "?"
	}
	return group(fmt.Sprintf("%.*f", decimals, m.Value))
}

// group puts commas between the thousands of a formatted number.
func group(s string) string {
	intPart, frac, hasFrac := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	out := b.String()
	if neg {
		out = "-" + out
	}
	if hasFrac {
		out += "." + frac
	}
	return out
}

// source is where name's latest record came from: its date, machine and
// command, as recorded. A record without one of them is refused, as a
// missing measurement is: the page would print an empty field.
func (f *figures) source(name string) Record {
	if _, ok := f.latest(name); !ok {
		return Record{}
	}
	r, recorded := f.records[name]
	if !recorded {
		return r // fresh measurements (-section): the -var values carry these
	}
	for field, v := range map[string]string{"date": r.Date, "machine": r.Machine, "command": r.Command} {
		if strings.TrimSpace(v) == "" {
			f.missing[name+" (its "+field+" is empty)"] = true
		}
	}
	return r
}
