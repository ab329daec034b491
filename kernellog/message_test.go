package kernellog

import (
	"strings"
	"testing"
)

const deviceRules = `{"source": "t", "conditions": [{"type": "DeviceBroken", "reason": "DeviceFine", "message": "fine"}],
 "rules": [
  {"type": "permanent", "condition": "DeviceBroken", "reason": "DeviceGone", "name": "gone",
   "pattern": "dev (?P<addr>[0-9a-f:]+) gone, pid=\\d+.*", "message": "device ${addr} is gone"}]}`

func TestARulesMessageNamesItsGroupsNeverTheLine(t *testing.T) {
	m, clk, _ := newTestMonitor(t, deviceRules)
	m.Handle(line(clk, "dev 0000:3b:00 gone, pid=1896, name=secret-process"))
	c := m.Conditions()[0]
	want := `device 0000:3b:00 is gone (kernel log rule "gone", reason DeviceGone, matched at 2026-11-21T12:00:00Z; ` +
		`the line is on the secure port's /events and in hangwatch's log)`
	if !c.Active || c.Message != want {
		t.Fatalf("condition = %+v;\nwant message %q", c, want)
	}
	m.Handle(line(clk, "dev 0000:af:00 gone, pid=2, name=x"))
	if c := m.Conditions()[0]; c.Message != want {
		t.Fatalf("a repeat while active changed the message to %q", c.Message)
	}
}

func TestARulesMessageValueIsCut(t *testing.T) {
	m, clk, _ := newTestMonitor(t, deviceRules)
	m.Handle(line(clk, "dev "+strings.Repeat("a", 300)+" gone, pid=1"))
	c := m.Conditions()[0]
	if !strings.HasPrefix(c.Message, "device "+strings.Repeat("a", MaxMessageValueBytes)+" is gone (") {
		t.Fatalf("message = %q; want the value cut to %d bytes", c.Message, MaxMessageValueBytes)
	}
}

func TestARulesMessageIsChecked(t *testing.T) {
	for name, tc := range map[string]struct{ rule, want string }{
		"unknown group": {`{"type": "permanent", "condition": "C", "reason": "R", "pattern": "x (?P<a>y)", "message": "${b}"}`,
			`message: ${b} names no group (?P<b>...) of the pattern`},
		"temporary": {`{"type": "temporary", "reason": "R", "pattern": "x (?P<a>y)", "message": "${a}"}`,
			"message applies to permanent rules only"},
		"too long": {`{"type": "permanent", "condition": "C", "reason": "R", "pattern": "x", "message": "` + strings.Repeat("m", MaxMessageBytes+1) + `"}`,
			"message: 257 bytes, at most 256"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseRuleSet([]byte(`{"source": "s", "conditions": [{"type": "C", "reason": "Fine"}], "rules": [` + tc.rule + `]}`))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want it to say %q", err, tc.want)
			}
		})
	}
}
