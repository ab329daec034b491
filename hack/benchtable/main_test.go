package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hangwatch/hangwatch/test/measurements"
)

// completeFigures fills in everything a section asks for, as rendering it
// from nothing names them.
func completeFigures(t *testing.T, section string) *figures {
	t.Helper()
	_, err := render(section, newFigures(nil, nil))
	if err == nil {
		t.Fatalf("section %s rendered from no measurements", section)
	}
	var all []measurements.Measurement
	vars := map[string]string{}
	for _, name := range strings.Split(strings.TrimPrefix(err.Error(), "not measured: "), ", ") {
		if key, ok := strings.CutPrefix(name, "-var "); ok {
			vars[key] = "X"
			continue
		}
		all = append(all, measurements.Measurement{Name: name, Value: 1.25, Unit: "s", Note: "a; by kind: b; last taint; c; by flow schema: d"})
	}
	return newFigures(all, vars)
}

func TestEverySectionRendersFromItsMeasurements(t *testing.T) {
	for _, section := range sectionNames() {
		t.Run(section, func(t *testing.T) {
			text, err := render(section, completeFigures(t, section))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(regexp.MustCompile("`[^`]*`").ReplaceAllString(text, ""), "?") { // a ? outside code: a figure not there
				t.Errorf("a ? in the rendered section:\n%s", text)
			}
			if section != "e2e-matrix-row" && !regexp.MustCompile(`(?s)^<!-- `+section+`:begin .*<!-- `+section+`:end -->\n$`).MatchString(text) {
				t.Errorf("not between its markers:\n%s", text)
			}
		})
	}
}

func TestAMissingMeasurementFailsTheSectionNamingIt(t *testing.T) {
	f := completeFigures(t, "remedy")
	delete(f.byName, "e2e_two_node_remedy_taint_after_freeze")
	delete(f.byName, "e2e_two_node_baseline_eviction_after_freeze")
	_, err := render("remedy", f)
	want := "not measured: e2e_two_node_baseline_eviction_after_freeze, e2e_two_node_remedy_taint_after_freeze"
	if err == nil || err.Error() != want {
		t.Fatalf("render = %v, want %q", err, want)
	}
}

func TestMediansOfSeveralRuns(t *testing.T) {
	f := newFigures([]measurements.Measurement{
		{Name: "a", Value: 3.1}, {Name: "a", Value: 2.6}, {Name: "a", Value: 2.8},
		{Name: "b", Value: 1}, {Name: "b", Value: 2},
	}, nil)
	if got, want := f.medianSeconds("a"), "2.8 s (median of 3: 2.6-3.1)"; got != want {
		t.Errorf("median of a = %q, want %q", got, want)
	}
	if got, want := f.medianSeconds("b"), "1.5 s (median of 2: 1.0-2.0)"; got != want {
		t.Errorf("median of b = %q, want %q", got, want)
	}
	if got, want := f.seconds("a"), "2.8 s"; got != want { // the latest
		t.Errorf("latest a = %q, want %q", got, want)
	}
}

func TestRunReadsFilesAndVars(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.jsonl")
	lines := []string{`{"name":"e2e_two_node_remedy_runtime_hung_after_freeze","value":4.1,"unit":"s"}`}
	f := completeFigures(t, "remedy")
	for name := range f.byName {
		if name != "e2e_two_node_remedy_runtime_hung_after_freeze" {
			lines = append(lines, `{"name":"`+name+`","value":2,"unit":"s"}`)
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run([]string{"-measurements", path, "-section", "remedy", "-var", "machine=2 cores", "-var", "command=go test", "-var", "date=2026-12-01"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "| with hangwatch-remedy | 4.1 s | 2.0 s |") || !strings.Contains(out.String(), "Machine: 2 cores.") || !strings.Contains(out.String(), "(last run 2026-12-01)") {
		t.Errorf("rendered:\n%s", out.String())
	}
	err := run([]string{"-measurements", path, "-section", "remedy"}, &out)
	if err == nil || !strings.Contains(err.Error(), "not measured: -var command, -var machine") {
		t.Errorf("without its -var: %v", err)
	}
	out.Reset()
	if err := run([]string{"-measurements", path, "-summary"}, &out); err != nil || !strings.Contains(out.String(), "e2e_two_node_remedy_runtime_hung_after_freeze 4.1 s\n") {
		t.Errorf("summary: %v\n%s", err, out.String())
	}
}

// TestBenchmarksPageIsRendered: BENCHMARKS.md is what the records render,
// byte for byte. A record or a template changed without rendering the page
// again, or the page edited by hand, fails it.
func TestBenchmarksPageIsRendered(t *testing.T) {
	want, err := renderPage("records")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) == want {
		return
	}
	gl, wl := strings.Split(string(got), "\n"), strings.Split(want, "\n")
	for i := 0; i < len(gl) || i < len(wl); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Fatalf("BENCHMARKS.md differs from what hack/benchtable/records render, first at line %d:\nBENCHMARKS.md: %q\nrendered:      %q\nrun: go run ./hack/benchtable -w", i+1, g, w)
		}
	}
}

// TestEverySectionIsOnThePageWithItsRecords: each template but the
// matrix's row is called by the page, and each records file is read by a
// section of that name.
func TestEverySectionIsOnThePageWithItsRecords(t *testing.T) {
	for _, name := range sectionNames() {
		if name != "e2e-matrix-row" && !strings.Contains(pageTemplate, `{{section "`+name+`"}}`) {
			t.Errorf("sections/%s.md.tmpl is not on the page: page.md.tmpl has no {{section %q}}", name, name)
		}
	}
	files, err := filepath.Glob(filepath.Join("records", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		if !strings.Contains(pageTemplate, `{{section "`+name+`"}}`) {
			t.Errorf("%s is read by no section of the page", f)
		}
		records, err := readRecords(f)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, r := range records {
			if r.Name != "" && r.Command == "" {
				t.Errorf("%s: measurement %s has no command", f, r.Name)
			}
		}
	}
}

func TestSaveWritesASectionsRecordsAndTheMatrixRowByRow(t *testing.T) {
	dir := t.TempDir()
	ms := []measurements.Measurement{{Name: "a", Value: 1.5, Unit: "s"}}
	vars := map[string]string{"machine": "m1", "command": "c1", "date": "2026-12-01", "kubelet": "v1.37.2"}
	if err := saveSection(dir, "x", ms, vars, "", nil); err != nil {
		t.Fatal(err)
	}
	rs, err := readRecords(filepath.Join(dir, "x.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	f := figuresOf(rs)
	if f.vars["machine"] != "m1" || f.seconds("a") != "1.5 s" || f.records["a"].Command != "c1" || f.records["a"].Date != "2026-12-01" {
		t.Errorf("saved and read back: vars %v, a %q, record %+v", f.vars, f.seconds("a"), f.records["a"])
	}
	for _, row := range []string{"r1", "r2", "r1"} {
		v := map[string]string{"machine": "m-" + row, "command": "c", "date": "d", "fails": ""}
		if err := saveSection(dir, "e2e-matrix", []measurements.Measurement{{Name: "b", Value: 2}}, v, row, []string{"machine"}); err != nil {
			t.Fatal(err)
		}
	}
	rs, err = readRecords(filepath.Join(dir, "e2e-matrix.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	f = figuresOf(rs)
	if strings.Join(f.rowOrder, ",") != "r1,r2" || len(f.rows["r1"].byName["b"]) != 1 || f.vars["machine"] != "m-r1" {
		t.Errorf("rows %v, r1's b %v, machine %q", f.rowOrder, f.rows["r1"].byName["b"], f.vars["machine"])
	}
}

func TestGoBenchOutputBecomesRecords(t *testing.T) {
	out := `goos: linux
pkg: github.com/hangwatch/hangwatch/kernellog
BenchmarkMonitor/rules=default-2         	 1000000	       342.1 ns/op	       0 B/op	       0 allocs/op
BenchmarkMonitor/rules=default-2         	 1000000	       354 ns/op	       0 B/op	       0 allocs/op
PASS
pkg: github.com/hangwatch/hangwatch/kubeletmetrics
BenchmarkParse-2   	     200	   1322658 ns/op	 135.15 MB/s	  458193 B/op	    9817 allocs/op
ok
`
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	old := `{"name":"kubeletmetrics.BenchmarkParse ns/op","value":1,"unit":"ns/op","command":"old"}
{"name":"remedy.BenchmarkPassAtRest/all ns/op","value":69200000,"unit":"ns/op","command":"kept"}
`
	if err := os.WriteFile(filepath.Join(dir, "go-bench.jsonl"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := run([]string{"-gobench", path, "-records", dir, "-var", "command=go test -bench .", "-var", "machine=m"}, &buf); err != nil {
		t.Fatal(err)
	}
	rs, err := readRecords(filepath.Join(dir, "go-bench.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	f := figuresOf(rs)
	if got := f.runs("kernellog.BenchmarkMonitor/rules=default ns/op", 1); got != "342.1 / 354.0" {
		t.Errorf("runs = %q", got)
	}
	if got := f.runs("kubeletmetrics.BenchmarkParse ns/op", 0); got != "1322658" {
		t.Errorf("the run replaces the benchmark's earlier records: %q", got)
	}
	if got := f.runs("kubeletmetrics.BenchmarkParse MB/s", 2); got != "135.15" {
		t.Errorf("MB/s = %q", got)
	}
	if f.records["remedy.BenchmarkPassAtRest/all ns/op"].Command != "kept" || f.records["kernellog.BenchmarkMonitor/rules=default ns/op"].Machine != "m" {
		t.Errorf("records: %+v", f.records)
	}
}

// TestARecordWithAnEmptyFieldFailsTheSection: a record the page prints
// the date, machine or command of, without one, fails the section naming
// it, as a missing measurement does (the page printed "(; the baseline"
// once).
func TestARecordWithAnEmptyFieldFailsTheSection(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join("records", "remedy-notes.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	undated := strings.Replace(string(raw), `"date": "2026-11-25"`, `"date": ""`, 1)
	if undated == string(raw) {
		t.Fatal("records/remedy-notes.jsonl has no record dated 2026-11-25 to take the date of")
	}
	if err := os.WriteFile(filepath.Join(dir, "remedy-notes.jsonl"), []byte(undated), 0o644); err != nil {
		t.Fatal(err)
	}
	records, err := readRecords(filepath.Join(dir, "remedy-notes.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = render("remedy-notes", figuresOf(records))
	if err == nil || !strings.Contains(err.Error(), "remedy_replacement_running (its date is empty)") {
		t.Fatalf("render = %v, want the undated record named", err)
	}
}
