package measurements

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRecordAppendsJSONLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.jsonl")
	t.Setenv(EnvFile, path)
	Record(t, "a_count", 3, "requests")
	Duration(t, "b_after_freeze", 1234567*time.Microsecond, "from the freeze", "median of 1")
	ms, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 {
		t.Fatalf("read %d measurements, want 2: %+v", len(ms), ms)
	}
	a, b := ms[0], ms[1]
	if a.Name != "a_count" || a.Value != 3 || a.Unit != "requests" || a.Note != "" || a.Test != t.Name() || a.Time.IsZero() {
		t.Errorf("first = %+v", a)
	}
	if b.Name != "b_after_freeze" || b.Value != 1.235 || b.Unit != "s" || b.Note != "from the freeze; median of 1" {
		t.Errorf("second = %+v", b)
	}
	if got, want := b.LogLine(), "MEASURE b_after_freeze 1.235 s (from the freeze; median of 1)"; got != want {
		t.Errorf("LogLine = %q, want %q", got, want)
	}
}

func TestRecordWithoutAFileOnlyLogs(t *testing.T) {
	t.Setenv(EnvFile, "")
	dir := t.TempDir()
	t.Chdir(dir)
	Record(t, "x", 1, "")
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("wrote %v without %s", entries, EnvFile)
	}
}

func TestFormatValue(t *testing.T) {
	for v, want := range map[float64]string{
		3: "3", 0.5: "0.5", 1.23456789: "1.23457", 123.456789: "123.457", 2.8e6: "2800000",
		0.000123456: "0.000123", 16.2: "16.2", -2.5: "-2.5",
	} {
		if got := FormatValue(v); got != want {
			t.Errorf("FormatValue(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestReadRejectsBadLines(t *testing.T) {
	for _, in := range []string{"{", `{"value": 1}`} {
		if _, err := Read(strings.NewReader(in)); err == nil {
			t.Errorf("Read(%q): no error", in)
		}
	}
	ms, err := Read(strings.NewReader("\n" + `{"name":"a","value":1,"unit":"s"}` + "\n\n"))
	if err != nil || len(ms) != 1 {
		t.Errorf("Read = %v, %v", ms, err)
	}
}
