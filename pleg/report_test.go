package pleg

import (
	"bytes"
	"strings"
	"testing"
)

func TestReportTableNamesEachSignal(t *testing.T) {
	r := &Report{Assessment: Assessment{Verdict: VerdictUnknown, Reason: "NoPLEGSignal", Message: "no PLEG signal",
		Signals: []Signal{{Name: "emulation", State: "stalled", Detail: "ListPodSandbox out 31s"}}}}
	var out bytes.Buffer
	if err := r.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Unknown (NoPLEGSignal): no PLEG signal", "SIGNAL", "emulation", "ListPodSandbox out 31s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table %q lacks %q", out.String(), want)
		}
	}
	out.Reset()
	if err := (&Report{Error: "no node name"}).WriteTable(&out); err != nil || !strings.Contains(out.String(), "not checked: no node name") {
		t.Errorf("table %q, %v", out.String(), err)
	}
}
