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
			if strings.Contains(text, "?") {
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
	if err := run([]string{"-measurements", path, "-section", "remedy", "-var", "machine=2 cores", "-var", "command=go test"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "| with hangwatch-remedy | 4.1 s | 2.0 s |") || !strings.Contains(out.String(), "Machine: 2 cores.") {
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
