package kernellog

import (
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/internal/reason"
)

func TestParsePromotion(t *testing.T) {
	for in, want := range map[string]Promotion{
		"OOMKilling":                 {Reason: "OOMKilling", Condition: "OOMKilling"},
		"XfsError=FilesystemCorrupt": {Reason: "XfsError", Condition: "FilesystemCorrupt"},
		"OOMKilling=OOMKills/10m":    {Reason: "OOMKilling", Condition: "OOMKills", QuietWindow: 10 * time.Minute},
		"OOMKilling/1h":              {Reason: "OOMKilling", Condition: "OOMKilling", QuietWindow: time.Hour},
	} {
		got, err := ParsePromotion(in)
		if err != nil || got != want {
			t.Errorf("ParsePromotion(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "=X", "oom", "A=b c", "A/0s", "A/-1m", "A/8d", "A=B/", "A=B:C"} {
		if _, err := ParsePromotion(bad); err == nil {
			t.Errorf("ParsePromotion(%q) accepted", bad)
		}
	}
}

// FuzzParsePromotion: any string is refused or gives a promotion whose
// reason and condition are valid and whose window is in bounds.
func FuzzParsePromotion(f *testing.F) {
	for _, s := range []string{"OOMKilling", "XfsError=FilesystemCorrupt", "OOMKilling=OOMKills/10m", "A/8d", "=X"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePromotion(s)
		if err != nil {
			return
		}
		if !reason.Valid(p.Reason) || !reason.Valid(p.Condition) || p.QuietWindow < 0 || p.QuietWindow > MaxRuleDuration {
			t.Errorf("ParsePromotion(%q) = %+v", s, p)
		}
	})
}
