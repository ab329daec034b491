package kernellog

import (
	"strings"
	"testing"
	"time"
)

func TestParseRecord(t *testing.T) {
	r, err := ParseRecord([]byte("6,1021,3626123456,-,caller=T12;INFO: task containerd:1234 blocked\\x0a here\n SUBSYSTEM=hung_task\n DEVICE=+x:y\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Priority != 6 || r.Facility != 0 || r.Seq != 1021 || r.Monotonic != 3626123456*time.Microsecond || r.Continuation {
		t.Fatalf("header = %+v", r)
	}
	if r.Message != "INFO: task containerd:1234 blocked\n here" {
		t.Fatalf("message = %q", r.Message)
	}
	if r.Dict["SUBSYSTEM"] != "hung_task" || r.Dict["DEVICE"] != "+x:y" {
		t.Fatalf("dict = %v", r.Dict)
	}
	user, err := ParseRecord([]byte("12,7,1,c;from userspace"))
	if err != nil || user.Facility != 1 || user.Priority != 4 || !user.Continuation {
		t.Fatalf("user record = %+v, %v", user, err)
	}
}

func TestParseRecordErrorsNameTheField(t *testing.T) {
	cases := map[string]string{
		"no separator": "no ';'",
		"6,1;msg":      "want prio,seq,usec,flag",
		"x,1,2,-;msg":  `priority "x"`,
		"6,y,2,-;msg":  `sequence "y"`,
		"6,1,-5,-;msg": `timestamp "-5"`,
	}
	for in, want := range cases {
		if _, err := ParseRecord([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRecord(%q) = %v, want an error mentioning %s", in, err, want)
		}
	}
}

func FuzzParseRecord(f *testing.F) {
	for _, seed := range []string{"6,1021,3626123456,-;INFO: task x:1 blocked\n K=V\n", "12,7,1,c;", ";", "1,2,3,4,5;\\x4", ""} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRecord(b)
		if err != nil {
			return
		}
		if r.Priority < 0 || r.Priority > 7 || r.Monotonic < 0 {
			t.Fatalf("parsed %q into %+v", b, r)
		}
	})
}

func TestReplayFormats(t *testing.T) {
	in := "6,5,2000000,-;kmsg line\n KEY=v\n[   12.500000] dmesg line\nplain line\n  indented plain line\n" +
		"<3>written to /dev/kmsg\n<4>[    3.000000] syslog(2) line\n<x>not a priority\n"
	var got []Record
	if _, err := Replay(strings.NewReader(in), func(r Record) { got = append(got, r) }); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		msg  string
		mono time.Duration
	}{{"kmsg line", 2 * time.Second}, {"dmesg line", 12500 * time.Millisecond}, {"plain line", 0}, {"  indented plain line", 0},
		{"written to /dev/kmsg", 0}, {"syslog(2) line", 3 * time.Second}, {"<x>not a priority", 0}}
	if len(got) != len(want) {
		t.Fatalf("records = %+v", got)
	}
	for i, w := range want {
		if got[i].Message != w.msg || got[i].Monotonic != w.mono || !got[i].Time.Equal(ReplayEpoch.Add(w.mono)) {
			t.Errorf("record %d = %+v, want %q at %v", i, got[i], w.msg, w.mono)
		}
	}
	if got[4].Priority != 3 || got[5].Priority != 4 {
		t.Errorf("priorities = %d, %d; want 3, 4 from the <prio> prefixes", got[5].Priority, got[6].Priority)
	}
}
