package harness

import (
	"os"
	"testing"
)

func TestProcStateParsesAfterLastParen(t *testing.T) {
	for stat, want := range map[string]byte{
		"42 (mkdir) D 1 42 42 0 -1":        'D',
		"42 (a) S (b) c) R 1 42 42 0 -1":   'R',
		"42 (sp ace )) ( ) S 1 42 42 0 -1": 'S',
		"42 (x)\n) Z 1 42 42 0 -1":         'Z',
		"42 (no state":                     0,
	} {
		got, err := parseProcState([]byte(stat))
		if want == 0 {
			if err == nil {
				t.Errorf("parseProcState(%q) = %c, want an error", stat, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("parseProcState(%q) = %c, %v; want %c", stat, got, err, want)
		}
	}
	// The main thread of a Go test binary runs (R) or sleeps (S).
	if state, err := ProcState(os.Getpid()); err != nil || (state != 'R' && state != 'S') {
		t.Errorf("ProcState(self) = %c, %v; want R or S", state, err)
	}
}
