// Package measurements records the figures tests measure as data: one JSON
// line per measurement (a name, a value and a unit) appended to the file
// $HANGWATCH_MEASUREMENTS names, and a MEASURE line in the test's log either
// way. hack/benchtable renders BENCHMARKS.md's sections from the file.
package measurements

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// EnvFile names the variable that holds the file measurements are
// appended to; unset, they are only logged.
const EnvFile = "HANGWATCH_MEASUREMENTS"

// Measurement is one recorded figure, one JSON line of the file.
type Measurement struct {
	Name  string    `json:"name"`
	Value float64   `json:"value"`
	Unit  string    `json:"unit"`
	Note  string    `json:"note,omitempty"`
	Test  string    `json:"test"`
	Time  time.Time `json:"time"`
}

// appendMu serialises the appends of one test binary's parallel tests.
var appendMu sync.Mutex

// Record logs a measurement as a MEASURE line and appends it to the file
// $HANGWATCH_MEASUREMENTS names, when it names one. The notes, joined with
// "; ", say what the value alone does not (its window, its breakdown). A
// measurement that cannot be written fails the test.
func Record(t testing.TB, name string, value float64, unit string, note ...string) {
	t.Helper()
	m := Measurement{Name: name, Value: value, Unit: unit, Note: strings.Join(note, "; "), Test: t.Name(), Time: time.Now().UTC()}
	t.Log(m.LogLine())
	path := os.Getenv(EnvFile)
	if path == "" {
		return
	}
	if err := appendTo(path, m); err != nil {
		t.Errorf("measurement %s: %v", name, err)
	}
}

// Duration records d in seconds, to the millisecond.
func Duration(t testing.TB, name string, d time.Duration, note ...string) {
	t.Helper()
	Record(t, name, float64(d.Round(time.Millisecond).Milliseconds())/1000, "s", note...)
}

// LogLine is the measurement as the test's log shows it:
// "MEASURE name value unit (note)".
func (m Measurement) LogLine() string {
	line := "MEASURE " + m.Name + " " + FormatValue(m.Value)
	if m.Unit != "" {
		line += " " + m.Unit
	}
	if m.Note != "" {
		line += " (" + m.Note + ")"
	}
	return line
}

// FormatValue prints a value with at most six significant digits before
// trailing zeros go, and never in exponent form.
func FormatValue(v float64) string {
	if v == math.Trunc(v) || math.Abs(v) >= 1e5 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	digits := 0
	if a := math.Abs(v); a >= 1 {
		digits = int(math.Log10(a)) + 1
	}
	s := strconv.FormatFloat(v, 'f', max(6-digits, 1), 64)
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

func appendTo(path string, m Measurement) error {
	line, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	appendMu.Lock()
	defer appendMu.Unlock()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", EnvFile, err)
	}
	// One write of the whole line: O_APPEND keeps the lines of test
	// binaries running at once (go test ./...) whole.
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("append to %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}

// Read parses JSON lines of measurements; blank lines are skipped.
func Read(r io.Reader) ([]Measurement, error) {
	var out []Measurement
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var m Measurement
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if m.Name == "" {
			return nil, fmt.Errorf("line %d: a measurement without a name", n)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read measurements: %w", err)
	}
	return out, nil
}

// ReadFile reads the measurements of a file Record appended to.
func ReadFile(path string) ([]Measurement, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("measurements: %w", err)
	}
	defer f.Close()
	ms, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ms, nil
}
