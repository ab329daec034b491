package diag

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hangwatch/hangwatch/pleg"
)

func TestReportTableNamesEachSignal(t *testing.T) {
	r := &PLEGReport{Assessment: pleg.Assessment{Verdict: pleg.VerdictUnknown, Reason: "NoPLEGSignal", Message: "no PLEG signal",
		Signals: []pleg.Signal{{Name: "emulation", State: "stalled", Detail: "ListPodSandbox out 31s"}}}}
	var out bytes.Buffer
	if err := r.writeTable(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Unknown (NoPLEGSignal): no PLEG signal", "SIGNAL", "emulation", "ListPodSandbox out 31s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table %q lacks %q", out.String(), want)
		}
	}
	out.Reset()
	if err := (&PLEGReport{Error: "no node name"}).writeTable(&out); err != nil || !strings.Contains(out.String(), "not checked: no node name") {
		t.Errorf("table %q, %v", out.String(), err)
	}
}
