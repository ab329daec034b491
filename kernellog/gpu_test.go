package kernellog

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func gpuPack(t testing.TB) *RuleSet {
	t.Helper()
	rs, err := RulePack("gpu")
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestTheGPUPackOnEveryXidFixture: each Xid, in the PCI and the MIG form,
// whatever the pid field says, gives the reason of its number: the GPU
// gone (GPUUnavailable), degraded (GPUDegraded), an application's fault
// (an event), or another Xid (an event).
func TestTheGPUPackOnEveryXidFixture(t *testing.T) {
	got := reasonsPerLine(t, gpuPack(t), "testdata/gpu-xid.log")
	want := map[string][]string{}
	for line, reasons := range map[string][]string{
		"): 79, pid=1896, GPU has":                 {"GPUFallenOffBus"},
		"(PCI:0000:86:00): 79, pid='<unknown>'":    {"GPUFallenOffBus"},
		"(PCI:0000:af:00): 79, pid='N/A'":          {"GPUFallenOffBus"},
		"NVRM: GPU 0000:3b:00.0: GPU has fallen":   {"GPUFallenOffBus"},
		"): 48, pid=23411":                         {"GPUDoubleBitECCError"},
		"): 64, pid=":                              {"GPURowRemapFailure"},
		"): 95, pid=29377":                         {"GPUUncontainedECCError"},
		"): 119, pid=1137":                         {"GPUGSPRPCTimeout"},
		"): 120, pid=":                             {"GPUGSPError"},
		"): 74, pid=":                              {"GPUNVLinkError"},
		"): 63, pid=":                              {"GPURowRemapPending"},
		"): 92, High":                              {"GPUHighSingleBitECCRate"},
		"(PCI:0000:07:00): 94, pid=12801":          {"GPUContainedECCError"},
		"GPU-I:05): 94, pid=12801":                 {"GPUContainedECCError"},
		"GPU-I:05 GPU-CI:00): 79":                  {"GPUFallenOffBus"},
		"): 13, pid=29040":                         {"GPUApplicationError"},
		"): 13, pid='<unknown>'":                   {"GPUApplicationError"},
		"(PCI:0000:07:00): 31, pid=1896":           {"GPUApplicationError"},
		"): 43, pid=2442":                          {"GPUApplicationError"},
		"): 45, pid=2442":                          {"GPUApplicationError"},
		"): 68, pid=":                              {"GPUApplicationError"},
		"GPU-I:05): 31, pid=3321":                  {"GPUApplicationError"},
		"): 8, pid=2442":                           {"GPUXid"},
		"): 62, pid=":                              {"GPUXid"},
		"): 154, GPU recovery action changed from": {"GPUXid"},
	} {
		full := ""
		for l := range got {
			if strings.Contains(l, line) {
				if full != "" {
					t.Fatalf("fixture key %q names two lines", line)
				}
				full = l
			}
		}
		if full == "" {
			t.Fatalf("no line with %q matched anything", line)
		}
		want[full] = reasons
	}
	for line, reasons := range got {
		if !reflect.DeepEqual(reasons, want[line]) {
			t.Errorf("%s\n  got %v, want %v", line, reasons, want[line])
		}
	}
	if n := lineCount(t, "testdata/gpu-xid.log"); len(got) != n {
		t.Errorf("%d of the %d fixture lines matched", len(got), n)
	}
}

// TestTheGPUPackMatchesNothingOrdinary: driver loads, the GPU's
// announcement, persistence, AER corrections, NVRM assertions, lines that
// quote an Xid without the driver's form, and the kernel corpus: no match.
func TestTheGPUPackMatchesNothingOrdinary(t *testing.T) {
	for _, path := range []string{"testdata/gpu-ordinary.log", "testdata/kernel-corpus.log"} {
		if got := reasonsPerLine(t, gpuPack(t), path); len(got) != 0 {
			t.Errorf("%s: the GPU pack matched %v", path, got)
		}
	}
}

// TestAnXidRaisesItsConditionNamingTheXidAndTheGPU: the condition's message
// names the Xid, the PCI address and the MIG instance, never the pid or
// the process's name.
func TestAnXidRaisesItsConditionNamingTheXidAndTheGPU(t *testing.T) {
	m, err := NewMonitor([]*RuleSet{gpuPack(t)}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	m.Handle(Record{Time: at, Message: "NVRM: Xid (PCI:0000:87:00 GPU-I:05 GPU-CI:00): 79, pid=4242, name=secret_job, GPU has fallen off the bus."})
	m.Handle(Record{Time: at, Message: "NVRM: Xid (PCI:0000:07:00): 94, pid=12801, name=python, Contained: SM (0x1). RST: No, D-RST: No"})
	states := m.Conditions()
	if c := states[0]; !c.Active || c.Type != "GPUUnavailable" || c.Reason != "GPUFallenOffBus" ||
		!strings.HasPrefix(c.Message, "Xid 79 on the GPU at PCI 0000:87:00 GPU-I:05 GPU-CI:00: the GPU has fallen off the bus (kernel log rule") ||
		strings.Contains(c.Message, "4242") || strings.Contains(c.Message, "secret_job") {
		t.Errorf("GPUUnavailable = %+v", c)
	}
	if c := states[1]; !c.Active || c.Type != "GPUDegraded" || c.Reason != "GPUContainedECCError" ||
		!strings.HasPrefix(c.Message, "Xid 94 on the GPU at PCI 0000:07:00: a contained ECC error") {
		t.Errorf("GPUDegraded = %+v", c)
	}
}

// TestGPUConditionsClearOnlyWithTheBoot: no quiet window; the kernel
// conditions restored from the Node are held but for a new boot
// (conditions.EngineOptions.BootTime).
func TestGPUConditionsClearOnlyWithTheBoot(t *testing.T) {
	m, err := NewMonitor([]*RuleSet{gpuPack(t)}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"GPUUnavailable", "GPUDegraded"} {
		if _, ok := m.QuietWindow(c); ok {
			t.Errorf("%s clears by time; want it to last the boot", c)
		}
	}
}

func lineCount(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

// FuzzGPUPack runs any line through the GPU pack, seeded with every
// fixture line: nothing panics, and a condition's message never carries
// the line's pid or process name, only what the rules' groups match.
func FuzzGPUPack(f *testing.F) {
	for _, path := range []string{"testdata/gpu-xid.log", "testdata/gpu-ordinary.log"} {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		_, _ = Replay(strings.NewReader(string(data)), func(r Record) { f.Add(r.Message) })
	}
	set := gpuPack(f)
	f.Fuzz(func(t *testing.T, line string) {
		m, err := NewMonitor([]*RuleSet{set}, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		m.Handle(Record{Message: line})
		for _, c := range m.Conditions() {
			if !c.Active {
				continue
			}
			if strings.Contains(c.Message, "pid=") || strings.Contains(c.Message, "name=") {
				t.Errorf("%s's message %q carries the line's pid or name", c.Type, c.Message)
			}
			if len(c.Message) > MaxMessageBytes+5*MaxMessageValueBytes+300 {
				t.Errorf("%s's message is %d bytes", c.Type, len(c.Message))
			}
		}
	})
}

func TestGateIsALiteralEveryPatternNeeds(t *testing.T) {
	for _, tc := range []struct {
		patterns []string
		want     string
	}{
		{gpuPack(t).patterns(), "NVRM: "},
		{DefaultRuleSet().patterns(), ""},
		{[]string{"abc (x|y)def", "zzabc"}, ""},
		{[]string{"hello world \\d+", "hello there"}, "hello "},
		{[]string{"(?i)hello world", "hello world"}, ""},
		{[]string{"line one\\nline two", "line"}, ""},
	} {
		if got := gateOf(tc.patterns); got != tc.want {
			t.Errorf("gateOf(%q) = %q, want %q", tc.patterns, got, tc.want)
		}
	}
}
