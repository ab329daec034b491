package repair

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoAgentIsNoView: a link whose agent does not answer holds no
// verdict and no silence, so nothing is due.
func TestNoAgentIsNoView(t *testing.T) {
	dir, err := os.MkdirTemp("", "nolink")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	l := NewAgentLink(filepath.Join(dir, "absent.sock"))
	l.view = View{Verdicts: []Verdict{{Type: "RuntimeHung", True: true}}, Silences: map[Target]SilenceNote{TargetRuntime: {What: "Version", For: 1e12}}}
	l.Refresh(context.Background(), NewMetrics().Tally())
	if what, d := l.Silence(TargetRuntime)(); len(l.Verdicts()) != 0 || what != "" || d != 0 {
		t.Errorf("after a failed read: verdicts %v, silence %q %v; want none", l.Verdicts(), what, d)
	}
	if _, err := l.Maintenance(context.Background()); err == nil || !strings.Contains(err.Error(), "absent.sock") {
		t.Errorf("maintenance with no agent: %v, want an error naming the socket", err)
	}
}

// FuzzDecodeLink: whatever comes over the link, decoding and checking
// it returns an error or a value, and never panics.
func FuzzDecodeLink(f *testing.F) {
	for _, seed := range []string{`{"repairs":{"runtime":{"restarted":1}},"budgetRemaining":{"runtime":2}}`,
		`{"reason":"RepairRestarted","message":"m","warning":true}`, `{"target":"kubelet","maxRestarts":5,"window":600000000000,"namespace":"kube-system"}`,
		`{"verdicts":[{"Type":"RuntimeHung","True":true}],"silences":{"runtime":{"what":"Version","for":5}}}`, `{}{}`, `[`} {
		f.Add(seed)
	}
	f.Fuzz(func(_ *testing.T, s string) {
		var tally Tally
		if DecodeLink(strings.NewReader(s), &tally) == nil {
			_ = tally.Check()
		}
		var note EventNote
		if DecodeLink(strings.NewReader(s), &note) == nil {
			_ = note.Check()
		}
		var ask FleetAsk
		if DecodeLink(strings.NewReader(s), &ask) == nil {
			_ = ask.Check()
		}
		var v View
		_ = DecodeLink(strings.NewReader(s), &v)
	})
}
