package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hangwatch/hangwatch/test/measurements"
)

// A Record is one line of a section's records file, records/SECTION.jsonl:
// a measurement (Name, Value, Unit) or a value of the section's text that
// is not one (Var, Text: the machine, the command, the date), with the
// command, machine and date it came from. Row names the row of a table of
// rows (the matrix: "KUBELET RUNTIME GATES") it belongs to.
type Record struct {
	Name    string   `json:"name,omitempty"`
	Value   *float64 `json:"value,omitempty"`
	Unit    string   `json:"unit,omitempty"`
	Note    string   `json:"note,omitempty"`
	Var     string   `json:"var,omitempty"`
	Text    string   `json:"text,omitempty"`
	Row     string   `json:"row,omitempty"`
	Test    string   `json:"test,omitempty"`
	Command string   `json:"command,omitempty"`
	Machine string   `json:"machine,omitempty"`
	Date    string   `json:"date,omitempty"`
}

// measurement is r as the figures read it.
func (r Record) measurement() measurements.Measurement {
	m := measurements.Measurement{Name: r.Name, Unit: r.Unit, Note: r.Note, Test: r.Test}
	if r.Value != nil {
		m.Value = *r.Value
	}
	return m
}

// readRecords reads a records file; a missing file is an error that names
// the section.
func readRecords(path string) ([]Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Record
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var r Record
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if (r.Name == "") == (r.Var == "") {
			return nil, fmt.Errorf("%s:%d: a record names a measurement (name) or a text (var), one of them", path, n)
		}
		if r.Name != "" && r.Value == nil {
			return nil, fmt.Errorf("%s:%d: measurement %s has no value", path, n, r.Name)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// writeRecords writes records, one JSON line each.
func writeRecords(path string, records []Record) error {
	var b bytes.Buffer
	for _, r := range records {
		line, err := json.Marshal(r)
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// figuresOf builds what a template reads from records: the measurements
// and vars of the records outside rows, and each row's own.
func figuresOf(records []Record) *figures {
	var ms []measurements.Measurement
	vars := map[string]string{}
	f := newFigures(nil, vars)
	rows := map[string][]Record{}
	for _, r := range records {
		if r.Row != "" {
			if _, ok := rows[r.Row]; !ok {
				f.rowOrder = append(f.rowOrder, r.Row)
			}
			rows[r.Row] = append(rows[r.Row], r)
			continue
		}
		if r.Var != "" {
			vars[r.Var] = r.Text
			continue
		}
		ms = append(ms, r.measurement())
		f.records[r.Name] = r
	}
	for _, m := range ms {
		f.add(m)
	}
	f.rows = map[string]*figures{}
	for key, rs := range rows {
		for i := range rs {
			rs[i].Row = ""
		}
		f.rows[key] = figuresOf(rs)
	}
	return f
}

// recordsOf turns measurements and -var values into records, each
// stamped with where it came from: the -var machine, command and date.
func recordsOf(ms []measurements.Measurement, vars map[string]string, row string) []Record {
	command := vars["command"]
	if command == "" {
		command = vars["script"]
	}
	stamp := func(r Record) Record {
		r.Row, r.Machine, r.Command, r.Date = row, vars["machine"], command, vars["date"]
		return r
	}
	var out []Record
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, Record{Var: k, Text: vars[k], Row: row})
	}
	for _, m := range ms {
		v := m.Value
		r := stamp(Record{Name: m.Name, Value: &v, Unit: m.Unit, Note: m.Note, Test: m.Test})
		if !m.Time.IsZero() {
			r.Date = m.Time.UTC().Format(time.DateOnly)
		}
		out = append(out, r)
	}
	return out
}

// saveSection writes a section's records: all of them, or, with row, that
// row's in place of the row's earlier ones, keeping the other rows (and
// setting the section's own vars named in sectionVars from vars).
func saveSection(dir, section string, ms []measurements.Measurement, vars map[string]string, row string, sectionVars []string) error {
	path := filepath.Join(dir, section+".jsonl")
	if row == "" {
		return writeRecords(path, recordsOf(ms, vars, ""))
	}
	old, err := readRecords(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var out []Record
	set := map[string]bool{}
	for _, k := range sectionVars {
		if _, ok := vars[k]; ok {
			set[k] = true
			out = append(out, Record{Var: k, Text: vars[k]})
		}
	}
	placed := false
	fresh := recordsOf(ms, vars, row)
	for _, r := range old {
		switch {
		case r.Row == "" && r.Var != "" && set[r.Var]:
		case r.Row == row:
			if !placed {
				out = append(out, fresh...)
				placed = true
			}
		default:
			out = append(out, r)
		}
	}
	if !placed {
		out = append(out, fresh...)
	}
	return writeRecords(path, out)
}
